//! One client on stdin/stdout (`gatehouse serve --stdio`): newline-delimited JSON-RPC. stdout
//! carries only protocol messages; logs go to stderr.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Gateway, Out, Outcome};
use crate::jsonrpc::{self, Line};

/// Serves until the client closes its input or `shutdown` is cancelled.
pub async fn serve<R, W>(gw: Gateway, mut input: R, output: W, shutdown: CancellationToken)
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let session = gw.open_session();
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(256);
    session.set_standalone(out_tx.clone());
    let writer = tokio::spawn(write_loop(output, out_rx));
    let mut tasks = tokio::task::JoinSet::new();
    let mut buf = Vec::new();
    loop {
        let line = tokio::select! {
            _ = shutdown.cancelled() => break,
            l = jsonrpc::read_line(&mut input, &mut buf, jsonrpc::MAX_LINE_BYTES) => l,
        };
        match line {
            Ok(Line::Data(msg)) => {
                if msg.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                // Each message is handled on its own task so a slow call never holds up a
                // cancellation or a ping behind it.
                let gw = gw.clone();
                let session = Arc::clone(&session);
                let out = out_tx.clone();
                tasks.spawn(async move {
                    match gw.handle(&session, &msg).await {
                        Outcome::Accepted => {}
                        Outcome::Reply(line) => {
                            let _ = out.send(line).await;
                        }
                        Outcome::Stream(mut rx) => {
                            while let Some(o) = rx.recv().await {
                                let (Out::Event(line) | Out::Final(line)) = o;
                                if out.send(line).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                });
            }
            Ok(Line::TooLong(n)) => {
                tracing::warn!(bytes = n, "dropped an over-long message from the client");
                let _ = out_tx
                    .send(super::error_line(
                        "null",
                        jsonrpc::INVALID_REQUEST,
                        "message too large",
                    ))
                    .await;
            }
            Ok(Line::Eof) | Err(_) => break,
        }
        while tasks.try_join_next().is_some() {}
    }
    gw.close_session(&session.id);
    tasks.shutdown().await;
    drop(out_tx);
    let _ = writer.await;
}

async fn write_loop<W: AsyncWrite + Unpin>(mut w: W, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = rx.recv().await {
        if w.write_all(&line).await.is_err() {
            return;
        }
        while let Ok(more) = rx.try_recv() {
            if w.write_all(&more).await.is_err() {
                return;
            }
        }
        if w.flush().await.is_err() {
            return;
        }
    }
}

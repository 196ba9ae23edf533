//! One client on stdin/stdout (`gatehouse serve --stdio`): newline-delimited JSON-RPC. stdout
//! carries only protocol messages; logs go to stderr.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Gateway, Out, Outcome};
use crate::jsonrpc::{self, ErrorCode, Line, NULL_ID};

/// Requests of the stdio client handled at once at most; more are answered with an error.
pub const MAX_IN_FLIGHT: usize = 256;

/// Serves until the client closes its input or `shutdown` is cancelled.
pub async fn serve<R, W>(gw: Gateway, mut input: R, output: W, shutdown: CancellationToken)
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let session = gw.open_session();
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(256);
    let writer = tokio::spawn(jsonrpc::write_lines(
        output,
        out_rx,
        CancellationToken::new(),
    ));
    let mut tasks = tokio::task::JoinSet::new();
    let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut initialized = false;
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
                // Finished tasks are reaped as we go (a JoinSet keeps them until joined).
                while tasks.try_join_next().is_some() {}
                // The lifecycle: `initialize` once, first; nothing but pings before it.
                let was = initialized;
                if let Some(refusal) = lifecycle(&msg, &mut initialized) {
                    let _ = out_tx.send(refusal).await;
                    continue;
                }
                if initialized && !was {
                    // Notifications of our own (`list_changed`) only once the client said hello.
                    session.set_standalone(out_tx.clone());
                }
                // Each message is handled on its own task so a slow call never holds up a
                // cancellation or a ping behind it; requests are bounded, the rest is quick.
                let permit = match Arc::clone(&in_flight).try_acquire_owned() {
                    Ok(p) => Some(p),
                    Err(_) => match jsonrpc::Envelope::parse(&msg) {
                        Ok(jsonrpc::Envelope {
                            id: Some(id),
                            method: Some(_),
                            ..
                        }) if id.get() != "null" => {
                            let _ = out_tx
                                .send(jsonrpc::error_line(
                                    id.get(),
                                    ErrorCode::InternalError,
                                    &format!("Gatehouse is already handling {MAX_IN_FLIGHT} requests from this client; send this one again when some have finished"),
                                ))
                                .await;
                            continue;
                        }
                        _ => None,
                    },
                };
                let gw = gw.clone();
                let session = Arc::clone(&session);
                let out = out_tx.clone();
                tasks.spawn(async move {
                    let _permit = permit;
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
                    .send(jsonrpc::error_line(
                        NULL_ID,
                        ErrorCode::InvalidRequest,
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

/// The error for a request the lifecycle does not allow yet (or any more): anything but `ping`
/// before `initialize`, or a second `initialize`. Notifications and responses pass.
fn lifecycle(msg: &[u8], initialized: &mut bool) -> Option<Vec<u8>> {
    let env = jsonrpc::Envelope::parse(msg).ok()?;
    let (Some(id), Some(method)) = (env.id, env.method.as_deref()) else {
        return None;
    };
    match (method, *initialized) {
        ("initialize", false) => {
            *initialized = true;
            None
        }
        ("initialize", true) => Some(jsonrpc::error_line(
            id.get(),
            ErrorCode::InvalidRequest,
            "this session is already initialized: initialize is sent once, first",
        )),
        ("ping", _) | (_, true) => None,
        (other, false) => Some(jsonrpc::error_line(
            id.get(),
            ErrorCode::InvalidRequest,
            &format!("{other} before initialize: send initialize first"),
        )),
    }
}

//! One client on stdin/stdout (`gatehouse serve --stdio`): newline-delimited JSON-RPC. stdout
//! carries only protocol messages; logs go to stderr.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Gateway, Incoming, Out, Outcome, OwnedIncoming};
use crate::jsonrpc::{self, ErrorCode, Kind, Line, NULL_ID};

/// Requests of the stdio client handled at once at most; more are answered with an error.
pub const MAX_IN_FLIGHT: usize = 256;

/// One message handled, and what it comes to written to the client in order.
async fn answer(
    gw: &Gateway,
    session: &Arc<super::session::ClientSession>,
    message: &OwnedIncoming,
    out: &mpsc::Sender<Vec<u8>>,
) {
    match gw.handle(session, message.get()).await {
        Outcome::Accepted => {}
        Outcome::Reply(line) | Outcome::Error(line, _) => {
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
}

/// Serves until the client closes its input (then answers what it already received) or
/// `shutdown` is cancelled.
pub async fn serve<R, W>(gw: Gateway, input: R, output: W, shutdown: CancellationToken)
where
    R: AsyncRead + Unpin,
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
    let mut opened = Opened::No;
    let mut input = jsonrpc::LineReader::new(input, jsonrpc::MAX_LINE_BYTES);
    let mut ended = false;
    loop {
        let line = tokio::select! {
            _ = shutdown.cancelled() => break,
            l = input.next() => l,
        };
        match line {
            Ok(Line::Data(msg)) => {
                if msg.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                // Finished tasks are reaped as we go (a JoinSet keeps them until joined).
                while tasks.try_join_next().is_some() {}
                // The message is read once, here; the task below takes it as read.
                let message = match OwnedIncoming::read(msg) {
                    Ok(m) => m,
                    Err(refusal) => {
                        let _ = out_tx.send(refusal.line("at a time")).await;
                        continue;
                    }
                };
                // The lifecycle: a legacy client sends `initialize` once, first (nothing but
                // pings before it); a modern one sends requests carrying their envelope.
                let was = opened;
                if let Some(refusal) = lifecycle(message.get(), &mut opened) {
                    let _ = out_tx.send(refusal).await;
                    continue;
                }
                match (was, opened) {
                    (Opened::No, Opened::Legacy) => {
                        // Notifications of our own (`list_changed`) only once the client said
                        // hello.
                        session.set_standalone(out_tx.clone());
                    }
                    (Opened::No, Opened::Modern) => {
                        // A modern client hears of changes only on a subscription it asked for.
                        gw.mark_modern(&session);
                    }
                    _ => {}
                }
                // Each message is handled on its own task so a slow call never holds up a
                // cancellation or a ping behind it; requests are bounded, the rest is quick.
                let permit = match Arc::clone(&in_flight).try_acquire_owned() {
                    Ok(p) => Some(p),
                    Err(_) => match message.get().kind() {
                        Some(Kind::Request { id, .. }) if id.get() != "null" => {
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
                let (gw, session, out) = (gw.clone(), Arc::clone(&session), out_tx.clone());
                tasks.spawn(async move {
                    let _permit = permit;
                    answer(&gw, &session, &message, &out).await;
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
            Ok(Line::Eof) | Err(_) => {
                ended = true;
                break;
            }
        }
        while tasks.try_join_next().is_some() {}
    }
    if ended {
        // The client closed its input: every request already received is answered first,
        // each within its own deadline (a call's `call_timeout_secs`, an approval's timeout),
        // as a stdio server finishes what it was asked before it exits. A stop signal meanwhile
        // ends the wait.
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                next = tasks.join_next() => if next.is_none() { break },
            }
        }
    }
    gw.close_session(&session.id);
    tasks.shutdown().await;
    drop(out_tx);
    let _ = writer.await;
}

/// How a stdio client opened: not yet, with `initialize` (legacy), or with a request carrying
/// the 2026-07-28 envelope (modern). The first request decides, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    No,
    Legacy,
    Modern,
}

/// The error for a request the lifecycle does not allow yet (or any more): a legacy request
/// before `initialize`, a second `initialize`, or `initialize` from a client that opened the
/// modern way. `ping` and `server/discover` are always answered; notifications and responses
/// pass.
fn lifecycle(msg: &Incoming<'_>, opened: &mut Opened) -> Option<Vec<u8>> {
    let Some(Kind::Request { id, method }) = msg.kind() else {
        return None;
    };
    let modern = msg.claims_modern();
    match (method, *opened) {
        ("ping" | "server/discover", _) => None,
        ("initialize", Opened::No) => {
            *opened = Opened::Legacy;
            None
        }
        ("initialize", Opened::Legacy) => Some(jsonrpc::error_line(
            id.get(),
            ErrorCode::InvalidRequest,
            "this session is already initialized: initialize is sent once, first",
        )),
        ("initialize", Opened::Modern) => Some(jsonrpc::error_object_line(
            id.get(),
            &jsonrpc::error_object_with_data(
                ErrorCode::UnsupportedProtocolVersion,
                "this connection speaks protocol 2026-07-28 (its first request carried the envelope); initialize is not accepted on it",
                &crate::protocol::unsupported_data("initialize"),
            ),
        )),
        (_, Opened::No) if modern => {
            *opened = Opened::Modern;
            None
        }
        (_, Opened::Legacy | Opened::Modern) => None,
        (other, Opened::No) => Some(jsonrpc::error_line(
            id.get(),
            ErrorCode::InvalidRequest,
            &format!("{other} before initialize: send initialize first (or, in protocol 2026-07-28, the request's envelope in params._meta)"),
        )),
    }
}

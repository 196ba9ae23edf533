//! What handling one client message comes to ([`Outcome`], with a stream's [`Out`]s), made where
//! the answer is decided: an error Gatehouse answers with carries its code from there, so a
//! transport that gives each code a status (2026-07-28 over HTTP) never reads its own line back.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde_json::value::RawValue;
use tokio::sync::mpsc;

/// How long a client may leave its call's stream unread before the call is dropped.
pub(super) const CLIENT_STALL: std::time::Duration = std::time::Duration::from_secs(10);

use crate::jsonrpc::{self, ErrorCode};

/// One message for the client while a request is handled.
#[derive(Debug)]
pub enum Out {
    /// Related to the request (progress, a server→client request, a log message).
    Event(Vec<u8>),
    /// The request's response; nothing follows.
    Final(Vec<u8>),
}

/// What handling one client message produced.
pub enum Outcome {
    /// A notification or response was taken; nothing to send back (HTTP 202).
    Accepted,
    /// A result, at once.
    Reply(Vec<u8>),
    /// An error Gatehouse answers with at once: the line, and its code.
    Error(Vec<u8>, ErrorCode),
    /// Messages ending with [`Out::Final`].
    Stream(Stream),
}

/// What a forwarded call's own work comes to: its answer to the request, when that is the last
/// thing it sends (`None`: it sent its answer on its stream, or has none — the client went away).
pub type Run = Pin<Box<dyn Future<Output = Option<Vec<u8>>> + Send>>;

/// The messages of one request, read with [`Stream::recv`]. A forwarded call is not a task of
/// its own while it has said nothing: its work runs as its stream is read, by the reader (the
/// HTTP handler, the stdio task), so a call whose answer is the first thing it sends costs no
/// task and no hand-off between tasks. The first message it sends before its end (progress, a
/// server's request, an answer before its end — a parked call's) hands the rest of it to a task
/// of its own, which runs whether or not the stream is read (a client that stops reading loses
/// its stream after `CLIENT_STALL`, never the hub's memory). Dropped before the call ends, the
/// stream drops the call (cancelled upstream, withdrawn from the person).
pub struct Stream {
    rx: mpsc::Receiver<Out>,
    /// The call's own work while it runs here (`None` once it ended or was handed to a task).
    run: Option<Run>,
    /// Where the call's answer goes once its work is handed to a task.
    tx: Option<mpsc::Sender<Out>>,
    /// The call's answer, once its work ended with it, after what it queued before.
    last: Option<Vec<u8>>,
}

impl From<mpsc::Receiver<Out>> for Stream {
    /// A stream fed by a task elsewhere (a listen stream, a parked call's retry).
    fn from(rx: mpsc::Receiver<Out>) -> Stream {
        Stream {
            rx,
            run: None,
            tx: None,
            last: None,
        }
    }
}

impl Stream {
    /// The stream of a call whose work is `run`, sending its messages on `tx` (of `rx`).
    pub fn running(rx: mpsc::Receiver<Out>, tx: mpsc::Sender<Out>, run: Run) -> Stream {
        Stream {
            rx,
            run: Some(run),
            tx: Some(tx),
            last: None,
        }
    }

    /// The next message (`None` when there is no more): run here until the call says something.
    pub async fn recv(&mut self) -> Option<Out> {
        loop {
            let Some(run) = self.run.as_mut() else {
                // What the call queued before its end comes first, then its answer.
                return match self.rx.try_recv() {
                    Ok(out) => Some(out),
                    Err(_) if self.last.is_some() => self.last.take().map(Out::Final),
                    Err(_) => self.rx.recv().await,
                };
            };
            tokio::select! {
                biased;
                out = self.rx.recv() => {
                    // It said something before its end: the rest runs on a task of its own.
                    self.detach();
                    return out;
                }
                answer = run => {
                    self.run = None;
                    self.tx = None;
                    self.last = answer;
                }
            }
        }
    }

    /// Hands the call's work to a task of its own; its answer goes on the stream.
    fn detach(&mut self) {
        let (Some(run), Some(tx)) = (self.run.take(), self.tx.take()) else {
            return;
        };
        tokio::spawn(async move {
            if let Some(line) = run.await {
                let _ = tokio::time::timeout(CLIENT_STALL, tx.send(Out::Final(line))).await;
            }
        });
    }
}

impl Outcome {
    /// The error `{"code", "message"}` answering request `id`.
    pub fn error(id: &str, code: ErrorCode, message: &str) -> Outcome {
        Outcome::Error(jsonrpc::error_line(id, code, message), code)
    }

    /// The error `{"code", "message", "data"}` answering request `id` (`data` raw JSON).
    pub fn error_with_data(id: &str, code: ErrorCode, message: &str, data: &str) -> Outcome {
        let object = jsonrpc::error_object_with_data(code, message, data);
        Outcome::Error(jsonrpc::error_object_line(id, &object), code)
    }

    /// The line of an answer given at once (`None`: accepted, or a stream).
    pub fn line(&self) -> Option<&[u8]> {
        match self {
            Outcome::Reply(line) | Outcome::Error(line, _) => Some(line),
            Outcome::Accepted | Outcome::Stream(_) => None,
        }
    }
}

/// A request's params as raw members, plus the one string member `key` it cannot do without
/// (`name`, `uri`); a missing or malformed one is answered with -32602.
#[allow(clippy::result_large_err)]
pub(super) fn member_params(
    id: &RawValue,
    params: Option<&RawValue>,
    method: &str,
    key: &str,
) -> Result<(BTreeMap<String, Box<RawValue>>, String), Outcome> {
    let invalid = || {
        Outcome::error(
            id.get(),
            ErrorCode::InvalidParams,
            &format!("Invalid params: {method} needs a string \"{key}\""),
        )
    };
    let p = params
        .and_then(|p| serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(p.get()).ok())
        .ok_or_else(invalid)?;
    let value = p
        .get(key)
        .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
        .ok_or_else(invalid)?;
    Ok((p, value))
}

//! The reading side of a server's connection: each line read, bounded; which call a server's
//! message belongs to (the bridge's mark, our progress token, or the one call in flight); the
//! protocol trace.

use super::CallEvent;
use super::Inbound;
use super::NoteFn;
use super::Reply;
use super::RpcPeer;
use super::Target;
use super::RELATED;
use crate::jsonrpc;
use crate::jsonrpc::Envelope;
use crate::jsonrpc::ErrorCode;
use crate::jsonrpc::Kind;
use crate::jsonrpc::Line;
use serde_json::value::RawValue;
use std::sync::Arc;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub(super) async fn read_loop<R: AsyncRead + Unpin>(
    peer: Arc<RpcPeer>,
    stdout: R,
    inbound: mpsc::Sender<Inbound>,
    note: NoteFn,
    stop: CancellationToken,
) {
    let mut lines = jsonrpc::LineReader::new(stdout, jsonrpc::MAX_LINE_BYTES);
    // Waited on once for the whole loop: a fresh wait per line would register with the token
    // on every message.
    let stopped = stop.cancelled();
    tokio::pin!(stopped);
    loop {
        let line = tokio::select! {
            _ = &mut stopped => break,
            l = lines.next() => l,
        };
        match line {
            Ok(Line::Data(line)) => handle_line(&peer, line, &inbound, &note).await,
            Ok(Line::TooLong(n)) => note(format!(
                "dropped a stdout line of {n} bytes (over the {} MiB limit)",
                jsonrpc::MAX_LINE_BYTES / (1024 * 1024)
            )),
            Ok(Line::Eof) => break,
            Err(e) => {
                note(format!("stdout read failed: {e}"));
                break;
            }
        }
    }
    // The supervisor closes the pending table: it waits a moment for the exit status, which
    // explains the end better ("killed by signal 9") than the EOF does.
    let _ = inbound.send(Inbound::Closed).await;
}

// An exception to the 100-line limit: every kind of line a server sends is routed in one
// match, on the hot path of every result; the arms share the line without copying it.
#[allow(clippy::too_many_lines)]
async fn handle_line(
    peer: &RpcPeer,
    line: Vec<u8>,
    inbound: &mpsc::Sender<Inbound>,
    note: &NoteFn,
) {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    // The remote bridge says which of our requests a message came with; it is read, then
    // removed, so the client never sees it. From anyone else it is not believed.
    let (line, related) = match related_mark(peer, &line) {
        Some((stripped, id)) => (stripped, id),
        None => (line, None),
    };
    trace(&peer.server, "from", &line);
    // A result for one of our requests is moved to its caller inside its line, never decoded:
    // the scan finds the id and steps over the result once.
    let line = match jsonrpc::result_response(&line) {
        Some(scanned) => match (scanned.id, jsonrpc::RawJson::in_line(line, scanned)) {
            (id, Ok(raw)) => {
                if let Err(Reply::Result(raw)) = peer.complete(id, Reply::Result(raw)) {
                    note(format!(
                        "dropped a response with unknown id {id}: {}",
                        peer.excerpt(raw.line().as_bytes())
                    ));
                }
                return;
            }
            // Not UTF-8: the envelope parser refuses it with its note.
            (_, Err(line)) => line,
        },
        None => line,
    };
    let line: &[u8] = &line;
    let env = match Envelope::parse(line) {
        Ok(e) => e,
        Err(_) => {
            note(format!(
                "dropped a non-JSON stdout line: {}",
                peer.excerpt(line)
            ));
            return;
        }
    };
    match env.kind() {
        Some(Kind::Response { id }) => {
            let reply = match (env.result, env.error) {
                (_, Some(e)) => Reply::Error(e.to_owned()),
                (Some(r), None) => Reply::Result(jsonrpc::RawJson::from_raw(r)),
                (None, None) => return,
            };
            let known = match id.get().parse::<u64>() {
                Ok(n) => peer.complete(n, reply).is_ok(),
                Err(_) => false,
            };
            if !known {
                note(format!(
                    "dropped a response with unknown id {}: {}",
                    peer.excerpt(id.get().as_bytes()),
                    peer.excerpt(line)
                ));
            }
        }
        Some(Kind::Notification { method }) => match method {
            "notifications/tools/list_changed" => {
                // Full means a refresh is already waiting: this one adds nothing.
                let _ = inbound.try_send(Inbound::ToolsListChanged);
            }
            "notifications/prompts/list_changed" | "notifications/resources/list_changed" => {}
            "notifications/resources/updated" => {
                #[derive(serde::Deserialize)]
                struct P {
                    uri: String,
                }
                if let Some(p) = env
                    .params
                    .and_then(|p| serde_json::from_str::<P>(p.get()).ok())
                {
                    (peer.updated)(p.uri);
                }
            }
            "notifications/progress" => {
                // Progress belongs to the call whose token it carries, and to no other.
                let token = progress_token(env.params);
                let target = match (token, related) {
                    (Some(t), _) => peer.lock().target(None, Some(&t)),
                    (None, Some(id)) => peer.lock().target(Some(id), None),
                    (None, None) => Target::NoCall,
                };
                if let Target::Call(sink) = target {
                    // A client that is not reading loses progress, never the hub's memory.
                    sink.try_send(CallEvent::Notification(line.to_vec()));
                }
            }
            "notifications/message" => {
                let target = peer.lock().target(related, None);
                let delivered = match target {
                    Target::Call(s) => s.try_send(CallEvent::Notification(line.to_vec())),
                    _ => false,
                };
                if !delivered {
                    if let Some(p) = env.params {
                        note(format!("log: {}", peer.excerpt(p.get().as_bytes())));
                    }
                }
            }
            _ => {}
        },
        Some(Kind::Request { id, method }) => {
            if method == "ping" {
                peer.send_raw(jsonrpc::result_line(id.get(), "{}")).await;
                return;
            }
            let token = progress_token(env.params);
            let target = peer.lock().target(related, token.as_deref());
            let reply = match target {
                // Raised during a routed call: that call's client (and no other) answers it.
                Target::Call(sink) => {
                    let ev = CallEvent::Request {
                        id: id.to_owned(),
                        line: line.to_vec(),
                    };
                    match sink.try_send(ev) {
                        true => return,
                        false => jsonrpc::error_line(
                            id.get(),
                            ErrorCode::InternalError,
                            &format!("the client of this call is not keeping up; {method} was not passed on"),
                        ),
                    }
                }
                Target::Ambiguous(n) => {
                    note(format!(
                        "refused a {method} request: {n} calls are in flight and nothing in it says which one it belongs to, so no client is asked"
                    ));
                    jsonrpc::error_line(
                        id.get(),
                        ErrorCode::InvalidRequest,
                        &format!("Gatehouse cannot tell which of the {n} calls in flight this {method} belongs to, so it asks no client; include the call's progress token in its _meta, or raise it with one call in flight"),
                    )
                }
                // Outside any call, Gatehouse answers itself.
                Target::NoCall => match method {
                    "roots/list" => jsonrpc::result_line(id.get(), "{\"roots\":[]}"),
                    other => jsonrpc::error_line(
                        id.get(),
                        ErrorCode::MethodNotFound,
                        &format!("Gatehouse does not support {other} outside a client's call"),
                    ),
                },
            };
            peer.send_raw(reply).await;
        }
        None => note(format!(
            "dropped a JSON line that is not JSON-RPC: {}",
            peer.excerpt(line)
        )),
    }
}

/// The protocol trace (`GATEHOUSE_LOG=debug`): one line per message to or from a server — its
/// kind, method, id and size, never params or results (they may hold arguments or secrets).
pub(super) fn trace(server: &str, direction: &'static str, line: &[u8]) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let bytes = line.len();
    match Envelope::parse(line.strip_suffix(b"\n").unwrap_or(line)) {
        Ok(env) => {
            let id = env.id.map(|i| {
                let t = i.get();
                // An id is the peer's to choose: a long one is cut, it is not a payload.
                t.chars().take(40).collect::<String>()
            });
            let kind = match env.kind() {
                Some(Kind::Request { .. }) => "request",
                Some(Kind::Notification { .. }) => "notification",
                Some(Kind::Response { .. }) if env.error.is_some() => "error",
                Some(Kind::Response { .. }) => "response",
                None => "invalid",
            };
            tracing::debug!(
                server,
                direction,
                kind,
                method = env.method.as_deref().unwrap_or(""),
                id = id.as_deref().unwrap_or(""),
                bytes,
                "mcp"
            );
        }
        Err(_) => tracing::debug!(server, direction, kind = "not json", bytes, "mcp"),
    }
}

/// The [`RELATED`] mark of a line from a trusted bridge: the line without it, and the request id
/// it names. `None` when there is no mark (or it is not trusted, or not a number).
fn related_mark(peer: &RpcPeer, line: &[u8]) -> Option<(Vec<u8>, Option<u64>)> {
    if !peer.trust_related {
        return None;
    }
    // Cheap test first: almost every line has no mark.
    memchr::memmem::find(line, RELATED.as_bytes())?;
    let text = std::str::from_utf8(line).ok()?;
    let (stripped, id) = jsonrpc::take_member(text, RELATED)?;
    Some((stripped.into_bytes(), id.get().parse().ok()))
}

/// `params._meta.progressToken` (or `params.progressToken`), raw.
fn progress_token(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct P<'a> {
        #[serde(borrow, rename = "progressToken", default)]
        token: Option<&'a RawValue>,
        #[serde(borrow, rename = "_meta", default)]
        meta: Option<M<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct M<'a> {
        #[serde(borrow, rename = "progressToken", default)]
        token: Option<&'a RawValue>,
    }
    let p: P = serde_json::from_str(params?.get()).ok()?;
    p.token
        .or_else(|| p.meta.and_then(|m| m.token))
        .map(|t| t.get().to_owned())
}

//! `gatehouse connect`: a stdio MCP server for clients that only speak stdio (Claude Desktop),
//! bridging each message to the running hub's HTTP endpoint with the hub's token.

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::jsonrpc::{self, Envelope, Line};

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

struct Bridge {
    http: reqwest::Client,
    url: String,
    token: String,
    /// Guards one read or write of the session id.
    session: Mutex<Option<String>>,
    out: mpsc::Sender<Vec<u8>>,
}

/// Bridges `input`/`output` (the client's stdio) to `url` until the client closes its input.
pub async fn run<R, W>(
    url: String,
    token: String,
    mut input: R,
    output: W,
) -> Result<(), BridgeError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let http = crate::http_client_builder()
        .no_proxy()
        .build()
        .map_err(|e| BridgeError::Client(e.to_string()))?;
    let (out, out_rx) = mpsc::channel::<Vec<u8>>(256);
    let writer = tokio::spawn(write_loop(output, out_rx));
    let bridge = Arc::new(Bridge {
        http,
        url,
        token,
        session: Mutex::new(None),
        out,
    });
    let mut tasks = tokio::task::JoinSet::new();
    // The session's GET stream never ends on its own: it is stopped when the client leaves.
    let mut listener: Option<tokio::task::JoinHandle<()>> = None;
    let mut buf = Vec::new();
    loop {
        match jsonrpc::read_line(&mut input, &mut buf, jsonrpc::MAX_LINE_BYTES).await {
            Ok(Line::Data(msg)) => {
                let is_init = Envelope::parse(&msg)
                    .ok()
                    .is_some_and(|e| e.method.as_deref() == Some("initialize"));
                if is_init {
                    // The session id comes with initialize's answer: nothing may overtake it.
                    bridge.post(msg).await;
                    if bridge.session_id().is_some() && listener.is_none() {
                        let b = bridge.clone();
                        listener = Some(tokio::spawn(async move { b.listen().await }));
                    }
                } else {
                    let b = bridge.clone();
                    tasks.spawn(async move { b.post(msg).await });
                }
            }
            Ok(Line::TooLong(_)) => {}
            Ok(Line::Eof) | Err(_) => break,
        }
        while tasks.try_join_next().is_some() {}
    }
    if let Some(l) = listener {
        l.abort();
    }
    // Let requests already sent finish (bounded), then end the session.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while let Some(r) = tasks.join_next().await {
            if r.is_err() {
                break;
            }
        }
    })
    .await;
    tasks.shutdown().await;
    if let Some(sid) = bridge.session_id() {
        let _ = bridge
            .http
            .delete(&bridge.url)
            .bearer_auth(&bridge.token)
            .header("mcp-session-id", sid)
            .send()
            .await;
    }
    drop(bridge);
    let _ = writer.await;
    Ok(())
}

impl Bridge {
    fn session_id(&self) -> Option<String> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    async fn post(&self, msg: Vec<u8>) {
        let id = Envelope::parse(&msg)
            .ok()
            .and_then(|e| e.id.map(|i| i.get().to_owned()));
        let mut req = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(sid) = self.session_id() {
            req = req.header("mcp-session-id", sid);
        }
        let resp = match req.body(msg).send().await {
            Ok(r) => r,
            Err(e) => {
                return self
                    .fail(
                        id,
                        &format!("Gatehouse is not reachable at {}: {e}", self.url),
                    )
                    .await
            }
        };
        if let Some(sid) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(sid.to_owned());
        }
        let status = resp.status();
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        if status == reqwest::StatusCode::ACCEPTED {
            return;
        }
        if is_sse {
            self.pump_sse(resp).await;
            return;
        }
        match resp.bytes().await {
            Ok(body) if body.first() == Some(&b'{') => {
                let mut line = body.to_vec();
                line.push(b'\n');
                let _ = self.out.send(line).await;
            }
            Ok(body) => {
                let text = String::from_utf8_lossy(&body).trim().to_owned();
                self.fail(id, &format!("Gatehouse answered HTTP {status}: {text}"))
                    .await;
            }
            Err(e) => {
                self.fail(id, &format!("lost the connection to Gatehouse: {e}"))
                    .await
            }
        }
    }

    /// The session's GET stream: server messages not tied to a request (list_changed).
    async fn listen(&self) {
        let Some(sid) = self.session_id() else {
            return;
        };
        let resp = self
            .http
            .get(&self.url)
            .bearer_auth(&self.token)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid)
            .send()
            .await;
        if let Ok(r) = resp {
            if r.status().is_success() {
                self.pump_sse(r).await;
            }
        }
    }

    async fn pump_sse(&self, resp: reqwest::Response) {
        let mut stream = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::new();
        while let Some(Ok(chunk)) = stream.next().await {
            buf.extend_from_slice(&chunk);
            while let Some((end, skip)) = find_event_end(&buf) {
                let event: Vec<u8> = buf.drain(..end + skip).take(end).collect();
                if let Some(mut data) = sse_data(&event) {
                    data.push(b'\n');
                    if self.out.send(data).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    async fn fail(&self, id: Option<String>, message: &str) {
        tracing::warn!("{message}");
        if let Some(id) = id {
            let _ = self
                .out
                .send(super::error_line(&id, jsonrpc::INTERNAL_ERROR, message))
                .await;
        }
    }
}

/// The end of the first SSE event in `buf`: (index of the blank line, its length).
fn find_event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// The `data:` lines of one SSE event, joined.
fn sse_data(event: &[u8]) -> Option<Vec<u8>> {
    let mut data: Vec<u8> = Vec::new();
    let mut any = false;
    for line in event.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"data:") {
            if any {
                data.push(b'\n');
            }
            data.extend_from_slice(rest.strip_prefix(b" ").unwrap_or(rest));
            any = true;
        }
    }
    any.then_some(data)
}

async fn write_loop<W: AsyncWrite + Unpin>(mut w: W, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = rx.recv().await {
        if w.write_all(&line).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_parsing() {
        let buf = b"event: message\ndata: {\"a\":1}\n\n: comment\n\ndata: x\r\n\r\n";
        let (end, skip) = find_event_end(buf).unwrap();
        assert_eq!(sse_data(&buf[..end]).unwrap(), b"{\"a\":1}");
        let rest = &buf[end + skip..];
        let (end2, skip2) = find_event_end(rest).unwrap();
        assert_eq!(sse_data(&rest[..end2]), None);
        let rest = &rest[end2 + skip2..];
        let (end3, _) = find_event_end(rest).unwrap();
        assert_eq!(sse_data(&rest[..end3]).unwrap(), b"x");
    }
}

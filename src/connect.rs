//! `gatehouse connect`: a stdio MCP server for clients that only speak stdio (Claude Desktop),
//! bridging each message to the running hub's HTTP endpoint with the hub's token. It is a client
//! of the gateway, not part of it.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::sse::SseReader;
use crate::jsonrpc::{self, Envelope, ErrorCode, Line};

/// Why the bridge could not run.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The HTTP client could not be built.
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
    /// The tools' `x-mcp-header` annotations, from the lists it carried: a modern client's calls
    /// get their `Mcp-Param-*` headers, which the gateway checks.
    param_headers: crate::protocol::ParamHeaders,
}

/// Bridges `input`/`output` (the client's stdio) to `url` until the client closes its input.
pub async fn run<R, W>(url: String, token: String, input: R, output: W) -> Result<(), BridgeError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let http = crate::http_client::http_client_builder()
        .no_proxy()
        .build()
        .map_err(|e| BridgeError::Client(e.to_string()))?;
    let (out, out_rx) = mpsc::channel::<Vec<u8>>(256);
    let writer = tokio::spawn(jsonrpc::write_lines(
        output,
        out_rx,
        CancellationToken::new(),
    ));
    let bridge = Arc::new(Bridge {
        http,
        url,
        token,
        session: Mutex::new(None),
        out,
        param_headers: crate::protocol::ParamHeaders::default(),
    });
    let mut tasks = tokio::task::JoinSet::new();
    // The session's GET stream never ends on its own: it is stopped when the client leaves.
    let mut listener: Option<tokio::task::JoinHandle<()>> = None;
    let mut input = jsonrpc::LineReader::new(input, jsonrpc::MAX_LINE_BYTES);
    loop {
        match input.next().await {
            Ok(Line::Data(msg)) => {
                let read = Read::of(&msg, &bridge.param_headers);
                if read.initialize {
                    // The session id comes with initialize's answer: nothing may overtake it.
                    bridge.post(msg, read).await;
                    if bridge.session_id().is_some() && listener.is_none() {
                        let b = bridge.clone();
                        listener = Some(tokio::spawn(async move { b.listen().await }));
                    }
                } else {
                    let b = bridge.clone();
                    tasks.spawn(async move { b.post(msg, read).await });
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

/// What the bridge needs of a client's message, read once (the message itself goes to the hub
/// as it came).
struct Read {
    /// The raw id of a request (or response).
    id: Option<String>,
    initialize: bool,
    /// A message carrying the 2026-07-28 envelope goes without a session, with these headers
    /// (its routing headers, and a tool call's `Mcp-Param-*`); `None` for a legacy one.
    modern: Option<Vec<(String, String)>>,
}

impl Read {
    fn of(msg: &[u8], params: &crate::protocol::ParamHeaders) -> Read {
        let Ok(e) = Envelope::parse(msg) else {
            // Not JSON: the hub says so.
            return Read {
                id: None,
                initialize: false,
                modern: None,
            };
        };
        let modern = (e.method.is_some()
            && !matches!(crate::protocol::read_envelope(e.params), Ok(None)))
        .then(|| {
            let routing = crate::protocol::routing_headers(&e);
            let routing = routing.into_iter().map(|(n, v)| (n.to_owned(), v));
            routing.chain(params.of(&e)).collect()
        });
        Read {
            id: e.id.map(|i| i.get().to_owned()),
            initialize: e.method.as_deref() == Some("initialize"),
            modern,
        }
    }
}

impl Bridge {
    fn session_id(&self) -> Option<String> {
        crate::sync::lock(&self.session).clone()
    }

    async fn post(&self, msg: Vec<u8>, read: Read) {
        let id = read.id;
        let mut req = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(headers) = read.modern {
            // A modern client's request: no session, the routing headers of its body.
            for (name, value) in headers {
                req = req.header(name, value);
            }
        } else if let Some(sid) = self.session_id() {
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
            *crate::sync::lock(&self.session) = Some(sid.to_owned());
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
                self.param_headers.learn(&body);
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
        let mut events = SseReader::new(resp.bytes_stream(), jsonrpc::MAX_LINE_BYTES);
        while let Some(Ok(event)) = events.next().await {
            if event.data.is_empty() {
                continue;
            }
            self.param_headers.learn(&event.data);
            let mut data = event.data;
            data.push(b'\n');
            if self.out.send(data).await.is_err() {
                return;
            }
        }
    }

    async fn fail(&self, id: Option<String>, message: &str) {
        tracing::warn!("{message}");
        if let Some(id) = id {
            let _ = self
                .out
                .send(jsonrpc::error_line(&id, ErrorCode::InternalError, message))
                .await;
        }
    }
}

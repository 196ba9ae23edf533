//! A remote server's connection, made to look like a child's stdio: the `RpcPeer` writes lines
//! into one end of an in-memory pipe and reads lines from another, and this bridge carries them
//! over Streamable HTTP (one POST per message, answers as JSON or SSE, a GET stream for what the
//! server sends on its own), falling back to the 2024-11-05 HTTP+SSE transport when the server
//! only speaks that. A server that answers the handshake's `server/discover` probe is spoken to
//! in the 2026-07-28 way instead: no session, no GET stream, no ping, and every POST carries
//! `MCP-Protocol-Version`, `Mcp-Method` and (for calls, prompts and reads) `Mcp-Name` headers
//! taken from its body; its 4xx answers with a JSON-RPC error are that request's answer. When the connection is lost the bridge ends with the reason, and the actor
//! treats that like a child's exit (in-flight calls answered, restart with backoff).

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{self, write_lines, ErrorCode, Line, LineReader, MAX_LINE_BYTES as MAX_LINE};
use crate::oauth::{Credentials, Refused};
use crate::protocol;

mod address;
mod liveness;
mod streams;
mod wire;

pub use address::{check_address, AddressError};

use liveness::{keepalive_probe, KEEPALIVE};
use wire::*;

const SESSION_HEADER: &str = "mcp-session-id";

/// Whether `url` may be reached: https anywhere; plain http only on loopback unless allowed.
pub fn check_url(url: &str, allow_insecure: bool) -> Result<reqwest::Url, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("invalid url \"{url}\": {e}"))?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" => {
            let host = parsed.host_str().unwrap_or("");
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host == "localhost"
                || bare
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback || allow_insecure {
                Ok(parsed)
            } else {
                Err(format!(
                    "refusing plain http:// to {}: use https://, or add \"allow_insecure\": true to this server if you trust the network",
                    parsed.host_str().unwrap_or("?")
                ))
            }
        }
        other => Err(format!(
            "invalid url \"{url}\": the scheme must be http or https, not {other}"
        )),
    }
}

/// The HTTP client every remote connection uses (rustls, a 10 s connect timeout).
pub fn client() -> Result<reqwest::Client, String> {
    client_for(None)
}

/// [`client`], its connections pinned to the addresses `check_address` checked for `url`'s
/// host (the name is not looked up again).
pub fn client_for(
    pinned: Option<(&reqwest::Url, &[std::net::SocketAddr])>,
) -> Result<reqwest::Client, String> {
    let mut b = crate::http_client::http_client_builder();
    if let Some((url, addrs)) = pinned {
        if let Some(host) = url
            .host_str()
            .filter(|h| h.parse::<std::net::IpAddr>().is_err() && !h.starts_with('['))
        {
            b = b.resolve_to_addrs(host, addrs);
        }
    }
    b.connect_timeout(Duration::from_secs(10))
        // Configured headers carry credentials: a redirect is followed only within the server's
        // own origin (scheme, host, port), never to another one.
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let same = attempt
                .previous()
                .last()
                .is_some_and(|prev| prev.origin() == attempt.url().origin());
            if same && attempt.previous().len() < 5 {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// Header values resolved (secrets included) into a `HeaderMap`.
pub fn header_map(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("invalid header name \"{k}\""))?;
        let mut value = HeaderValue::from_str(v).map_err(|_| {
            format!("the value of header \"{k}\" has characters a header cannot carry")
        })?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

/// The transport the bridge ended up on.
#[derive(Clone)]
enum Mode {
    Streamable {
        session: Option<String>,
    },
    /// 2024-11-05: POST to `endpoint`, everything comes back on the GET stream.
    Sse {
        endpoint: reqwest::Url,
    },
    /// 2026-07-28: no session, no GET stream; every POST carries the routing headers.
    Modern,
}

struct Bridge {
    http: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    /// Lines for the peer (answers, notifications, server requests).
    to_peer: mpsc::Sender<Vec<u8>>,
    /// The first fatal error ends the bridge.
    lost: mpsc::Sender<String>,
    protocol: Arc<std::sync::Mutex<Option<String>>>,
    /// The `x-mcp-header` annotations of the tools the server listed: a modern server's calls
    /// carry them as `Mcp-Param-*` headers.
    param_headers: protocol::ParamHeaders,
    /// The sign-in's token for every request, and what a 401 leads to.
    auth: Arc<Credentials>,
}

/// Why a request got no response.
enum Failure {
    /// The network (or the server) failed.
    Net(reqwest::Error),
    /// No usable token: a sign-in is needed, or the refresh failed (the text says which).
    Auth(String),
}

impl Failure {
    fn reason(self, prefix: &str) -> String {
        match self {
            Failure::Net(e) => format!("{prefix}: {}", crate::http_client::http_error_chain(&e)),
            Failure::Auth(why) => why,
        }
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The keepalive: a ping (or, to a modern server, its discovery request again) on a task of its
/// own, ended with the bridge's tasks.
fn spawn_ping(b: Arc<Bridge>, m: Mode, tasks: CancellationToken, probe: Option<Arc<Vec<u8>>>) {
    tokio::spawn(async move {
        tokio::select! {
            _ = tasks.cancelled() => {}
            _ = b.ping(&m, probe.as_deref().map(Vec::as_slice)) => {}
        }
    });
}

/// A request, which may wait long for its answer, on a task of its own.
fn spawn_send(b: Arc<Bridge>, m: Mode, tasks: CancellationToken, msg: Vec<u8>) {
    tokio::spawn(async move {
        tokio::select! {
            _ = tasks.cancelled() => {}
            _ = b.send(&m, msg) => {}
        }
    });
}

/// Runs until `stop` is cancelled (returns `None`) or the connection is lost (returns the reason).
pub async fn run<R, W>(
    http: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    auth: Arc<Credentials>,
    from_peer: R,
    to_peer_io: W,
    stop: CancellationToken,
) -> Option<String>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_peer, to_peer_rx) = mpsc::channel::<Vec<u8>>(256);
    let (lost_tx, mut lost_rx) = mpsc::channel::<String>(4);
    let writer = tokio::spawn(write_lines(
        to_peer_io,
        to_peer_rx,
        CancellationToken::new(),
    ));
    let bridge = Arc::new(Bridge {
        http,
        url,
        headers,
        to_peer,
        lost: lost_tx,
        protocol: Arc::new(std::sync::Mutex::new(None)),
        param_headers: protocol::ParamHeaders::default(),
        auth,
    });
    let tasks = CancellationToken::new();
    // However `run` ends — returning, or its future dropped by the session's task set — the
    // tasks it spawned (requests, pings, the GET or SSE stream) and the writer end with it.
    let _tasks_end = tasks.clone().drop_guard();
    let _writer_ends = AbortOnDrop(writer.abort_handle());
    let mut mode: Option<Mode> = None;
    // A modern server's liveness check: the handshake's own discovery request, under its own id.
    let mut discover_again: Option<Arc<Vec<u8>>> = None;
    let mut from_peer = LineReader::new(from_peer, MAX_LINE);
    let mut last_sent = tokio::time::Instant::now();
    let reason = loop {
        let keepalive = tokio::time::sleep_until(last_sent + KEEPALIVE);
        tokio::select! {
            _ = stop.cancelled() => break None,
            Some(reason) = lost_rx.recv() => break Some(reason),
            _ = keepalive, if mode.is_some() => {
                last_sent = tokio::time::Instant::now();
                if let Some(m) = mode.clone() {
                    spawn_ping(bridge.clone(), m, tasks.clone(), discover_again.clone());
                }
            }
            line = from_peer.next() => {
                let msg = match line {
                    Ok(Line::Data(l)) => l,
                    Ok(Line::TooLong(_)) => continue,
                    _ => break None, // the peer closed: we are being stopped
                };
                last_sent = tokio::time::Instant::now();
                let shape = kind_of(&msg);
                match &mode {
                    // The handshake's probe: a modern server answers it, anything else is told
                    // "not modern" and the next message (initialize) opens the legacy way.
                    None if matches!(shape, Some(Shape::Request { discover: true, .. })) => {
                        // Bounded like the handshake's wait for it: a server that opens a stream
                        // and never answers is not modern, and the `initialize` that follows must
                        // find the bridge listening.
                        let probed = tokio::time::timeout(
                            crate::supervisor::handshake::PROBE_TIMEOUT,
                            bridge.discover(&msg),
                        )
                        .await;
                        match probed {
                            Ok(Ok(true)) => {
                                mode = Some(Mode::Modern);
                                discover_again = keepalive_probe(&msg).map(Arc::new);
                            }
                            Ok(Ok(false)) => {}
                            Ok(Err(reason)) => break Some(reason),
                            Err(_) => bridge.not_modern(&msg, "no answer to server/discover in time").await,
                        }
                    }
                    None => match bridge.connect(&msg, &tasks).await {
                        Ok(m) => mode = Some(m),
                        Err(reason) => break Some(reason),
                    },
                    // A request may wait long for its answer: it gets its own task. Anything
                    // else (notifications, answers to the server) goes out in order, at once.
                    Some(m) if matches!(shape, Some(Shape::Request { .. })) => {
                        spawn_send(bridge.clone(), m.clone(), tasks.clone(), msg);
                    }
                    Some(m) => {
                        let sent = tokio::select! {
                            _ = stop.cancelled() => break None,
                            r = bridge.send_checked(m, msg) => r,
                        };
                        if let Err(reason) = sent {
                            break Some(reason);
                        }
                    }
                }
            }
        }
    };
    tasks.cancel();
    if let (None, Some(Mode::Streamable { session: Some(id) })) = (&reason, &mode) {
        // A clean stop ends the server's session (best effort, bounded).
        let mut h = bridge.headers.clone();
        if let Ok(v) = HeaderValue::from_str(id) {
            h.insert(SESSION_HEADER, v);
        }
        let req = bridge.execute(reqwest::Method::DELETE, bridge.url.clone(), h, None);
        let _ = tokio::time::timeout(Duration::from_secs(1), req).await;
    }
    drop(bridge);
    writer.abort();
    reason
}

impl Bridge {
    /// Sends one request with the sign-in's token (when there is one). A 401 (or a 403 asking
    /// for more scope) goes to the credentials: the request is sent once more with a refreshed
    /// token, or it fails for want of a sign-in.
    async fn execute(
        &self,
        method: reqwest::Method,
        url: reqwest::Url,
        mut headers: HeaderMap,
        body: Option<bytes::Bytes>,
    ) -> Result<reqwest::Response, Failure> {
        let mut retried = false;
        loop {
            let bearer = self.auth.header().await.map_err(Failure::Auth)?;
            if let Some(v) = bearer
                .as_deref()
                .and_then(|b| HeaderValue::from_str(b).ok())
            {
                let mut v = v;
                v.set_sensitive(true);
                headers.insert(AUTHORIZATION, v);
            }
            let mut req = self
                .http
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(b) = &body {
                req = req.body(b.clone());
            }
            let resp = req.send().await.map_err(Failure::Net)?;
            let status = resp.status().as_u16();
            if !matches!(status, 401 | 403) {
                return Ok(resp);
            }
            let challenge = resp
                .headers()
                .get(WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match self
                .auth
                .refused(status, challenge.as_deref(), bearer.as_deref(), retried)
                .await
            {
                Refused::Stands => return Ok(resp),
                Refused::Retry => retried = true,
                Refused::End(why) => return Err(Failure::Auth(why)),
            }
        }
    }

    fn base_headers(&self, session: Option<&str>) -> HeaderMap {
        let mut h = self.headers.clone();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Some(s) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
            h.insert(SESSION_HEADER, s);
        }
        let protocol = crate::sync::lock(&self.protocol).clone();
        if let Some(v) = protocol.and_then(|p| HeaderValue::from_str(&p).ok()) {
            h.insert("mcp-protocol-version", v);
        }
        h
    }

    /// The headers of one modern POST: no session, the routing headers of its body, and for a
    /// call of a tool with `x-mcp-header` annotations, its `Mcp-Param-*` headers.
    fn modern_headers(&self, env: Option<&jsonrpc::Envelope<'_>>) -> HeaderMap {
        let mut h = self.base_headers(None);
        h.remove(SESSION_HEADER);
        let Some(env) = env else {
            return h;
        };
        for (name, value) in protocol::routing_headers(env) {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(name, v);
            }
        }
        for (name, value) in self.param_headers.of(env) {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                h.insert(n, v);
            }
        }
        h
    }

    /// The first POST of a connection (the probe, or `initialize`): not reaching the server at
    /// all is the error.
    async fn post_first(
        &self,
        headers: HeaderMap,
        msg: &[u8],
    ) -> Result<reqwest::Response, String> {
        self.execute(
            reqwest::Method::POST,
            self.url.clone(),
            headers,
            Some(bytes::Bytes::copy_from_slice(msg)),
        )
        .await
        .map_err(|f| f.reason(&format!("cannot reach {}", self.url)))
    }

    /// The `server/discover` probe: `Ok(true)` when the server answered it as a modern server
    /// (the answer is passed on), `Ok(false)` when it did not (the peer gets an error answer and
    /// falls back to `initialize`), `Err` when the server cannot be reached at all.
    async fn discover(&self, msg: &[u8]) -> Result<bool, String> {
        let headers = self.modern_headers(jsonrpc::Envelope::parse(msg).ok().as_ref());
        let resp = self.post_first(headers, msg).await?;
        let status = resp.status().as_u16();
        if matches!(status, 401 | 403) || (300..400).contains(&status) {
            check_status(&resp)?;
        }
        let sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let answer = if resp.status().is_success() && !sse {
            bounded_body(resp, MAX_LINE).await.ok()
        } else if resp.status().is_success() {
            // The answer is the stream's response event.
            let mut events = sse_events(resp);
            let mut found = None;
            while let Some(Ok(ev)) = events.next().await {
                if is_response(&ev.data) {
                    found = Some(ev.data);
                    break;
                }
            }
            found
        } else {
            None
        };
        let modern = answer.as_deref().is_some_and(is_discover_result);
        match (modern, answer) {
            (true, Some(body)) => {
                let _ = self.to_peer.send(line(unmarked(body))).await;
            }
            _ => {
                self.not_modern(msg, &format!("HTTP {status} to server/discover"))
                    .await
            }
        }
        Ok(modern)
    }

    /// Answers the peer's `server/discover` with an error: the server is not modern (`why`), and
    /// the handshake goes on with `initialize`.
    async fn not_modern(&self, msg: &[u8], why: &str) {
        if let Some(id) = request_id(msg) {
            let why = format!("not a modern MCP server ({why})");
            let _ = self
                .to_peer
                .send(jsonrpc::error_line(&id, ErrorCode::MethodNotFound, &why))
                .await;
        }
    }

    /// The first message (initialize): Streamable HTTP, or the old SSE transport if the server
    /// answers the POST with 400/404/405.
    async fn connect(
        self: &Arc<Self>,
        init: &[u8],
        tasks: &CancellationToken,
    ) -> Result<Mode, String> {
        let resp = self.post_first(self.base_headers(None), init).await?;
        let status = resp.status().as_u16();
        if matches!(status, 400 | 404 | 405) {
            return self.connect_sse(init, tasks).await;
        }
        check_status(&resp)?;
        let session = resp
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.relay(resp, true, request_id(init)).await?;
        let mode = Mode::Streamable { session };
        // The GET stream carries what the server sends outside a call (list_changed…).
        let b = self.clone();
        let m = mode.clone();
        let t = tasks.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = t.cancelled() => {}
                _ = b.listen(&m) => {}
            }
        });
        Ok(mode)
    }

    /// Sends one message; a transport failure ends the bridge.
    async fn send(&self, mode: &Mode, msg: Vec<u8>) {
        if let Err(reason) = self.send_checked(mode, msg).await {
            let _ = self.lost.send(reason).await;
        }
    }

    async fn send_checked(&self, mode: &Mode, msg: Vec<u8>) -> Result<(), String> {
        // The message is read once for all the bridge needs of it.
        let env = jsonrpc::Envelope::parse(&msg).ok();
        let request = match env.as_ref().and_then(shape) {
            Some(Shape::Request { id, .. }) => Some(id),
            _ => None,
        };
        let is_request = request.is_some();
        let (url, session) = match mode {
            Mode::Streamable { session } => (self.url.clone(), session.as_deref()),
            Mode::Sse { endpoint } => (endpoint.clone(), None),
            Mode::Modern => (self.url.clone(), None),
        };
        let headers = match mode {
            Mode::Modern => self.modern_headers(env.as_ref()),
            _ => self.base_headers(session),
        };
        let resp = self
            .execute(reqwest::Method::POST, url, headers, Some(msg.into()))
            .await
            .map_err(|f| f.reason("connection lost"))?;
        if resp.status().as_u16() == 404 && session.is_some() {
            return Err("the server ended our session (HTTP 404)".into());
        }
        let modern_error = matches!(mode, Mode::Modern)
            && resp.status().is_client_error()
            && !matches!(resp.status().as_u16(), 401 | 403);
        if modern_error {
            // A modern server answers a request it refuses with 4xx and a JSON-RPC error: that
            // error is the request's answer, not a lost connection. A 4xx without one is said
            // to the request as it is, so it never waits for an answer that will not come.
            // (Its text is not quoted: what a server says is masked before it is kept.)
            let status = resp.status().as_u16();
            let body = bounded_body(resp, MAX_LINE).await.unwrap_or_default();
            if is_response(&body) {
                let _ = self.to_peer.send(line(unmarked(body))).await;
            } else {
                self.refuse_answer(
                    request.as_deref(),
                    &format!("the server answered HTTP {status} without a JSON-RPC error"),
                )
                .await;
            }
            return Ok(());
        }
        check_status(&resp)?;
        match mode {
            Mode::Streamable { .. } | Mode::Modern => self.relay(resp, is_request, request).await,
            Mode::Sse { .. } => Ok(()),
        }
    }

    /// Tells the peer its request got no usable answer (the answer was over the bound).
    async fn refuse_answer(&self, request: Option<&str>, why: &str) {
        tracing::warn!(url = %self.url, "{why}");
        if let Some(id) = request {
            let _ = self
                .to_peer
                .send(jsonrpc::error_line(id, ErrorCode::InternalError, why))
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_to_loopback_unless_allowed() {
        assert!(check_url("http://127.0.0.1:9000/mcp", false).is_ok());
        assert!(check_url("http://localhost/mcp", false).is_ok());
        assert!(check_url("http://[::1]:1/mcp", false).is_ok());
        let err = check_url("http://example.com/mcp", false).unwrap_err();
        assert!(err.contains("allow_insecure"), "{err}");
        assert!(check_url("http://example.com/mcp", true).is_ok());
        assert!(check_url("https://example.com/mcp", false).is_ok());
        assert!(check_url("ftp://example.com", true).is_err());
    }

    #[test]
    fn requests_and_responses_are_told_apart() {
        assert_eq!(
            kind_of(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            Some(Shape::Request {
                id: "1".into(),
                discover: false
            })
        );
        assert_eq!(
            kind_of(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Some(Shape::Notification)
        );
        assert!(is_response(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!is_response(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#));
    }
}

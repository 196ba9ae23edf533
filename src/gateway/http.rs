//! Streamable HTTP on loopback: `POST/GET/DELETE /mcp`, sessions (`Mcp-Session-Id`), SSE for
//! messages a request produces before its response and for the GET stream.
//!
//! Guard, in this order: Host not a loopback name → 403; Origin present and not allow-listed
//! (`null` included) → 403; missing/wrong bearer token → 401; body over 4 MiB → 413; a JSON-RPC
//! batch → 400 with -32600. The client's token is never forwarded upstream (nothing here passes
//! headers on).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::conns::Shown;
use super::{Gateway, Incoming, Out, Outcome, ParamHeaders, SUPPORTED_VERSIONS};
use crate::jsonrpc::{error_line, sse, ErrorCode, NULL_ID};
use crate::token::constant_time_eq;

mod host;
mod routing;

use crate::protocol::Members;
pub use host::host_is_ours;
use routing::check_routing_headers;

/// The largest request body accepted (413 beyond).
pub const MAX_BODY: usize = 4 * 1024 * 1024;
const UNAUTHORIZED: &str = concat!(
    "Unauthorized: send Authorization: Bearer <token> ",
    "(see the Connect view or `gatehouse connect`)"
);
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Why the gateway could not listen.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Only loopback addresses are served.
    #[error("{addr} is not a loopback address: the gateway only listens on 127.0.0.1 or [::1]")]
    NotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The address cannot be bound (taken, most often).
    #[error("cannot listen on {addr}: {source}{hint}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
        /// What to do, when known.
        hint: &'static str,
    },
}

/// Binds the gateway's listener; refuses non-loopback addresses.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, HttpError> {
    if !addr.ip().is_loopback() {
        return Err(HttpError::NotLoopback { addr });
    }
    TcpListener::bind(addr).await.map_err(|source| {
        let hint = if source.kind() == std::io::ErrorKind::AddrInUse {
            " (is another Gatehouse running? set \"gateway\": {\"listen\": …} or pass --listen 127.0.0.1:PORT)"
        } else {
            ""
        };
        HttpError::Bind { addr, source, hint }
    })
}

struct AppState {
    gw: Gateway,
    /// The port we listen on: the only one a `Host` header may name.
    port: u16,
    token: Arc<str>,
    origins: Vec<String>,
}

/// Serves `/mcp` until `shutdown` is cancelled. Call [`Gateway::shutdown`] after cancelling so
/// open SSE streams end and the server can finish.
pub async fn serve(
    listener: TcpListener,
    gw: Gateway,
    token: String,
    allowed_origins: Vec<String>,
    shutdown: CancellationToken,
) {
    // The gateway's own loopback origins are allowed (it serves no pages, so nothing can
    // abuse them); every other Origin, `null` included, must be allow-listed in the config.
    let mut origins = allowed_origins;
    let port = listener.local_addr().map_or(0, |a| a.port());
    {
        origins.extend([
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
            format!("http://[::1]:{port}"),
        ]);
    }
    let state = Arc::new(AppState {
        gw,
        port,
        token: Arc::from(token),
        origins,
    });
    let handler = move |req: Request<Body>, shown: Shown| {
        let st = state.clone();
        async move {
            if req.uri().path() == "/mcp" {
                mcp(&st, req, &shown).await
            } else {
                not_found()
            }
        }
    };
    super::conns::accept_loop(listener, handler, shutdown).await;
}

pub use super::conns::HEADER_TIMEOUT;
/// How long a request's body may take to arrive.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Gatehouse serves MCP at /mcp\n").into_response()
}

async fn mcp(st: &AppState, req: Request<Body>, shown: &Shown) -> Response {
    let (parts, body) = req.into_parts();
    let profile = match guard(st, &parts.headers) {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    // This connection showed a valid token: it keeps its place when the gateway is full, and it
    // is its profile's — which may hold only its share of the places.
    let whose = profile
        .as_deref()
        .unwrap_or(crate::profiles::DEFAULT_PROFILE);
    if let Err(share) = shown.mark(whose) {
        let text = format!("client profile {whose} holds {share} connections to Gatehouse already, its share of them; send this request on one of those, or close some first\n");
        let mut r = (StatusCode::TOO_MANY_REQUESTS, text).into_response();
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return r;
    }
    match parts.method {
        Method::POST => post(st, &parts.headers, body, &profile).await,
        Method::GET => get(st, &parts.headers, &profile),
        Method::DELETE => delete(st, &parts.headers, &profile),
        _ => {
            let mut r = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "use POST, GET or DELETE on /mcp",
            );
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            r
        }
    }
}

/// Host, Origin, then the bearer token: the gateway token (the `default` profile, every tool:
/// `Ok(None)`) or a client profile's (`Ok(Some(id))`).
#[allow(clippy::result_large_err)]
fn guard(st: &AppState, h: &HeaderMap) -> Result<Option<String>, Response> {
    let host = h
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !host_is_ours(host, st.port) {
        return Err(plain(
            StatusCode::FORBIDDEN,
            "Forbidden: Host is not a loopback name",
        ));
    }
    if let Some(origin) = h.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("null");
        if !st.origins.iter().any(|o| o == origin) {
            return Err(plain(
                StatusCode::FORBIDDEN,
                "Forbidden: Origin not allowed",
            ));
        }
    }
    let presented = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or("");
    if constant_time_eq(presented.as_bytes(), st.token.as_bytes()) {
        return Ok(None);
    }
    if let Some(profile) = st.gw.profile_of_token(presented) {
        return Ok(Some(profile));
    }
    let mut r = plain(StatusCode::UNAUTHORIZED, UNAUTHORIZED);
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    Err(r)
}

/// A POST's body, whole, within [`MAX_BODY`] and [`BODY_TIMEOUT`] — or the refusal.
async fn read_body(body: Body) -> Result<bytes::Bytes, Response> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload Too Large: the limit is 4 MiB",
        )),
        Err(_) => Err(plain(
            StatusCode::REQUEST_TIMEOUT,
            "Request Timeout: the body did not arrive within 30 s",
        )),
    }
}

async fn post(st: &AppState, h: &HeaderMap, body: Body, profile: &Option<String>) -> Response {
    let bytes = match read_body(body).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    // The message is read once, here; the gateway takes it as read.
    let message = match Incoming::parse(&bytes) {
        Ok(m) => m,
        Err(refusal) => return json(StatusCode::BAD_REQUEST, refusal.line("per request"), None),
    };
    let method = message.method();
    let is_request = message.is_request();
    let version = h.get(VERSION_HEADER).and_then(|v| v.to_str().ok());
    if method != Some("initialize") {
        let id = message.reply_id();
        // A request carrying the 2026-07-28 `_meta` envelope is served the modern way (no
        // session, routing headers checked against the body).
        match message.modern() {
            Err(e) => return modern_reply(super::envelope_error(id, e)).await,
            Ok(Some(envelope)) => return modern_post(st, h, &message, envelope, profile).await,
            Ok(None)
                if version.is_some_and(|v| crate::protocol::MODERN_VERSIONS.contains(&v))
                    && method != Some("server/discover") =>
            {
                return modern_error(
                    id,
                    ErrorCode::InvalidParams,
                    &format!(
                        "a {v} request carries its protocol version and client capabilities in params._meta ({} and {})",
                        crate::protocol::PROTOCOL_VERSION_KEY,
                        crate::protocol::CLIENT_CAPABILITIES_KEY,
                        v = version.unwrap_or_default()
                    ),
                );
            }
            Ok(None) => {}
        }
    }
    if let Some(v) = version.filter(|_| method != Some("server/discover")) {
        if !SUPPORTED_VERSIONS.contains(&v) {
            return json(
                StatusCode::BAD_REQUEST,
                error_line(
                    NULL_ID,
                    ErrorCode::InvalidRequest,
                    &format!(
                        "Unsupported MCP-Protocol-Version {v}; supported: {}",
                        SUPPORTED_VERSIONS.join(", ")
                    ),
                ),
                None,
            );
        }
    }
    let (session, new_session) =
        if method == Some("initialize") && is_request {
            (st.gw.open_session_as(profile.clone()), true)
        } else {
            match h.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
                Some(id) => match st.gw.session_of(id, profile) {
                    Some(s) => (s, false),
                    None => {
                        return json(
                            StatusCode::NOT_FOUND,
                            error_line(
                                NULL_ID,
                                ErrorCode::InvalidRequest,
                                "Session not found: initialize again",
                            ),
                            None,
                        )
                    }
                },
                None if method == Some("server/discover") => {
                    // `server/discover` is stateless: answered without a session.
                    let s = st.gw.open_session_as(profile.clone());
                    let out = st.gw.handle(&s, &message).await;
                    st.gw.close_session(&s.id);
                    return outcome_response(out, None).await;
                }
                None => return json(
                    StatusCode::BAD_REQUEST,
                    error_line(
                        NULL_ID,
                        ErrorCode::InvalidRequest,
                        "Bad Request: Mcp-Session-Id header is required (send initialize first)",
                    ),
                    None,
                ),
            }
        };
    let outcome = st.gw.handle(&session, &message).await;
    let sid = new_session.then(|| session.id.clone());
    outcome_response(outcome, sid).await
}

/// A modern request: its routing headers are checked against its body (a mismatch is 400 with
/// -32020), then it is handled in its client's modern session.
async fn modern_post(
    st: &AppState,
    h: &HeaderMap,
    message: &Incoming<'_>,
    envelope: &crate::protocol::Envelope,
    profile: &Option<String>,
) -> Response {
    let (method, raw_id) = (message.method(), message.reply_id());
    let members = match Members::of(message.params()) {
        Ok(m) => m,
        Err(why) => {
            return modern_error(
                raw_id,
                ErrorCode::InvalidParams,
                &format!("Invalid params: {why}"),
            )
        }
    };
    let named = members.named(method.unwrap_or_default());
    if let Err(why) = check_routing_headers(h, method, named, envelope) {
        return modern_error(raw_id, ErrorCode::HeaderMismatch, &why);
    }
    if message.id().is_none() {
        // The revision defines no client notification over HTTP: taken and dropped.
        return StatusCode::ACCEPTED.into_response();
    }
    // A `tools/call`'s `Mcp-Param-*` headers are checked by the call, against the tool it finds.
    let headers = match (method, members.name.as_deref()) {
        (Some("tools/call"), Some(_)) => Some(ParamHeaders::of(
            h.iter().map(|(n, v)| (n.as_str(), v.to_str().ok())),
        )),
        _ => None,
    };
    let session = st.gw.modern_session(profile.clone(), envelope);
    let outcome = st.gw.handle_with(&session, message, headers.as_ref()).await;
    modern_reply(outcome).await
}

/// A modern answer: an error given at once gets the status the revision gives its code (400 for
/// a malformed or refused request, 404 for an unknown method) — the code it was made with, never
/// read back from its line; anything else 200.
async fn modern_reply(outcome: Outcome) -> Response {
    match outcome {
        Outcome::Error(line, code) => json(status_of(code), line, None),
        other => outcome_response(other, None).await,
    }
}

/// A modern error made here, with the status its code has.
fn modern_error(id: &str, code: ErrorCode, message: &str) -> Response {
    json(status_of(code), error_line(id, code, message), None)
}

/// The HTTP status the 2026-07-28 revision gives an error answer with this code.
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::MethodNotFound => StatusCode::NOT_FOUND,
        ErrorCode::ParseError
        | ErrorCode::InvalidRequest
        | ErrorCode::InvalidParams
        | ErrorCode::HeaderMismatch
        | ErrorCode::MissingRequiredClientCapability
        | ErrorCode::UnsupportedProtocolVersion => StatusCode::BAD_REQUEST,
        ErrorCode::InternalError | ErrorCode::ResourceNotFound => StatusCode::OK,
    }
}

async fn outcome_response(outcome: Outcome, session_id: Option<String>) -> Response {
    match outcome {
        Outcome::Accepted => StatusCode::ACCEPTED.into_response(),
        Outcome::Reply(line) | Outcome::Error(line, _) => json(StatusCode::OK, line, session_id),
        Outcome::Stream(mut rx) => match rx.recv().await {
            // Nothing came before the response: plain JSON is cheapest for everyone.
            Some(Out::Final(line)) => json(StatusCode::OK, line, session_id),
            Some(Out::Event(first)) => {
                let stream = futures_util::stream::unfold(
                    (Some(first), rx, false),
                    |(first, mut rx, done)| async move {
                        if done {
                            return None;
                        }
                        if let Some(line) = first {
                            return Some((
                                Ok::<Bytes, Infallible>(sse::frame(&line)),
                                (None, rx, false),
                            ));
                        }
                        match rx.recv().await {
                            Some(Out::Event(line)) => {
                                Some((Ok(sse::frame(&line)), (None, rx, false)))
                            }
                            Some(Out::Final(line)) => {
                                Some((Ok(sse::frame(&line)), (None, rx, true)))
                            }
                            None => None,
                        }
                    },
                );
                sse(Body::from_stream(stream), session_id)
            }
            None => StatusCode::ACCEPTED.into_response(),
        },
    }
}

fn get(st: &AppState, h: &HeaderMap, profile: &Option<String>) -> Response {
    let Some(session) = h
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|id| st.gw.session_of(id, profile))
    else {
        return if h.contains_key(SESSION_HEADER) {
            plain(StatusCode::NOT_FOUND, "Session not found")
        } else {
            plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            )
        };
    };
    let accepts_sse = h
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"));
    if !accepts_sse {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the GET stream is text/event-stream",
        );
    }
    let (tx, rx) = mpsc::channel::<Vec<u8>>(64);
    session.set_standalone(tx);
    // Open at most `STREAM_LIFETIME`: the client opens another.
    let end = tokio::time::Instant::now() + super::session::STREAM_LIFETIME;
    let stream = futures_util::stream::unfold(rx, move |mut rx| async move {
        match tokio::time::timeout_at(end, rx.recv()).await {
            Ok(Some(line)) => Some((Ok::<Bytes, Infallible>(sse::frame(&line)), rx)),
            _ => None,
        }
    });
    // An opening comment flushes the headers so the client knows the stream is up.
    let opening = futures_util::stream::once(async {
        Ok::<Bytes, Infallible>(Bytes::from_static(b": stream open\n\n"))
    });
    sse(
        Body::from_stream(futures_util::StreamExt::chain(opening, stream)),
        None,
    )
}

fn delete(st: &AppState, h: &HeaderMap, profile: &Option<String>) -> Response {
    match h.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        Some(id) if st.gw.session_of(id, profile).is_some() && st.gw.close_session(id) => {
            StatusCode::OK.into_response()
        }
        Some(_) => plain(StatusCode::NOT_FOUND, "Session not found"),
        None => plain(
            StatusCode::BAD_REQUEST,
            "Bad Request: Mcp-Session-Id header is required",
        ),
    }
}

fn json(status: StatusCode, mut line: Vec<u8>, session_id: Option<String>) -> Response {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    let mut r = (status, line).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    add_session(&mut r, session_id);
    r
}

fn sse(body: Body, session_id: Option<String>) -> Response {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    add_session(&mut r, session_id);
    r
}

fn add_session(r: &mut Response, session_id: Option<String>) {
    if let Some(id) = session_id.and_then(|s| HeaderValue::from_str(&s).ok()) {
        r.headers_mut().insert(SESSION_HEADER, id);
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

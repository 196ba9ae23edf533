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

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::token::constant_time_eq;
use super::{Gateway, Out, Outcome, SUPPORTED_VERSIONS};
use crate::jsonrpc::{error_line, sse, ErrorCode, NULL_ID};

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

#[derive(Clone)]
struct AppState {
    gw: Gateway,
    token: Arc<str>,
    origins: Arc<Vec<String>>,
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
    if let Ok(addr) = listener.local_addr() {
        let port = addr.port();
        origins.extend([
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
            format!("http://[::1]:{port}"),
        ]);
    }
    let state = AppState {
        gw,
        token: Arc::from(token),
        origins: Arc::new(origins),
    };
    let app = axum::Router::new()
        .route("/mcp", axum::routing::any(mcp))
        .fallback(not_found)
        .with_state(state);
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await;
    if let Err(e) = result {
        tracing::error!(error = %e, "gateway HTTP server failed");
    }
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Gatehouse serves MCP at /mcp\n").into_response()
}

async fn mcp(State(st): State<AppState>, req: Request<Body>) -> Response {
    let (parts, body) = req.into_parts();
    if let Err(resp) = guard(&st, &parts.headers) {
        return resp;
    }
    match parts.method {
        Method::POST => post(&st, &parts.headers, body).await,
        Method::GET => get(&st, &parts.headers),
        Method::DELETE => delete(&st, &parts.headers),
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

#[allow(clippy::result_large_err)]
fn guard(st: &AppState, h: &HeaderMap) -> Result<(), Response> {
    let host = h
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !is_loopback_host(host) {
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
    if !constant_time_eq(presented.as_bytes(), st.token.as_bytes()) {
        let mut r = plain(StatusCode::UNAUTHORIZED, UNAUTHORIZED);
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return Err(r);
    }
    Ok(())
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
pub fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inner, _)) => return inner == "::1",
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        })
    };
    let name = name.to_ascii_lowercase();
    name == "localhost"
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn post(st: &AppState, h: &HeaderMap, body: Body) -> Response {
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large: the limit is 4 MiB",
            )
        }
    };
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return json(
            StatusCode::BAD_REQUEST,
            error_line(
                NULL_ID,
                ErrorCode::InvalidRequest,
                "JSON-RPC batches are not supported: send one message per request",
            ),
            None,
        );
    }
    // Peek at the method first: a 2026-07-28 client's `server/discover` probe carries its own
    // version header and must get a JSON-RPC error (below), not a 400.
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(borrow, default)]
        method: Option<&'a str>,
        #[serde(default)]
        id: Option<serde::de::IgnoredAny>,
    }
    let peek = serde_json::from_slice::<Peek>(&bytes).ok();
    let method = peek.as_ref().and_then(|p| p.method);
    let is_request = peek.as_ref().is_some_and(|p| p.id.is_some());
    let version = h.get(VERSION_HEADER).and_then(|v| v.to_str().ok());
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
            (st.gw.open_session(), true)
        } else {
            match h.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
                Some(id) => match st.gw.session(id) {
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
                    // A 2026-07-28 client's probe: answer with an error so it falls back to initialize.
                    let s = st.gw.open_session();
                    let out = st.gw.handle(&s, &bytes).await;
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
    let outcome = st.gw.handle(&session, &bytes).await;
    let sid = new_session.then(|| session.id.clone());
    outcome_response(outcome, sid).await
}

async fn outcome_response(outcome: Outcome, session_id: Option<String>) -> Response {
    match outcome {
        Outcome::Accepted => StatusCode::ACCEPTED.into_response(),
        Outcome::Reply(line) => json(StatusCode::OK, line, session_id),
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

fn get(st: &AppState, h: &HeaderMap) -> Response {
    let Some(session) = h
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|id| st.gw.session(id))
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
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|line| (Ok::<Bytes, Infallible>(sse::frame(&line)), rx))
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

fn delete(st: &AppState, h: &HeaderMap) -> Response {
    match h.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        Some(id) if st.gw.close_session(id) => StatusCode::OK.into_response(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "localhost:7723",
            "127.0.0.1",
            "127.0.0.1:80",
            "127.1.2.3:1",
            "[::1]",
            "[::1]:7723",
            "LOCALHOST:1",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.com",
            "evil.com:7723",
            "localhost.evil.com",
            "10.0.0.1:7723",
            "[::2]:1",
            "127.0.0.1.evil.com",
            "[::1",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }
}

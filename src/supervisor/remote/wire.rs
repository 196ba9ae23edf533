//! What the bridge reads of a message or a body without parsing it whole: kinds, ids, the
//! bridge's own mark, bounded bodies and SSE streams, statuses.

use futures_util::StreamExt;

use crate::jsonrpc::sse::{SseError, SseReader};
use crate::jsonrpc::{self, MAX_LINE_BYTES as MAX_LINE};
use crate::protocol;
use crate::supervisor::rpc::RELATED;

pub(super) fn check_status(resp: &reqwest::Response) -> Result<(), String> {
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    Err(match status.as_u16() {
        300..=399 => format!(
            "the server redirected to {}, another origin: not followed, so this server's headers and tokens never reach another host; put that URL in the config if you trust it",
            resp.headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("another address")
        ),
        401 | 403 => format!(
            "the server refused the credentials (HTTP {}): check this server's \"headers\" and the secrets they refer to",
            status.as_u16()
        ),
        code => format!("the server answered HTTP {code}"),
    })
}

/// What a message is, read by the one JSON-RPC envelope parser (`None` for no JSON-RPC
/// message).
pub(super) fn kind_of(msg: &[u8]) -> Option<Shape> {
    shape(&jsonrpc::Envelope::parse(msg).ok()?)
}

/// What a message already read is.
pub(super) fn shape(env: &jsonrpc::Envelope<'_>) -> Option<Shape> {
    Some(match env.kind()? {
        jsonrpc::Kind::Request { id, method } => Shape::Request {
            id: id.get().to_owned(),
            discover: method == "server/discover",
        },
        jsonrpc::Kind::Notification { .. } => Shape::Notification,
        jsonrpc::Kind::Response { .. } => Shape::Response,
    })
}

/// A message's kind, with what the bridge needs of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Shape {
    /// A request: its raw id, and whether it is `server/discover`.
    Request {
        id: String,
        discover: bool,
    },
    Notification,
    Response,
}

/// The raw id of a request.
pub(super) fn request_id(msg: &[u8]) -> Option<String> {
    match kind_of(msg)? {
        Shape::Request { id, .. } => Some(id),
        _ => None,
    }
}

/// Whether a message is a JSON-RPC response.
pub(super) fn is_response(msg: &[u8]) -> bool {
    kind_of(msg) == Some(Shape::Response)
}

/// Whether a response is a `DiscoverResult` naming a modern version we speak.
pub(super) fn is_discover_result(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct R {
        result: Option<D>,
    }
    #[derive(serde::Deserialize)]
    struct D {
        #[serde(rename = "supportedVersions")]
        supported_versions: Vec<String>,
    }
    serde_json::from_slice::<R>(body).is_ok_and(|r| {
        r.result.is_some_and(|d| {
            d.supported_versions
                .iter()
                .any(|v| protocol::MODERN_VERSIONS.contains(&v.as_str()))
        })
    })
}

/// A message as the server sent it, minus any [`RELATED`] member: only the bridge says which
/// request a message came with, never the server.
pub(super) fn unmarked(msg: Vec<u8>) -> Vec<u8> {
    if memchr::memmem::find(&msg, RELATED.as_bytes()).is_none() {
        return msg;
    }
    match std::str::from_utf8(&msg)
        .ok()
        .and_then(|t| jsonrpc::take_member(t, RELATED))
    {
        Some((stripped, _)) => stripped.into_bytes(),
        // Marked somewhere deeper (inside params): harmless, the peer reads only the top level.
        None => msg,
    }
}

/// `msg` marked as having come on the stream of our request `id`.
pub(super) fn mark(msg: Vec<u8>, id: &str) -> Vec<u8> {
    match std::str::from_utf8(&msg)
        .ok()
        .and_then(|t| jsonrpc::set_member(t, RELATED, id))
    {
        Some(marked) => marked.into_bytes(),
        None => msg,
    }
}

pub(super) enum BodyError {
    TooLarge,
    Lost(String),
}

/// A JSON body read whole, but never more than `max` bytes of it.
pub(super) async fn bounded_body(
    resp: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, BodyError> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Lost(crate::http_client::http_error_chain(&e)))?;
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The events of a response body, one event bounded like a stdio line.
pub(super) fn sse_events(
    resp: reqwest::Response,
) -> SseReader<impl futures_util::Stream<Item = Result<bytes::Bytes, String>> + Unpin> {
    SseReader::new(
        resp.bytes_stream()
            .map(|r| r.map_err(|e| crate::http_client::http_error_chain(&e))),
        MAX_LINE,
    )
}

pub(super) fn lost(e: SseError) -> String {
    match e {
        SseError::Body(b) => format!("connection lost: {b}"),
        other => other.to_string(),
    }
}

/// One message for the peer's line reader. JSON allows raw newlines only as whitespace between
/// tokens (inside strings they are escaped), so turning them into spaces keeps the value and
/// keeps a pretty-printed body on one line.
pub(super) fn line(mut msg: Vec<u8>) -> Vec<u8> {
    for b in msg.iter_mut() {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    msg.push(b'\n');
    msg
}

//! The two eras of MCP and what a gateway owns between them.
//!
//! *Legacy* revisions (2024-11-05 … 2025-11-25) open with an `initialize` handshake and keep a
//! session. The *modern* revision (2026-07-28) has neither: every request carries its protocol
//! version, client capabilities and client info in `_meta`, `server/discover` advertises what a
//! server speaks, and every result says what it is (`resultType`). Gatehouse terminates both
//! sides, so it speaks each era to whoever speaks it and owns the reserved `_meta` keys of each
//! hop: a client's envelope never reaches a server (ours does, to a modern one), and a server's
//! identity never reaches a client. Everything else in `_meta` (trace context, progress tokens,
//! task keys) goes end to end untouched, as do arguments and results.
//!
//! Also here: the `=?base64?…?=` header-value codec of the modern Streamable HTTP transport and
//! the check of a tool's `x-mcp-header` annotations.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::jsonrpc::{json_string, scan};

mod capabilities;
mod headers;
mod members;
mod results;
#[cfg(test)]
mod tests;

pub use headers::*;
pub use members::Members;
pub use results::*;

/// The modern revision.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Modern revisions we speak, oldest first.
pub const MODERN_VERSIONS: &[&str] = &[MODERN_VERSION];
/// Legacy (handshake) revisions we speak, oldest first.
pub const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// `_meta` key: the protocol version of a modern request.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities on a modern request.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's identity on a modern request.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the log level a modern client asks for on one request.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key: the server's identity on a modern result.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The prefix of the `requestState` Gatehouse gives a call parked for its client's input.
pub const STATE_PREFIX: &str = "gatehouse:";

/// How a result is meant: finished, or asking the client for input first (multi round-trip).
pub const RESULT_TYPE_KEY: &str = "resultType";

/// The byte searches of the hot path, each built once (building a searcher costs more than
/// running it over a small message).
pub(crate) struct Needles {
    /// `io.modelcontextprotocol/`: any reserved `_meta` key.
    pub reserved: memchr::memmem::Finder<'static>,
    /// The protocol-version key: a modern envelope.
    pub version: memchr::memmem::Finder<'static>,
    /// The server-identity key.
    pub server_info: memchr::memmem::Finder<'static>,
    /// `x-mcp-header`.
    pub x_mcp_header: memchr::memmem::Finder<'static>,
    /// The prefix of a `requestState` of ours (a parked call's).
    pub state: memchr::memmem::Finder<'static>,
}

/// The searchers, built on first use.
pub(crate) static NEEDLES: std::sync::LazyLock<Needles> = std::sync::LazyLock::new(|| Needles {
    reserved: memchr::memmem::Finder::new(b"io.modelcontextprotocol/"),
    version: memchr::memmem::Finder::new(PROTOCOL_VERSION_KEY.as_bytes()),
    server_info: memchr::memmem::Finder::new(SERVER_INFO_KEY.as_bytes()),
    x_mcp_header: memchr::memmem::Finder::new(b"x-mcp-header"),
    state: memchr::memmem::Finder::new(STATE_PREFIX.as_bytes()),
});

/// Which era a peer speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: `initialize`, sessions. What a peer is until it shows otherwise.
    #[default]
    Legacy,
    /// 2026-07-28: per-request envelope, `server/discover`.
    Modern,
}

impl Era {
    /// `legacy` or `modern`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// Every version we speak, newest first, as `server/discover` lists them.
pub fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .rev()
        .chain(LEGACY_VERSIONS.iter().rev())
        .copied()
        .collect()
}

/// Gatehouse's identity, as a modern `_meta` value.
pub fn our_info() -> &'static str {
    static INFO: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{{\"name\":\"gatehouse\",\"title\":\"Gatehouse\",\"version\":{}}}",
            json_string(env!("CARGO_PKG_VERSION"))
        )
    });
    &INFO
}

/// Our envelope's members but the capabilities, as `_meta` text (built once).
fn our_stamp() -> &'static str {
    static STAMP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{}:{},{}:{}",
            json_string(PROTOCOL_VERSION_KEY),
            json_string(MODERN_VERSION),
            json_string(CLIENT_INFO_KEY),
            our_info(),
        )
    });
    &STAMP
}

/// What a client declared it can answer, kept small: its capabilities object reduced to the
/// members Gatehouse asks about, read by the one table in [`capabilities`] (so `"elicitation":
/// {}` is form elicitation in both eras). A session keeps this, never the client's whole
/// (client-sized) object; only the members the table knows are parsed.
pub fn answerable(capabilities: &str) -> String {
    const KEYS: [&[u8]; 3] = [b"elicitation", b"sampling", b"roots"];
    match scan::top_level(capabilities.as_bytes(), KEYS) {
        Some(found) => {
            // Built by pushes (a request's own capabilities are read on every modern call).
            let mut kept = String::from("{");
            for (k, r) in KEYS.iter().zip(found) {
                let Some(r) = r else { continue };
                if kept.len() > 1 {
                    kept.push(',');
                }
                kept.push('"');
                kept.push_str(&String::from_utf8_lossy(k));
                kept.push_str("\":");
                kept.push_str(&capabilities[r]);
            }
            kept.push('}');
            capabilities::normalized(&kept)
        }
        None => capabilities::normalized(capabilities),
    }
}

/// A modern request's envelope, as its client sent it.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// The protocol version the request is in.
    pub version: String,
    /// The client's capabilities (raw JSON).
    pub capabilities: String,
    /// `clientInfo.name`, `clientInfo.version`.
    pub client: (Option<String>, Option<String>),
}

/// Why a modern request's envelope is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// A required key is missing, or a value has the wrong type (-32602).
    #[error("{0}")]
    Invalid(String),
    /// A version we do not speak in the modern era (-32022, with the versions we do).
    #[error("Unsupported protocol version: {0}")]
    Unsupported(String),
}

/// The modern envelope of a request's params: `Ok(None)` for a legacy request (no protocol
/// version in `_meta`, which legacy clients never send: the prefix is reserved).
pub fn read_envelope(params: Option<&RawValue>) -> Result<Option<Envelope>, EnvelopeError> {
    let Some(params) = params else {
        return Ok(None);
    };
    // Legacy traffic never carries the key: most requests are decided without a parse.
    if NEEDLES.version.find(params.get().as_bytes()).is_none() {
        return Ok(None);
    }
    // `_meta` is found at the top level and its envelope keys inside it, in one pass; the rest
    // is stepped over (never parsed for this).
    let text = params.get();
    match scan::top_level_and_inner(text.as_bytes(), [b"_meta"], 0, ENVELOPE_KEYS) {
        Some(([None], _)) => Ok(None),
        // `_meta` that is no object carries no envelope.
        Some(([Some(_)], None)) => Ok(None),
        Some(([Some(_)], Some(inner))) => envelope_of(inner.map(|r| r.map(|r| &text[r]))),
        // Escaped keys, a key twice or malformed text: a parser decides.
        None => {
            #[derive(Deserialize)]
            struct P<'a> {
                #[serde(borrow, rename = "_meta", default)]
                meta: Option<&'a RawValue>,
            }
            match serde_json::from_str::<P>(text) {
                Ok(P { meta: Some(m) }) => envelope_of_meta(m.get()),
                _ => Ok(None),
            }
        }
    }
}

/// The envelope's keys in `_meta`, in the order [`envelope_of`] takes their values.
const ENVELOPE_KEYS: [&[u8]; 3] = [
    PROTOCOL_VERSION_KEY.as_bytes(),
    CLIENT_CAPABILITIES_KEY.as_bytes(),
    CLIENT_INFO_KEY.as_bytes(),
];

/// The modern envelope in a request's `_meta` (its raw text).
pub fn envelope_of_meta(meta: &str) -> Result<Option<Envelope>, EnvelopeError> {
    if let Some(found) = scan::top_level(meta.as_bytes(), ENVELOPE_KEYS) {
        return envelope_of(found.map(|r| r.map(|r| &meta[r])));
    }
    // What the scan cannot decide (escaped keys, a key twice), a parser does: the last wins.
    let Ok(meta) = serde_json::from_str::<BTreeMap<std::borrow::Cow<'_, str>, &RawValue>>(meta)
    else {
        return Ok(None);
    };
    envelope_of(
        [
            PROTOCOL_VERSION_KEY,
            CLIENT_CAPABILITIES_KEY,
            CLIENT_INFO_KEY,
        ]
        .map(|k| meta.get(k).map(|v| v.get())),
    )
}

/// The envelope from the raw values of its keys in `_meta` (`ENVELOPE_KEYS`' order).
fn envelope_of(
    [version, capabilities, info]: [Option<&str>; 3],
) -> Result<Option<Envelope>, EnvelopeError> {
    let Some(version) = version else {
        return Ok(None);
    };
    let Some(capabilities) = capabilities else {
        return Err(EnvelopeError::Invalid(format!(
            "params._meta is missing the required envelope key {CLIENT_CAPABILITIES_KEY}"
        )));
    };
    if !capabilities.starts_with('{') {
        return Err(EnvelopeError::Invalid(format!(
            "{CLIENT_CAPABILITIES_KEY} must be an object"
        )));
    }
    let Ok(version) = serde_json::from_str::<String>(version) else {
        return Err(EnvelopeError::Invalid(format!(
            "{PROTOCOL_VERSION_KEY} must be a string"
        )));
    };
    if !MODERN_VERSIONS.contains(&version.as_str()) {
        return Err(EnvelopeError::Unsupported(version));
    }
    #[derive(Deserialize, Default)]
    struct Who {
        name: Option<String>,
        version: Option<String>,
    }
    let who: Who = info
        .and_then(|w| serde_json::from_str(w).ok())
        .unwrap_or_default();
    Ok(Some(Envelope {
        version,
        capabilities: capabilities.to_owned(),
        client: (
            client_label(who.name, MAX_CLIENT_NAME),
            client_label(who.version, MAX_CLIENT_VERSION),
        ),
    }))
}

/// The most of a client's `clientInfo.name` Gatehouse keeps (characters); the rest is cut.
pub const MAX_CLIENT_NAME: usize = 128;
/// The most of a client's `clientInfo.version` Gatehouse keeps (characters).
pub const MAX_CLIENT_VERSION: usize = 64;

/// A client's self-description as Gatehouse keeps it — in its session, every activity row and
/// approval, and a modern session's key: at most `max` characters (cut, with "…"), control
/// characters (line breaks among them) as spaces, empty as none. Bounded at the edge, whatever
/// size the client sent.
pub fn client_label(text: Option<String>, max: usize) -> Option<String> {
    let text = text?;
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(max).is_some() {
        out.pop();
        out.push('…');
    }
    let out = out.trim().to_owned();
    (!out.is_empty()).then_some(out)
}

/// The `data` of an unsupported-version error: the versions we speak and the one asked for.
pub fn unsupported_data(requested: &str) -> String {
    let supported: Vec<String> = supported_versions()
        .iter()
        .map(|v| json_string(v))
        .collect();
    format!(
        "{{\"supported\":[{}],\"requested\":{}}}",
        supported.join(","),
        json_string(requested)
    )
}

/// A request's params for the next hop, a server of `era`: the previous hop's protocol keys
/// leave `_meta` (a legacy server never sees an envelope, which a dual-era server would refuse
/// on its legacy connection) and, for a modern server, ours go in — our version and identity,
/// and the capabilities of the client the request comes from when it declared them (so a
/// multi round-trip request it can answer passes through), else none. `None`: the params are
/// unchanged (most legacy traffic, decided without a parse).
pub fn for_upstream(params: Option<&RawValue>, era: Era, declared: Option<&str>) -> Option<String> {
    let text = params.map_or("", |p| p.get());
    let reserved = NEEDLES.reserved.find(text.as_bytes()).is_some();
    if era == Era::Legacy && !reserved {
        return None;
    }
    // Only `_meta` is read and rewritten; the other members (the arguments) keep their bytes and
    // are stepped over, not parsed.
    let meta_range = match params {
        None => None,
        Some(p) => {
            let [m] = scan::top_level(p.get().as_bytes(), [b"_meta"])?;
            m
        }
    };
    // Borrowed: the members that stay are copied as they are, never re-encoded.
    let mut meta: BTreeMap<std::borrow::Cow<'_, str>, &RawValue> = meta_range
        .clone()
        .and_then(|r| serde_json::from_str(&text[r]).ok())
        .unwrap_or_default();
    let client_capabilities = meta.remove(CLIENT_CAPABILITIES_KEY);
    meta.remove(PROTOCOL_VERSION_KEY);
    meta.remove(CLIENT_INFO_KEY);
    if era == Era::Legacy {
        meta.remove(LOG_LEVEL_KEY);
    }
    let mut new_meta = String::with_capacity(128);
    new_meta.push('{');
    push_members(&mut new_meta, &meta);
    if era == Era::Modern {
        // The request's own (a 2026-07-28 client's), else what the client's session declared
        // (a 2025 client's `initialize`), read by the one table.
        let caps = match client_capabilities
            .map(|c| c.get())
            .filter(|c| c.starts_with('{'))
        {
            Some(own) => capabilities::translated(own).into_owned(),
            None => declared.map_or_else(|| "{}".to_owned(), capabilities::normalized),
        };
        if new_meta.len() > 1 {
            new_meta.push(',');
        }
        new_meta.push_str(our_stamp());
        new_meta.push_str(",\"");
        new_meta.push_str(CLIENT_CAPABILITIES_KEY);
        new_meta.push_str("\":");
        new_meta.push_str(&caps);
    }
    new_meta.push('}');
    let out = match (params, meta_range) {
        (None, _) => ["{\"_meta\":", &new_meta, "}"].concat(),
        (Some(_), Some(r)) => crate::jsonrpc::splice(text, r, &new_meta),
        (Some(_), None) if era == Era::Legacy => return None,
        (Some(_), None) => insert_first(text, "_meta", &new_meta),
    };
    // Valid JSON by construction: valid params with one valid member replaced or added.
    Some(out)
}

/// Appends `members` to an object being written (`out` holds its `{` and any members before):
/// keys quoted, values as their raw text.
pub(crate) fn push_members(out: &mut String, members: &BTreeMap<Cow<'_, str>, &RawValue>) {
    for (k, v) in members {
        if !out.ends_with('{') {
            out.push(',');
        }
        out.push_str(&json_string(k));
        out.push(':');
        out.push_str(v.get());
    }
}

/// `raw` (an object) with `"key":value` as its first member.
pub(crate) fn insert_first(raw: &str, key: &str, value: &str) -> String {
    let body = raw.trim_start();
    let Some(rest) = body.strip_prefix('{') else {
        return raw.to_owned();
    };
    let empty = rest.trim_start().starts_with('}');
    let mut out = String::with_capacity(raw.len() + key.len() + value.len() + 4);
    out.push('{');
    out.push_str(&json_string(key));
    out.push(':');
    out.push_str(value);
    if !empty {
        out.push(',');
    }
    out.push_str(rest);
    out
}

//! The MCP handshake with one server: a `server/discover` probe (MCP 2026-07-28); when the
//! server is not modern, `initialize` and `notifications/initialized`; then every page of
//! `tools/list`. A server is `running` only when all of it succeeded within its startup timeout.
//!
//! The probe decides the era: a `DiscoverResult` naming a modern version we speak makes the
//! server modern (every later request carries our envelope, see [`crate::protocol`]). Anything
//! else — an error of any code, garbage, no answer within [`PROBE_TIMEOUT`], a result naming no
//! modern version — falls back to `initialize`; the fallback is never keyed on one error code.
//! A modern server that answers the fallback `initialize` with the unsupported-version error
//! (its discover answer was merely slow) is probed once more. The era is found again at every
//! start, so a server upgraded in place is seen as it now is.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;

use super::rpc::{CallError, Reply, RpcPeer};
use super::status::ToolDef;
use crate::protocol::{self, Era};

/// How long a server may take to answer the `server/discover` probe before it is taken for a
/// legacy server (within its startup timeout).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The protocol version we offer servers; every peer in PEERS.md accepts it.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// What we declare to servers as their client. The gateway forwards roots, sampling and
/// elicitation requests raised during a call to that call's client; outside a call Gatehouse
/// answers `roots/list` itself (with no roots). And that apps can be shown (MCP Apps,
/// `io.modelcontextprotocol/ui`): a tool's `_meta.ui` and its `ui://` resource reach every client
/// unchanged, so a server that offers its app only to hosts that can show one offers it through
/// Gatehouse as it would directly to such a host (clients that show none ignore `_meta.ui`).
const CLIENT_CAPABILITIES: &str = r#"{"roots":{"listChanged":false},"sampling":{},"elicitation":{},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}"#;

/// A finished handshake.
#[derive(Debug)]
pub struct Ready {
    /// Every tool of every page of `tools/list`.
    pub tools: Vec<Arc<ToolDef>>,
    /// The `capabilities` the server declared.
    pub capabilities: Option<serde_json::Value>,
    /// `serverInfo.name`.
    pub name: Option<String>,
    /// `serverInfo.version`.
    pub version: Option<String>,
    /// The protocol version the server answered with.
    pub protocol_version: Option<String>,
    /// Its era: modern (answered `server/discover`) or legacy (`initialize`).
    pub era: Era,
    /// The `instructions` it gave (cut to [`MAX_INSTRUCTIONS_BYTES`]): pinned, never passed on.
    pub instructions: Option<String>,
}

/// The most bytes of a server's `instructions` kept (the rest is cut with `…`).
pub const MAX_INSTRUCTIONS_BYTES: usize = 64 << 10;

fn instructions(s: Option<String>) -> Option<String> {
    s.map(|s| match s.len() > MAX_INSTRUCTIONS_BYTES {
        true => {
            let mut at = MAX_INSTRUCTIONS_BYTES;
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            format!("{}…", &s[..at])
        }
        false => s,
    })
}

/// Why a handshake did not finish.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// `initialize` got no answer in time.
    #[error("handshake timed out after {secs} s: the server never answered \"initialize\" (run its command in a terminal to see why, e.g. an npx download without network; raise \"startup_timeout_secs\" if it is just slow)")]
    InitializeTimeout {
        /// The startup timeout.
        secs: u64,
    },
    /// `initialize` answered, `tools/list` did not, in time.
    #[error("handshake timed out after {secs} s: the server answered \"initialize\" but not \"tools/list\"")]
    ToolsTimeout {
        /// The startup timeout.
        secs: u64,
    },
    /// The server answered `initialize` with an error (its raw error object).
    #[error("the server refused \"initialize\": {0}")]
    Refused(String),
    /// The connection failed under the handshake.
    #[error("{0}")]
    Lost(#[from] CallError),
    /// `tools/list` failed or was malformed.
    #[error("{0}")]
    Tools(String),
}

impl HandshakeError {
    /// Retrying cannot help (a timeout, a refused `initialize`): the server goes straight to
    /// `failed` instead of a restart loop.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            HandshakeError::InitializeTimeout { .. }
                | HandshakeError::ToolsTimeout { .. }
                | HandshakeError::Refused(_)
        )
    }
}

/// Runs the whole handshake within `timeout`; without the `server/discover` probe when `probe`
/// is false (the server died of it before).
pub async fn handshake(
    peer: &RpcPeer,
    timeout: Duration,
    probe_first: bool,
) -> Result<Ready, HandshakeError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let secs = timeout.as_secs();
    let probed = match probe_first {
        true => probe(peer, deadline, secs, Some(PROBE_TIMEOUT)).await?,
        false => None,
    };
    let opened = match probed {
        Some(found) => found,
        None => match initialize(peer, deadline, secs).await {
            Err(HandshakeError::Refused(e)) if unsupported_version(&e) => {
                // Modern evidence: a slow server settled on the probe after we gave up on it.
                probe(peer, deadline, secs, None)
                    .await?
                    .ok_or(HandshakeError::Refused(e))?
            }
            other => other?,
        },
    };
    let tools = tokio::time::timeout_at(deadline, list_tools(peer))
        .await
        .map_err(|_| HandshakeError::ToolsTimeout { secs })?
        .map_err(HandshakeError::Tools)?;
    Ok(Ready { tools, ..opened })
}

/// `server/discover`: `Some` when the server is modern (its era is set on the peer), `None` when
/// it is not (any error, garbage, silence for `limit`, no modern version offered).
async fn probe(
    peer: &RpcPeer,
    deadline: tokio::time::Instant,
    secs: u64,
    limit: Option<Duration>,
) -> Result<Option<Ready>, HandshakeError> {
    let until = match limit {
        Some(l) => deadline.min(tokio::time::Instant::now() + l),
        None => deadline,
    };
    peer.set_era(Era::Modern);
    peer.set_probing(true);
    let answer = tokio::time::timeout_at(until, peer.request("server/discover", None)).await;
    peer.set_era(Era::Legacy);
    if !matches!(answer, Ok(Err(_))) {
        // A lost connection keeps the mark: the actor learns the server died of the probe.
        peer.set_probing(false);
    }
    let result = match answer {
        Ok(Ok(Reply::Result(r))) => r,
        Ok(Ok(Reply::Error(_))) => return Ok(None),
        Ok(Err(e)) => return Err(HandshakeError::Lost(e)),
        Err(_) if tokio::time::Instant::now() >= deadline => {
            return Err(HandshakeError::InitializeTimeout { secs })
        }
        Err(_) => return Ok(None),
    };
    #[derive(serde::Deserialize)]
    struct Discover {
        #[serde(rename = "supportedVersions")]
        supported_versions: Vec<String>,
        #[serde(default)]
        capabilities: Option<serde_json::Value>,
        #[serde(rename = "_meta", default)]
        meta: Option<std::collections::HashMap<String, serde_json::Value>>,
        #[serde(default)]
        instructions: Option<String>,
    }
    let Ok(d) = serde_json::from_str::<Discover>(result.get()) else {
        return Ok(None);
    };
    let Some(version) = protocol::MODERN_VERSIONS
        .iter()
        .rev()
        .find(|v| d.supported_versions.iter().any(|s| s == *v))
    else {
        return Ok(None);
    };
    peer.set_era(Era::Modern);
    let info = d
        .meta
        .as_ref()
        .and_then(|m| m.get(protocol::SERVER_INFO_KEY))
        .cloned()
        .unwrap_or_default();
    let text = |k: &str| bounded(info.get(k).and_then(|v| v.as_str()).map(str::to_owned));
    Ok(Some(Ready {
        tools: Vec::new(),
        capabilities: d.capabilities,
        name: text("name"),
        version: text("version"),
        protocol_version: Some((*version).to_owned()),
        era: Era::Modern,
        instructions: instructions(d.instructions),
    }))
}

/// Whether an error object is the modern unsupported-version error.
fn unsupported_version(error: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct E {
        code: i64,
    }
    serde_json::from_str::<E>(error)
        .is_ok_and(|e| e.code == crate::jsonrpc::ErrorCode::UnsupportedProtocolVersion.code())
}

/// The legacy opening: `initialize`, then `notifications/initialized`.
async fn initialize(
    peer: &RpcPeer,
    deadline: tokio::time::Instant,
    secs: u64,
) -> Result<Ready, HandshakeError> {
    let params = format!(
        "{{\"protocolVersion\":\"{PROTOCOL_VERSION}\",\"capabilities\":{CLIENT_CAPABILITIES},\"clientInfo\":{{\"name\":\"gatehouse\",\"version\":\"{}\"}}}}",
        env!("CARGO_PKG_VERSION")
    );
    let params = RawValue::from_string(params).ok();
    let init = tokio::time::timeout_at(deadline, peer.request("initialize", params.as_deref()))
        .await
        .map_err(|_| HandshakeError::InitializeTimeout { secs })??;
    let init = match init {
        Reply::Error(e) => return Err(HandshakeError::Refused(e.get().to_owned())),
        Reply::Result(r) => r,
    };
    #[derive(serde::Deserialize)]
    struct InitResult {
        #[serde(rename = "serverInfo", default)]
        server_info: Option<Info>,
        #[serde(default)]
        capabilities: Option<serde_json::Value>,
        #[serde(rename = "protocolVersion", default)]
        protocol_version: Option<String>,
        #[serde(default)]
        instructions: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Info {
        name: Option<String>,
        version: Option<String>,
    }
    let (info, capabilities, protocol_version, said) =
        match serde_json::from_str::<InitResult>(init.get()) {
            Ok(i) => (
                i.server_info,
                i.capabilities,
                i.protocol_version,
                i.instructions,
            ),
            Err(_) => (None, None, None, None),
        };
    peer.notify("notifications/initialized", None).await?;
    Ok(Ready {
        tools: Vec::new(),
        capabilities,
        name: bounded(info.as_ref().and_then(|i| i.name.clone())),
        version: bounded(info.and_then(|i| i.version)),
        protocol_version: bounded(protocol_version),
        era: Era::Legacy,
        instructions: instructions(said),
    })
}

/// The longest `serverInfo.name`, `serverInfo.version` or protocol version a server's handshake
/// may leave in its status (shown in every status event and table); the rest is cut with `…`.
pub const MAX_INFO_CHARS: usize = 256;

/// `s` cut to [`MAX_INFO_CHARS`] characters.
fn bounded(s: Option<String>) -> Option<String> {
    s.map(|s| crate::text::cut(&s, MAX_INFO_CHARS))
}

/// Tools one server may list, at most: a listing over it is refused whole.
pub const MAX_TOOLS: usize = 10_000;
/// Bytes of tool definitions one server may list, at most (each page is also one line, at most
/// 16 MiB): a listing over it is refused whole.
pub const MAX_LISTING_BYTES: usize = 32 << 20;

/// Fetches every page of `tools/list` (at most 1,000 pages, [`MAX_TOOLS`] tools and
/// [`MAX_LISTING_BYTES`] of definitions: over either, the listing is refused whole and nothing of
/// it is kept or pinned).
pub async fn list_tools(peer: &RpcPeer) -> Result<Vec<Arc<ToolDef>>, String> {
    #[derive(serde::Deserialize)]
    struct Page {
        tools: Vec<Box<RawValue>>,
        #[serde(rename = "nextCursor", default)]
        next_cursor: Option<String>,
    }
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let (mut listed, mut bytes) = (0usize, 0usize);
    for _ in 0..1000 {
        let params = cursor.as_ref().and_then(|c| {
            RawValue::from_string(format!("{{\"cursor\":{}}}", crate::jsonrpc::json_string(c))).ok()
        });
        let page = match peer.request("tools/list", params.as_deref()).await {
            Ok(Reply::Result(r)) => serde_json::from_str::<Page>(r.get())
                .map_err(|e| format!("the server's tools/list result is malformed: {e}"))?,
            Ok(Reply::Error(e)) => return Err(format!("tools/list failed: {}", e.get())),
            Err(e) => return Err(e.to_string()),
        };
        for raw in page.tools {
            listed += 1;
            bytes = bytes.saturating_add(raw.get().len());
            if listed > MAX_TOOLS || bytes > MAX_LISTING_BYTES {
                return Err(format!(
                    "the server lists more than 10,000 tools or {} MiB of tool definitions; Gatehouse does not take a listing that large (nothing of it was kept): ask its maker to split it, or leave it out",
                    MAX_LISTING_BYTES >> 20
                ));
            }
            let tool = ToolDef::parse(raw, peer.redactions().clone())?;
            // A tool whose `x-mcp-header` annotations break the revision's rules cannot be
            // called over Streamable HTTP: it is left out of the list, with a note.
            if let Some(why) = tool.invalid_header_annotation() {
                peer.note(format!(
                    "left out tool \"{}\": its inputSchema's x-mcp-header annotation is invalid ({why})",
                    tool.name
                ));
                continue;
            }
            tools.push(Arc::new(tool));
        }
        match page.next_cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => return Ok(tools),
        }
    }
    Err("tools/list returned more than 1000 pages; giving up".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a server says of itself is kept to 256 characters, cut at a character.
    #[test]
    fn a_servers_name_is_bounded() {
        let long = "é".repeat(MAX_INFO_CHARS + 50);
        let cut = bounded(Some(long)).unwrap();
        assert_eq!(cut.chars().count(), MAX_INFO_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(bounded(Some("fs".into())).as_deref(), Some("fs"));
        assert_eq!(bounded(None), None);
    }
}

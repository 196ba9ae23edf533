//! The MCP handshake with one server: `initialize`, `notifications/initialized`, then every page
//! of `tools/list`. A server is `running` only when all of it succeeded within its startup
//! timeout.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;

use super::rpc::{CallError, Reply, RpcPeer};
use super::status::ToolDef;

/// The protocol version we offer servers; every peer in PEERS.md accepts it.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// What we declare to servers as their client. The gateway forwards roots, sampling and
/// elicitation requests raised during a call to that call's client; outside a call Gatehouse
/// answers `roots/list` itself (with no roots).
const CLIENT_CAPABILITIES: &str =
    r#"{"roots":{"listChanged":false},"sampling":{},"elicitation":{}}"#;

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

/// Runs the whole handshake within `timeout`.
pub async fn handshake(peer: &RpcPeer, timeout: Duration) -> Result<Ready, HandshakeError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let secs = timeout.as_secs();
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
    }
    #[derive(serde::Deserialize)]
    struct Info {
        name: Option<String>,
        version: Option<String>,
    }
    let (info, capabilities, protocol_version) =
        match serde_json::from_str::<InitResult>(init.get()) {
            Ok(i) => (i.server_info, i.capabilities, i.protocol_version),
            Err(_) => (None, None, None),
        };
    peer.notify("notifications/initialized", None).await?;
    let tools = tokio::time::timeout_at(deadline, list_tools(peer))
        .await
        .map_err(|_| HandshakeError::ToolsTimeout { secs })?
        .map_err(HandshakeError::Tools)?;
    Ok(Ready {
        tools,
        capabilities,
        name: info.as_ref().and_then(|i| i.name.clone()),
        version: info.and_then(|i| i.version),
        protocol_version,
    })
}

/// Fetches every page of `tools/list` (at most 1,000 pages).
pub async fn list_tools(peer: &RpcPeer) -> Result<Vec<Arc<ToolDef>>, String> {
    #[derive(serde::Deserialize)]
    struct Page {
        tools: Vec<Box<RawValue>>,
        #[serde(rename = "nextCursor", default)]
        next_cursor: Option<String>,
    }
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
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
            tools.push(Arc::new(ToolDef::parse(raw, peer.redactions().clone())?));
        }
        match page.next_cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => return Ok(tools),
        }
    }
    Err("tools/list returned more than 1000 pages; giving up".into())
}

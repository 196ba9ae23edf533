//! What the gateway answers itself: `initialize` (a 2025 client's handshake), `server/discover`
//! (Gatehouse's own identity and versions), a client's notifications (`initialized`,
//! `cancelled`), a client's answers to the requests forwarded to it, and a refused envelope.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::outcome::Outcome;
use super::session::{lock, Forwarded};
use super::{ClientSession, LATEST_VERSION, SUPPORTED_VERSIONS};
use crate::jsonrpc::{self, Envelope, ErrorCode};
use crate::supervisor::rpc::ResponseBody;

/// A 2025 client's `initialize`: who it is and what it can answer kept in its session; the
/// result says what Gatehouse offers.
pub(super) fn initialize(s: &Arc<ClientSession>, params: Option<&RawValue>) -> String {
    #[derive(Deserialize, Default)]
    struct Params {
        #[serde(rename = "protocolVersion", default)]
        protocol_version: Option<String>,
        #[serde(rename = "clientInfo", default)]
        client_info: Option<Who>,
        #[serde(default)]
        capabilities: Option<Box<RawValue>>,
    }
    #[derive(Deserialize, Default)]
    struct Who {
        name: Option<String>,
        version: Option<String>,
    }
    let p: Params = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let version = match p.protocol_version.as_deref() {
        Some(v) if SUPPORTED_VERSIONS.contains(&v) => v.to_owned(),
        _ => LATEST_VERSION.to_owned(),
    };
    s.set_info(|info| {
        let who = p.client_info.unwrap_or_default();
        info.name = crate::protocol::client_label(who.name, crate::protocol::MAX_CLIENT_NAME);
        if let Some(name) = &info.name {
            crate::text::imitation::note(name);
        }
        info.version =
            crate::protocol::client_label(who.version, crate::protocol::MAX_CLIENT_VERSION);
        info.protocol_version = Some(version.clone());
        // What it can answer: a 2026-07-28 server's input requests are relayed only if so.
        info.capabilities = p.capabilities.map(|c| crate::protocol::answerable(c.get()));
    });
    s.log_hello("initialize");
    serde_json::json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "prompts": {"listChanged": false},
            "resources": {"subscribe": true, "listChanged": false},
            "completions": {},
            "logging": {}
        },
        "serverInfo": {"name": "gatehouse", "title": "Gatehouse", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Gatehouse gathers the tools of the MCP servers it runs; each tool is named server__tool."
    })
    .to_string()
}

/// A client's notification: `initialized` noted, `cancelled` ends the call (or the listen stream)
/// it names.
pub(super) fn client_notification(s: &Arc<ClientSession>, method: &str, params: Option<&RawValue>) {
    match method {
        "notifications/initialized" => s.set_info(|i| i.initialized = true),
        "notifications/cancelled" => {
            #[derive(Deserialize)]
            struct P<'a> {
                #[serde(borrow, rename = "requestId")]
                request_id: &'a RawValue,
            }
            if let Some(p) = params.and_then(|p| serde_json::from_str::<P>(p.get()).ok()) {
                s.unlisten(p.request_id.get());
                s.cancel(p.request_id.get());
            }
        }
        _ => {}
    }
}

/// A client's answer to a request forwarded to it: to the server that asked, or to the call that
/// waits for it.
pub(super) async fn client_response(s: &Arc<ClientSession>, id: &RawValue, env: &Envelope<'_>) {
    let target = lock(&s.forwarded).remove(id.get());
    match target {
        Some(Forwarded::Upstream { peer, upstream_id }) => {
            let body = match (env.result, env.error) {
                (_, Some(e)) => ResponseBody::Error(e),
                (Some(r), None) => ResponseBody::Result(r),
                (None, None) => return,
            };
            peer.respond(&upstream_id, body).await;
        }
        Some(Forwarded::Input(waiting)) => {
            let answer = match (env.result, env.error) {
                (_, Some(e)) => Err(e.to_owned()),
                (Some(r), None) => Ok(r.to_owned()),
                (None, None) => return,
            };
            let _ = waiting.send(answer);
        }
        None => {}
    }
}

/// What Gatehouse says of itself to `server/discover` (MCP 2026-07-28): every version it
/// speaks, both eras; its capabilities; its identity in `_meta`. Stateless, so any client may
/// ask at any time, with or without a session.
pub fn discover_result() -> String {
    let versions: Vec<String> = crate::protocol::supported_versions()
        .iter()
        .map(|v| jsonrpc::json_string(v))
        .collect();
    format!(
        concat!(
            "{{\"resultType\":\"complete\",\"supportedVersions\":[{versions}],",
            "\"capabilities\":{{\"tools\":{{\"listChanged\":true}},\"prompts\":{{\"listChanged\":false}},",
            "\"resources\":{{\"listChanged\":false}},\"completions\":{{}}}},",
            "\"instructions\":\"Gatehouse gathers the tools of the MCP servers it runs; each tool is named server__tool.\",",
            "\"ttlMs\":{ttl},\"cacheScope\":\"private\",\"_meta\":{{{key}:{info}}}}}"
        ),
        versions = versions.join(","),
        ttl = crate::protocol::LIST_TTL_MS,
        key = jsonrpc::json_string(crate::protocol::SERVER_INFO_KEY),
        info = crate::protocol::our_info(),
    )
}

/// The error answer to a modern request whose envelope is refused: -32602 for a missing or
/// malformed key, -32022 with the versions we speak for an unknown version.
pub fn envelope_error(id: &str, e: &crate::protocol::EnvelopeError) -> Outcome {
    use crate::protocol::EnvelopeError;
    match e {
        EnvelopeError::Invalid(why) => Outcome::error(id, ErrorCode::InvalidParams, why),
        EnvelopeError::Unsupported(v) => Outcome::error_with_data(
            id,
            ErrorCode::UnsupportedProtocolVersion,
            "Unsupported protocol version",
            &crate::protocol::unsupported_data(v),
        ),
    }
}

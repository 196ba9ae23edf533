//! Gatehouse core: supervises a person's MCP servers and routes AI clients' calls to them.
//!
//! # Layout
//! - [`activity`]: the SQLite activity log of routed calls (its own thread; never fails a call).
//! - [`clients`]: the AI clients (Claude Desktop, Claude Code, Cursor, VS Code) and their config files.
//! - [`approval`]: the policy and the `ApprovalBroker` (held calls, remembered answers, pins).
//! - [`config`]: the JSON config model, validation with file/line/column errors, atomic saves.
//! - [`import`]: servers from AI clients' config files and Gremia manifests into a Gatehouse config.
//! - [`hub`]: [`Hub::start`] wires everything and returns the cloneable [`HubHandle`].
//! - [`supervisor`]: one actor per server — spawn, handshake, restart with backoff, stop.
//!   - `supervisor::process`: process groups, minimal env, group signals.
//!   - `supervisor::rpc`: the JSON-RPC connection to one child (pending table, reader, writer).
//! - [`jsonrpc`]: the envelope (raw params/results) and the bounded newline codec.
//! - [`events`]: the broadcast bus (status changes, log lines).
//! - [`logs`]: per-server ring buffer and rotated log file.
//! - [`naming`]: exposed tool names `server__tool`.
//! - [`private`]: 0700 directories and 0600 files for everything Gatehouse keeps.
//! - [`probe`]: one server started on its own and reported on (`gatehouse test`).
//! - [`profiles`]: client profiles' tokens (one per AI client).
//! - [`secrets`]: where secret references get their values.
//! - [`control`]: the control socket the CLI verbs talk to.
//! - [`gateway`]: the MCP endpoint clients talk to (HTTP, stdio, the `connect` bridge).
//! - [`service`]: the hub with its gateway and control socket, as `serve` and the app run it.
//!
//! This crate never depends on Tauri or a display.

#![warn(missing_docs)]

pub mod activity;
pub mod approval;
pub mod clients;
pub mod config;
pub mod connect;
pub mod control;
pub mod events;
pub mod gateway;
pub mod hub;
pub mod import;
pub mod jsonrpc;
pub mod logs;
pub mod naming;
pub mod oauth;
pub mod private;
pub mod probe;
pub mod profiles;
pub mod protocol;
pub mod secrets;
pub mod service;
pub mod supervisor;

pub use config::{Config, ServerId};

/// An HTTP client builder with TLS ready: rustls with the ring provider (OpenSSL is never
/// linked). Every reqwest client in Gatehouse starts here.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    // Installing the process-wide provider twice is harmless (the second call is refused).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}
/// A reqwest error with every cause it wraps (`error sending request: …: connection refused`).
pub(crate) fn http_error_chain(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

pub use hub::{Hub, HubHandle, HubOptions};
pub use supervisor::{ServerStatus, State, Tuning};

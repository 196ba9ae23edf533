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
//! - [`arguments`]: a call's arguments read once, as I-JSON, by every rule, grant and view.
//! - [`jsonrpc`]: the envelope (raw params/results) and the bounded newline codec.
//! - [`events`]: the broadcast bus (status changes, log lines).
//! - [`logs`]: per-server ring buffer and rotated log file.
//! - [`naming`]: exposed tool names `server__tool`.
//! - [`tool`], [`token`], [`http_client`], [`sync`]: nouns every floor shares — a listed tool's
//!   definition, bearer tokens, the HTTP client every request starts from, the lock helper.
//! - [`text`]: text from clients and servers, kept bounded.
//! - [`private`]: 0700 directories and 0600 files for everything Gatehouse keeps.
//! - [`probe`]: one server started on its own and reported on (`gatehouse test`).
//! - [`profiles`]: client profiles' tokens (one per AI client).
//! - [`sandbox`]: every stdio server confined (Landlock + seccomp on Linux).
//! - [`registry`]: the MCP Registry as a catalog, and its entries made into pinned server entries.
//! - [`secrets`]: where secret references get their values.
//! - [`control`]: the control socket the CLI verbs talk to.
//! - [`gateway`]: the MCP endpoint clients talk to (HTTP, stdio, the `connect` bridge).
//! - [`service`]: the hub with its gateway and control socket, as `serve` and the app run it.
//!
//! This crate never depends on Tauri or a display.

#![warn(missing_docs)]

pub mod activity;
pub mod approval;
pub mod arguments;
pub mod client_file;
pub mod clients;
pub mod config;
pub mod connect;
pub mod control;
pub mod credentials;
pub mod egress;
pub mod events;
pub mod gateway;
pub mod http_client;
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
pub mod registry;
pub mod sandbox;
pub mod secrets;
pub mod service;
pub mod supervisor;
pub mod sync;
pub mod text;
pub mod token;
pub mod tool;
pub mod watch;

pub use config::{Config, ServerId};

pub use http_client::http_client_builder;
pub use hub::{Hub, HubHandle, HubOptions};
pub use supervisor::{ServerStatus, State, Tuning};

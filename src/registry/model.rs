//! The MCP Registry's documents (its published `v0.1` API and `server.json`), read leniently:
//! fields Gatehouse does not use are ignored, so a registry that adds some still works.

use serde::{Deserialize, Serialize};

/// One page of `GET /v0.1/servers` (or a server's versions).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ServerList {
    /// The servers on this page.
    pub servers: Vec<ServerResponse>,
    /// The cursor of the next page.
    #[serde(default)]
    pub metadata: Option<ListMetadata>,
}

/// Paging.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ListMetadata {
    /// Where the next page starts (absent or empty: no more).
    #[serde(default, rename = "nextCursor")]
    pub next_cursor: Option<String>,
}

/// One server version as the registry serves it.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ServerResponse {
    /// Its `server.json`.
    pub server: ServerDetail,
    /// The registry's own notes (status, dates, latest).
    #[serde(default, rename = "_meta")]
    pub meta: serde_json::Value,
}

/// A `server.json`.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ServerDetail {
    /// Reverse-DNS name, `io.github.owner/server`.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its version.
    pub version: String,
    /// A display name.
    #[serde(default)]
    pub title: Option<String>,
    /// Ways to run it locally.
    #[serde(default)]
    pub packages: Vec<Package>,
    /// Where it runs remotely.
    #[serde(default)]
    pub remotes: Vec<Remote>,
}

/// A package that runs the server.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// `npm`, `pypi`, `oci`, `mcpb`, …
    pub registry_type: String,
    /// The package's name (or a bundle's URL).
    pub identifier: String,
    /// Its exact version.
    #[serde(default)]
    pub version: Option<String>,
    /// `npx`, `uvx`, `docker`, …
    #[serde(default)]
    pub runtime_hint: Option<String>,
    /// How it speaks MCP.
    #[serde(default)]
    pub transport: Option<Transport>,
    /// Arguments for the runtime (`docker run …`, `npx …`).
    #[serde(default)]
    pub runtime_arguments: Vec<Argument>,
    /// Arguments for the server itself.
    #[serde(default)]
    pub package_arguments: Vec<Argument>,
    /// Its environment.
    #[serde(default)]
    pub environment_variables: Vec<KeyValue>,
}

/// A package's transport.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Transport {
    /// `stdio`, `streamable-http` or `sse`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Where it listens (HTTP transports).
    #[serde(default)]
    pub url: Option<String>,
}

/// A remote server.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Remote {
    /// `streamable-http` or `sse`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its URL (may hold `{variables}`).
    pub url: String,
    /// Headers to send.
    #[serde(default)]
    pub headers: Vec<KeyValue>,
}

/// A command-line argument.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Argument {
    /// `positional` or `named`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A named argument's flag (`--port`).
    #[serde(default)]
    pub name: Option<String>,
    /// Its value, fixed by the publisher.
    #[serde(default)]
    pub value: Option<String>,
    /// Its default.
    #[serde(default)]
    pub default: Option<String>,
    /// A positional argument's label.
    #[serde(default)]
    pub value_hint: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub is_required: bool,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
}

/// An environment variable or header.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyValue {
    /// Its name.
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub is_required: bool,
    /// Whether its value is a secret (a token, a password).
    #[serde(default)]
    pub is_secret: bool,
    /// A value fixed by the publisher.
    #[serde(default)]
    pub value: Option<String>,
    /// Its default.
    #[serde(default)]
    pub default: Option<String>,
}

//! The user's configuration: the JSON model (servers, approval, gateway), its validation (errors
//! carry file, line, column and the fix) and atomic, backed-up writes.
//!
//! - `parse`: reading and validating a file; the error messages and their fixes.
//! - `write`: the file format back out, atomic saves, backups, and edits of one server entry.
//! - `paths`: default locations, `~/` expansion, command lines for people to read.

mod parse;
mod paths;
mod write;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

pub use parse::{validate_secret_name, ConfigError};
pub use paths::{command_line, default_config_path, default_data_dir, expand_tilde};
pub use write::{backup_path, keep_last_good, write_atomic};

/// Default handshake timeout (`initialize` + full `tools/list`).
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 60;
/// Default address of the gateway endpoint.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7723";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub servers: BTreeMap<ServerId, ServerConfig>,
    #[serde(default)]
    pub approval: ApprovalConfig,
    #[serde(default)]
    pub gateway: GatewayConfig,
}

/// A server id: `[a-z0-9-]{1,32}`. It is the first half of every exposed tool name, so it can never
/// contain `__`-style separators or characters a client would reject.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ServerId(String);

impl ServerId {
    pub fn parse(s: &str) -> Result<Self, String> {
        let ok = !s.is_empty()
            && s.len() <= 32
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(ServerId(s.to_owned()))
        } else {
            let suggestion: String = s
                .chars()
                .map(|c| match c {
                    'A'..='Z' => c.to_ascii_lowercase(),
                    'a'..='z' | '0'..='9' | '-' => c,
                    _ => '-',
                })
                .take(32)
                .collect();
            let suggestion = suggestion.trim_matches('-');
            let hint = if suggestion.is_empty() {
                String::new()
            } else {
                format!(" (for example \"{suggestion}\")")
            };
            Err(format!(
                "invalid server id \"{s}\": ids are 1 to 32 characters of a-z, 0-9 and '-'; rename it{hint}"
            ))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ServerId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ServerId::parse(&s).map_err(de::Error::custom)
    }
}

/// One configured server: how to reach it plus its policies.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub transport: Transport,
    pub enabled: bool,
    /// Server-wide approval flag for all its tools (a per-tool flag wins).
    pub requires_approval: Option<bool>,
    /// Per-tool policy, keyed by the server's own tool name.
    pub tools: BTreeMap<String, ToolPolicy>,
    pub startup_timeout_secs: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio(StdioTransport),
    Remote(RemoteTransport),
}

#[derive(Debug, Clone, PartialEq)]
pub struct StdioTransport {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, EnvValue>,
    pub cwd: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTransport {
    pub url: String,
    pub headers: BTreeMap<String, EnvValue>,
    pub allow_insecure: bool,
}

impl ServerConfig {
    /// The parts whose change requires a new process / connection.
    pub fn launch_eq(&self, other: &ServerConfig) -> bool {
        self.transport == other.transport && self.startup_timeout_secs == other.startup_timeout_secs
    }

    /// Names of the secrets this server needs at spawn/connect time.
    pub fn secret_refs(&self) -> Vec<&str> {
        let values = match &self.transport {
            Transport::Stdio(s) => s.env.values().collect::<Vec<_>>(),
            Transport::Remote(r) => r.headers.values().collect(),
        };
        values
            .into_iter()
            .filter_map(|v| match v {
                EnvValue::Secret { secret, .. } => Some(secret.as_str()),
                EnvValue::Plain(_) => None,
            })
            .collect()
    }
}

/// An env or header value: a plain string or a reference to a keychain secret.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvValue {
    Plain(String),
    Secret {
        secret: String,
        prefix: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_approval: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalDefault {
    #[default]
    AskUnlessReadOnly,
    FlaggedOnly,
    Always,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    #[serde(default)]
    pub default: ApprovalDefault,
    #[serde(default = "default_approval_timeout")]
    pub timeout_secs: u64,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            default: ApprovalDefault::default(),
            timeout_secs: default_approval_timeout(),
        }
    }
}

fn default_approval_timeout() -> u64 {
    45
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    #[serde(default = "default_listen", deserialize_with = "de_loopback_addr")]
    pub listen: SocketAddr,
    /// Browser origins allowed to call the gateway (e.g. "http://localhost:6274"); requests
    /// with any other `Origin` header, `null` included, are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: default_listen(),
            allowed_origins: Vec::new(),
        }
    }
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7723))
}

/// Parses a gateway address and refuses anything that is not loopback: the gateway holds the
/// user's tools and must never be reachable from the network.
pub fn parse_loopback_addr(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s.parse().map_err(|_| {
        format!("invalid listen address \"{s}\": use IP:PORT, for example \"{DEFAULT_LISTEN}\"")
    })?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "listen address \"{s}\" is not a loopback address: the gateway only binds 127.0.0.1 or [::1], for example \"{DEFAULT_LISTEN}\""
        ));
    }
    Ok(addr)
}

fn de_loopback_addr<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let s = String::deserialize(d)?;
    parse_loopback_addr(&s).map_err(de::Error::custom)
}

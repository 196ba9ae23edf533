//! The user's configuration: the JSON model (servers, approval, gateway), its validation (errors
//! carry file, line, column and the fix) and atomic, backed-up writes.
//!
//! - `parse`: reading and validating a file; the error messages and their fixes.
//! - `write`: the file format back out, atomic saves, backups, and edits of one server entry.
//! - `paths`: default locations, `~/` expansion, command lines for people to read.
//! - `lock`: one writer at a time (`PATH.lock`) and the cleanup of interrupted writes.

mod budget;
mod entries;
mod itself;
mod lock;
mod parse;
mod paths;
mod rate;
mod refusal;
pub mod rules;
mod tool;
mod values;
mod write;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

pub use budget::{budget_for, ResultBudget};
pub use entries::{client_spelling, repair_entry, InvalidEntry};
pub use itself::reaches_gatehouse;
pub use lock::{edit, lock, lock_path, remove_stale_temps, ConfigLock, EditError, LOCK_WAIT};
pub use parse::{parse_entry, validate_secret_name};
pub use paths::{
    command_line, default_config_path, default_data_dir, expand_tilde, split_command_line,
};
pub use rate::{RateLimit, MAX_RATE};
pub use refusal::{closest, readable, ConfigError, EntryError};
pub use tool::{spotlight_for, ToolPolicy};
pub use write::{backup_path, keep_last_good, resolve_link, write_atomic};

/// Default handshake timeout (`initialize` + full `tools/list`).
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 60;
/// The longest startup timeout accepted (an hour).
pub const MAX_STARTUP_TIMEOUT_SECS: u64 = 3600;
/// Default deadline of one request to a server (`call_timeout_secs`; 0 = none).
pub const DEFAULT_CALL_TIMEOUT_SECS: u64 = 300;
/// The longest call timeout accepted (a day).
pub const MAX_CALL_TIMEOUT_SECS: u64 = 86_400;
/// The longest approval timeout accepted (an hour).
pub const MAX_APPROVAL_TIMEOUT_SECS: u64 = 3600;
/// The keychain entry of the gateway's own token (which no server entry may name).
pub const GATEWAY_TOKEN_SECRET: &str = "gateway-token";
/// Default address of the gateway endpoint.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7723";

/// The whole config file (read entry by entry: see `entries.rs`).
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(try_from = "entries::RawConfig")]
pub struct Config {
    /// The servers that could be read, by id.
    pub servers: BTreeMap<ServerId, ServerConfig>,
    /// The server entries that could not be read, by their key as written: kept as written,
    /// each a row in state `invalid`.
    pub invalid: BTreeMap<String, InvalidEntry>,
    /// Which calls ask the person, and for how long.
    pub approval: ApprovalConfig,
    /// Where clients reach Gatehouse.
    pub gateway: GatewayConfig,
    /// Client profiles: each AI client's own token and tool set (`default`, everything, is
    /// implicit: the gateway token).
    pub clients: BTreeMap<ServerId, ClientProfile>,
    /// Where `gatehouse registry` and the app's "Find in the registry" look.
    pub registry: RegistryConfig,
    /// What an entry that says nothing gets (`"defaults": {"start": …}`).
    pub defaults: Defaults,
}

/// `"defaults"`: what a server entry that does not say gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// When servers start (`"at_launch"` when this says nothing either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartMode>,
    /// What a confined server whose entry says nothing of its network may reach (everything
    /// when this says nothing either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::sandbox::network::Network>,
}

impl Defaults {
    pub(super) fn is_default(&self) -> bool {
        self.start.is_none() && self.network.is_none()
    }
}

/// When a server starts (`"start"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StartMode {
    /// With the hub, and kept running.
    #[default]
    AtLaunch,
    /// When a call needs it; stopped after `idle_stop_secs` without calls. Its tools are listed
    /// from their last known definitions meanwhile.
    OnDemand,
}

impl StartMode {
    /// As the config and `status --json` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            StartMode::AtLaunch => "at_launch",
            StartMode::OnDemand => "on_demand",
        }
    }
}

/// How long an on-demand server may sit without calls before it is stopped, when its entry
/// does not say (`idle_stop_secs`).
pub const DEFAULT_IDLE_STOP_SECS: u64 = 600;
/// The longest idle time accepted (a day).
pub const MAX_IDLE_STOP_SECS: u64 = 86_400;

/// The MCP Registry Gatehouse searches (`GATEHOUSE_REGISTRY_URL` wins over it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// Its base URL (default: the official registry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A release younger than this many days is shown, never taken by `pin` or `pin --update`
    /// without `--now` (the supply-chain cool-down; default 7, `0` turns it off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_age_days: Option<u64>,
}

/// The cool-down when the config says nothing.
pub const DEFAULT_MIN_AGE_DAYS: u64 = 7;

impl RegistryConfig {
    pub(super) fn is_default(&self) -> bool {
        self.url.is_none() && self.min_age_days.is_none()
    }

    /// The cool-down in days.
    pub fn min_age_days(&self) -> u64 {
        self.min_age_days.unwrap_or(DEFAULT_MIN_AGE_DAYS)
    }
}

/// One client profile: which servers and tools an AI client sees, by its own token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ClientProfile {
    /// The servers it sees (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<ServerId>>,
    /// Per-tool settings by exposed name (`fs__move_file`) or a server's every tool
    /// (`github__*`): `enabled: false` hides them, `requires_approval` overrides the policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolPolicy>,
    /// Approval overrides for this client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ProfileApproval>,
    /// This client's calls a minute, all tools together (else `gateway.rate_limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// `"approve_via": "client"`: with no desktop attached, this client's held calls are asked
    /// through the client itself (MCP elicitation), Allow once or Deny.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve_via: Option<ApproveVia>,
    /// The most bytes of one tool result this client receives (`config/budget.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_budget: Option<ResultBudget>,
}

/// Where a client profile's held calls may be answered besides Gatehouse's own surfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproveVia {
    /// Through the client's own UI (MCP elicitation) when no desktop is attached.
    Client,
}

/// A profile's approval overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ProfileApproval {
    /// Which unflagged tools ask, for this client (else `approval.default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<ApprovalDefault>,
}

impl ClientProfile {
    /// Whether this client sees server `server` at all.
    pub fn sees_server(&self, server: &str) -> bool {
        self.servers
            .as_ref()
            .is_none_or(|s| s.iter().any(|id| id.as_str() == server))
    }

    /// The profile's setting for one exposed tool: the exact name wins over `server__*`.
    pub fn tool_policy(&self, server: &str, exposed: &str) -> Option<&ToolPolicy> {
        self.tools
            .get(exposed)
            .or_else(|| self.tools.get(&format!("{server}__*")))
    }

    /// Whether this client sees one exposed tool.
    pub fn sees_tool(&self, server: &str, exposed: &str) -> bool {
        self.sees_server(server)
            && self.tool_policy(server, exposed).and_then(|p| p.enabled) != Some(false)
    }
}

/// A server id: `[a-z0-9-]{1,32}`. It is the first half of every exposed tool name, so it can never
/// contain `__`-style separators or characters a client would reject.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ServerId(String);

impl ServerId {
    /// Checks an id, suggesting a valid one when it is not.
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::check(s).map_err(|(p, f)| refusal::sentence(&p, &f))
    }

    /// Checks an id: what is wrong and the fix (with a valid id suggested) when it is not.
    pub(super) fn check(s: &str) -> Result<Self, (String, String)> {
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
                format!(", for example \"{suggestion}\"")
            };
            Err((
                format!("invalid server id \"{}\"", crate::text::reveal(s)),
                format!("use 1 to 32 characters of a-z, 0-9 and '-'{hint}"),
            ))
        }
    }
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Looked up by its text (`servers.get("fs")`): the derived order is the text's order.
impl std::borrow::Borrow<str> for ServerId {
    fn borrow(&self) -> &str {
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
        ServerId::check(&s).map_err(|(p, f)| de::Error::custom(refusal::joined(&p, &f)))
    }
}

/// One configured server: how to reach it plus its policies.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// How the server is reached.
    pub transport: Transport,
    /// Whether it starts with the hub (`enabled: false` keeps it stopped).
    pub enabled: bool,
    /// Server-wide approval flag for all its tools (a per-tool flag wins).
    pub requires_approval: Option<bool>,
    /// Per-tool policy, keyed by the server's own tool name.
    pub tools: BTreeMap<String, ToolPolicy>,
    /// How long `initialize` plus the full `tools/list` may take.
    pub startup_timeout_secs: u64,
    /// How long one request to the server may take (`tools/call`, lists…); 0 = no limit.
    pub call_timeout_secs: u64,
    /// A display name (`name`), shown next to the id; the id stays what tools are named by.
    pub name: Option<String>,
    /// Tools the person expects the server to list (`tools_used`, as in Gremia manifests):
    /// checked at every start, a missing one is a warning.
    pub tools_used: Vec<String>,
    /// `validate_arguments`: refuse a call whose arguments do not match the tool's inputSchema
    /// (off by default; a per-tool setting wins).
    pub validate_arguments: bool,
    /// The entry's own `"start"` (`None`: the config's `defaults`).
    pub start: Option<StartMode>,
    /// When it starts, all said: its own `"start"`, else `defaults`, else at launch
    /// ([`Config::settle`]).
    pub effective_start: StartMode,
    /// `idle_stop_secs`: how long an on-demand server runs without calls.
    pub idle_stop_secs: u64,
    /// `unmasked_secrets`: keychain secrets this server is meant to hand over in its results
    /// (every other secret value it was given is masked in what it says).
    pub unmasked_secrets: Vec<String>,
    /// `spotlight`: its tools' text reaches clients marked as untrusted data (`config/tool.rs`).
    pub spotlight: bool,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A local command on stdio.
    Stdio(StdioTransport),
    /// A remote server over HTTP.
    Remote(RemoteTransport),
}

impl ServerConfig {
    /// The SHA-256 of what the server runs (its command line, or its URL): approvals pinned for
    /// one program never carry over to another.
    pub fn origin(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        match &self.transport {
            Transport::Stdio(t) => {
                h.update(b"stdio\0");
                h.update(t.command.as_bytes());
                for a in &t.args {
                    h.update(b"\0");
                    h.update(a.as_bytes());
                }
            }
            Transport::Remote(r) => {
                h.update(b"remote\0");
                h.update(r.url.as_bytes());
            }
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A local server: the command Gatehouse runs.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioTransport {
    /// The program (a leading `~/` is the home directory).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the minimal environment the child gets.
    pub env: BTreeMap<String, EnvValue>,
    /// Its working directory.
    pub cwd: Option<String>,
    /// How it is confined (`"sandbox"`; `default` when the entry says nothing).
    pub sandbox: crate::sandbox::SandboxPolicy,
    /// The package version its runner (`npx`, `uvx`) is pinned to and that artifact's integrity
    /// (`"pin"`): a start that would run another artifact is refused.
    pub pin: Option<Pin>,
}

/// An entry's `"pin"`: the exact version of the package its runner fetches, and the artifact's
/// integrity as the index gave it when pinned (npm's `dist.integrity`, `sha512-…`; PyPI's
/// `sha256:…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// The exact version.
    pub version: String,
    /// The artifact's integrity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
}

/// A remote server.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTransport {
    /// Its Streamable HTTP (or HTTP+SSE) endpoint.
    pub url: String,
    /// Headers sent with every request (values may be secret references).
    pub headers: BTreeMap<String, EnvValue>,
    /// Allow plain `http://` to a host that is not loopback.
    pub allow_insecure: bool,
    /// Allow an address in a private range (`10/8`, `172.16/12`, `192.168/16`, `fc00::/7`, …):
    /// refused unless the entry says so (`"allow_private": true`). Link-local and cloud
    /// metadata addresses are refused whatever it says.
    pub allow_private: bool,
    /// How Gatehouse signs in to it (`"auth"`, `"oauth"` in the entry).
    pub auth: RemoteAuth,
}

/// How a remote server is signed in to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RemoteAuth {
    /// No `"auth"`: OAuth when the server asks for it (401 with `WWW-Authenticate: Bearer`) and
    /// the entry has no `Authorization` header of its own; the configured headers otherwise.
    #[default]
    Auto,
    /// `"auth": "oauth"`: always OAuth (sign-in needed before the first connection).
    OAuth(OAuthSettings),
    /// `"auth": "none"`: the configured headers only; a 401 is a failure.
    None,
}

/// An OAuth entry's own settings (`"oauth": {"client_id": …, "scopes": […]}`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthSettings {
    /// A client id registered by hand with the authorization server (no registration then).
    pub client_id: Option<String>,
    /// Scopes asked for at sign-in, besides those the server names.
    pub scopes: Vec<String>,
}

impl RemoteTransport {
    /// Whether a 401 from this server may lead to a sign-in (`needs_sign_in`) rather than a
    /// failure: OAuth entries, and automatic ones without an `Authorization` header of their own.
    pub fn oauth_capable(&self) -> bool {
        match &self.auth {
            RemoteAuth::OAuth(_) => true,
            RemoteAuth::None => false,
            RemoteAuth::Auto => !self
                .headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case("authorization")),
        }
    }

    /// The entry's OAuth settings (defaults for an automatic entry).
    pub fn oauth_settings(&self) -> OAuthSettings {
        match &self.auth {
            RemoteAuth::OAuth(s) => s.clone(),
            _ => OAuthSettings::default(),
        }
    }
}

impl ServerConfig {
    /// The parts whose change requires a new process / connection.
    pub fn launch_eq(&self, other: &ServerConfig) -> bool {
        self.transport == other.transport && self.startup_timeout_secs == other.startup_timeout_secs
    }

    /// A stdio server's sandbox as `status` reports it (`None`: a remote server).
    pub fn sandbox_report(&self) -> Option<crate::sandbox::SandboxReport> {
        match &self.transport {
            Transport::Stdio(t) => Some(crate::sandbox::report(&t.sandbox)),
            Transport::Remote(_) => None,
        }
    }

    /// What the server runs, for tables: its command line (shell-quoted), or its URL without the
    /// query. Env and header values (which may hold secrets) are never part of it.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio(t) => command_line(
                std::iter::once(t.command.as_str()).chain(t.args.iter().map(String::as_str)),
            ),
            // A query string may carry a key: it is left out.
            Transport::Remote(r) => match r.url.split_once('?') {
                Some((base, _)) => format!("{base}?…"),
                None => r.url.clone(),
            },
        }
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
                EnvValue::Plain(_) | EnvValue::Env { .. } => None,
            })
            .collect()
    }
}

/// An env or header value: a plain string, a reference to a keychain secret, or a variable of
/// the hub's own environment.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvValue {
    /// The value itself.
    Plain(String),
    /// A variable of the hub's environment (`{"env": "VAR"}`), read at spawn/connect time; no
    /// shell expansion.
    Env {
        /// The variable's name.
        env: String,
    },
    /// A keychain secret, resolved at spawn/connect time only.
    Secret {
        /// The secret's name.
        secret: String,
        /// Text put before the value (`Bearer `).
        prefix: Option<String>,
    },
}

/// Which unflagged tools ask the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalDefault {
    /// Every tool that does not declare `readOnlyHint: true`.
    #[default]
    AskUnlessReadOnly,
    /// Only tools flagged `requires_approval`.
    FlaggedOnly,
    /// Every tool not explicitly set to `requires_approval: false`.
    Always,
}

/// The approval settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// Which unflagged tools ask.
    #[serde(default)]
    pub default: ApprovalDefault,
    /// How long a held call waits for an answer before it is denied.
    #[serde(
        default = "default_approval_timeout",
        deserialize_with = "de_approval_timeout"
    )]
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

fn de_approval_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = u64::deserialize(d)?;
    parse::bounded("timeout_secs", v, 1, MAX_APPROVAL_TIMEOUT_SECS)
        .map_err(|(p, f)| de::Error::custom(refusal::joined(&p, &f)))
}

fn default_approval_timeout() -> u64 {
    45
}

/// Where clients reach Gatehouse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// The loopback address of the HTTP endpoint.
    #[serde(default = "default_listen", deserialize_with = "de_loopback_addr")]
    pub listen: SocketAddr,
    /// Browser origins allowed to call the gateway (e.g. "http://localhost:6274"); requests
    /// with any other `Origin` header, `null` included, are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// Each client profile's calls a minute, for profiles without a `rate_limit` of their own
    /// (the default profile's). Counted per profile: one client's burst never spends another's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Each client profile's result budget, for profiles without one of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_budget: Option<ResultBudget>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: default_listen(),
            allowed_origins: Vec::new(),
            rate_limit: None,
            result_budget: None,
        }
    }
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7723))
}

/// Parses a gateway address and refuses anything that is not loopback: the gateway holds the
/// user's tools and must never be reachable from the network.
pub fn parse_loopback_addr(s: &str) -> Result<SocketAddr, String> {
    check_loopback_addr(s).map_err(|(p, f)| refusal::sentence(&p, &f))
}

fn check_loopback_addr(s: &str) -> Result<SocketAddr, (String, String)> {
    let addr: SocketAddr = s.parse().map_err(|_| {
        (
            format!("invalid listen address \"{s}\""),
            format!("use IP:PORT, for example \"{DEFAULT_LISTEN}\""),
        )
    })?;
    if !addr.ip().is_loopback() {
        return Err((
            format!("listen address \"{s}\" is not a loopback address"),
            format!(
                "the gateway only binds 127.0.0.1 or [::1]: use for example \"{DEFAULT_LISTEN}\""
            ),
        ));
    }
    Ok(addr)
}

fn de_loopback_addr<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let s = String::deserialize(d)?;
    check_loopback_addr(&s).map_err(|(p, f)| de::Error::custom(refusal::joined(&p, &f)))
}

//! The control socket: how CLI verbs (and approvers) talk to a running hub. A Unix socket (mode
//! 0600, in a 0700 dir), one JSON request line per connection, JSON response lines back. Nothing
//! here is reachable with a gateway client token: the socket is a separate, local-user channel.
//!
//! - `server`: the hub's side (bind, serve, one handler per request).
//! - `client`: the CLI's side, with typed answers.

mod client;
pub mod locate;
mod server;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use client::ControlClient;
pub use server::ControlServer;

/// Env var that overrides the control socket path.
pub const CONTROL_ENV: &str = "GATEHOUSE_CONTROL";

/// One request line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "verb", rename_all = "snake_case")]
pub enum Request {
    /// Every server's status.
    Status,
    /// Start a server.
    Start {
        /// The server's id.
        id: String,
    },
    /// Stop a server.
    Stop {
        /// The server's id.
        id: String,
    },
    /// Restart a server.
    Restart {
        /// The server's id.
        id: String,
    },
    /// Sign in to a remote server: answered with the authorization URL (`SignInStarted`) at
    /// once, then one more line (`SignInOutcome`) when the sign-in ends.
    AuthLogin {
        /// The server's id.
        id: String,
    },
    /// Sign out of a remote server (revoke where offered, delete the tokens).
    AuthLogout {
        /// The server's id.
        id: String,
    },
    /// A server's log lines (then, with `follow`, every new one).
    Logs {
        /// The server's id.
        id: String,
        /// Keep the connection open and send new lines.
        #[serde(default)]
        follow: bool,
        /// How many recent lines (all kept when absent).
        #[serde(default)]
        lines: Option<usize>,
    },
    /// The tools of one server or all running servers.
    Tools {
        /// The server's id (all when absent).
        #[serde(default)]
        id: Option<String>,
        /// Only what this client profile sees (absent: every tool, the gateway token's view).
        #[serde(default)]
        client: Option<String>,
    },
    /// Re-read the config file.
    Reload,
    /// The config file the hub runs from (`null`: it was started from none).
    ConfigPath,
    /// The folder of the hub's store of pinned artifacts (`null`: it has none).
    StorePath,
    /// Add a server to the config file (or replace `original`), then apply it.
    SaveServer {
        /// The server being replaced, when it is an edit.
        #[serde(default)]
        original: Option<String>,
        /// The server's id.
        id: String,
        /// The entry in the file format.
        entry: Value,
    },
    /// Remove a server from the config file, then stop it.
    RemoveServer {
        /// The server's id.
        id: String,
    },
    /// Set a server's `enabled` in the config file, then apply it (start or stop it).
    SetEnabled {
        /// The server's id.
        id: String,
        /// The new value.
        enabled: bool,
    },
    /// List a server's tools again without restarting it.
    RefreshTools {
        /// The server's id.
        id: String,
    },
    /// The gateway's URL and bearer token, for `gatehouse connect` (local user only): the
    /// gateway token, or client profile `client`'s.
    Gateway {
        /// A client profile (absent: the gateway token, every tool).
        #[serde(default)]
        client: Option<String>,
    },
    /// The client profiles: each one's servers, tool count and the client's known limit.
    Clients,
    /// Add (or replace) a client profile in the config file; its token is created.
    SaveClient {
        /// The profile's id.
        id: String,
        /// The servers it sees (all when absent).
        #[serde(default)]
        servers: Option<Vec<String>>,
    },
    /// Remove a client profile; its token stops working and its sessions end.
    RemoveClient {
        /// The profile's id.
        id: String,
    },
    /// A new token for a client profile; the old one stops working and its sessions end.
    RotateClientToken {
        /// The profile's id.
        id: String,
    },
    /// Pending approval requests.
    Approvals,
    /// Changes to what servers say (prompts, instructions, apps) waiting for the person;
    /// answered with `Approve` / `Deny` by their id.
    Changes,
    /// Every pin: tools, prompts, instructions and apps.
    Pins,
    /// Remembered answers ("always" and "session"), newest first.
    Grants,
    /// Revoke one remembered answer (the next call asks again).
    Revoke {
        /// The answer, as `grants` listed it.
        grant: crate::approval::Grant,
    },
    /// Allow a held call.
    Approve {
        /// The request's id.
        id: String,
        /// once (default), session or always.
        #[serde(default)]
        scope: Option<crate::approval::Scope>,
        /// The request's digest as it was shown ([`crate::approval::ApprovalRequest::digest`]);
        /// when given, an answer to a call whose digest differs is refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
    },
    /// Deny a held call.
    Deny {
        /// The request's id.
        id: String,
        /// Why, for the client.
        #[serde(default)]
        reason: Option<String>,
        /// As for `Approve`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
    },
    /// Revoke remembered approvals: `SERVER` or `SERVER__TOOL`.
    Forget {
        /// The server, or one of its tools.
        target: String,
    },
    /// Secret names the config references, with the servers using each (never values).
    Secrets,
    /// A secret was set or removed: restart the servers that use it.
    SecretChanged {
        /// The secret's name.
        name: String,
    },
    /// Runs a config's argument rules over the recorded Activity (`gatehouse rules test`).
    RulesTest(crate::hub::ReplayScope),
    /// Every argument rule of the config, by its name in it.
    Rules,
    /// Adds an argument rule to a server's tool (checked against its definition first).
    AddRule {
        /// The server's id.
        server: String,
        /// The server's own tool name.
        tool: String,
        /// For this client profile only (its tool's rules); absent: for every client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<String>,
        /// The rule.
        rule: crate::config::rules::Rule,
    },
    /// Removes the rule named `at` (if it is still `rule`, when given).
    RemoveRule {
        /// `servers.ID.tools.TOOL.rules[N]` or `clients.ID.tools.KEY.rules[N]`.
        at: String,
        /// The rule as it was shown.
        #[serde(default)]
        rule: Option<crate::config::rules::Rule>,
    },
    /// The changes to the AI clients' files not yet restored or acknowledged.
    ClientFiles,
    /// Puts back what a client's file held before the change it alerted about.
    RestoreClientFile {
        /// The file, as the alert names it.
        path: PathBuf,
    },
    /// Keeps the change a client's file alerted about.
    AckClientFile {
        /// The file, as the alert names it.
        path: PathBuf,
    },
    /// Writes Gatehouse's entry into a client's file (the hub tells its watch first, so the
    /// write never alerts).
    WriteClientEntry {
        /// The client's file.
        path: PathBuf,
        /// The client (`ClientKind`'s id).
        client: String,
        /// The entry.
        entry: Value,
        /// Entries to remove, by name.
        #[serde(default)]
        managed: Vec<String>,
    },
    /// Recent routed calls, newest first.
    Activity {
        /// How many (50 when absent).
        #[serde(default)]
        limit: Option<usize>,
        /// Only this server's calls.
        #[serde(default)]
        server: Option<String>,
        /// Only this client profile's calls (`default`: the gateway token's).
        #[serde(default)]
        client: Option<String>,
    },
}

/// How long a client waits for the first answer to a request that only reads or records (a
/// hub that accepts the connection and then says nothing is stuck, and the CLI says so). The
/// requests that start, stop or sign in are bounded by the hub's own deadlines instead.
pub const QUICK_ANSWER: std::time::Duration = std::time::Duration::from_secs(30);

impl Request {
    /// The deadline of the first answer, for the requests that are only reads or records.
    pub fn answer_deadline(&self) -> Option<std::time::Duration> {
        match self {
            Request::Status
            | Request::Tools { .. }
            | Request::ConfigPath
            | Request::StorePath
            | Request::Gateway { .. }
            | Request::Clients
            | Request::Approvals
            | Request::Changes
            | Request::Pins
            | Request::Grants
            | Request::Revoke { .. }
            | Request::Approve { .. }
            | Request::Deny { .. }
            | Request::Forget { .. }
            | Request::Secrets
            | Request::Rules
            | Request::ClientFiles
            | Request::RestoreClientFile { .. }
            | Request::AckClientFile { .. }
            | Request::WriteClientEntry { .. }
            | Request::Activity { .. } => Some(QUICK_ANSWER),
            // Every recorded call (up to 100,000) replayed, paths resolved on the disk.
            Request::RulesTest(_) => Some(QUICK_ANSWER.saturating_mul(4)),
            _ => None,
        }
    }
}

/// What `gatehouse connect` needs to reach the hub's HTTP endpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GatewayInfo {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The bearer token.
    pub token: String,
}

pub use crate::profiles::ClientInfo;

/// The answer to [`Request::Forget`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forgotten {
    /// How many remembered answers were revoked.
    pub forgotten: usize,
}

/// Why the hub refused a request, for clients that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No server has that id.
    UnknownServer,
    /// The hub is stopping.
    ShuttingDown,
    /// The config could not be read, edited or applied.
    Config,
    /// The request line was not understood.
    BadRequest,
    /// This hub has no HTTP endpoint (`serve --stdio`).
    NoGateway,
    /// No such approval is waiting.
    UnknownApproval,
    /// The activity log could not be read.
    Activity,
    /// A kind this version does not know (a newer hub).
    #[serde(other)]
    Other,
}

/// How a sign-in ended (the second line of an `AuthLogin` answer).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignInOutcome {
    /// Whether it succeeded.
    pub ok: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What `AuthLogout` did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignedOut {
    /// Whether the authorization server accepted the revocation (`None`: it offers none, or
    /// there was no sign-in).
    pub revoked: Option<bool>,
}

/// One response line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    /// Whether the request was carried out.
    pub ok: bool,
    /// The answer, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// What went wrong, in words, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What went wrong, for clients that branch on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
}

impl Response {
    fn ok(result: impl Serialize) -> Self {
        Response {
            ok: true,
            result: Some(serde_json::to_value(result).unwrap_or(Value::Null)),
            error: None,
            error_kind: None,
        }
    }

    fn err(kind: ErrorKind, message: String) -> Self {
        Response {
            ok: false,
            result: None,
            error: Some(message),
            error_kind: Some(kind),
        }
    }

    fn from_hub(e: crate::hub::HubError) -> Self {
        use crate::hub::HubError;
        let kind = match e {
            HubError::UnknownServer { .. } => ErrorKind::UnknownServer,
            HubError::ShuttingDown => ErrorKind::ShuttingDown,
            HubError::Config(_) => ErrorKind::Config,
            HubError::SignIn(_) | HubError::Failed(_) => ErrorKind::Other,
        };
        Response::err(kind, e.to_string())
    }
}

/// The default socket path: `$GATEHOUSE_CONTROL`, else `$XDG_RUNTIME_DIR/gatehouse/control.sock`,
/// else a per-user dir under the temp dir.
pub fn default_socket_path() -> PathBuf {
    match std::env::var_os(CONTROL_ENV).filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => locate::derived_socket_path(),
    }
}

/// What can go wrong between a client and the hub.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// Another hub answers on the socket.
    #[error("another Gatehouse hub is already running (control socket {0}); stop it first or pass --control PATH")]
    AlreadyRunning(PathBuf),
    /// The socket could not be created.
    #[error("cannot create the control socket {path}: {source}")]
    Bind {
        /// The socket's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Nothing listens on the socket.
    #[error("no Gatehouse hub is running (no control socket at {0}); start one with `gatehouse serve --config PATH` or open the Gatehouse app{hint}", hint = if locate::environment_was_trimmed() { ". If one is running, this process was started without XDG_RUNTIME_DIR (some clients pass servers only a few variables) and no pointer to the hub's socket was found in the home directory: set GATEHOUSE_CONTROL in the client's entry to the hub's socket (by default $XDG_RUNTIME_DIR/gatehouse/control.sock as the hub sees it)" } else { "" })]
    NotRunning(PathBuf),
    /// The connection broke.
    #[error("lost the connection to the hub at {path}: {source}")]
    Io {
        /// The socket's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The hub's answer could not be read.
    #[error("the hub sent an unreadable answer: {0}")]
    Protocol(String),
    /// The hub refused the request; the message says why.
    #[error("{message}")]
    Refused {
        /// For branching.
        kind: Option<ErrorKind>,
        /// For people.
        message: String,
    },
    /// The socket's directory could be another user's.
    #[error("refusing the control socket's directory: {0}")]
    Unsafe(String),
    /// The socket is served by another user.
    #[error("the control socket {path} is served by uid {uid}, not by you: refusing to trust it (another user may be impersonating Gatehouse); check GATEHOUSE_CONTROL / --control and XDG_RUNTIME_DIR")]
    Untrusted {
        /// The socket.
        path: PathBuf,
        /// Who serves it.
        uid: u32,
    },
    /// The hub took the request and did not answer in time.
    #[error("the hub at {path} did not answer within {secs} s; it may be stuck: restart it (or the Gatehouse app)")]
    Silent {
        /// The socket.
        path: PathBuf,
        /// The deadline.
        secs: u64,
    },
    /// No control socket on this platform.
    #[error("the control socket is not supported on this platform yet")]
    Unsupported,
}

async fn write_line<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    v: &impl Serialize,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut line = serde_json::to_vec(v).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line).await?;
    w.flush().await
}

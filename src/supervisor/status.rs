//! What a server's supervisor tells the world, as plain data: its state, its status, how its
//! process ended (the tools it listed are `crate::tool`'s, re-exported). Nothing here does
//! anything.

use serde::{Deserialize, Serialize};

/// A server's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Not running, on purpose (never started, stopped, disabled).
    Stopped,
    /// Spawned or connecting; the handshake has not finished.
    Starting,
    /// `initialize` answered and the full `tools/list` fetched.
    Running,
    /// Being stopped: stdin closed, signals on their way.
    Stopping,
    /// Waiting out the backoff before the next attempt.
    Restarting,
    /// Gave up (too many failures in a row) or cannot start at all; needs a person.
    Failed,
    /// A remote server that wants an OAuth sign-in (no tokens yet, or they stopped working):
    /// waits for the person, never restarted on its own.
    NeedsSignIn,
    /// An on-demand server not running, ready to start when a call needs it; its tools are
    /// listed from their last known definitions.
    Idle,
    /// A config entry that cannot be read: `last_error` holds the problem and the fix. The
    /// other servers run without it.
    Invalid,
}

impl State {
    /// Whether its tools are offered to clients: while it runs, and while an on-demand server
    /// is idle (its last known tools; a call starts it).
    pub fn offers_tools(self) -> bool {
        matches!(self, State::Running | State::Idle)
    }

    /// The state's name, as the CLI and the UI show it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Stopped => "stopped",
            State::Starting => "starting",
            State::Running => "running",
            State::Stopping => "stopping",
            State::Restarting => "restarting",
            State::Failed => "failed",
            State::NeedsSignIn => "needs_sign_in",
            State::Idle => "idle",
            State::Invalid => "invalid",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// A child process on stdio.
    Stdio,
    /// A remote server over HTTP.
    Remote,
}

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    /// The exit code, when it exited on its own.
    pub code: Option<i32>,
    /// The signal that ended it (Unix).
    pub signal: Option<i32>,
}

impl std::fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exited with code {c}"),
            (None, Some(s)) => write!(f, "was killed by signal {s} ({})", signal_name(s)),
            (None, None) => write!(f, "exited"),
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        1 => "SIGHUP",
        2 => "SIGINT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => "signal",
    }
}

impl From<std::process::ExitStatus> for ExitInfo {
    fn from(s: std::process::ExitStatus) -> Self {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&s);
        #[cfg(not(unix))]
        let signal = None;
        ExitInfo {
            code: s.code(),
            signal,
        }
    }
}

/// A server's truthful status, as `status --json` prints it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServerStatus {
    /// The server's id.
    pub id: String,
    /// Its lifecycle state.
    pub state: State,
    /// `stdio` or `remote`.
    pub transport: TransportKind,
    /// Whether the config lets it start.
    pub enabled: bool,
    /// The child's pid (and process group) while it has one.
    pub pid: Option<u32>,
    /// When the server entered its current state (ms since the Unix epoch).
    pub since_ms: u64,
    /// Restarts so far (crashes and manual restarts).
    pub restarts: u32,
    /// Failures in a row; `failed` after the limit.
    pub consecutive_failures: u32,
    /// When the next attempt is due (ms since the Unix epoch) while `restarting`.
    pub next_retry_ms: Option<u64>,
    /// How the last process ended.
    pub last_exit: Option<ExitInfo>,
    /// The last error, with what to do about it.
    pub last_error: Option<String>,
    /// Number of tools from the last successful `tools/list`.
    pub tools: usize,
    /// `serverInfo.name` from its handshake.
    pub server_name: Option<String>,
    /// `serverInfo.version` from its handshake.
    pub server_version: Option<String>,
    /// The last failure of this run of the hub, kept after the server recovered ("recovered
    /// 2 m ago from: …"); `last_error` is cleared by a restart, this is not.
    #[serde(default)]
    pub last_crash: Option<String>,
    /// When that failure happened (ms since the epoch).
    #[serde(default)]
    pub last_crash_ms: Option<u64>,
    /// The protocol version it speaks: the modern one its `server/discover` named, or the one
    /// it answered `initialize` with.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// `modern` (it answered `server/discover`) or `legacy` (`initialize`), from its last
    /// handshake.
    #[serde(default)]
    pub era: Option<crate::protocol::Era>,
    /// The config's display name (`name`), if any.
    #[serde(default)]
    pub name: Option<String>,
    /// What it runs: the command line, or the URL (for tables; secrets never appear in it).
    #[serde(default)]
    pub command: String,
    /// Things the person should know that do not stop the server (a list it answers too slowly,
    /// a policy key naming no tool…).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// A stdio server's sandbox: its policy and what enforces it (`None` for a remote server).
    #[serde(default)]
    pub sandbox: Option<crate::sandbox::SandboxReport>,
    /// When it starts: `at_launch` or `on_demand`.
    #[serde(default)]
    pub start: crate::config::StartMode,
    /// A pinned runner entry's artifact in Gatehouse's store (what it runs), `None` for any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<ArtifactReport>,
}

/// A pinned package's artifact as `status` reports it: where it is in the store, whether it is
/// installed and checked against the pin, the packages of its tree and whether each is locked
/// with its integrity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactReport {
    /// Its folder in the store.
    pub store: std::path::PathBuf,
    /// Installed and checked against the pin (false: the server does not start until it is).
    pub verified: bool,
    /// Packages in its tree, itself included.
    pub packages: usize,
    /// Every package of the tree has its integrity in the lock.
    pub locked: bool,
}

impl ServerStatus {
    /// A server as it is before anything happened to it.
    pub fn new(id: &str, transport: TransportKind) -> ServerStatus {
        ServerStatus {
            id: id.to_owned(),
            state: State::Stopped,
            transport,
            enabled: true,
            pid: None,
            since_ms: crate::logs::now_ms(),
            restarts: 0,
            consecutive_failures: 0,
            next_retry_ms: None,
            last_exit: None,
            last_error: None,
            tools: 0,
            server_name: None,
            server_version: None,
            protocol_version: None,
            era: None,
            last_crash: None,
            last_crash_ms: None,
            name: None,
            command: String::new(),
            warnings: Vec::new(),
            sandbox: None,
            start: crate::config::StartMode::AtLaunch,
            artifact: None,
        }
    }

    /// The row of a config entry that cannot be read (`key` as the file writes it).
    pub fn invalid(key: &str, entry: &crate::config::InvalidEntry) -> ServerStatus {
        let remote = entry.raw.get("url").is_some()
            || entry.raw.get("serverUrl").is_some()
            || entry.raw.get("httpUrl").is_some();
        let mut s = ServerStatus::new(
            key,
            if remote {
                TransportKind::Remote
            } else {
                TransportKind::Stdio
            },
        );
        s.state = State::Invalid;
        s.enabled = entry
            .raw
            .get("enabled")
            .and_then(serde_json::Value::as_bool)
            != Some(false);
        s.last_error = Some(entry.reason());
        s.name = entry
            .raw
            .get("name")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        s
    }
}

pub use crate::tool::{definition_hash, read_only_hint, ToolDef, ToolMeta};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_info_reads_well() {
        assert_eq!(
            ExitInfo {
                code: Some(3),
                signal: None
            }
            .to_string(),
            "exited with code 3"
        );
        assert_eq!(
            ExitInfo {
                code: None,
                signal: Some(9)
            }
            .to_string(),
            "was killed by signal 9 (SIGKILL)"
        );
    }
}

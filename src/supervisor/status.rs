//! What a server's supervisor tells the world, as plain data: its state, its status, how its
//! process ended, and the tools it listed. Nothing here does anything.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

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
}

impl State {
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
}

/// One tool as the server listed it: its name and its whole definition, raw. Everything else is
/// read from the definition once, when first needed, and kept.
#[derive(Debug)]
pub struct ToolDef {
    /// The server's own name for the tool.
    pub name: String,
    /// The definition exactly as the server sent it.
    pub raw: Arc<RawValue>,
    /// `annotations.readOnlyHint` is literally `true` (read when the list is fetched: every call
    /// consults it).
    pub read_only: bool,
    parsed: OnceLock<ToolMeta>,
    hash: OnceLock<String>,
    /// Secret values to mask in what is shown of the definition (never in `raw`, which goes to
    /// the clients that list the tools).
    redactions: Arc<crate::secrets::Redactions>,
}

/// The parts of a definition a person is shown.
#[derive(Debug, Clone, Default)]
pub struct ToolMeta {
    /// `title`, else `annotations.title`.
    pub title: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `annotations`, whole.
    pub annotations: Option<Value>,
}

impl ToolDef {
    /// A tool from its raw definition; an error when it has no string `name`. What is shown of it
    /// ([`ToolDef::meta`]) has every value in `redactions` masked.
    pub fn parse(
        raw: Box<RawValue>,
        redactions: Arc<crate::secrets::Redactions>,
    ) -> Result<ToolDef, String> {
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        let named: Named = serde_json::from_str(raw.get())
            .map_err(|e| format!("the server listed a tool without a name: {e}"))?;
        Ok(ToolDef {
            name: named.name,
            read_only: read_only_hint(raw.get()),
            raw: Arc::from(raw),
            parsed: OnceLock::new(),
            hash: OnceLock::new(),
            redactions,
        })
    }

    /// Why its `x-mcp-header` annotations are invalid, if they are (only a definition that
    /// has one is parsed for this).
    pub fn invalid_header_annotation(&self) -> Option<String> {
        let raw = self.raw.get();
        crate::protocol::NEEDLES.x_mcp_header.find(raw.as_bytes())?;
        let definition: Value = serde_json::from_str(raw).ok()?;
        crate::protocol::invalid_x_mcp_header(definition.get("inputSchema")?)
    }

    /// The `x-mcp-header` annotations of its input schema: (property path, header token).
    pub fn header_annotations(&self) -> Vec<(Vec<String>, String)> {
        let raw = self.raw.get();
        if crate::protocol::NEEDLES
            .x_mcp_header
            .find(raw.as_bytes())
            .is_none()
        {
            return Vec::new();
        }
        serde_json::from_str::<Value>(raw)
            .ok()
            .and_then(|d| d.get("inputSchema").map(crate::protocol::x_mcp_headers))
            .unwrap_or_default()
    }

    /// Title, description and annotations, parsed on first use, secret values masked (this is
    /// what is stored and shown: tool lists, approval requests, pins).
    pub fn meta(&self) -> &ToolMeta {
        self.parsed.get_or_init(|| {
            let masked = self.redactions.mask(self.raw.get());
            let definition: Value = serde_json::from_str(&masked).unwrap_or(Value::Null);
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
            let annotations = definition.get("annotations").cloned();
            ToolMeta {
                title: text(definition.get("title"))
                    .or_else(|| text(annotations.as_ref().and_then(|a| a.get("title")))),
                description: text(definition.get("description")),
                annotations,
            }
        })
    }

    /// Whether [`ToolDef::meta`] has been parsed (it is kept once it is).
    #[cfg(test)]
    pub(crate) fn meta_parsed(&self) -> bool {
        self.parsed.get().is_some()
    }

    /// The definition as it may be shown or stored (secret values masked), as compact text
    /// (`null` if masking broke it, as [`ToolDef::shown_value`] would say).
    pub fn shown_definition(&self) -> Box<RawValue> {
        RawValue::from_string(self.redactions.mask(self.raw.get())).unwrap_or_default()
    }

    /// The definition as it may be shown (secret values masked), parsed: for a diff.
    pub fn shown_value(&self) -> Value {
        serde_json::from_str(&self.redactions.mask(self.raw.get())).unwrap_or(Value::Null)
    }

    /// The SHA-256 of the canonical definition (what "always allow" and pins are bound to),
    /// computed on first use.
    pub fn hash(&self) -> &str {
        self.hash.get_or_init(|| definition_hash(self.raw.get()))
    }
}

/// Whether a raw tool definition declares `annotations.readOnlyHint: true` (literally `true`).
pub fn read_only_hint(definition: &str) -> bool {
    #[derive(Deserialize)]
    struct Def {
        #[serde(default)]
        annotations: Option<Ann>,
    }
    #[derive(Deserialize)]
    struct Ann {
        #[serde(rename = "readOnlyHint", default)]
        read_only: Option<Value>,
    }
    serde_json::from_str::<Def>(definition)
        .ok()
        .and_then(|d| d.annotations)
        .and_then(|a| a.read_only)
        == Some(Value::Bool(true))
}

/// SHA-256 (hex) of a tool's whole definition, canonicalised (sorted keys) so that member order
/// does not matter but any change of content does.
pub fn definition_hash(raw: &str) -> String {
    use sha2::{Digest, Sha256};
    let canonical = serde_json::from_str::<Value>(raw)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| raw.to_owned());
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

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

    #[test]
    fn a_tool_is_read_once_and_keeps_its_bytes() {
        let raw = RawValue::from_string(
            r#"{"name":"w","annotations":{"title":"Write","readOnlyHint":false},"description":"d","x":1.50}"#.into(),
        )
        .unwrap();
        let t = ToolDef::parse(raw, Arc::default()).unwrap();
        assert_eq!(t.name, "w");
        assert!(!t.read_only);
        assert_eq!(t.meta().title.as_deref(), Some("Write"));
        assert_eq!(t.meta().description.as_deref(), Some("d"));
        assert!(t.raw.get().contains("\"x\":1.50"));
        assert_eq!(t.hash(), definition_hash(t.raw.get()));
        assert!(
            ToolDef::parse(RawValue::from_string("{}".into()).unwrap(), Arc::default()).is_err()
        );
    }

    #[test]
    fn read_only_hint_must_be_literally_true() {
        assert!(read_only_hint(
            r#"{"name":"a","annotations":{"readOnlyHint":true}}"#
        ));
        assert!(!read_only_hint(
            r#"{"name":"a","annotations":{"readOnlyHint":"true"}}"#
        ));
        assert!(!read_only_hint(
            r#"{"name":"a","annotations":{"destructiveHint":false}}"#
        ));
        assert!(!read_only_hint(r#"{"name":"a"}"#));
    }
}

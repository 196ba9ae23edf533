//! Checking one server on its own (`gatehouse test`, the app's Test button): it is started in a
//! private hub of its own — never the running one's — with a deadline and no restarts, and what
//! it offers (or why it failed, with its last stderr lines and a fix) is reported. The server is
//! stopped and every trace of the probe removed before the report is returned.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::{Config, ServerConfig, ServerId, Transport, MAX_STARTUP_TIMEOUT_SECS};
use crate::hub::{Hub, HubOptions};
use crate::logs::LogStream;
use crate::secrets::SecretSource;
use crate::supervisor::State;
use crate::supervisor::{Reply, Tuning};

pub mod artifact;
pub mod compare;

pub use artifact::FromStore;

/// What a probe found.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    /// The server's id (or `test` for a command not in the config).
    pub id: String,
    /// What ran: the command line or URL.
    pub command: String,
    /// It answered `initialize` and listed its tools.
    pub ok: bool,
    /// Milliseconds from start to ready (or to the failure).
    pub elapsed_ms: u64,
    /// The protocol version it speaks.
    pub protocol_version: Option<String>,
    /// `modern` (answered `server/discover`) or `legacy` (`initialize`).
    pub era: Option<crate::protocol::Era>,
    /// `serverInfo.name`.
    pub server_name: Option<String>,
    /// `serverInfo.version`.
    pub server_version: Option<String>,
    /// The capabilities it declared.
    pub capabilities: Option<serde_json::Value>,
    /// Its tools with their hints.
    pub tools: Vec<ProbeTool>,
    /// How many prompts it lists (when it declares prompts).
    pub prompts: Option<usize>,
    /// How many resources it lists (when it declares resources).
    pub resources: Option<usize>,
    /// Why it failed.
    pub error: Option<String>,
    /// What to do about it.
    pub fix: Option<String>,
    /// Its last stderr lines (secret values masked).
    pub stderr: Vec<String>,
    /// The config's warnings about it (policy keys naming no tool…).
    pub warnings: Vec<String>,
    /// A local server's sandbox: its policy and what enforces it.
    pub sandbox: Option<crate::sandbox::SandboxReport>,
    /// The package it ran, at its exact version (`pkg@1.2.3`), when it runs one from an index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
}

/// One tool as a probe reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeTool {
    /// Its name.
    pub name: String,
    /// `readOnlyHint: true`.
    pub read_only: bool,
    /// `destructiveHint`, when given.
    pub destructive: Option<bool>,
}

impl ProbeReport {
    /// The report before anything ran: the entry's command and its sandbox.
    fn empty(id: &str, server: &ServerConfig) -> ProbeReport {
        ProbeReport {
            id: id.to_owned(),
            command: server.describe(),
            ok: false,
            elapsed_ms: 0,
            protocol_version: None,
            era: None,
            server_name: None,
            server_version: None,
            capabilities: None,
            tools: Vec::new(),
            prompts: None,
            resources: None,
            error: None,
            fix: None,
            stderr: Vec::new(),
            warnings: Vec::new(),
            sandbox: server.sandbox_report(),
            package: None,
        }
    }

    /// What a running server offers: its capabilities, tools, and how many prompts and resources.
    async fn read_running(&mut self, h: &crate::supervisor::ServerHandle) {
        self.ok = true;
        self.capabilities = h.capabilities().map(|c| (*c).clone());
        self.tools = h
            .tools()
            .iter()
            .map(|t| ProbeTool {
                name: t.name.clone(),
                read_only: t.read_only,
                destructive: t
                    .meta()
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("destructiveHint"))
                    .and_then(serde_json::Value::as_bool),
            })
            .collect();
        let declares = |what: &str| {
            self.capabilities
                .as_ref()
                .is_some_and(|c| c.get(what).is_some())
        };
        let (prompts, resources) = (declares("prompts"), declares("resources"));
        if prompts {
            self.prompts = count(h, "prompts/list", "prompts").await;
        }
        if resources {
            self.resources = count(h, "resources/list", "resources").await;
        }
    }
}

/// The server's state once it settled (running, failed, waiting for a sign-in, stopped with a
/// reason, or a failure counted), or as it is at `deadline`.
async fn settled(h: &crate::supervisor::ServerHandle, deadline: Instant) -> crate::ServerStatus {
    loop {
        let s = h.status();
        // Stopped counts only once it has a reason: the server starts out stopped.
        // A sign-in is not made by a probe (its private hub has no keychain of tokens: a
        // refresh here would rotate the running hub's tokens away from it).
        let done = matches!(s.state, State::Running | State::Failed | State::NeedsSignIn)
            || (s.state == State::Stopped && s.last_error.is_some())
            || s.consecutive_failures > 0;
        if done || Instant::now() >= deadline {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The last 20 lines the server wrote to stderr, oldest first.
fn stderr_tail(h: &crate::supervisor::ServerHandle) -> Vec<String> {
    let mut lines: Vec<String> = h
        .logs()
        .tail(None)
        .into_iter()
        .filter(|l| l.stream == LogStream::Stderr)
        .map(|l| l.line)
        .rev()
        .take(20)
        .collect();
    lines.reverse();
    lines
}

/// Starts `server` on its own, waits at most `timeout` for it to be ready, reports, stops it.
/// With `from`, a package it runs from an index is pinned and run from that store, as Save
/// would ([`artifact::ready`]).
pub async fn probe(
    id: &str,
    mut server: ServerConfig,
    secrets: Arc<dyn SecretSource>,
    timeout: Duration,
    from: Option<&FromStore>,
) -> ProbeReport {
    let mut report = ProbeReport::empty(id, &server);
    if let Some(f) = from {
        match artifact::ready(&mut server, f).await {
            Ok(Some((package, note))) => {
                report.command = server.describe();
                report.package = Some(package);
                report.warnings.extend(note);
            }
            Ok(None) => {}
            Err(e) => {
                report.error = Some(e);
                return report;
            }
        }
    }
    let key = match ServerId::parse(id) {
        Ok(k) => k,
        Err(e) => {
            report.error = Some(e);
            return report;
        }
    };
    // Directories of probes that were killed (kill -9 never runs the cleanup) go first.
    reap_dead_probe_dirs();
    let dir = probe_dir();
    let _alive = match create_fresh_dir(&dir).and_then(|()| hold_alive(&dir)) {
        Ok(lock) => lock,
        Err(e) => {
            report.error = Some(format!("cannot create {}: {e}", dir.display()));
            let _ = std::fs::remove_dir_all(&dir);
            return report;
        }
    };
    server.enabled = true;
    server.startup_timeout_secs = timeout.as_secs().clamp(1, MAX_STARTUP_TIMEOUT_SECS);
    let mut config = Config::default();
    config.servers.insert(key, server.clone());
    let mut opts = HubOptions::new(dir.clone());
    opts.secrets = secrets;
    opts.store = from.map(|f| f.store.clone());
    // One try: a probe reports the first failure instead of backing off.
    opts.tuning = Tuning {
        max_failures: 1,
        ..Tuning::default()
    };
    let started = Instant::now();
    let hub = Hub::start(config, opts);
    if let Ok(h) = hub.server(id) {
        let deadline = started + timeout + Duration::from_secs(2);
        let status = settled(&h, deadline).await;
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        report.protocol_version = status.protocol_version.clone();
        report.era = status.era;
        report.server_name = status.server_name.clone();
        report.server_version = status.server_version.clone();
        report.warnings.extend(status.warnings.iter().cloned());
        // After the launch: what its sandbox left out is known.
        if status.sandbox.is_some() {
            report.sandbox = status.sandbox.clone();
        }
        if status.state == State::Running {
            report.read_running(&h).await;
        } else {
            let error = status.last_error.clone().unwrap_or_else(|| {
                format!(
                    "not ready after {} s (state: {})",
                    timeout.as_secs(),
                    status.state
                )
            });
            report.fix = Some(fix_for(&error, &server));
            report.error = Some(error);
        }
        report.stderr = stderr_tail(&h);
    }
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    report
}

/// How many items a list method returns on its first page (bounded by the list deadline).
async fn count(h: &crate::supervisor::ServerHandle, method: &str, key: &str) -> Option<usize> {
    let reply = tokio::time::timeout(Duration::from_secs(5), h.request(method, None))
        .await
        .ok()?
        .ok()?;
    match reply {
        Reply::Result(r) => serde_json::from_str::<serde_json::Value>(r.get())
            .ok()?
            .get(key)?
            .as_array()
            .map(Vec::len),
        Reply::Error(_) => None,
    }
}

/// A probe's own directory under the shared temp dir: a name from the OS CSPRNG, so another
/// local user cannot guess it and prepare it.
fn probe_dir() -> PathBuf {
    std::env::temp_dir().join(format!(
        "gatehouse-probe-{}",
        crate::supervisor::process::new_tag()
    ))
}

/// The lock a live probe holds on `DIR/alive` for as long as it runs; the kernel drops it
/// when the process ends, however it ends.
#[cfg(unix)]
type AliveLock = nix::fcntl::Flock<std::fs::File>;
#[cfg(not(unix))]
type AliveLock = ();

#[cfg(unix)]
fn hold_alive(dir: &std::path::Path) -> std::io::Result<AliveLock> {
    let f = std::fs::File::create(dir.join("alive"))?;
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| std::io::Error::from(e))
}

#[cfg(not(unix))]
fn hold_alive(_: &std::path::Path) -> std::io::Result<AliveLock> {
    Ok(())
}

/// Removes this user's probe directories whose probe is gone: their `alive` lock can be taken
/// (or they have none: a probe killed between making the directory and locking it, more than a
/// minute ago). Another user's directories are never touched.
#[cfg(unix)]
fn reap_dead_probe_dirs() {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let me = nix::unistd::geteuid().as_raw();
    for e in entries.flatten() {
        if !e
            .file_name()
            .to_string_lossy()
            .starts_with("gatehouse-probe-")
        {
            continue;
        }
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me {
            continue;
        }
        let dead = match std::fs::File::open(path.join("alive")) {
            Ok(f) => {
                nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).is_ok()
            }
            Err(_) => meta
                .modified()
                .ok()
                .and_then(|m| m.elapsed().ok())
                .is_some_and(|age| age > Duration::from_secs(60)),
        };
        if dead {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[cfg(not(unix))]
fn reap_dead_probe_dirs() {}

/// Creates `dir` 0700, failing if anything (a directory, a symlink) is already there: a probe
/// never works in a place it did not make itself.
fn create_fresh_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// What to do about a failure, from its message.
fn fix_for(error: &str, server: &ServerConfig) -> String {
    let run_it = match &server.transport {
        Transport::Stdio(_) => format!(
            "run `{}` yourself in a terminal to see its own error",
            server.describe()
        ),
        Transport::Remote(r) => format!("check that {} is reachable and speaks MCP", r.url),
    };
    if error.contains("not found in PATH") || error.contains("does not exist") {
        "install the program, or give its full path as the command".into()
    } else if error.contains("secret") {
        "set the secret with `gatehouse secret set NAME` (the message names it)".into()
    } else if error.contains("did not answer initialize") || error.contains("not ready after") {
        format!(
            "it may need longer (--timeout SECONDS), or it does not speak MCP on stdio: {run_it}"
        )
    } else {
        run_it
    }
}

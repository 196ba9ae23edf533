//! How a session's connection comes to be: a child process in its own process group (its stdio,
//! a reaper, a stderr reader) or a remote server's HTTP bridge over an in-memory pipe. Either way
//! the actor gets the same [`Launched`]: two byte streams, an exit watch and the tasks to own.
//! The actor only sees the [`Launcher`] trait, so its state machine is testable with a fake.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::{EnvValue, RemoteTransport, ServerConfig, StdioTransport, Transport};
use crate::jsonrpc::{Line, LineReader};
use crate::logs::LogStream;
use crate::secrets::{Redactions, SecretSource};

use super::process;
use super::remote;
use super::status::ExitInfo;

/// Where a launch writes what it has to say about the server (stderr lines, notes).
pub(crate) type LogFn = Arc<dyn Fn(LogStream, String) + Send + Sync>;

/// What a launcher is asked to start.
pub(crate) struct LaunchRequest<'a> {
    pub cfg: &'a ServerConfig,
    pub gateway_ports: &'a [u16],
    pub secrets: Arc<dyn SecretSource>,
    pub redactions: Arc<Redactions>,
    pub log: LogFn,
    /// The server's id (its sign-in is kept under it).
    pub id: &'a str,
    /// Where remote servers' sign-ins are kept.
    pub oauth: Arc<crate::oauth::Manager>,
    /// What no sandbox opens, and where servers' own places go.
    pub sandbox: &'a super::confine::SandboxRoots,
}

/// Why nothing was launched.
#[derive(Debug)]
pub(crate) enum LaunchError {
    /// It cannot start (a missing program, a missing secret, a bad URL): a sentence.
    Failed(String),
    /// A remote server that has to be signed in to first: why.
    SignIn(String),
    /// It could not start now, and may later (a name that does not resolve yet): retried with
    /// backoff.
    Retry(String),
}

impl From<String> for LaunchError {
    fn from(s: String) -> Self {
        LaunchError::Failed(s)
    }
}

/// A started connection, not yet spoken to.
pub(crate) struct Launched {
    pub kind: SessionKind,
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// Becomes `Some` when the process exited (or the remote connection ended).
    pub exit: watch::Receiver<Option<ExitInfo>>,
    /// Resolves when the stderr reader hit EOF (every holder of the pipe is gone).
    pub stderr_done: Option<oneshot::Receiver<()>>,
    /// Cancelling closes the child's stdin (or ends the remote bridge).
    pub stop: CancellationToken,
    pub tasks: JoinSet<()>,
    /// A confined child's sandbox: what it opened and left out.
    pub confined: Option<Arc<crate::sandbox::Confined>>,
}

/// What is on the other end of a session.
pub(crate) enum SessionKind {
    /// A child process and its process group.
    Child {
        pid: u32,
        group: Arc<dyn ProcessGroup>,
    },
    /// A remote server; no process, nothing to signal. The bridge says why it ended; its
    /// credentials say whether that was for want of a sign-in.
    Remote {
        reason: Arc<Mutex<Option<String>>>,
        auth: Arc<crate::oauth::Credentials>,
    },
}

/// The signals of the stop sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopSignal {
    Term,
    Kill,
}

/// A child's process group: what the stop sequence signals and waits to see empty.
pub(crate) trait ProcessGroup: Send + Sync {
    fn signal(&self, sig: StopSignal);
    /// No live member is left.
    fn is_empty(&self) -> bool;
}

/// Starts sessions. Errors are user-facing sentences; a launch that fails cannot be retried
/// into success (a missing program, a missing secret), so the actor fails the server at once.
pub(crate) trait Launcher: Send + Sync {
    fn launch<'a>(&'a self, req: LaunchRequest<'a>)
        -> BoxFuture<'a, Result<Launched, LaunchError>>;
}

/// Real processes and real HTTP connections.
pub(crate) struct SystemLauncher;

impl Launcher for SystemLauncher {
    fn launch<'a>(
        &'a self,
        req: LaunchRequest<'a>,
    ) -> BoxFuture<'a, Result<Launched, LaunchError>> {
        Box::pin(async move {
            if let Some(why) =
                crate::config::reaches_gatehouse(&req.cfg.transport, req.gateway_ports)
            {
                return Err(format!("not started: {why}").into());
            }
            match &req.cfg.transport {
                Transport::Stdio(t) => Ok(launch_child(t, &req).await?),
                Transport::Remote(r) => launch_remote(r, &req).await,
            }
        })
    }
}

/// What a stdio entry runs: a pinned runner entry (`npx -y pkg@1.4.2 ARGS`) runs its artifact's
/// program from the store with the arguments after the package (`STORE/…/.bin/pkg ARGS`), and
/// its artifact's folder; any other entry runs as written. A pinned entry whose artifact is not
/// installed, or not the pinned one, is not started, with the step that installs it.
fn from_store(
    t: &StdioTransport,
    store: Option<&crate::registry::store::Store>,
) -> Result<(StdioTransport, Option<std::path::PathBuf>), String> {
    let (Some(pin), Some(spec)) = (&t.pin, crate::registry::pin::spec(&t.command, &t.args)) else {
        return Ok((t.clone(), None));
    };
    if spec.version.as_deref() != Some(pin.version.as_str()) {
        return Err(format!(
            "not started: its command runs {} but its pin says {}; pin it again with `gatehouse pin ID`",
            spec.version.as_deref().map_or_else(|| format!("{} (unpinned)", spec.name), |v| spec.pinned(v)),
            spec.pinned(&pin.version)
        ));
    }
    let Some(store) = store else {
        return Err("not started: Gatehouse has no store to run its pinned artifact from".into());
    };
    let a = store
        .installed(&spec, pin)
        .map_err(|e| format!("not started: {e}"))?;
    let mut run = t.clone();
    run.command = a.program.to_string_lossy().into_owned();
    run.args = t
        .args
        .get(spec.at + 1..)
        .map(<[String]>::to_vec)
        .unwrap_or_default();
    Ok((run, Some(a.store)))
}

/// The capacity asked for a child's stdout pipe (Linux).
#[cfg(target_os = "linux")]
const STDOUT_PIPE_BYTES: nix::libc::c_int = 256 * 1024;

async fn launch_child(entry: &StdioTransport, req: &LaunchRequest<'_>) -> Result<Launched, String> {
    // A pinned package runs the artifact Gatehouse installed and checked, from its store, or
    // not at all: never what a runner fetches or finds in a cache others write.
    let (run, artifact) = from_store(entry, req.sandbox.store.as_ref())?;
    let t = &run;
    // Secrets are resolved at spawn time only, off the async threads.
    let mut env = resolve_env(&t.env, req.secrets.clone(), req.redactions.clone()).await?;
    // `~/` at the start of a plain value is the home directory, as in the arguments: a program
    // never expands it itself (there is no shell), and people write it in their entries.
    for (k, v) in &t.env {
        if let crate::config::EnvValue::Plain(p) = v {
            if p.starts_with("~/") {
                env.insert(k.clone(), crate::config::expand_tilde(p));
            }
        }
    }
    let mut env = process::child_env(&env);
    let tag = process::new_tag();
    env.push((process::TAG_VAR.to_owned(), tag.clone()));
    // Fenced: its egress proxy first (the sandbox lets it connect there only).
    let (egress, egress_run) = match start_egress(t, req).await? {
        Some((e, run)) => (Some(e), Some(run)),
        None => (None, None),
    };
    // The sandbox opens every path of its plan: off the async workers.
    let (owned, id, roots) = (t.clone(), req.id.to_owned(), req.sandbox.clone());
    let (env, prepared, notes) = tokio::task::spawn_blocking(move || {
        let mut notes = Vec::new();
        let place = artifact.as_deref();
        let on = (&owned, place, egress.as_ref());
        let c = super::confine::prepare(on, &id, &roots, &mut env, &mut notes);
        c.map(|c| (env, c, notes))
    })
    .await
    .map_err(|_| "cannot start: preparing its sandbox failed".to_owned())??;
    for n in notes {
        (req.log)(LogStream::Gatehouse, n);
    }
    let mut run = t.clone();
    let (confinement, confined) = match prepared {
        Some(p) => {
            run.cwd = run
                .cwd
                .or_else(|| Some(p.cwd.to_string_lossy().into_owned()));
            (Some(p.confinement), Some(Arc::new(p.confined)))
        }
        None => (None, None),
    };
    let t = &run;
    #[cfg(target_os = "linux")]
    let cell = super::cgroup::Cell::new(req.id, &tag).map(Arc::new);
    #[cfg(target_os = "linux")]
    let mut child = process::spawn(t, &env, confinement, cell.clone())?;
    #[cfg(not(target_os = "linux"))]
    let mut child = process::spawn(t, &env, confinement)?;
    let pid = child.id().unwrap_or(0);
    let (Some(stdin), Some(stdout), Some(stderr)) = (
        child.stdin().take(),
        child.stdout().take(),
        child.stderr().take(),
    ) else {
        return Err("cannot start: the child's stdio pipes were not available".into());
    };
    // A pipe of 256 KiB instead of 64: a 10 MiB result crosses in 40 reads, not 160, and the
    // server blocks on a full pipe a quarter as often (the hub's CPU per 10 MiB call −30 %).
    // Best effort: over the user's pipe allowance the kernel refuses, and 64 KiB it stays.
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsFd;
        let _ = nix::fcntl::fcntl(
            stdout.as_fd(),
            nix::fcntl::FcntlArg::F_SETPIPE_SZ(STDOUT_PIPE_BYTES),
        );
    }
    let mut tasks = JoinSet::new();
    if let Some(run) = egress_run {
        tasks.spawn(run);
    }
    let (exit_tx, exit_rx) = watch::channel(None);
    // The reaper owns the child: it is the only place that waits on it.
    tasks.spawn(reap(child, exit_tx));
    let (stderr_tx, stderr_done) = oneshot::channel();
    tasks.spawn(read_stderr(
        stderr,
        stderr_tx,
        req.log.clone(),
        confined.clone(),
        req.id.to_owned(),
    ));
    Ok(Launched {
        kind: SessionKind::Child {
            pid,
            group: Arc::new(SystemGroup {
                pgid: pid,
                tag,
                #[cfg(target_os = "linux")]
                cell,
            }),
        },
        writer: Box::new(stdin),
        reader: Box::new(stdout),
        exit: exit_rx,
        stderr_done: Some(stderr_done),
        stop: CancellationToken::new(),
        tasks,
        confined,
    })
}

/// A fenced server's egress proxy, listening: it and the task that runs it until the session
/// ends (its set aborted) — or neither, for a server whose network is not fenced here.
async fn start_egress(
    t: &StdioTransport,
    req: &LaunchRequest<'_>,
) -> Result<Option<(crate::egress::Egress, BoxFuture<'static, ()>)>, String> {
    let log = req.log.clone();
    let said = Arc::new(move |line: String| log(LogStream::Gatehouse, line));
    let ports = (req.gateway_ports, &req.redactions);
    let Some(fence) = super::confine::fence(t, req.id, ports, said)? else {
        return Ok(None);
    };
    let stop = CancellationToken::new();
    let (egress, run) = crate::egress::start(fence, stop.clone())
        .await
        .map_err(|e| format!("cannot start: its network proxy cannot listen: {e}"))?;
    let guard = stop.drop_guard();
    let run: BoxFuture<'static, ()> = Box::pin(async move {
        let _guard = guard;
        run.await;
    });
    Ok(Some((egress, run)))
}

/// The reaper: the one place that waits on the child; its exit sent on `exit_tx`, the wrapper
/// (and its kill-on-drop) kept until the actor ends the session.
async fn reap(
    mut child: Box<dyn process_wrap::tokio::ChildWrapper>,
    exit_tx: watch::Sender<Option<ExitInfo>>,
) {
    let info = match child.wait().await {
        Ok(status) => ExitInfo::from(status),
        Err(_) => ExitInfo {
            code: None,
            signal: None,
        },
    };
    let _ = exit_tx.send(Some(info));
    // Keep the wrapper (and its kill-on-drop) alive until the actor ends the session.
    exit_tx.closed().await;
    drop(child);
}

/// The child's stderr into its log, line by line, with a hint where the sandbox may be why (at
/// most 20 per launch); `done` drops when stderr ends.
async fn read_stderr(
    stderr: tokio::process::ChildStderr,
    done: oneshot::Sender<()>,
    log: LogFn,
    sandbox: Option<Arc<crate::sandbox::Confined>>,
    id: String,
) {
    let _done = done;
    let mut lines = LineReader::new(stderr, 64 * 1024);
    // At most this many sandbox hints per launch: a server that loops on a refusal does
    // not flood its own log.
    let mut hints = 20u32;
    loop {
        match lines.next().await {
            Ok(Line::Data(l)) => {
                let line = String::from_utf8_lossy(&l).into_owned();
                let hint = sandbox
                    .as_deref()
                    .filter(|_| hints > 0)
                    .and_then(|c| crate::sandbox::blame::blame(&line, c, &id));
                log(LogStream::Stderr, line);
                if let Some(h) = hint {
                    hints -= 1;
                    log(LogStream::Gatehouse, h);
                }
            }
            Ok(Line::TooLong(n)) => log(
                LogStream::Gatehouse,
                format!("dropped a stderr line of {n} bytes"),
            ),
            _ => break,
        }
    }
}

/// A remote server: the same `RpcPeer` as a child's, over an in-memory pipe whose other end the
/// HTTP bridge (`remote::run`) carries to the server.
async fn launch_remote(
    r: &RemoteTransport,
    req: &LaunchRequest<'_>,
) -> Result<Launched, LaunchError> {
    let url = remote::check_url(&r.url, r.allow_insecure)?;
    // Where it leads, at every connect (a name can resolve elsewhere since the entry was made).
    let addrs = match remote::check_address(&r.url, r.allow_private).await {
        Ok(a) => a,
        Err(remote::AddressError::Refused(e)) => {
            return Err(LaunchError::Failed(format!("not connected: {e}")))
        }
        Err(remote::AddressError::Unresolved(e)) => {
            return Err(LaunchError::Retry(format!("not connected: {e}")))
        }
    };
    // Only an unusable URL fails here: a keychain that cannot be read is "no sign-in" (a
    // plain remote server never needs one).
    let auth = req
        .oauth
        .credentials(req.id, &r.url, r.oauth_capable())
        .await?;
    if matches!(r.auth, crate::config::RemoteAuth::OAuth(_)) && !auth.signed_in() {
        return Err(LaunchError::SignIn(auth.no_tokens("not signed in yet")));
    }
    // Header secrets are resolved at connect time only, like env secrets at spawn time.
    let headers = resolve_env(&r.headers, req.secrets.clone(), req.redactions.clone()).await?;
    let headers = remote::header_map(&headers)?;
    let http = remote::client_for(Some((&url, &addrs)))?;
    let mut tasks = JoinSet::new();
    let stop = CancellationToken::new();
    let (exit_tx, exit_rx) = watch::channel(None);
    let (peer_io, bridge_io) = tokio::io::duplex(1 << 20);
    let (peer_read, peer_write) = tokio::io::split(peer_io);
    let (bridge_read, bridge_write) = tokio::io::split(bridge_io);
    let reason = Arc::new(Mutex::new(None));
    let bridge_auth = auth.clone();
    {
        let reason = reason.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let why = remote::run(
                http,
                url,
                headers,
                bridge_auth,
                bridge_read,
                bridge_write,
                stop,
            )
            .await;
            *crate::sync::lock(&reason) = why;
            let _ = exit_tx.send(Some(ExitInfo {
                code: None,
                signal: None,
            }));
            exit_tx.closed().await;
        });
    }
    (req.log)(LogStream::Gatehouse, format!("connecting to {}", r.url));
    Ok(Launched {
        kind: SessionKind::Remote { reason, auth },
        writer: Box::new(peer_write),
        reader: Box::new(peer_read),
        exit: exit_rx,
        stderr_done: None,
        stop,
        tasks,
        confined: None,
    })
}

/// A real process group (Unix) plus every descendant that left it, found by the launch tag in
/// its environment (Linux); on Windows the Job Object's kill-on-close ends the whole tree when
/// the reaper drops the child, so there is nothing to signal.
struct SystemGroup {
    pgid: u32,
    tag: String,
    /// The launch's cgroup, where one could be made: every descendant, whatever it did.
    #[cfg(target_os = "linux")]
    cell: Option<Arc<super::cgroup::Cell>>,
}

impl ProcessGroup for SystemGroup {
    fn signal(&self, sig: StopSignal) {
        #[cfg(unix)]
        {
            let sig = match sig {
                StopSignal::Term => nix::sys::signal::Signal::SIGTERM,
                StopSignal::Kill => nix::sys::signal::Signal::SIGKILL,
            };
            process::signal_group(self.pgid, sig);
            #[cfg(target_os = "linux")]
            process::signal_tagged(&self.tag, sig);
            #[cfg(target_os = "linux")]
            if let Some(c) = &self.cell {
                c.signal(sig);
            }
        }
        #[cfg(not(unix))]
        let _ = (sig, self.pgid, &self.tag);
    }

    fn is_empty(&self) -> bool {
        #[cfg(target_os = "linux")]
        return process::group_members(self.pgid).is_empty()
            && process::tagged(&self.tag).is_empty()
            && self.cell.as_ref().is_none_or(|c| c.members().is_empty());
        #[cfg(all(unix, not(target_os = "linux")))]
        return process::group_members(self.pgid).is_empty();
        #[cfg(not(unix))]
        true
    }
}

impl Drop for SystemGroup {
    /// Whatever way the session ended (even a task dropped without a clean stop), nothing it
    /// started outlives it: the group dies with the child (kill-on-drop), escaped descendants here.
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        process::signal_tagged(&self.tag, nix::sys::signal::Signal::SIGKILL);
    }
}

/// A plain value, or an `{"env": VAR}` reference read from the hub's environment (no shell
/// expansion). A value long enough to mask is masked like a secret: such references are how
/// people pass tokens they keep in their shell profile.
fn plain_or_env(key: &str, v: &EnvValue, redactions: &Redactions) -> Result<String, String> {
    match v {
        EnvValue::Plain(s) => Ok(s.clone()),
        EnvValue::Env { env } => match std::env::var(env) {
            Ok(value) => {
                if value.chars().count() >= crate::secrets::MIN_SECRET_LEN {
                    redactions.register(&format!("env:{env}"), &value);
                }
                Ok(value)
            }
            Err(_) => Err(format!(
                "{key} refers to the environment variable {env}, which is not set in Gatehouse's environment; set it before starting Gatehouse, or give {key} a value or a secret"
            )),
        },
        EnvValue::Secret { secret, .. } => Err(format!("{key}: secret {secret} was not resolved")),
    }
}

/// Env (or header) values with secret references resolved; each resolved value is registered
/// for masking before anything can print it.
pub(crate) async fn resolve_env(
    env: &BTreeMap<String, EnvValue>,
    secrets: Arc<dyn SecretSource>,
    redactions: Arc<Redactions>,
) -> Result<BTreeMap<String, String>, String> {
    let resolved = resolve_values(env, secrets, redactions.clone()).await?;
    // Whatever way a value came (plain, a secret, the environment): none may hold one of
    // Gatehouse's own tokens, which would let the server call every tool without asking.
    for (key, value) in &resolved {
        if let Some(which) = redactions.holds(crate::token::OWN_TOKEN, value) {
            let whose = match which.strip_prefix(crate::token::OWN_TOKEN) {
                Some("gateway") => "the gateway's token".to_owned(),
                Some(rest) => format!(
                    "the token of client profile \"{}\"",
                    rest.strip_prefix("client:").unwrap_or(rest)
                ),
                None => "a Gatehouse token".to_owned(),
            };
            return Err(format!(
                "not started: {key} holds {whose}; a server holding it could call every tool through Gatehouse without asking. Give the server a credential of its own"
            ));
        }
    }
    Ok(resolved)
}

async fn resolve_values(
    env: &BTreeMap<String, EnvValue>,
    secrets: Arc<dyn SecretSource>,
    redactions: Arc<Redactions>,
) -> Result<BTreeMap<String, String>, String> {
    if env.values().all(|v| !matches!(v, EnvValue::Secret { .. })) {
        // Nothing to look up in the keychain: no trip to a blocking thread.
        return env
            .iter()
            .map(|(k, v)| Ok((k.clone(), plain_or_env(k, v, &redactions)?)))
            .collect();
    }
    let env = env.clone();
    let task = tokio::task::spawn_blocking(move || {
        let mut out = BTreeMap::new();
        for (k, v) in env {
            let value = match v {
                EnvValue::Plain(_) | EnvValue::Env { .. } => plain_or_env(&k, &v, &redactions)?,
                EnvValue::Secret { secret, prefix } => {
                    let value = secrets.get(&secret).map_err(|e| e.to_string())?;
                    if value.chars().count() < crate::secrets::MIN_SECRET_LEN {
                        return Err(format!(
                            "secret {secret} is shorter than {} characters, too short to keep out of logs; set the full value with `gatehouse secret set {secret}` (or in the app's Secrets view)",
                            crate::secrets::MIN_SECRET_LEN
                        ));
                    }
                    redactions.register(&secret, &value);
                    format!("{}{}", prefix.unwrap_or_default(), value)
                }
            };
            out.insert(k, value);
        }
        Ok(out)
    });
    task.await
        .map_err(|e| format!("resolving secrets failed: {e}"))?
}

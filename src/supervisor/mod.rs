//! One actor per server: a cloneable [`ServerHandle`] plus a task that owns the child, its pipes
//! and its state machine (DESIGN §3). Control goes through a queue; status goes out through a
//! `watch` channel and the event bus.

pub mod backoff;
pub mod process;
pub mod remote;
pub mod rpc;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::BufReader;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::{EnvValue, ServerConfig, ServerId, Transport};
use crate::events::{Event, EventBus};
use crate::logs::{now_ms, LogLine, LogStore, LogStream};
use crate::secrets::SecretSource;
pub use process::ExitInfo;
pub use rpc::{CallError, Reply};
use rpc::{Inbound, RpcPeer};

/// The protocol version we offer servers; every peer in PEERS.md accepts it.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// What we declare to servers as their client. The gateway forwards roots, sampling and
/// elicitation requests raised during a call to that call's client; outside a call Gatehouse
/// answers `roots/list` itself (with no roots).
const CLIENT_CAPABILITIES: &str =
    r#"{"roots":{"listChanged":false},"sampling":{},"elicitation":{}}"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Stopped,
    Starting,
    Running,
    Stopping,
    Restarting,
    Failed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Stopped => "stopped",
            State::Starting => "starting",
            State::Running => "running",
            State::Stopping => "stopping",
            State::Restarting => "restarting",
            State::Failed => "failed",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A server's truthful status, as `status --json` prints it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServerStatus {
    pub id: String,
    pub state: State,
    pub transport: &'static str,
    pub enabled: bool,
    pub pid: Option<u32>,
    /// When the server entered its current state (ms since the Unix epoch).
    pub since_ms: u64,
    pub restarts: u32,
    pub consecutive_failures: u32,
    pub next_retry_ms: Option<u64>,
    pub last_exit: Option<ExitInfo>,
    pub last_error: Option<String>,
    /// Number of tools from the last successful `tools/list`.
    pub tools: usize,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
}

/// One tool as the server listed it: its name and its whole definition, raw.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub name: String,
    pub raw: Arc<RawValue>,
    /// `annotations.readOnlyHint` is literally `true` (read once, when the list is fetched).
    pub read_only: bool,
}

/// Timing knobs. Production uses [`Tuning::default`] (DESIGN §3); tests and benches shrink them.
#[derive(Debug, Clone)]
pub struct Tuning {
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// A server that ran this long before dying starts its failure count afresh.
    pub reset_after: Duration,
    pub max_failures: u32,
    /// Each step of the stop sequence (stdin closed → TERM → KILL) waits this long.
    pub stop_grace: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            reset_after: Duration::from_secs(60),
            max_failures: 5,
            stop_grace: Duration::from_secs(2),
        }
    }
}

/// What every actor shares with the hub.
pub struct Context {
    pub bus: EventBus,
    pub secrets: Arc<dyn SecretSource>,
    /// Resolved secret values, masked in everything stored or shown.
    pub redactions: Arc<crate::secrets::Redactions>,
    pub log_dir: Option<PathBuf>,
    pub tuning: Tuning,
}

enum Control {
    Start(oneshot::Sender<()>),
    Stop(oneshot::Sender<()>),
    Restart(oneshot::Sender<()>),
    Update(Box<ServerConfig>, oneshot::Sender<()>),
    Shutdown(oneshot::Sender<()>),
}

/// The hub's and callers' side of one server. Cheap to clone.
#[derive(Clone)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    ctl: mpsc::Sender<Control>,
}

struct Shared {
    id: ServerId,
    status: watch::Sender<ServerStatus>,
    /// The live connection while starting/running. Guards one clone of the `Arc`.
    peer: Mutex<Option<Arc<RpcPeer>>>,
    /// Last fetched tool list. Guards one clone of the `Arc`.
    tools: Mutex<Arc<Vec<ToolDef>>>,
    /// The `capabilities` object of the server's `initialize` result while running.
    capabilities: Mutex<Option<Arc<serde_json::Value>>>,
    logs: LogStore,
    redactions: Arc<crate::secrets::Redactions>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the supervisor of server \"{0}\" has shut down")]
pub struct Gone(pub String);

impl ServerHandle {
    /// Starts the actor for one server. It starts the server at once if it is enabled.
    /// The returned join handle ends after [`ServerHandle::shutdown`] or when every handle drops.
    pub fn spawn(
        id: ServerId,
        cfg: ServerConfig,
        ctx: Arc<Context>,
    ) -> (ServerHandle, tokio::task::JoinHandle<()>) {
        let (ctl_tx, ctl_rx) = mpsc::channel(64);
        let status = ServerStatus {
            id: id.to_string(),
            state: State::Stopped,
            transport: match cfg.transport {
                Transport::Stdio(_) => "stdio",
                Transport::Remote(_) => "remote",
            },
            enabled: cfg.enabled,
            pid: None,
            since_ms: now_ms(),
            restarts: 0,
            consecutive_failures: 0,
            next_retry_ms: None,
            last_exit: None,
            last_error: None,
            tools: 0,
            server_name: None,
            server_version: None,
        };
        let log_file = ctx.log_dir.as_ref().map(|d| d.join(format!("{id}.log")));
        let shared = Arc::new(Shared {
            id: id.clone(),
            status: watch::channel(status).0,
            peer: Mutex::new(None),
            tools: Mutex::new(Arc::new(Vec::new())),
            capabilities: Mutex::new(None),
            logs: LogStore::new(log_file),
            redactions: ctx.redactions.clone(),
        });
        let (ev_tx, ev_rx) = mpsc::unbounded_channel();
        let actor = Actor {
            shared: shared.clone(),
            cfg,
            ctx,
            ctl: ctl_rx,
            ev_tx,
            ev_rx,
            generation: 0,
            session: None,
            retry_at: None,
            cleanup: JoinSet::new(),
        };
        let join = tokio::spawn(actor.run());
        (
            ServerHandle {
                shared,
                ctl: ctl_tx,
            },
            join,
        )
    }

    pub fn id(&self) -> &ServerId {
        &self.shared.id
    }

    pub fn status(&self) -> ServerStatus {
        self.shared.status.borrow().clone()
    }

    pub fn watch_status(&self) -> watch::Receiver<ServerStatus> {
        self.shared.status.subscribe()
    }

    pub fn tools(&self) -> Arc<Vec<ToolDef>> {
        lock(&self.shared.tools).clone()
    }

    /// The server's declared capabilities (from `initialize`), while it runs.
    pub fn capabilities(&self) -> Option<Arc<serde_json::Value>> {
        lock(&self.shared.capabilities).clone()
    }

    /// Whether the running server declared the capability `name` (`prompts`, `resources`…).
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities()
            .is_some_and(|c| c.get(name).is_some_and(|v| !v.is_null()))
    }

    pub fn logs(&self) -> &LogStore {
        &self.shared.logs
    }

    pub async fn start(&self) -> Result<(), Gone> {
        self.send(Control::Start).await
    }

    pub async fn stop(&self) -> Result<(), Gone> {
        self.send(Control::Stop).await
    }

    pub async fn restart(&self) -> Result<(), Gone> {
        self.send(Control::Restart).await
    }

    /// Applies a changed config: a launch change restarts the server; a failed server gets a new
    /// chance; `enabled: false` stops it.
    pub async fn update(&self, cfg: ServerConfig) -> Result<(), Gone> {
        let cfg = Box::new(cfg);
        self.send(|tx| Control::Update(cfg, tx)).await
    }

    /// Stops the server and ends the actor (hub shutdown).
    pub async fn shutdown(&self) -> Result<(), Gone> {
        self.send(Control::Shutdown).await
    }

    /// Sends a request to the server and waits for its reply (raw). Fails at once when the
    /// server is not running, and within moments of the child dying mid-call.
    pub async fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Reply, CallError> {
        self.request_routed(method, params, None).await
    }

    /// Like [`ServerHandle::request`], with the call's progress and server→client requests
    /// delivered to `route`. Dropping the future cancels the call upstream.
    pub async fn request_routed(
        &self,
        method: &str,
        params: Option<&RawValue>,
        route: Option<rpc::CallRoute>,
    ) -> Result<Reply, CallError> {
        let peer = self.peer()?;
        peer.request_routed(method, params, route).await
    }

    /// The live connection, for answering server→client requests; fails unless running.
    pub fn peer(&self) -> Result<Arc<RpcPeer>, CallError> {
        let peer = {
            let state = self.shared.status.borrow().state;
            let peer = lock(&self.shared.peer).clone();
            match peer {
                Some(p) if state == State::Running => p,
                _ => {
                    return Err(CallError::NotRunning {
                        server: self.shared.id.to_string(),
                        state: state.to_string(),
                    })
                }
            }
        };
        Ok(peer)
    }

    async fn send(&self, make: impl FnOnce(oneshot::Sender<()>) -> Control) -> Result<(), Gone> {
        let (tx, rx) = oneshot::channel();
        self.ctl
            .send(make(tx))
            .await
            .map_err(|_| Gone(self.shared.id.to_string()))?;
        rx.await.map_err(|_| Gone(self.shared.id.to_string()))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------

enum Wake {
    Control(Option<Control>),
    Exited,
    Session(u64, SessionEvent),
    Retry,
}

enum SessionEvent {
    Ready {
        tools: Vec<ToolDef>,
        capabilities: Option<serde_json::Value>,
        name: Option<String>,
        version: Option<String>,
    },
    HandshakeFailed {
        message: String,
        /// Retrying cannot help (timeout, refused initialize): go straight to `failed`.
        fatal: bool,
    },
    ToolsRefreshed(Vec<ToolDef>),
    Inbound(Inbound),
}

/// One child process and its connection.
struct Session {
    generation: u64,
    /// The child's pid (and process group); 0 for a remote server's connection.
    pid: u32,
    /// Why a remote connection ended (set by its bridge before it reports the "exit").
    remote_reason: Option<Arc<Mutex<Option<String>>>>,
    peer: Arc<RpcPeer>,
    /// Cancelling closes the child's stdin and ends the reader.
    stop: CancellationToken,
    exit: watch::Receiver<Option<ExitInfo>>,
    /// Resolves when the stderr reader hit EOF (every holder of the pipe is gone).
    stderr_done: Option<oneshot::Receiver<()>>,
    tasks: JoinSet<()>,
    started: Instant,
    ready: bool,
    refresh_after_ready: bool,
}

struct Actor {
    shared: Arc<Shared>,
    cfg: ServerConfig,
    ctx: Arc<Context>,
    ctl: mpsc::Receiver<Control>,
    ev_tx: mpsc::UnboundedSender<(u64, SessionEvent)>,
    ev_rx: mpsc::UnboundedReceiver<(u64, SessionEvent)>,
    generation: u64,
    session: Option<Session>,
    retry_at: Option<tokio::time::Instant>,
    /// Tasks reaping what a crashed child left in its group. Awaited before the actor ends.
    cleanup: JoinSet<()>,
}

impl Actor {
    async fn run(mut self) {
        if self.cfg.enabled {
            self.begin_start().await;
        }
        loop {
            let wake = {
                let exit_rx = self.session.as_ref().map(|s| s.exit.clone());
                let retry_at = self.retry_at;
                tokio::select! {
                    c = self.ctl.recv() => Wake::Control(c),
                    _ = async move {
                        match exit_rx {
                            Some(mut rx) => { let _ = rx.wait_for(|e| e.is_some()).await; }
                            None => std::future::pending::<()>().await,
                        }
                    } => Wake::Exited,
                    Some((generation, ev)) = self.ev_rx.recv() => Wake::Session(generation, ev),
                    _ = async move {
                        match retry_at {
                            Some(at) => tokio::time::sleep_until(at).await,
                            None => std::future::pending::<()>().await,
                        }
                    } => Wake::Retry,
                }
            };
            match wake {
                Wake::Control(Some(Control::Shutdown(done))) => {
                    self.end_session("Gatehouse is shutting down").await;
                    self.set_state(State::Stopped, |_| {});
                    while self.cleanup.join_next().await.is_some() {}
                    let _ = done.send(());
                    return;
                }
                Wake::Control(Some(c)) => self.on_control(c).await,
                Wake::Control(None) => break,
                Wake::Exited => self.on_exit().await,
                Wake::Session(generation, ev) => {
                    if self
                        .session
                        .as_ref()
                        .is_some_and(|s| s.generation == generation)
                    {
                        self.on_session_event(ev).await;
                    }
                }
                Wake::Retry => {
                    self.retry_at = None;
                    self.update_status(|s| s.restarts += 1);
                    self.begin_start().await;
                }
            }
        }
        // Every handle dropped: the hub is shutting down.
        self.end_session("Gatehouse is shutting down").await;
        self.set_state(State::Stopped, |_| {});
        while self.cleanup.join_next().await.is_some() {}
    }

    async fn on_control(&mut self, c: Control) {
        match c {
            Control::Start(done) => {
                if matches!(
                    self.state(),
                    State::Stopped | State::Failed | State::Restarting
                ) {
                    self.clear_failures();
                    self.begin_start().await;
                }
                let _ = done.send(());
            }
            Control::Stop(done) => {
                self.retry_at = None;
                self.end_session("the server was stopped").await;
                self.set_state(State::Stopped, |s| s.next_retry_ms = None);
                let _ = done.send(());
            }
            Control::Restart(done) => {
                self.retry_at = None;
                let was_live = self.session.is_some();
                self.end_session("the server was restarted").await;
                self.clear_failures();
                if was_live {
                    self.update_status(|s| s.restarts += 1);
                }
                self.begin_start().await;
                let _ = done.send(());
            }
            Control::Update(cfg, done) => {
                let relaunch = !self.cfg.launch_eq(&cfg) || self.cfg.enabled != cfg.enabled;
                self.cfg = *cfg;
                let enabled = self.cfg.enabled;
                self.update_status(|s| s.enabled = enabled);
                if relaunch || self.state() == State::Failed {
                    self.retry_at = None;
                    self.end_session("the server's configuration changed").await;
                    self.clear_failures();
                    if self.cfg.enabled {
                        self.begin_start().await;
                    } else {
                        self.set_state(State::Stopped, |_| {});
                    }
                }
                let _ = done.send(());
            }
            Control::Shutdown(done) => {
                // Handled in `run`, which owns the loop.
                let _ = done.send(());
            }
        }
    }

    fn state(&self) -> State {
        self.shared.status.borrow().state
    }

    fn clear_failures(&mut self) {
        self.update_status(|s| {
            s.consecutive_failures = 0;
            s.last_error = None;
            s.next_retry_ms = None;
        });
    }

    fn note(&self, line: String) {
        push_log(&self.shared, &self.ctx.bus, LogStream::Gatehouse, line);
    }

    async fn begin_start(&mut self) {
        self.retry_at = None;
        self.generation += 1;
        self.set_state(State::Starting, |s| {
            s.pid = None;
            s.next_retry_ms = None;
        });
        let transport = match &self.cfg.transport {
            Transport::Stdio(t) => t.clone(),
            Transport::Remote(r) => {
                let r = r.clone();
                self.begin_remote(&r).await;
                return;
            }
        };
        // Secrets are resolved at spawn time only, off the async threads.
        let env = match resolve_env(
            &transport.env,
            self.ctx.secrets.clone(),
            self.ctx.redactions.clone(),
        )
        .await
        {
            Ok(env) => env,
            Err(msg) => {
                self.fail(msg, true, None);
                return;
            }
        };
        let env = process::child_env(&env);
        let mut child = match process::spawn(&transport, &env) {
            Ok(c) => c,
            Err(msg) => {
                self.fail(msg, true, None);
                return;
            }
        };
        let pid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            child.stdin().take(),
            child.stdout().take(),
            child.stderr().take(),
        ) else {
            self.fail(
                "cannot start: the child's stdio pipes were not available".into(),
                true,
                None,
            );
            return;
        };
        let generation = self.generation;
        let mut tasks = JoinSet::new();
        let stop = CancellationToken::new();
        let (exit_tx, exit_rx) = watch::channel(None);
        // The reaper owns the child: it is the only place that waits on it.
        tasks.spawn(async move {
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
        });
        let peer = self.start_peer(generation, stdin, BufReader::new(stdout), &stop, &mut tasks);
        let (stderr_tx, stderr_done) = oneshot::channel();
        {
            let shared = self.shared.clone();
            let bus = self.ctx.bus.clone();
            tasks.spawn(async move {
                let _done = stderr_tx;
                let mut lines = BufReader::new(stderr);
                let mut buf = Vec::new();
                loop {
                    match crate::jsonrpc::read_line(&mut lines, &mut buf, 64 * 1024).await {
                        Ok(crate::jsonrpc::Line::Data(l)) => push_log(
                            &shared,
                            &bus,
                            LogStream::Stderr,
                            String::from_utf8_lossy(&l).into_owned(),
                        ),
                        Ok(crate::jsonrpc::Line::TooLong(n)) => push_log(
                            &shared,
                            &bus,
                            LogStream::Gatehouse,
                            format!("dropped a stderr line of {n} bytes"),
                        ),
                        _ => break,
                    }
                }
            });
        }
        *lock(&self.shared.peer) = Some(peer.clone());
        self.session = Some(Session {
            generation,
            pid,
            peer,
            stop,
            exit: exit_rx,
            stderr_done: Some(stderr_done),
            remote_reason: None,
            tasks,
            started: Instant::now(),
            ready: false,
            refresh_after_ready: false,
        });
        self.update_status(|s| s.pid = Some(pid));
        tracing::info!(server = %self.shared.id, pid, "spawned");
    }

    /// The session's MCP connection over any byte stream (a child's pipes, a remote bridge):
    /// the peer, the task relaying what the server sends on its own, and the handshake.
    fn start_peer<W, R>(
        &self,
        generation: u64,
        writer: W,
        reader: R,
        stop: &CancellationToken,
        tasks: &mut JoinSet<()>,
    ) -> Arc<RpcPeer>
    where
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
        R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
    {
        let (in_tx, mut in_rx) = mpsc::unbounded_channel();
        let ev_tx = self.ev_tx.clone();
        tasks.spawn(async move {
            while let Some(msg) = in_rx.recv().await {
                if ev_tx
                    .send((generation, SessionEvent::Inbound(msg)))
                    .is_err()
                {
                    break;
                }
            }
        });
        let note: rpc::NoteFn = {
            let shared = self.shared.clone();
            let bus = self.ctx.bus.clone();
            Arc::new(move |line| push_log(&shared, &bus, LogStream::Gatehouse, line))
        };
        let peer = RpcPeer::start(
            self.shared.id.as_str(),
            writer,
            reader,
            stop.clone(),
            in_tx,
            note,
            tasks,
        );
        {
            let peer = peer.clone();
            let ev_tx = self.ev_tx.clone();
            let timeout = Duration::from_secs(self.cfg.startup_timeout_secs);
            tasks.spawn(async move {
                let ev = handshake(&peer, timeout).await;
                let _ = ev_tx.send((generation, ev));
            });
        }
        peer
    }

    /// A remote server: the same `RpcPeer` as a child's, over an in-memory pipe whose other end
    /// the HTTP bridge (`remote::run`) carries to the server.
    async fn begin_remote(&mut self, r: &crate::config::RemoteTransport) {
        let url = match remote::check_url(&r.url, r.allow_insecure) {
            Ok(u) => u,
            Err(msg) => return self.fail(msg, true, None),
        };
        // Header secrets are resolved at connect time only, like env secrets at spawn time.
        let headers = match resolve_env(
            &r.headers,
            self.ctx.secrets.clone(),
            self.ctx.redactions.clone(),
        )
        .await
        {
            Ok(h) => h,
            Err(msg) => return self.fail(msg, true, None),
        };
        let headers = match remote::header_map(&headers) {
            Ok(h) => h,
            Err(msg) => return self.fail(msg, true, None),
        };
        let http = match remote::client() {
            Ok(c) => c,
            Err(msg) => return self.fail(msg, true, None),
        };
        let generation = self.generation;
        let mut tasks = JoinSet::new();
        let stop = CancellationToken::new();
        let (exit_tx, exit_rx) = watch::channel(None);
        let (peer_io, bridge_io) = tokio::io::duplex(1 << 20);
        let (peer_read, peer_write) = tokio::io::split(peer_io);
        let (bridge_read, bridge_write) = tokio::io::split(bridge_io);
        let reason = Arc::new(Mutex::new(None));
        {
            let reason = reason.clone();
            let stop = stop.clone();
            tasks.spawn(async move {
                let why = remote::run(
                    http,
                    url,
                    headers,
                    BufReader::new(bridge_read),
                    bridge_write,
                    stop,
                )
                .await;
                *lock(&reason) = why;
                let _ = exit_tx.send(Some(ExitInfo {
                    code: None,
                    signal: None,
                }));
                exit_tx.closed().await;
            });
        }
        let peer = self.start_peer(
            generation,
            peer_write,
            BufReader::new(peer_read),
            &stop,
            &mut tasks,
        );
        *lock(&self.shared.peer) = Some(peer.clone());
        self.session = Some(Session {
            generation,
            pid: 0,
            remote_reason: Some(reason),
            peer,
            stop,
            exit: exit_rx,
            stderr_done: None,
            tasks,
            started: Instant::now(),
            ready: false,
            refresh_after_ready: false,
        });
        self.note(format!("connecting to {}", r.url));
    }

    async fn on_session_event(&mut self, ev: SessionEvent) {
        match ev {
            SessionEvent::Ready {
                tools,
                capabilities,
                name,
                version,
            } => {
                let count = tools.len();
                *lock(&self.shared.tools) = Arc::new(tools);
                *lock(&self.shared.capabilities) = capabilities.map(Arc::new);
                let refresh = match self.session.as_mut() {
                    Some(s) => {
                        s.ready = true;
                        std::mem::take(&mut s.refresh_after_ready)
                    }
                    None => false,
                };
                self.set_state(State::Running, |s| {
                    s.tools = count;
                    s.server_name = name;
                    s.server_version = version;
                });
                self.ctx.bus.publish(Event::ToolsChanged {
                    server: self.shared.id.to_string(),
                    tools: count,
                });
                if refresh {
                    self.refresh_tools();
                }
            }
            SessionEvent::HandshakeFailed { message, fatal } => {
                // If the child died, its exit is the better explanation: let on_exit handle it.
                if self.child_exited() {
                    return;
                }
                self.end_session(&message).await;
                self.fail(message, fatal, None);
            }
            SessionEvent::ToolsRefreshed(tools) => {
                let count = tools.len();
                *lock(&self.shared.tools) = Arc::new(tools);
                self.update_status(|s| s.tools = count);
                self.ctx.bus.publish(Event::ToolsChanged {
                    server: self.shared.id.to_string(),
                    tools: count,
                });
            }
            SessionEvent::Inbound(Inbound::ToolsListChanged) => match self.session.as_mut() {
                Some(s) if s.ready => self.refresh_tools(),
                Some(s) => s.refresh_after_ready = true,
                None => {}
            },
            SessionEvent::Inbound(Inbound::Closed) => {
                // stdout closed. Usually the exit follows within milliseconds and explains more;
                // a child that closes stdout but lives on is useless, so it is stopped.
                let limit = self.ctx.tuning.stop_grace.min(Duration::from_millis(500));
                let mut exit = match self.session.as_ref() {
                    Some(s) => s.exit.clone(),
                    None => return,
                };
                if tokio::time::timeout(limit, exit.wait_for(|e| e.is_some()))
                    .await
                    .is_ok()
                {
                    self.on_exit().await;
                } else {
                    self.end_session("closed its output").await;
                    self.fail(
                        "closed its output but kept running; it was stopped".into(),
                        false,
                        None,
                    );
                }
            }
        }
    }

    fn child_exited(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| s.exit.borrow().is_some())
    }

    fn refresh_tools(&mut self) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let peer = s.peer.clone();
        let ev_tx = self.ev_tx.clone();
        let generation = s.generation;
        s.tasks.spawn(async move {
            match list_tools(&peer).await {
                Ok(tools) => {
                    let _ = ev_tx.send((generation, SessionEvent::ToolsRefreshed(tools)));
                }
                Err(e) => tracing::warn!(error = %e, "tools/list after list_changed failed"),
            }
        });
    }

    /// The child exited on its own (crash, kill -9, exit after N calls…).
    async fn on_exit(&mut self) {
        let Some(info) = self.session.as_ref().and_then(|s| *s.exit.borrow()) else {
            return;
        };
        let uptime = self.session.as_ref().map(|s| s.started.elapsed());
        let was_ready = self.session.as_ref().is_some_and(|s| s.ready);
        let remote_reason = self
            .session
            .as_ref()
            .and_then(|s| s.remote_reason.as_ref())
            .map(|r| {
                lock(r)
                    .clone()
                    .unwrap_or_else(|| "connection closed".to_owned())
            });
        let mut msg = remote_reason.clone().unwrap_or_else(|| info.to_string());
        if !was_ready {
            msg.push_str(" before finishing the MCP handshake");
        }
        // In-flight calls are answered now, before any cleanup.
        if let Some(s) = self.session.as_ref() {
            s.peer
                .close(remote_reason.as_deref().unwrap_or(&info.to_string()));
        }
        // Let the reader drain the child's last stderr lines so the error can quote them. A
        // surviving grandchild may hold the pipe open, hence the bound.
        if let Some(done) = self.session.as_mut().and_then(|s| s.stderr_done.take()) {
            let _ = tokio::time::timeout(Duration::from_millis(100), done).await;
        }
        if let Some(tail) = self
            .shared
            .logs
            .last_stderr(2, now_ms().saturating_sub(2000))
        {
            msg.push_str(": ");
            msg.push_str(&tail);
        }
        if remote_reason.is_some() {
            self.note(msg.clone());
        } else {
            self.note(format!("process {msg}"));
        }
        self.update_status(|s| s.last_exit = Some(info));
        self.end_session_after_exit().await;
        self.fail(msg, false, uptime);
    }

    /// Records a failure and decides between `restarting` (with backoff) and `failed`.
    fn fail(&mut self, msg: String, fatal: bool, uptime: Option<Duration>) {
        let tuning = self.ctx.tuning.clone();
        let mut failures = self.shared.status.borrow().consecutive_failures;
        if uptime.is_some_and(|u| u >= tuning.reset_after) {
            failures = 0;
        }
        failures += 1;
        tracing::warn!(server = %self.shared.id, failures, error = %msg, "server failed");
        if fatal || failures >= tuning.max_failures || !self.cfg.enabled {
            let last_error = if !fatal && failures >= tuning.max_failures {
                format!("gave up after {failures} consecutive failures; last: {msg}")
            } else {
                msg
            };
            self.note(format!("failed: {last_error}"));
            self.retry_at = None;
            self.set_state(State::Failed, |s| {
                s.consecutive_failures = failures;
                s.last_error = Some(last_error);
                s.next_retry_ms = None;
                s.pid = None;
            });
        } else {
            let delay = backoff::delay(
                tuning.backoff_base,
                tuning.backoff_max,
                failures,
                fastrand::f64(),
            );
            self.retry_at = Some(tokio::time::Instant::now() + delay);
            self.note(format!(
                "restarting in {:.1} s (failure {failures} of {})",
                delay.as_secs_f64(),
                tuning.max_failures
            ));
            self.set_state(State::Restarting, |s| {
                s.consecutive_failures = failures;
                s.last_error = Some(msg);
                s.next_retry_ms = Some(now_ms() + delay.as_millis() as u64);
                s.pid = None;
            });
        }
    }

    /// Stops the current child, if any: close stdin → grace → SIGTERM group → grace → SIGKILL
    /// group, then make sure nothing of its process group survives.
    async fn end_session(&mut self, reason: &str) {
        let Some(mut s) = self.session.take() else {
            return;
        };
        *lock(&self.shared.peer) = None;
        self.set_state(State::Stopping, |_| {});
        s.peer.close(reason);
        s.stop.cancel();
        let grace = self.ctx.tuning.stop_grace;
        let exited = |s: &mut Session| {
            let mut rx = s.exit.clone();
            async move { rx.wait_for(|e| e.is_some()).await.is_ok() }
        };
        if s.pid == 0 {
            // A remote connection: the bridge ends when `stop` is cancelled.
            let _ = tokio::time::timeout(grace, exited(&mut s)).await;
            finish_tasks(s.tasks).await;
            return;
        }
        #[cfg(unix)]
        {
            use nix::sys::signal::Signal;
            if tokio::time::timeout(grace, exited(&mut s)).await.is_err() {
                self.note("did not exit after stdin closed; sending SIGTERM".into());
                process::signal_group(s.pid, Signal::SIGTERM);
                if tokio::time::timeout(grace, exited(&mut s)).await.is_err() {
                    self.note("did not exit after SIGTERM; sending SIGKILL".into());
                    process::signal_group(s.pid, Signal::SIGKILL);
                    let _ = tokio::time::timeout(grace, exited(&mut s)).await;
                }
            }
            let info = *s.exit.borrow();
            self.update_status(|st| st.last_exit = info);
            reap_group(s.pid, grace).await;
        }
        #[cfg(not(unix))]
        {
            if tokio::time::timeout(grace * 2, exited(&mut s))
                .await
                .is_err()
            {
                // The Job Object's kill-on-drop ends the whole tree when the reaper drops it.
            }
        }
        finish_tasks(s.tasks).await;
    }

    /// After an unexpected exit: stop the session's tasks and clean up leftovers of the group in
    /// the background (a wrapper's child may still run), without delaying the restart decision.
    async fn end_session_after_exit(&mut self) {
        let Some(s) = self.session.take() else {
            return;
        };
        *lock(&self.shared.peer) = None;
        s.stop.cancel();
        let pid = s.pid;
        let grace = self.ctx.tuning.stop_grace;
        self.cleanup.spawn(async move {
            #[cfg(unix)]
            if pid != 0 {
                reap_group(pid, grace).await;
            }
            #[cfg(not(unix))]
            let _ = (pid, grace);
            finish_tasks(s.tasks).await;
        });
    }

    fn update_status(&self, f: impl FnOnce(&mut ServerStatus)) {
        let mut changed = false;
        self.shared.status.send_if_modified(|s| {
            let before = s.clone();
            f(s);
            changed = *s != before;
            changed
        });
        if changed {
            self.ctx
                .bus
                .publish(Event::Status(self.shared.status.borrow().clone()));
        }
    }

    fn set_state(&self, state: State, f: impl FnOnce(&mut ServerStatus)) {
        if state != State::Running {
            // Tools of a server that is not running are offered to no one.
            *lock(&self.shared.tools) = Arc::new(Vec::new());
            *lock(&self.shared.capabilities) = None;
        }
        self.update_status(|s| {
            if s.state != state {
                s.state = state;
                s.since_ms = now_ms();
            }
            if !matches!(state, State::Running | State::Starting | State::Stopping) {
                s.pid = None;
            }
            if state != State::Running {
                s.tools = 0;
            }
            f(s);
        });
    }
}

/// SIGTERM whatever is left in the group, then SIGKILL after the grace period.
#[cfg(unix)]
async fn reap_group(pgid: u32, grace: Duration) {
    use nix::sys::signal::Signal;
    if process::group_members(pgid).is_empty() {
        return;
    }
    process::signal_group(pgid, Signal::SIGTERM);
    if wait_group_empty(pgid, grace).await {
        return;
    }
    process::signal_group(pgid, Signal::SIGKILL);
    wait_group_empty(pgid, grace).await;
}

#[cfg(unix)]
async fn wait_group_empty(pgid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if process::group_members(pgid).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn finish_tasks(mut tasks: JoinSet<()>) {
    // Pipes are closed by now; give the readers a moment to drain, then end what is left.
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.shutdown().await;
}

fn push_log(shared: &Shared, bus: &EventBus, stream: LogStream, line: String) {
    let line = shared.redactions.mask(&line);
    let line = LogLine {
        server: shared.id.to_string(),
        stream,
        time_ms: now_ms(),
        line,
    };
    shared.logs.push(line.clone());
    bus.publish(Event::Log(line));
}

async fn resolve_env(
    env: &BTreeMap<String, EnvValue>,
    secrets: Arc<dyn SecretSource>,
    redactions: Arc<crate::secrets::Redactions>,
) -> Result<BTreeMap<String, String>, String> {
    if env.values().all(|v| matches!(v, EnvValue::Plain(_))) {
        // Nothing to look up: no trip to a blocking thread.
        return Ok(env
            .iter()
            .filter_map(|(k, v)| match v {
                EnvValue::Plain(s) => Some((k.clone(), s.clone())),
                EnvValue::Secret { .. } => None,
            })
            .collect());
    }
    let env = env.clone();
    let task = tokio::task::spawn_blocking(move || {
        let mut out = BTreeMap::new();
        for (k, v) in env {
            let value = match v {
                EnvValue::Plain(s) => s,
                EnvValue::Secret { secret, prefix } => {
                    let value = secrets.get(&secret).map_err(|e| e.to_string())?;
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

async fn handshake(peer: &RpcPeer, timeout: Duration) -> SessionEvent {
    let deadline = tokio::time::Instant::now() + timeout;
    let secs = timeout.as_secs();
    let params = format!(
        "{{\"protocolVersion\":\"{PROTOCOL_VERSION}\",\"capabilities\":{CLIENT_CAPABILITIES},\"clientInfo\":{{\"name\":\"gatehouse\",\"version\":\"{}\"}}}}",
        env!("CARGO_PKG_VERSION")
    );
    let params = RawValue::from_string(params).ok();
    let init = match tokio::time::timeout_at(deadline, peer.request("initialize", params.as_deref())).await {
        Err(_) => {
            return SessionEvent::HandshakeFailed {
                message: format!("handshake timed out after {secs} s: the server never answered \"initialize\" (run its command in a terminal to see why, e.g. an npx download without network; raise \"startup_timeout_secs\" if it is just slow)"),
                fatal: true,
            }
        }
        Ok(Err(e)) => {
            return SessionEvent::HandshakeFailed {
                message: e.to_string(),
                fatal: false,
            }
        }
        Ok(Ok(Reply::Error(e))) => {
            return SessionEvent::HandshakeFailed {
                message: format!("the server refused \"initialize\": {}", e.get()),
                fatal: true,
            }
        }
        Ok(Ok(Reply::Result(r))) => r,
    };
    #[derive(serde::Deserialize)]
    struct InitResult {
        #[serde(rename = "serverInfo", default)]
        server_info: Option<Info>,
        #[serde(default)]
        capabilities: Option<serde_json::Value>,
    }
    #[derive(serde::Deserialize)]
    struct Info {
        name: Option<String>,
        version: Option<String>,
    }
    let (info, capabilities) = match serde_json::from_str::<InitResult>(init.get()) {
        Ok(i) => (i.server_info, i.capabilities),
        Err(_) => (None, None),
    };
    if let Err(e) = peer.notify("notifications/initialized", None).await {
        return SessionEvent::HandshakeFailed {
            message: e.to_string(),
            fatal: false,
        };
    }
    match tokio::time::timeout_at(deadline, list_tools(peer)).await {
        Err(_) => SessionEvent::HandshakeFailed {
            message: format!("handshake timed out after {secs} s: the server answered \"initialize\" but not \"tools/list\""),
            fatal: true,
        },
        Ok(Err(e)) => SessionEvent::HandshakeFailed {
            message: e,
            fatal: false,
        },
        Ok(Ok(tools)) => SessionEvent::Ready {
            tools,
            capabilities,
            name: info.as_ref().and_then(|i| i.name.clone()),
            version: info.and_then(|i| i.version),
        },
    }
}

/// Fetches every page of `tools/list`.
async fn list_tools(peer: &RpcPeer) -> Result<Vec<ToolDef>, String> {
    #[derive(serde::Deserialize)]
    struct Page {
        tools: Vec<Box<RawValue>>,
        #[serde(rename = "nextCursor", default)]
        next_cursor: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let params = cursor.as_ref().and_then(|c| {
            RawValue::from_string(format!("{{\"cursor\":{}}}", crate::jsonrpc::json_string(c))).ok()
        });
        let page = match peer.request("tools/list", params.as_deref()).await {
            Ok(Reply::Result(r)) => serde_json::from_str::<Page>(r.get())
                .map_err(|e| format!("the server's tools/list result is malformed: {e}"))?,
            Ok(Reply::Error(e)) => return Err(format!("tools/list failed: {}", e.get())),
            Err(e) => return Err(e.to_string()),
        };
        for raw in page.tools {
            let named: Named = serde_json::from_str(raw.get())
                .map_err(|e| format!("the server listed a tool without a name: {e}"))?;
            tools.push(ToolDef {
                name: named.name,
                read_only: crate::approval::policy::read_only_hint(raw.get()),
                raw: Arc::from(raw),
            });
        }
        match page.next_cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => return Ok(tools),
        }
    }
    Err("tools/list returned more than 1000 pages; giving up".into())
}

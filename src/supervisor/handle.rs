//! [`ServerHandle`]: the hub's and callers' side of one server. Control goes to the actor through
//! a queue; status, tools and the live connection are read from what the actor shares.

use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::config::{ServerConfig, ServerId, Transport};
use crate::events::{Event, EventBus};
use crate::logs::{LogLine, LogStore};

use super::actor::{Actor, Control};
use super::context::Context;
use super::rpc::{CallError, CallRoute, Reply, RpcPeer};
use super::shared::{lock, Shared};
use super::status::{ServerStatus, State, ToolDef, TransportKind};

/// The hub's and callers' side of one server. Cheap to clone.
#[derive(Clone)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    ctl: mpsc::Sender<Control>,
}

/// The actor of a server is gone (the hub shut down).
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
        let mut status = ServerStatus::new(
            id.as_str(),
            match cfg.transport {
                Transport::Stdio(_) => TransportKind::Stdio,
                Transport::Remote(_) => TransportKind::Remote,
            },
        );
        status.enabled = cfg.enabled;
        status.name = cfg.name.clone();
        status.command = cfg.describe();
        status.sandbox = cfg.sandbox_report();
        status.start = cfg.effective_start;
        let log_file = ctx.log_dir.as_ref().map(|d| d.join(format!("{id}.log")));
        let shared = Arc::new(Shared {
            id,
            status: watch::channel(status).0,
            peer: Mutex::new(None),
            tools: Mutex::new(Arc::new(Vec::new())),
            capabilities: Mutex::new(None),
            instructions: Mutex::new(None),
            logs: LogStore::new(log_file),
            redactions: ctx.redactions.clone(),
            call_timeout_secs: std::sync::atomic::AtomicU64::new(cfg.call_timeout_secs),
            startup_timeout_secs: std::sync::atomic::AtomicU64::new(cfg.startup_timeout_secs),
            warnings: Mutex::new(Default::default()),
            bus: ctx.bus.clone(),
            confined: Mutex::new(None),
            in_flight: Default::default(),
            last_used_ms: Default::default(),
        });
        let join = tokio::spawn(Actor::new(shared.clone(), cfg, ctx, ctl_rx).run());
        (
            ServerHandle {
                shared,
                ctl: ctl_tx,
            },
            join,
        )
    }

    /// The server's id.
    pub fn id(&self) -> &ServerId {
        &self.shared.id
    }

    /// The current status (a fenced server's refused destinations read as it is asked).
    pub fn status(&self) -> ServerStatus {
        let mut status = self.shared.status.borrow().clone();
        let network = status.sandbox.as_mut().and_then(|s| s.network.as_mut());
        if let Some(n) = network {
            n.refused = self
                .confined()
                .and_then(|c| c.refused.as_ref().map(|r| r.rows()))
                .unwrap_or_default();
        }
        status
    }

    /// The state alone, without copying the rest of the status (the call path asks it).
    pub fn state(&self) -> crate::supervisor::State {
        self.shared.status.borrow().state
    }

    /// Every status change from now on.
    pub fn watch_status(&self) -> watch::Receiver<ServerStatus> {
        self.shared.status.subscribe()
    }

    /// The tools of the last successful `tools/list` (empty unless running).
    pub fn tools(&self) -> Arc<Vec<Arc<ToolDef>>> {
        lock(&self.shared.tools).clone()
    }

    /// The sandbox of its current (or last) launch, when it runs confined: what was opened and
    /// left out, for saying when a failure may be the sandbox's doing.
    pub fn confined(&self) -> Option<Arc<crate::sandbox::Confined>> {
        lock(&self.shared.confined).clone()
    }

    /// The server's declared capabilities (from `initialize`), while it runs.
    pub fn capabilities(&self) -> Option<Arc<serde_json::Value>> {
        lock(&self.shared.capabilities).clone()
    }

    /// The `instructions` its handshake gave (secret values masked), while it runs.
    pub fn instructions(&self) -> Option<Arc<str>> {
        lock(&self.shared.instructions).clone()
    }

    /// Whether the running server declared the capability `name` (`prompts`, `resources`…).
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities()
            .is_some_and(|c| c.get(name).is_some_and(|v| !v.is_null()))
    }

    /// Sets (or clears, with `None`) a warning shown in the server's status, under `key`, with
    /// a note in its log when it is set.
    pub fn warn(&self, key: &str, text: Option<String>) {
        if let Some(t) = &text {
            self.shared.log(
                &self.shared.bus,
                crate::logs::LogStream::Gatehouse,
                t.clone(),
            );
        }
        self.shared.warn(key, text);
    }

    /// A note in the server's log (for what a client, not the server, did wrong).
    pub fn warn_once(&self, text: &str) {
        self.shared.log(
            &self.shared.bus,
            crate::logs::LogStream::Gatehouse,
            text.to_owned(),
        );
    }

    /// The server's kept log lines.
    pub fn logs(&self) -> &LogStore {
        &self.shared.logs
    }

    /// The last `n` log lines (all kept when `None`), then every new one: no line is missed or
    /// repeated between the two.
    pub fn follow_logs(&self, n: Option<usize>, bus: &EventBus) -> LogFollower {
        let (snapshot, events) = self.shared.logs.follow(n, || bus.subscribe());
        LogFollower {
            server: self.shared.id.to_string(),
            snapshot,
            events,
        }
    }

    /// Starts a stopped or failed server (clearing its failures).
    pub async fn start(&self) -> Result<(), Gone> {
        self.send(Control::Start).await
    }

    /// Stops the server; it stays stopped until started.
    pub async fn stop(&self) -> Result<(), Gone> {
        self.send(Control::Stop).await
    }

    /// Stops and starts the server (also clears a `failed` state).
    pub async fn restart(&self) -> Result<(), Gone> {
        self.send(Control::Restart).await
    }

    /// Lists the server's tools again without restarting it; returns once a listing that began
    /// after this call has ended (bounded by the server's call timeout).
    pub async fn refresh_tools(&self) -> Result<(), String> {
        if self.status().state != crate::supervisor::State::Running {
            return Err(format!(
                "server \"{}\" is {}; start it to list its tools",
                self.shared.id,
                self.status().state
            ));
        }
        self.send(Control::Refresh).await.map_err(|_| {
            format!(
                "server \"{}\" stopped before its tools were listed again",
                self.shared.id
            )
        })
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
        route: Option<CallRoute>,
    ) -> Result<Reply, CallError> {
        let _in_use = super::shared::InUse::begin(&self.shared);
        // The state alone, read in place: no copy of the status on a call's path.
        if self.state() == State::Idle {
            self.demand().await.map_err(|why| CallError::NotRunning {
                server: self.shared.id.to_string(),
                state: why,
            })?;
        }
        let peer = self.peer()?;
        let secs = self
            .shared
            .call_timeout_secs
            .load(std::sync::atomic::Ordering::Relaxed);
        if secs == 0 {
            return peer.request_routed(method, params, route).await;
        }
        // Dropping the request at the deadline tells the server `notifications/cancelled`.
        match tokio::time::timeout(
            std::time::Duration::from_secs(secs),
            peer.request_routed(method, params, route),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(CallError::Timeout {
                server: self.shared.id.to_string(),
                secs,
            }),
        }
    }

    /// Starts an idle on-demand server for a call and waits until it runs (within its startup
    /// timeout); the error says why it did not (the state it ended in and its last error).
    pub async fn demand(&self) -> Result<(), String> {
        let _in_use = super::shared::InUse::begin(&self.shared);
        let mut rx = self.shared.status.subscribe();
        if rx.borrow().state == State::Idle {
            self.send(Control::Demand)
                .await
                .map_err(|_| "Gatehouse is shutting down".to_owned())?;
        }
        let limit = std::time::Duration::from_secs(self.shared.startup_secs() + 5);
        let settled = tokio::time::timeout(
            limit,
            rx.wait_for(|s| !matches!(s.state, State::Idle | State::Starting | State::Stopping)),
        )
        .await;
        let s = match settled {
            Ok(Ok(s)) => s.clone(),
            Ok(Err(_)) => return Err("Gatehouse is shutting down".into()),
            Err(_) => return Err(format!("still starting after {} s", limit.as_secs())),
        };
        if s.state == State::Running {
            return Ok(());
        }
        Err(match s.last_error {
            Some(e) => format!("{} ({e})", s.state),
            None => s.state.to_string(),
        })
    }

    /// The live connection, for answering server→client requests; fails unless running.
    pub fn peer(&self) -> Result<Arc<RpcPeer>, CallError> {
        let state = self.shared.status.borrow().state;
        let peer = lock(&self.shared.peer).clone();
        match peer {
            Some(p) if state == State::Running => Ok(p),
            _ => Err(CallError::NotRunning {
                server: self.shared.id.to_string(),
                state: state.to_string(),
            }),
        }
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

/// A server's log: what was kept when following began, then each new line.
pub struct LogFollower {
    server: String,
    /// The lines kept when following began.
    pub snapshot: Vec<LogLine>,
    events: broadcast::Receiver<Event>,
}

/// One step of following a log.
#[derive(Debug)]
pub enum Followed {
    /// A new line.
    Line(LogLine),
    /// The follower fell behind and this many lines (of all servers) went by unseen.
    Skipped(u64),
}

impl LogFollower {
    /// The next line of this server; `None` when the hub is gone.
    pub async fn next(&mut self) -> Option<Followed> {
        loop {
            match self.events.recv().await {
                Ok(Event::Log(line)) if line.server == self.server => {
                    return Some(Followed::Line(line))
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => return Some(Followed::Skipped(n)),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

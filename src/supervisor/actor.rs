//! The actor that owns one server: its state machine (`stopped` → `starting` → `running` →
//! `stopping` → `stopped`; `restarting` while waiting out the backoff; `failed` when it gave up)
//! and the restart decisions. It alone starts and ends sessions.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use crate::config::ServerConfig;
use crate::events::Event;
use crate::logs::{now_ms, LogStream};

use super::backoff;
use super::context::Context;
use super::launch::{LaunchError, LaunchRequest};
use super::rpc::{self, Inbound};
use super::session::{EventTx, Session, SessionEvent};
use super::shared::{lock, Shared};
use super::status::State;

/// What a handle asks of the actor; each carries the reply channel that says "done".
pub(super) enum Control {
    Start(oneshot::Sender<()>),
    Stop(oneshot::Sender<()>),
    Restart(oneshot::Sender<()>),
    Update(Box<ServerConfig>, oneshot::Sender<()>),
    /// List the tools again; answered once a listing that began after the request has ended
    /// (dropped when the server is not running).
    Refresh(oneshot::Sender<()>),
    /// A call needs this on-demand server: start it if it is idle (answered once it began).
    Demand(oneshot::Sender<()>),
    Shutdown(oneshot::Sender<()>),
}

enum Wake {
    Control(Option<Control>),
    Exited,
    Session(u64, SessionEvent),
    Retry,
    Idle,
}

pub(super) struct Actor {
    shared: Arc<Shared>,
    cfg: ServerConfig,
    ctx: Arc<Context>,
    ctl: mpsc::Receiver<Control>,
    ev_tx: EventTx,
    ev_rx: mpsc::Receiver<(u64, SessionEvent)>,
    generation: u64,
    session: Option<Session>,
    /// Who asked for a fresh tool list (`Control::Refresh`).
    refresh_waiters: Vec<oneshot::Sender<()>>,
    retry_at: Option<tokio::time::Instant>,
    /// Tasks reaping what a crashed child left in its group. Awaited before the actor ends.
    cleanup: JoinSet<()>,
    /// Whether the handshake probes `server/discover` first; off for good once the server died
    /// of the probe (a strict 2025 server that exits on a method it does not know).
    probe: bool,
    /// When an on-demand server running without calls is next checked for idleness.
    idle_at: Option<tokio::time::Instant>,
    /// Its last known tool definitions (offered while it is idle).
    known: Arc<Vec<Arc<super::status::ToolDef>>>,
    /// Started only to learn its tools (no call asked for it): stopped once it listed them.
    learning: bool,
}

mod demand;
mod expect;
mod states;

impl Actor {
    pub fn new(
        shared: Arc<Shared>,
        cfg: ServerConfig,
        ctx: Arc<Context>,
        ctl: mpsc::Receiver<Control>,
    ) -> Actor {
        let (ev_tx, ev_rx) = mpsc::channel(super::session::EVENT_QUEUE);
        Actor {
            shared,
            cfg,
            ctx,
            ctl,
            ev_tx,
            ev_rx,
            generation: 0,
            session: None,
            refresh_waiters: Vec::new(),
            retry_at: None,
            cleanup: JoinSet::new(),
            probe: true,
            idle_at: None,
            known: Arc::new(Vec::new()),
            learning: false,
        }
    }

    /// Waits on control messages, the child's exit, session events and the restart timer until
    /// shut down (or every handle is gone).
    pub async fn run(mut self) {
        if self.cfg.enabled {
            self.launch_or_idle().await;
        }
        loop {
            let wake = {
                let exit_rx = self.session.as_ref().map(|s| s.exit.clone());
                let retry_at = self.retry_at;
                let idle_at = self.idle_at;
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
                    _ = async move {
                        match idle_at {
                            Some(at) => tokio::time::sleep_until(at).await,
                            None => std::future::pending::<()>().await,
                        }
                    } => Wake::Idle,
                }
            };
            match wake {
                Wake::Control(Some(Control::Shutdown(done))) => {
                    self.finish().await;
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
                Wake::Idle => self.on_idle_check().await,
            }
        }
        // Every handle dropped: the hub is shutting down.
        self.finish().await;
    }

    async fn finish(&mut self) {
        self.end_session("Gatehouse is shutting down").await;
        self.set_state(State::Stopped, |_| {});
        while self.cleanup.join_next().await.is_some() {}
    }

    /// The entry's sandbox as status says it: what the running launch left out stays there
    /// until it is launched again (a relaunch says anew).
    fn sandbox_status(&self) -> Option<crate::sandbox::SandboxReport> {
        let kept = lock(&self.shared.confined)
            .as_ref()
            .map(|c| c.left_out.clone())
            .unwrap_or_default();
        self.cfg.sandbox_report().map(|mut sb| {
            sb.left_out = kept.iter().map(|l| l.path.clone()).collect();
            sb.left_out_why = kept;
            sb
        })
    }

    async fn on_control(&mut self, c: Control) {
        match c {
            Control::Start(done) => {
                if matches!(
                    self.state(),
                    State::Stopped
                        | State::Failed
                        | State::Restarting
                        | State::NeedsSignIn
                        | State::Idle
                ) {
                    self.learning = false;
                    self.clear_failures();
                    self.begin_start().await;
                }
                let _ = done.send(());
            }
            Control::Demand(done) => {
                self.on_demand().await;
                let _ = done.send(());
            }
            Control::Stop(done) => {
                self.retry_at = None;
                self.idle_at = None;
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
            Control::Refresh(done) => match self.session.as_mut() {
                Some(s) if s.ready => {
                    self.refresh_waiters.push(done);
                    self.refresh_tools();
                }
                // Not running: dropping `done` tells the handle.
                _ => drop(done),
            },
            Control::Update(cfg, done) => {
                let relaunch = !self.cfg.launch_eq(&cfg) || self.cfg.enabled != cfg.enabled;
                self.shared
                    .call_timeout_secs
                    .store(cfg.call_timeout_secs, std::sync::atomic::Ordering::Relaxed);
                self.shared.startup_timeout_secs.store(
                    cfg.startup_timeout_secs,
                    std::sync::atomic::Ordering::Relaxed,
                );
                self.cfg = *cfg;
                let sandbox = self.sandbox_status();
                let (enabled, name, command, start) = (
                    self.cfg.enabled,
                    self.cfg.name.clone(),
                    self.cfg.describe(),
                    self.cfg.effective_start,
                );
                self.update_status(|s| {
                    s.enabled = enabled;
                    s.name = name;
                    s.command = command;
                    s.sandbox = sandbox;
                    s.start = start;
                });
                if self.state() == State::Running {
                    self.check_expectations();
                }
                let idle = self.state() == State::Idle;
                if relaunch || matches!(self.state(), State::Failed | State::NeedsSignIn) {
                    self.retry_at = None;
                    self.end_session("the server's configuration changed").await;
                    self.clear_failures();
                    if !self.cfg.enabled {
                        self.set_state(State::Stopped, |_| {});
                    } else if idle && self.on_demand_mode() {
                        // Idle stays idle: the next call starts it with the new settings.
                        self.go_idle();
                    } else {
                        self.launch_or_idle().await;
                    }
                } else {
                    self.start_mode_changed().await;
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

    fn log_fn(&self) -> super::launch::LogFn {
        let shared = self.shared.clone();
        let bus = self.ctx.bus.clone();
        Arc::new(move |stream, line| shared.log(&bus, stream, line))
    }

    async fn begin_start(&mut self) {
        self.retry_at = None;
        self.generation += 1;
        self.set_state(State::Starting, |s| {
            s.pid = None;
            s.next_retry_ms = None;
        });
        let launched = self
            .ctx
            .launcher
            .launch(LaunchRequest {
                cfg: &self.cfg,
                gateway_ports: &self.ctx.gateway_ports,
                secrets: self.ctx.secrets.clone(),
                redactions: self.ctx.redactions.clone(),
                log: self.log_fn(),
                id: self.shared.id.as_str(),
                oauth: self.ctx.oauth.clone(),
                sandbox: &self.ctx.sandbox,
            })
            .await;
        let launched = match launched {
            Ok(l) => l,
            Err(LaunchError::Failed(msg)) => return self.fail(msg, true, None),
            Err(LaunchError::SignIn(why)) => return self.needs_sign_in(why),
            Err(LaunchError::Retry(msg)) => return self.fail(msg, false, None),
        };
        // What its sandbox opened and left out: said in status, kept for blame.
        *lock(&self.shared.confined) = launched.confined.clone();
        let left = launched
            .confined
            .as_ref()
            .map(|c| c.left_out.clone())
            .unwrap_or_default();
        // Said on its row before any call fails: each place left out, with the line that opens it.
        let said = (!left.is_empty()).then(|| {
            let lines: Vec<String> = left
                .iter()
                .map(|l| format!("{} ({}): {}; {}", l.path, l.from, l.why, l.fix()))
                .collect();
            format!(
                "the sandbox left out what the entry names — {}",
                lines.join("; ")
            )
        });
        self.warn("left-out", said);
        self.update_status(|s| {
            if let Some(sb) = s.sandbox.as_mut() {
                sb.left_out = left.iter().map(|l| l.path.clone()).collect();
                sb.left_out_why = left;
            }
        });
        let note: rpc::NoteFn = {
            let log = self.log_fn();
            Arc::new(move |line| log(LogStream::Gatehouse, line))
        };
        // A resource the server says changed: its subscribers hear of it (the gateway).
        let updated: rpc::UpdatedFn = {
            let bus = self.ctx.bus.clone();
            let server = self.shared.id.to_string();
            Arc::new(move |uri| {
                bus.publish(Event::ResourceUpdated {
                    server: server.clone(),
                    uri,
                })
            })
        };
        let session = Session::open(
            launched,
            self.shared.id.as_str(),
            self.generation,
            self.ev_tx.clone(),
            super::session::Reports {
                note,
                updated,
                redactions: self.ctx.redactions.clone(),
            },
            Duration::from_secs(self.cfg.startup_timeout_secs),
            self.probe,
        );
        *lock(&self.shared.peer) = Some(session.peer.clone());
        let pid = session.pid();
        self.session = Some(session);
        if let Some(pid) = pid {
            self.update_status(|s| s.pid = Some(pid));
            tracing::info!(server = %self.shared.id, pid, "spawned");
        }
    }

    /// The handshake succeeded: the tools and what the server says of itself (masked) are
    /// kept, and it is `running`.
    fn on_ready(&mut self, ready: super::handshake::Ready) {
        let count = ready.tools.len();
        *lock(&self.shared.tools) = Arc::new(ready.tools);
        *lock(&self.shared.capabilities) = ready.capabilities.map(Arc::new);
        let refresh = match self.session.as_mut() {
            Some(s) => {
                s.ready = true;
                std::mem::take(&mut s.refresh_after_ready)
            }
            None => false,
        };
        // What the server says about itself is shown: secret values are masked first.
        let mask = |t: Option<String>| t.map(|t| self.ctx.redactions.mask(&t));
        *lock(&self.shared.instructions) = mask(ready.instructions).map(Arc::from);
        let (name, version) = (mask(ready.name), mask(ready.version));
        let protocol = mask(ready.protocol_version);
        let era = ready.era;
        self.set_state(State::Running, |s| {
            s.tools = count;
            s.server_name = name;
            s.server_version = version;
            s.protocol_version = protocol;
            s.era = Some(era);
        });
        self.ctx.bus.publish(Event::ToolsChanged {
            server: self.shared.id.to_string(),
            tools: count,
        });
        self.check_expectations();
        self.listed();
        if refresh {
            self.refresh_tools();
        }
    }

    /// A re-listing ended: another is started if one was asked meanwhile, else the waiters hear;
    /// a new list replaces the old one.
    fn on_refreshed(&mut self, result: Result<Vec<Arc<super::status::ToolDef>>, String>) {
        let again = match self.session.as_mut() {
            Some(s) => {
                s.refreshing = false;
                std::mem::take(&mut s.refresh_again)
            }
            None => false,
        };
        if again {
            self.refresh_tools();
        } else {
            // The listing that ended began after every waiter asked.
            for done in self.refresh_waiters.drain(..) {
                let _ = done.send(());
            }
        }
        let tools = match result {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(server = %self.shared.id, error = %e, "tools/list after list_changed failed");
                return;
            }
        };
        let count = tools.len();
        *lock(&self.shared.tools) = Arc::new(tools);
        self.update_status(|s| s.tools = count);
        self.listed();
        self.ctx.bus.publish(Event::ToolsChanged {
            server: self.shared.id.to_string(),
            tools: count,
        });
        self.check_expectations();
    }

    async fn on_session_event(&mut self, ev: SessionEvent) {
        match ev {
            SessionEvent::Handshake(Ok(ready)) => self.on_ready(ready),
            SessionEvent::Handshake(Err(e)) => {
                // If the child died, its exit is the better explanation: let on_exit handle it.
                if self.session.as_ref().is_some_and(Session::exited) {
                    return;
                }
                let message = e.to_string();
                self.end_session(&message).await;
                self.fail(message, e.is_fatal(), None);
            }
            SessionEvent::ToolsRefreshed(result) => self.on_refreshed(result),
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

    fn refresh_tools(&mut self) {
        let events = self.ev_tx.clone();
        if let Some(s) = self.session.as_mut() {
            s.refresh_tools(events);
        }
    }

    /// The child exited on its own (crash, kill -9, exit after N calls…), or the remote
    /// connection was lost.
    async fn on_exit(&mut self) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let Some(info) = *session.exit.borrow() else {
            return;
        };
        let uptime = session.started.elapsed();
        let sign_in = session.sign_in_needed();
        let died_of_probe = session.peer.is_probing();
        let remote_reason = session.remote_reason();
        let mut msg = remote_reason.clone().unwrap_or_else(|| info.to_string());
        if !session.ready {
            msg.push_str(" before finishing the MCP handshake");
        }
        // In-flight calls are answered now, before any cleanup.
        session
            .peer
            .close(remote_reason.as_deref().unwrap_or(&info.to_string()));
        // Let the reader drain the child's last stderr lines so the error can quote them. A
        // surviving grandchild may hold the pipe open, hence the bound.
        session.drain_stderr(Duration::from_millis(100)).await;
        let Some(session) = self.session.take() else {
            return;
        };
        *lock(&self.shared.peer) = None;
        if died_of_probe && self.probe && sign_in.is_none() {
            // It died of the `server/discover` probe: from now on it is opened with `initialize`.
            self.probe = false;
            (self.log_fn())(
                LogStream::Gatehouse,
                "the server exited on the server/discover probe (MCP 2026-07-28); it is started with initialize from now on".into(),
            );
        }
        if let Some(tail) = self
            .shared
            .logs
            .last_stderr(2, now_ms().saturating_sub(2000))
        {
            msg.push_str(": ");
            msg.push_str(&tail);
        }
        if sign_in.is_some() {
            // `needs_sign_in` below says it, once.
        } else if remote_reason.is_some() {
            self.note(msg.clone());
        } else {
            self.note(format!("process {msg}"));
        }
        self.update_status(|s| s.last_exit = Some(info));
        self.cleanup
            .spawn(session.cleanup(self.ctx.tuning.stop_grace));
        match sign_in {
            Some(why) => self.needs_sign_in(why),
            None => self.fail(msg, false, Some(uptime)),
        }
    }

    /// Stops the current session, if any, with the whole stop sequence.
    async fn end_session(&mut self, reason: &str) {
        // A listing will not end now: whoever waits for one hears so (the handle's error).
        self.refresh_waiters.clear();
        let Some(s) = self.session.take() else {
            return;
        };
        *lock(&self.shared.peer) = None;
        self.set_state(State::Stopping, |_| {});
        let is_child = s.pid().is_some();
        let info = s
            .stop(reason, self.ctx.tuning.stop_grace, |n| {
                self.note(n.to_owned())
            })
            .await;
        if is_child {
            self.update_status(|st| st.last_exit = info);
        }
    }
}

//! One session: a launched connection with its JSON-RPC peer and handshake, and the mechanics of
//! ending it — the stop sequence (close stdin → grace → TERM the group → grace → KILL the group →
//! nothing of the group left) or the cleanup after an unexpected exit.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::handshake::{self, HandshakeError, Ready};
use super::launch::{Launched, ProcessGroup, SessionKind, StopSignal};
use super::rpc::{self, Inbound, RpcPeer};
use super::status::ExitInfo;

/// What a session reports to its actor, tagged with the session's generation.
pub(super) enum SessionEvent {
    Handshake(Result<Ready, HandshakeError>),
    ToolsRefreshed(Result<Vec<Arc<super::status::ToolDef>>, String>),
    Inbound(Inbound),
}

/// The actor's channel for session events (bounded: a flooding server waits, then loses its
/// `list_changed` notifications, never the hub's memory); stale generations are ignored.
pub(super) type EventTx = mpsc::Sender<(u64, SessionEvent)>;
/// Session events queued for the actor at most.
pub(super) const EVENT_QUEUE: usize = 64;

/// One live connection and everything it owns.
pub(super) struct Session {
    pub generation: u64,
    pub kind: SessionKind,
    pub peer: Arc<RpcPeer>,
    /// Cancelling closes the child's stdin and ends the reader.
    stop: CancellationToken,
    pub exit: watch::Receiver<Option<ExitInfo>>,
    stderr_done: Option<oneshot::Receiver<()>>,
    tasks: JoinSet<()>,
    pub started: Instant,
    /// The handshake finished.
    pub ready: bool,
    /// A `list_changed` arrived before the handshake finished: list again once it has.
    pub refresh_after_ready: bool,
    /// A `tools/list` after `list_changed` is running.
    pub refreshing: bool,
    /// Another `list_changed` came while it ran: list once more when it ends.
    pub refresh_again: bool,
}

/// Where a session's connection reports what the server says besides answers, and what it
/// masks in it.
pub struct Reports {
    /// Notes for the server's log.
    pub note: rpc::NoteFn,
    /// Resources the server says changed.
    pub updated: rpc::UpdatedFn,
    /// Secret values to mask in what is stored or shown.
    pub redactions: Arc<crate::secrets::Redactions>,
}

impl Session {
    /// Wraps a launched connection: its peer, the task relaying what the server sends on its
    /// own, and the handshake (which reports on `events`).
    pub fn open(
        launched: Launched,
        server: &str,
        generation: u64,
        events: EventTx,
        reports: Reports,
        startup_timeout: Duration,
        probe: bool,
    ) -> Session {
        let Reports {
            note,
            updated,
            redactions,
        } = reports;
        let Launched {
            kind,
            writer,
            reader,
            exit,
            stderr_done,
            stop,
            mut tasks,
            confined: _,
        } = launched;
        let (in_tx, mut in_rx) = mpsc::channel(8);
        {
            let events = events.clone();
            tasks.spawn(async move {
                while let Some(msg) = in_rx.recv().await {
                    if events
                        .send((generation, SessionEvent::Inbound(msg)))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            });
        }
        let trust_related = matches!(kind, SessionKind::Remote { .. });
        let peer = RpcPeer::start(
            server,
            writer,
            reader,
            stop.clone(),
            rpc::Hooks {
                inbound: in_tx,
                trust_related,
                note,
                redactions,
                updated,
            },
            &mut tasks,
        );
        {
            let peer = peer.clone();
            tasks.spawn(async move {
                let r = handshake::handshake(&peer, startup_timeout, probe).await;
                let _ = events.send((generation, SessionEvent::Handshake(r))).await;
            });
        }
        Session {
            generation,
            kind,
            peer,
            stop,
            exit,
            stderr_done,
            tasks,
            started: Instant::now(),
            ready: false,
            refresh_after_ready: false,
            refreshing: false,
            refresh_again: false,
        }
    }

    /// The child's pid, for a process session.
    pub fn pid(&self) -> Option<u32> {
        match &self.kind {
            SessionKind::Child { pid, .. } => Some(*pid),
            SessionKind::Remote { .. } => None,
        }
    }

    /// Why a remote connection ended, as its bridge recorded it; `None` for a process.
    /// Why the person has to sign in, when the remote connection ended for want of a sign-in.
    pub fn sign_in_needed(&self) -> Option<String> {
        match &self.kind {
            SessionKind::Remote { auth, .. } => auth.sign_in_needed(),
            SessionKind::Child { .. } => None,
        }
    }

    pub fn remote_reason(&self) -> Option<String> {
        match &self.kind {
            SessionKind::Remote { reason, .. } => Some(
                crate::sync::lock(reason)
                    .clone()
                    .unwrap_or_else(|| "connection closed".to_owned()),
            ),
            SessionKind::Child { .. } => None,
        }
    }

    /// The process exited (or the remote connection ended).
    pub fn exited(&self) -> bool {
        self.exit.borrow().is_some()
    }

    /// Waits (at most `limit`) for the stderr reader to drain the child's last lines.
    pub async fn drain_stderr(&mut self, limit: Duration) {
        if let Some(done) = self.stderr_done.take() {
            let _ = tokio::time::timeout(limit, done).await;
        }
    }

    /// Lists the tools again in the session's task set (one listing at a time: a
    /// `list_changed` during one asks for one more); reports `ToolsRefreshed`.
    pub fn refresh_tools(&mut self, events: EventTx) {
        if self.refreshing {
            self.refresh_again = true;
            return;
        }
        self.refreshing = true;
        let peer = self.peer.clone();
        let generation = self.generation;
        self.tasks.spawn(async move {
            let r = handshake::list_tools(&peer).await;
            let _ = events
                .send((generation, SessionEvent::ToolsRefreshed(r)))
                .await;
        });
    }

    /// The stop sequence: in-flight calls answered with `reason`, stdin closed; after `grace`
    /// SIGTERM to the group, after another `grace` SIGKILL; then nothing of the group may be
    /// left. A remote session just ends its bridge. Returns how the process ended.
    pub async fn stop(
        self,
        reason: &str,
        grace: Duration,
        note: impl Fn(&str),
    ) -> Option<ExitInfo> {
        self.peer.close(reason);
        self.stop.cancel();
        let exited = |rx: &watch::Receiver<Option<ExitInfo>>| {
            let mut rx = rx.clone();
            async move { rx.wait_for(|e| e.is_some()).await.is_ok() }
        };
        let group = match &self.kind {
            SessionKind::Remote { .. } => {
                let _ = tokio::time::timeout(grace, exited(&self.exit)).await;
                finish_tasks(self.tasks).await;
                return None;
            }
            SessionKind::Child { group, .. } => group.clone(),
        };
        if tokio::time::timeout(grace, exited(&self.exit))
            .await
            .is_err()
        {
            note("did not exit after stdin closed; sending SIGTERM");
            group.signal(StopSignal::Term);
            if tokio::time::timeout(grace, exited(&self.exit))
                .await
                .is_err()
            {
                note("did not exit after SIGTERM; sending SIGKILL");
                group.signal(StopSignal::Kill);
                let _ = tokio::time::timeout(grace, exited(&self.exit)).await;
            }
        }
        let info = *self.exit.borrow();
        reap_group(group.as_ref(), grace).await;
        finish_tasks(self.tasks).await;
        info
    }

    /// After an unexpected exit: stops the session's tasks and cleans up what is left of the
    /// group (a wrapper's child may still run). Runs in the background so the restart decision
    /// is not delayed.
    pub fn cleanup(self, grace: Duration) -> impl std::future::Future<Output = ()> + Send {
        self.stop.cancel();
        let group = match &self.kind {
            SessionKind::Child { group, .. } => Some(group.clone()),
            SessionKind::Remote { .. } => None,
        };
        let tasks = self.tasks;
        async move {
            if let Some(g) = group {
                reap_group(g.as_ref(), grace).await;
            }
            finish_tasks(tasks).await;
        }
    }
}

/// SIGTERM whatever is left in the group, then SIGKILL after the grace period.
async fn reap_group(group: &dyn ProcessGroup, grace: Duration) {
    if group.is_empty() {
        return;
    }
    group.signal(StopSignal::Term);
    if wait_group_empty(group, grace).await {
        return;
    }
    group.signal(StopSignal::Kill);
    wait_group_empty(group, grace).await;
}

async fn wait_group_empty(group: &dyn ProcessGroup, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if group.is_empty() {
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

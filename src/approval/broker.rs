//! [`ApprovalBroker`]: held calls wait here until the person answers (desktop modal or the
//! control CLI), time out, or are withdrawn; "for this session" and "always" answers are
//! remembered; tool definitions are pinned so a changed definition asks again.
//!
//! Nothing here is reachable from the gateway: only the control socket and the desktop shell
//! hold a way to answer.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::pins::Store;
use super::request::{
    Answer, ApprovalError, ApprovalRequest, Decider, DefinitionChange, Grant, Resolution, Scope,
    Verdict,
};
use crate::events::{Event, EventBus};
use crate::supervisor::status::ToolDef;

struct Waiting {
    request: ApprovalRequest,
    tx: oneshot::Sender<(Answer, Decider, Option<String>)>,
    /// Its place in the queue (order of arrival).
    seq: u64,
    /// How long it waits once at the front.
    timeout: Duration,
    /// When it is denied unless answered: set when it reaches the front (`None` until then).
    deadline: watch::Sender<Option<tokio::time::Instant>>,
    /// When it is denied at the latest, at the front or not: [`MAX_TURNS`] timeouts after it
    /// was held (and the same in ms since the epoch, for `expires_at`).
    latest: (tokio::time::Instant, u64),
}

/// A held call waits at most this many approval timeouts in all, its turn included: a flood of
/// held calls ahead of it (another client's, say) delays it, but not without end.
pub const MAX_TURNS: u32 = 10;

/// Requests waiting for the person at most, per client profile (the default profile is one);
/// more of that profile are denied at once (by policy).
pub const MAX_PENDING: usize = 256;

/// The broker. Cheap to clone.
#[derive(Clone)]
pub struct ApprovalBroker {
    inner: Arc<Inner>,
}

struct Inner {
    bus: EventBus,
    path: Option<PathBuf>,
    deny_unattended: bool,
    /// The desktop app is attached: it shows every held call (no client is asked instead).
    desktop: std::sync::atomic::AtomicBool,
    /// This run's part of every request id: never the same in two runs over the same data dir
    /// (a number kept beside `path`), so an id read before a restart names no call after it.
    run: String,
    counter: AtomicU64,
    /// Guards one change or read of the broker's tables; never held across `.await`.
    state: Mutex<State>,
    /// Writes `path` off the async threads.
    writer: Option<super::persist::Persister>,
}

mod changes;
mod session_grant;
pub use changes::Heard;
use session_grant::SessionGrant;

#[derive(Default)]
struct State {
    pending: BTreeMap<String, Waiting>,
    /// Requests held so far: the next one's place in the queue.
    arrivals: u64,
    /// (client session, server, tool) allowed for the rest of that session, with who and when.
    session_grants: HashMap<(String, String, String), SessionGrant>,
    /// (client session, server, tool, arguments digest): exact calls allowed for the session.
    exact_grants: HashMap<(String, String, String, String), SessionGrant>,
    store: Store,
    /// Changes to what servers say, waiting for the person, by id (`changes.rs`).
    changes: BTreeMap<String, changes::Held>,
}

impl ApprovalBroker {
    /// `path`: where always-allows and pins persist (`None`: memory only, for tests).
    pub fn new(bus: EventBus, path: Option<PathBuf>, deny_unattended: bool) -> Self {
        let store = path.as_deref().map(Store::load).unwrap_or_default();
        let writer = path.clone().and_then(super::persist::Persister::start);
        let run = super::ids::this_run(path.as_deref());
        ApprovalBroker {
            inner: Arc::new(Inner {
                writer,
                bus,
                path,
                deny_unattended,
                desktop: Default::default(),
                run,
                counter: AtomicU64::new(1),
                state: Mutex::new(State {
                    store,
                    ..State::default()
                }),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        crate::sync::lock(&self.inner.state)
    }

    /// Pins the first definition seen of a tool; if it differs from the pinned one, returns
    /// what changed.
    pub fn check_definition(&self, server: &str, def: &ToolDef) -> Option<DefinitionChange> {
        let (change, added) = self.lock().store.check(server, def);
        if added {
            self.persist();
        }
        change
    }

    /// Takes a running server's full tool list (`origin`: the SHA-256 of what it runs): pins
    /// tools not seen before (first sight is what later changes are compared with; quarantined
    /// after the server's first listing), prunes pins of tools no longer listed, starts afresh
    /// for another origin. Persists once if anything changed.
    pub fn take_listing(&self, server: &str, origin: &str, tools: &[Arc<ToolDef>]) {
        let changed = self.lock().store.take_listing(server, origin, tools);
        if changed {
            self.persist();
        }
    }

    /// The definition pinned for a tool, when one is (what rules are checked against when the
    /// server is not running).
    pub fn pinned(&self, server: &str, tool: &str) -> Option<serde_json::Value> {
        self.lock().store.pinned(server, tool)
    }

    /// Whether a tool's own annotations may not be believed yet (see [`super::pins`]).
    pub fn quarantined(&self, server: &str, tool: &str) -> bool {
        self.lock().store.quarantined(server, tool)
    }

    /// Whether an earlier answer covers this call: "always" for exactly this definition (this
    /// tool, or this exact call), or the same client session said "session" (this tool) or
    /// "exact" (this exact call).
    pub fn granted(&self, c: &super::Covered<'_>) -> Option<Scope> {
        let st = self.lock();
        if st.store.always_allows(c.profile, c.server, c.tool, c.hash) {
            return Some(Scope::Always);
        }
        if st.store.exact_allows(c) {
            return Some(Scope::ExactAlways);
        }
        let key = (c.session.to_owned(), c.server.to_owned(), c.tool.to_owned());
        if st.session_grants.contains_key(&key) {
            return Some(Scope::Session);
        }
        let (session, server, tool) = key;
        st.exact_grants
            .contains_key(&(session, server, tool, c.arguments_digest.to_owned()))
            .then_some(Scope::Exact)
    }

    /// The desktop app attaches (or detaches): while it is, held calls are put to the person
    /// there and never through a client (`approve_via: client`).
    pub fn set_desktop_attached(&self, attached: bool) {
        self.inner.desktop.store(attached, Ordering::Relaxed);
    }

    /// Whether the desktop app is attached.
    pub fn desktop_attached(&self) -> bool {
        self.inner.desktop.load(Ordering::Relaxed)
    }

    /// A fresh request id (`apr-RUN-N`): unique within this run and never used by another.
    pub fn next_id(&self) -> String {
        format!(
            "apr-{}-{}",
            self.inner.run,
            self.inner.counter.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Holds until answered or `timeout`. Dropping the future withdraws the request.
    pub async fn ask(
        &self,
        request: ApprovalRequest,
        definition_hash: String,
        timeout: Duration,
    ) -> Verdict {
        if self.inner.deny_unattended && !request.asked_in_client {
            self.publish_resolved(&request.id, Resolution::Denied, Some(Decider::Policy));
            return Verdict::Denied {
                reason: Some(
                    "no one answered: nobody is attending this Gatehouse (it runs with --deny-unattended)".into(),
                ),
                by: Decider::Policy,
                via: None,
            };
        }
        let (tx, mut rx) = oneshot::channel();
        let longest = timeout.saturating_mul(MAX_TURNS);
        let latest = (
            tokio::time::Instant::now() + longest,
            crate::logs::now_ms() + longest.as_millis() as u64,
        );
        let (deadline, mut deadline_rx) = watch::channel(None);
        let id = request.id.clone();
        let waiting = Waiting {
            request,
            tx,
            seq: 0,
            timeout,
            deadline,
            latest,
        };
        let request = match self.enqueue(waiting) {
            Ok(request) => request,
            Err(refused) => return refused,
        };
        self.inner
            .bus
            .publish(Event::ApprovalRequested(request.clone()));
        let mut guard = Withdraw {
            broker: self,
            id: id.clone(),
            armed: true,
        };
        // Waits for the answer; the countdown runs only once the call is at the front, and never
        // past `latest`.
        let answered = loop {
            let at = deadline_rx.borrow_and_update().unwrap_or(latest.0);
            let expired = tokio::time::sleep_until(at.min(latest.0));
            tokio::select! {
                r = &mut rx => break r.ok(),
                () = expired => {
                    // Answered at the same moment: the answer wins.
                    if self.take(&id).is_some() {
                        break None;
                    }
                    break (&mut rx).await.ok();
                }
                changed = deadline_rx.changed() => {
                    if changed.is_err() {
                        // Out of the queue: answered (the answer is on its way) or gone.
                        break (&mut rx).await.ok();
                    }
                }
            }
        };
        guard.armed = false;
        match answered {
            Some((Answer::Allow(scope), by, via)) => {
                if self.lock().store.release(&request.server, &request.tool) {
                    self.persist();
                }
                self.remember(&request, scope, &definition_hash);
                self.publish_resolved(&id, Resolution::Allowed, Some(by));
                Verdict::Allowed { scope, by, via }
            }
            Some((Answer::Deny(reason), by, via)) => {
                self.publish_resolved(&id, Resolution::Denied, Some(by));
                Verdict::Denied { reason, by, via }
            }
            None => {
                self.take(&id);
                self.publish_resolved(&id, Resolution::TimedOut, None);
                Verdict::TimedOut {
                    secs: timeout.as_secs(),
                }
            }
        }
    }

    /// Puts a held call in the queue, in its profile's share of it ([`MAX_PENDING`]): the
    /// request as it now stands (queued, or at the front with its countdown started), or the
    /// refusal when that share is full.
    fn enqueue(&self, mut w: Waiting) -> Result<ApprovalRequest, Verdict> {
        let id = w.request.id.clone();
        let mut st = self.lock();
        // Each client profile has its own share of the queue: one profile's flood of held
        // calls never refuses another's.
        let profile = &w.request.client.profile;
        let waiting = st.pending.values();
        if waiting
            .filter(|x| &x.request.client.profile == profile)
            .count()
            >= MAX_PENDING
        {
            drop(st);
            self.publish_resolved(&id, Resolution::Denied, Some(Decider::Policy));
            return Err(Verdict::Denied {
                reason: Some(format!(
                    "{MAX_PENDING} calls of this client profile are already waiting for the person's answer; this one was refused"
                )),
                by: Decider::Policy,
                via: None,
            });
        }
        st.arrivals += 1;
        w.seq = st.arrivals;
        w.request.queued = true;
        let mut request = w.request.clone();
        st.pending.insert(id.clone(), w);
        // Alone in the queue, it is the front: its countdown starts now.
        promote(&mut st);
        if let Some(w) = st.pending.get(&id) {
            request = w.request.clone();
        }
        Ok(request)
    }

    /// Takes a request out of the queue; the next one, if it reaches the front, starts its
    /// countdown (and the front ends hear of it).
    fn take(&self, id: &str) -> Option<Waiting> {
        let (taken, front) = {
            let mut st = self.lock();
            let taken = st.pending.remove(id);
            (taken, promote(&mut st))
        };
        if let Some(front) = front {
            self.inner.bus.publish(Event::ApprovalUpdated(front));
        }
        taken
    }

    /// Answers a pending request. The first answer wins; later ones get `Unknown`.
    pub fn answer(
        &self,
        id: &str,
        answer: Answer,
        by: Decider,
    ) -> Result<ApprovalRequest, ApprovalError> {
        self.answer_via(id, None, answer, by, None)
    }

    /// Like [`ApprovalBroker::answer`], for the call that was shown: `digest` is the request's
    /// [`ApprovalRequest::digest`] as the surface showed it (required from every surface that
    /// shows the call; the CLI's `approve ID` names it by id alone, ids being unique). `via`
    /// names the process that answered (the control socket's peer), which the activity log keeps
    /// with the decision. An answer whose digest is not the call's is refused and the call keeps
    /// waiting.
    pub fn answer_via(
        &self,
        id: &str,
        digest: Option<&str>,
        answer: Answer,
        by: Decider,
        via: Option<String>,
    ) -> Result<ApprovalRequest, ApprovalError> {
        if let Some(digest) = digest {
            let st = self.lock();
            match st.pending.get(id) {
                None => return Err(ApprovalError::Unknown(id.to_owned())),
                Some(w) if w.request.digest != digest => {
                    return Err(ApprovalError::Changed(id.to_owned()))
                }
                Some(_) => {}
            }
        }
        let Some(w) = self.take(id) else {
            return Err(ApprovalError::Unknown(id.to_owned()));
        };
        let request = w.request.clone();
        // If the caller went away in between, the answer has nowhere to go: the call never runs.
        let _ = w.tx.send((answer, by, via));
        Ok(request)
    }

    /// The requests waiting for an answer.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        let st = self.lock();
        let mut waiting: Vec<&Waiting> = st.pending.values().collect();
        waiting.sort_by_key(|w| w.seq);
        waiting.into_iter().map(|w| w.request.clone()).collect()
    }

    /// Revokes remembered answers for a server (`tool: None`) or one tool. Returns how many.
    pub fn forget(&self, server: &str, tool: Option<&str>) -> usize {
        let mut st = self.lock();
        let matches = |s: &str, t: &str| s == server && tool.is_none_or(|x| x == t);
        let before = st.session_grants.len() + st.exact_grants.len();
        st.session_grants.retain(|(_, s, t), _| !matches(s, t));
        st.exact_grants.retain(|(_, s, t, _), _| !matches(s, t));
        let after = st.session_grants.len() + st.exact_grants.len();
        let removed = before - after + st.store.forget(matches);
        drop(st);
        self.persist();
        removed
    }

    /// Every remembered answer: "always" ones (per definition and profile) and "session" ones
    /// (per client session), newest first.
    pub fn grants(&self) -> Vec<Grant> {
        let st = self.lock();
        let mut out: Vec<Grant> = st
            .store
            .always_grants()
            .into_iter()
            .map(|(server, tool, profile, hash, since_ms)| Grant {
                scope: Scope::Always,
                server,
                tool,
                profile,
                session: None,
                client: None,
                since_ms,
                definition: Some(hash.chars().take(12).collect()),
                arguments_digest: None,
                arguments: None,
            })
            .collect();
        out.extend(st.store.exact_grants().iter().map(|e| Grant {
            scope: Scope::ExactAlways,
            server: e.server.clone(),
            tool: e.tool.clone(),
            profile: e.profile.clone(),
            session: None,
            client: None,
            since_ms: e.since_ms,
            definition: Some(e.sha256.chars().take(12).collect()),
            arguments_digest: Some(e.arguments_digest.clone()),
            arguments: e.arguments.clone(),
        }));
        out.extend(
            st.exact_grants
                .iter()
                .map(|((session, server, tool, digest), g)| {
                    g.listed(Scope::Exact, (session, server, tool), Some(digest))
                }),
        );
        out.extend(
            st.session_grants
                .iter()
                .map(|((session, server, tool), g)| {
                    g.listed(Scope::Session, (session, server, tool), None)
                }),
        );
        out.sort_by_key(|g| std::cmp::Reverse(g.since_ms));
        out
    }

    /// A client session ended: its "session" answers end with it.
    pub fn end_session(&self, session: &str) {
        let mut st = self.lock();
        st.session_grants.retain(|(s, _, _), _| s != session);
        st.exact_grants.retain(|(s, _, _, _), _| s != session);
    }

    /// Revokes one remembered answer at once (the next call asks); returns whether it existed.
    pub fn revoke(&self, g: &Grant) -> bool {
        let mut st = self.lock();
        let removed = match g.scope {
            Scope::Always => st
                .store
                .revoke_always(&g.server, &g.tool, g.profile.as_deref()),
            Scope::Session => {
                let key = (
                    g.session.clone().unwrap_or_default(),
                    g.server.clone(),
                    g.tool.clone(),
                );
                st.session_grants.remove(&key).is_some()
            }
            Scope::Exact => {
                let key = (
                    g.session.clone().unwrap_or_default(),
                    g.server.clone(),
                    g.tool.clone(),
                    g.arguments_digest.clone().unwrap_or_default(),
                );
                st.exact_grants.remove(&key).is_some()
            }
            Scope::ExactAlways => st.store.revoke_exact(
                &g.server,
                &g.tool,
                g.profile.as_deref(),
                g.arguments_digest.as_deref().unwrap_or_default(),
            ),
            Scope::Once => false,
        };
        drop(st);
        if removed && matches!(g.scope, Scope::Always | Scope::ExactAlways) {
            self.persist();
        }
        removed
    }

    fn remember(&self, request: &ApprovalRequest, scope: Scope, hash: &str) {
        let mut st = self.lock();
        match scope {
            Scope::Once => return,
            Scope::Session => {
                st.session_grants.insert(
                    (
                        request.client.session.clone(),
                        request.server.clone(),
                        request.tool.clone(),
                    ),
                    SessionGrant::of(request, false),
                );
                return;
            }
            Scope::Exact => {
                st.exact_grants.insert(
                    (
                        request.client.session.clone(),
                        request.server.clone(),
                        request.tool.clone(),
                        request.arguments_digest.clone(),
                    ),
                    SessionGrant::of(request, true),
                );
                return;
            }
            Scope::ExactAlways => st.store.trust_exact(
                &super::Covered {
                    profile: request.client.profile.as_deref(),
                    session: &request.client.session,
                    server: &request.server,
                    tool: &request.tool,
                    hash,
                    arguments_digest: &request.arguments_digest,
                },
                &session_grant::shown_arguments(request.arguments.get()),
            ),
            Scope::Always => {
                // "Always" trusts this definition: it becomes the pin.
                let definition = request.changed.as_ref().map(|c| c.new.clone());
                st.store.trust(
                    request.client.profile.as_deref(),
                    &request.server,
                    &request.tool,
                    hash,
                    definition,
                );
            }
        }
        drop(st);
        self.persist();
    }

    fn persist(&self) {
        let Some(path) = &self.inner.path else {
            return;
        };
        // Made and handed over under the lock: texts reach the writer in the order they were made.
        let mut st = self.lock();
        let text = st.store.file_text();
        match &self.inner.writer {
            Some(w) => w.save(text),
            None => {
                drop(st);
                if let Err(e) = crate::config::write_atomic(path, text.as_bytes()) {
                    tracing::error!(path = %path.display(), error = %e, "cannot save remembered approvals");
                }
            }
        }
    }

    /// Waits (at most `limit`) until every change to the remembered answers is on disk.
    /// Blocking: the hub calls it on the blocking pool when it shuts down.
    pub fn flush(&self, limit: Duration) -> bool {
        self.inner.writer.as_ref().is_none_or(|w| w.flush(limit))
    }

    fn publish_resolved(&self, id: &str, outcome: Resolution, by: Option<Decider>) {
        self.inner.bus.publish(Event::ApprovalResolved {
            id: id.to_owned(),
            outcome,
            by,
        });
    }
}

/// Starts the countdown of the call at the front of the queue if it has none yet: it is denied
/// `timeout` from now — or at its `latest`, if sooner — unless answered (`expires_at` says when).
/// Returns it when it changed.
fn promote(st: &mut State) -> Option<ApprovalRequest> {
    let front = st.pending.values_mut().min_by_key(|w| w.seq)?;
    if front.deadline.borrow().is_some() {
        return None;
    }
    let (latest, latest_ms) = front.latest;
    front.deadline.send_replace(Some(
        (tokio::time::Instant::now() + front.timeout).min(latest),
    ));
    front.request.expires_at =
        (crate::logs::now_ms() + front.timeout.as_millis() as u64).min(latest_ms);
    front.request.queued = false;
    Some(front.request.clone())
}

/// Withdraws a pending request when its caller goes away (client cancelled or disconnected).
struct Withdraw<'a> {
    broker: &'a ApprovalBroker,
    id: String,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.armed && self.broker.take(&self.id).is_some() {
            self.broker
                .publish_resolved(&self.id, Resolution::Withdrawn, Some(Decider::Client));
        }
    }
}

#[cfg(test)]
#[path = "broker_tests.rs"]
mod tests;

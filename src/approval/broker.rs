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

use tokio::sync::oneshot;

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
}

/// Requests waiting for the person at most; more are denied at once (by policy).
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
    counter: AtomicU64,
    /// Guards one change or read of the broker's tables; never held across `.await`.
    state: Mutex<State>,
    /// Writes `path` off the async threads.
    writer: Option<super::persist::Persister>,
}

/// Who got a "session" answer, and when.
#[derive(Debug, Clone)]
struct SessionGrant {
    client: Option<String>,
    profile: Option<String>,
    since_ms: u64,
}

#[derive(Default)]
struct State {
    pending: BTreeMap<String, Waiting>,
    /// (client session, server, tool) allowed for the rest of that session, with who and when.
    session_grants: HashMap<(String, String, String), SessionGrant>,
    store: Store,
}

impl ApprovalBroker {
    /// `path`: where always-allows and pins persist (`None`: memory only, for tests).
    pub fn new(bus: EventBus, path: Option<PathBuf>, deny_unattended: bool) -> Self {
        let store = path.as_deref().map(Store::load).unwrap_or_default();
        let writer = path.clone().and_then(super::persist::Persister::start);
        ApprovalBroker {
            inner: Arc::new(Inner {
                writer,
                bus,
                path,
                deny_unattended,
                counter: AtomicU64::new(1),
                state: Mutex::new(State {
                    store,
                    ..State::default()
                }),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Whether a tool's own annotations may not be believed yet (see [`super::pins`]).
    pub fn quarantined(&self, server: &str, tool: &str) -> bool {
        self.lock().store.quarantined(server, tool)
    }

    /// Whether an earlier answer covers this call: the same client session said "session", or
    /// "always" was given for exactly this definition.
    pub fn granted(
        &self,
        profile: Option<&str>,
        session: &str,
        server: &str,
        tool: &str,
        hash: &str,
    ) -> Option<Scope> {
        let st = self.lock();
        if st.store.always_allows(profile, server, tool, hash) {
            return Some(Scope::Always);
        }
        st.session_grants
            .contains_key(&(session.to_owned(), server.to_owned(), tool.to_owned()))
            .then_some(Scope::Session)
    }

    /// A fresh request id.
    pub fn next_id(&self) -> String {
        format!("apr-{}", self.inner.counter.fetch_add(1, Ordering::Relaxed))
    }

    /// Holds until answered or `timeout`. Dropping the future withdraws the request.
    pub async fn ask(
        &self,
        request: ApprovalRequest,
        definition_hash: String,
        timeout: Duration,
    ) -> Verdict {
        if self.inner.deny_unattended {
            self.publish_resolved(&request.id, Resolution::Denied, Some(Decider::Policy));
            return Verdict::Denied {
                reason: Some(
                    "no one answered: nobody is attending this Gatehouse (it runs with --deny-unattended)".into(),
                ),
                by: Decider::Policy,
                via: None,
            };
        }
        let (tx, rx) = oneshot::channel();
        let id = request.id.clone();
        {
            let mut st = self.lock();
            if st.pending.len() >= MAX_PENDING {
                drop(st);
                self.publish_resolved(&id, Resolution::Denied, Some(Decider::Policy));
                return Verdict::Denied {
                    reason: Some(format!(
                        "{MAX_PENDING} calls are already waiting for the person's answer; this one was refused"
                    )),
                    by: Decider::Policy,
                    via: None,
                };
            }
            st.pending.insert(
                id.clone(),
                Waiting {
                    request: request.clone(),
                    tx,
                },
            );
        }
        self.inner
            .bus
            .publish(Event::ApprovalRequested(request.clone()));
        let mut guard = Withdraw {
            broker: self,
            id: id.clone(),
            armed: true,
        };
        let result = tokio::time::timeout(timeout, rx).await;
        guard.armed = false;
        match result {
            Ok(Ok((Answer::Allow(scope), by, via))) => {
                if self.lock().store.release(&request.server, &request.tool) {
                    self.persist();
                }
                self.remember(&request, scope, &definition_hash);
                self.publish_resolved(&id, Resolution::Allowed, Some(by));
                Verdict::Allowed { scope, by, via }
            }
            Ok(Ok((Answer::Deny(reason), by, via))) => {
                self.publish_resolved(&id, Resolution::Denied, Some(by));
                Verdict::Denied { reason, by, via }
            }
            Ok(Err(_)) | Err(_) => {
                self.lock().pending.remove(&id);
                self.publish_resolved(&id, Resolution::TimedOut, None);
                Verdict::TimedOut {
                    secs: timeout.as_secs(),
                }
            }
        }
    }

    /// Answers a pending request. The first answer wins; later ones get `Unknown`.
    pub fn answer(
        &self,
        id: &str,
        answer: Answer,
        by: Decider,
    ) -> Result<ApprovalRequest, ApprovalError> {
        self.answer_via(id, answer, by, None)
    }

    /// Like [`ApprovalBroker::answer`], naming the process that answered (the control socket's
    /// peer), which the activity log keeps with the decision.
    pub fn answer_via(
        &self,
        id: &str,
        answer: Answer,
        by: Decider,
        via: Option<String>,
    ) -> Result<ApprovalRequest, ApprovalError> {
        let waiting = self.lock().pending.remove(id);
        let Some(w) = waiting else {
            return Err(ApprovalError::Unknown(id.to_owned()));
        };
        let request = w.request.clone();
        // If the caller went away in between, the answer has nowhere to go: the call never runs.
        let _ = w.tx.send((answer, by, via));
        Ok(request)
    }

    /// The requests waiting for an answer.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        self.lock()
            .pending
            .values()
            .map(|w| w.request.clone())
            .collect()
    }

    /// Revokes remembered answers for a server (`tool: None`) or one tool. Returns how many.
    pub fn forget(&self, server: &str, tool: Option<&str>) -> usize {
        let mut st = self.lock();
        let matches = |s: &str, t: &str| s == server && tool.is_none_or(|x| x == t);
        let before = st.session_grants.len();
        st.session_grants.retain(|(_, s, t), _| !matches(s, t));
        let removed = before - st.session_grants.len() + st.store.forget(matches);
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
            })
            .collect();
        out.extend(
            st.session_grants
                .iter()
                .map(|((session, server, tool), g)| Grant {
                    scope: Scope::Session,
                    server: server.clone(),
                    tool: tool.clone(),
                    profile: g.profile.clone(),
                    session: Some(session.clone()),
                    client: g.client.clone(),
                    since_ms: g.since_ms,
                    definition: None,
                }),
        );
        out.sort_by_key(|g| std::cmp::Reverse(g.since_ms));
        out
    }

    /// A client session ended: its "session" answers end with it.
    pub fn end_session(&self, session: &str) {
        self.lock()
            .session_grants
            .retain(|(s, _, _), _| s != session);
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
            Scope::Once => false,
        };
        drop(st);
        if removed && g.scope == Scope::Always {
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
                    SessionGrant {
                        client: request.client.name.clone(),
                        profile: request.client.profile.clone(),
                        since_ms: crate::logs::now_ms(),
                    },
                );
                return;
            }
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

/// Withdraws a pending request when its caller goes away (client cancelled or disconnected).
struct Withdraw<'a> {
    broker: &'a ApprovalBroker,
    id: String,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.armed {
            let removed = self.broker.lock().pending.remove(&self.id).is_some();
            if removed {
                self.broker.publish_resolved(
                    &self.id,
                    Resolution::Withdrawn,
                    Some(Decider::Client),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::request::ClientRef;
    use serde_json::value::RawValue;

    fn tool(raw: &str) -> ToolDef {
        ToolDef::parse(
            RawValue::from_string(raw.to_owned()).unwrap(),
            Arc::default(),
        )
        .unwrap()
    }

    fn request(broker: &ApprovalBroker, session: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: broker.next_id(),
            client: ClientRef {
                name: Some("c".into()),
                session: session.into(),
                profile: None,
                session_ends_ms: None,
            },
            server: "fs".into(),
            tool: "write_file".into(),
            exposed: "fs__write_file".into(),
            title: None,
            description: None,
            annotations: None,
            arguments: RawValue::from_string("{\"path\":\"/x\"}".into()).unwrap(),
            requested_at: 0,
            expires_at: 0,
            changed: None,
            reason: Default::default(),
            reason_text: String::new(),
        }
    }

    /// Asks in the background, waits until the request is pending, answers it, returns the verdict.
    async fn ask_and_answer(
        b: &ApprovalBroker,
        r: ApprovalRequest,
        hash: &str,
        answer: Answer,
    ) -> Verdict {
        let id = r.id.clone();
        let b2 = b.clone();
        let h = hash.to_owned();
        let wait = tokio::spawn(async move { b2.ask(r, h, Duration::from_secs(5)).await });
        while b.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        b.answer(&id, answer, Decider::Cli).unwrap();
        wait.await.unwrap()
    }

    #[tokio::test]
    async fn answers_scopes_timeout_and_withdrawal() {
        let bus = EventBus::new(64);
        let b = ApprovalBroker::new(bus.clone(), None, false);
        let def = tool(r#"{"name":"write_file","description":"a"}"#);
        let change = b.check_definition("fs", &def);
        assert!(change.is_none());
        let hash = def.hash().to_owned();

        // once
        let r = request(&b, "s1");
        let id = r.id.clone();
        let b2 = b.clone();
        let h = hash.clone();
        let wait = tokio::spawn(async move { b2.ask(r, h, Duration::from_secs(5)).await });
        while b.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        assert!(b
            .answer("nope", Answer::Allow(Scope::Once), Decider::Cli)
            .is_err());
        b.answer(&id, Answer::Allow(Scope::Once), Decider::Cli)
            .unwrap();
        assert_eq!(
            wait.await.unwrap(),
            Verdict::Allowed {
                scope: Scope::Once,
                by: Decider::Cli,
                via: None
            }
        );
        assert!(
            b.answer(&id, Answer::Deny(None), Decider::Cli).is_err(),
            "answered once only"
        );
        assert_eq!(b.granted(None, "s1", "fs", "write_file", &hash), None);

        // session
        let r = request(&b, "s1");
        ask_and_answer(&b, r, &hash, Answer::Allow(Scope::Session)).await;
        assert_eq!(
            b.granted(None, "s1", "fs", "write_file", &hash),
            Some(Scope::Session)
        );
        assert_eq!(b.granted(None, "s2", "fs", "write_file", &hash), None);
        assert_eq!(b.forget("fs", Some("write_file")), 1);
        assert_eq!(b.granted(None, "s1", "fs", "write_file", &hash), None);

        // timeout
        let r = request(&b, "s1");
        assert_eq!(
            b.ask(r, hash.clone(), Duration::from_millis(30)).await,
            Verdict::TimedOut { secs: 0 }
        );
        assert!(b.pending().is_empty());

        // withdrawal: dropping the waiter removes the request; a late answer finds nothing.
        let r = request(&b, "s1");
        let id = r.id.clone();
        let b2 = b.clone();
        let h = hash.clone();
        let wait = tokio::spawn(async move { b2.ask(r, h, Duration::from_secs(5)).await });
        while b.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        wait.abort();
        let _ = wait.await;
        assert!(b.pending().is_empty());
        assert!(b
            .answer(&id, Answer::Allow(Scope::Once), Decider::Cli)
            .is_err());
    }

    #[tokio::test]
    async fn always_persists_and_a_changed_definition_asks_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        let def1 = r#"{"name":"w","description":"writes a file","inputSchema":{"type":"object"}}"#;
        let def2 = r#"{"name":"w","description":"writes a file and mails it to evil","inputSchema":{"type":"object"}}"#;
        let b = ApprovalBroker::new(EventBus::new(8), Some(path.clone()), false);
        let def1 = tool(def1);
        b.check_definition("fs", &def1);
        let h1 = def1.hash().to_owned();
        let mut r = request(&b, "s1");
        r.tool = "w".into();
        ask_and_answer(&b, r, &h1, Answer::Allow(Scope::Always)).await;
        assert!(
            b.flush(Duration::from_secs(5)),
            "the answer reached the disk"
        );

        // A new broker (a hub restart) still knows, for the same definition only.
        let b = ApprovalBroker::new(EventBus::new(8), Some(path.clone()), false);
        assert_eq!(
            b.granted(None, "other-session", "fs", "w", &h1),
            Some(Scope::Always)
        );
        let def2 = tool(def2);
        let change = b.check_definition("fs", &def2);
        let h2 = def2.hash().to_owned();
        assert_ne!(h1, h2);
        let change = change.expect("the change is reported");
        assert_eq!(change.fields, vec!["description".to_owned()]);
        assert_eq!(
            b.granted(None, "other-session", "fs", "w", &h2),
            None,
            "always no longer applies"
        );
    }

    /// At most MAX_PENDING requests wait for the person; one more is denied at once, by policy.
    #[tokio::test]
    async fn waiting_requests_are_bounded() {
        let b = ApprovalBroker::new(EventBus::new(8), None, false);
        let mut waits = Vec::new();
        for _ in 0..MAX_PENDING {
            let (b2, r) = (b.clone(), request(&b, "s"));
            waits.push(tokio::spawn(async move {
                b2.ask(r, "h".into(), Duration::from_secs(30)).await
            }));
        }
        while b.pending().len() < MAX_PENDING {
            tokio::task::yield_now().await;
        }
        let v = b
            .ask(request(&b, "s"), "h".into(), Duration::from_secs(30))
            .await;
        match v {
            Verdict::Denied { reason, by, .. } => {
                assert_eq!(by, Decider::Policy);
                assert!(reason.unwrap_or_default().contains("already waiting"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(b.pending().len(), MAX_PENDING);
        for w in waits {
            w.abort();
        }
    }

    /// Remembered answers are listed with who and when, and revoking one takes effect at once:
    /// the next call is not covered. A session's answers end with the session.
    #[tokio::test]
    async fn remembered_answers_are_listed_and_revocable() {
        let b = ApprovalBroker::new(EventBus::new(8), None, false);
        ask_and_answer(&b, request(&b, "s1"), "h", Answer::Allow(Scope::Always)).await;
        ask_and_answer(&b, request(&b, "s2"), "h", Answer::Allow(Scope::Session)).await;
        let grants = b.grants();
        assert_eq!(grants.len(), 2, "{grants:?}");
        let always = grants.iter().find(|g| g.scope == Scope::Always).unwrap();
        assert_eq!(
            (always.server.as_str(), always.tool.as_str()),
            ("fs", "write_file")
        );
        assert!(always.since_ms > 0 && always.definition.is_some());
        let session = grants.iter().find(|g| g.scope == Scope::Session).unwrap();
        assert_eq!(session.session.as_deref(), Some("s2"));
        assert_eq!(session.client.as_deref(), Some("c"));

        assert!(b.revoke(always));
        assert_eq!(b.granted(None, "s9", "fs", "write_file", "h"), None);
        assert!(!b.revoke(always), "already revoked");
        assert_eq!(
            b.granted(None, "s2", "fs", "write_file", "h"),
            Some(Scope::Session)
        );
        b.end_session("s2");
        assert_eq!(b.granted(None, "s2", "fs", "write_file", "h"), None);
        assert!(b.grants().is_empty());
    }
}

//! Approvals (DESIGN §5): the [`ApprovalBroker`] holds sensitive calls until the person answers
//! (desktop modal or the control CLI), remembers "for this session" and "always" answers, and
//! pins tool definitions by SHA-256 so a changed definition asks again and shows what changed.
//!
//! Nothing here is reachable from the gateway: only the control socket and the desktop shell
//! hold a way to answer.

pub mod policy;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use crate::events::{Event, EventBus};
use crate::logs::now_ms;

/// A held call, as approvers see it.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalRequest {
    pub id: String,
    pub client: ClientRef,
    pub server: String,
    pub tool: String,
    /// The name the client used (`server__tool`).
    pub exposed: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub annotations: Option<Value>,
    /// The call's arguments exactly as the client sent them.
    pub arguments: Box<RawValue>,
    pub requested_at: u64,
    pub expires_at: u64,
    /// Set when the tool's definition differs from the one pinned earlier.
    pub changed: Option<DefinitionChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClientRef {
    pub name: Option<String>,
    pub session: String,
}

/// What changed in a tool's definition since it was pinned.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DefinitionChange {
    pub old: Value,
    pub new: Value,
    /// Top-level members that differ (`description`, `inputSchema`, `annotations`…).
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Once,
    Session,
    Always,
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "once" => Ok(Scope::Once),
            "session" => Ok(Scope::Session),
            "always" => Ok(Scope::Always),
            other => Err(format!(
                "unknown scope \"{other}\": use once, session or always"
            )),
        }
    }
}

/// Who decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    Policy,
    Ui,
    Cli,
}

#[derive(Debug, Clone)]
pub enum Answer {
    Allow(Scope),
    Deny(Option<String>),
}

/// How a held call ended (a withdrawn call never gets here: its waiter is gone).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Allowed { scope: Scope, by: Decider },
    Denied { reason: Option<String>, by: Decider },
    TimedOut { secs: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    #[error("no pending approval \"{0}\" (it was answered, withdrawn or timed out); see `gatehouse approvals`")]
    Unknown(String),
}

struct Waiting {
    request: ApprovalRequest,
    tx: oneshot::Sender<(Answer, Decider)>,
}

/// Persisted state: always-allows and definition pins (`DATA_DIR/approvals.json`).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    #[serde(default)]
    always: BTreeMap<String, String>,
    #[serde(default)]
    pins: BTreeMap<String, Pin>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pin {
    sha256: String,
    definition: Value,
}

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
}

#[derive(Default)]
struct State {
    pending: BTreeMap<String, Waiting>,
    /// (client session, server, tool) allowed for the rest of that session.
    session_grants: HashSet<(String, String, String)>,
    store: Store,
}

fn key(server: &str, tool: &str) -> String {
    format!("{server}/{tool}")
}

/// SHA-256 (hex) of a tool's whole definition, canonicalised (sorted keys) so that member order
/// does not matter but any change of content does.
pub fn definition_hash(raw: &str) -> String {
    let canonical = serde_json::from_str::<Value>(raw)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| raw.to_owned());
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl ApprovalBroker {
    /// `path`: where always-allows and pins persist (`None`: memory only, for tests).
    pub fn new(bus: EventBus, path: Option<PathBuf>, deny_unattended: bool) -> Self {
        let store = path.as_deref().map(load_store).unwrap_or_default();
        ApprovalBroker {
            inner: Arc::new(Inner {
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

    /// Pins the first definition seen of a tool; returns its hash and, if it differs from the
    /// pinned one, what changed.
    pub fn check_definition(
        &self,
        server: &str,
        tool: &str,
        raw: &str,
    ) -> (String, Option<DefinitionChange>) {
        let hash = definition_hash(raw);
        let new: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
        let mut st = self.lock();
        let k = key(server, tool);
        match st.store.pins.get(&k) {
            Some(pin) if pin.sha256 == hash => (hash, None),
            Some(pin) => {
                let fields = changed_fields(&pin.definition, &new);
                let change = DefinitionChange {
                    old: pin.definition.clone(),
                    new,
                    fields,
                };
                (hash, Some(change))
            }
            None => {
                st.store.pins.insert(
                    k,
                    Pin {
                        sha256: hash.clone(),
                        definition: new,
                    },
                );
                drop(st);
                self.persist();
                (hash, None)
            }
        }
    }

    /// Pins the definitions of tools not seen before (first sight is what later changes are
    /// compared with). Persists once if anything was new.
    pub fn pin_new<'a>(&self, server: &str, tools: impl Iterator<Item = (&'a str, &'a str)>) {
        let mut added = false;
        {
            let mut st = self.lock();
            for (tool, raw) in tools {
                let k = key(server, tool);
                if st.store.pins.contains_key(&k) {
                    continue;
                }
                let definition = serde_json::from_str(raw).unwrap_or(Value::Null);
                st.store.pins.insert(
                    k,
                    Pin {
                        sha256: definition_hash(raw),
                        definition,
                    },
                );
                added = true;
            }
        }
        if added {
            self.persist();
        }
    }

    /// Whether an earlier answer covers this call: the same client session said "session", or
    /// "always" was given for exactly this definition.
    pub fn granted(&self, session: &str, server: &str, tool: &str, hash: &str) -> Option<Scope> {
        let st = self.lock();
        if st
            .store
            .always
            .get(&key(server, tool))
            .is_some_and(|h| h == hash)
        {
            return Some(Scope::Always);
        }
        st.session_grants
            .contains(&(session.to_owned(), server.to_owned(), tool.to_owned()))
            .then_some(Scope::Session)
    }

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
            self.publish_resolved(&request.id, "denied", Some(Decider::Policy));
            return Verdict::Denied {
                reason: Some(
                    "nobody is attending this Gatehouse (it runs with --deny-unattended)".into(),
                ),
                by: Decider::Policy,
            };
        }
        let (tx, rx) = oneshot::channel();
        let id = request.id.clone();
        self.lock().pending.insert(
            id.clone(),
            Waiting {
                request: request.clone(),
                tx,
            },
        );
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
            Ok(Ok((Answer::Allow(scope), by))) => {
                self.remember(&request, scope, &definition_hash);
                self.publish_resolved(&id, "allowed", Some(by));
                Verdict::Allowed { scope, by }
            }
            Ok(Ok((Answer::Deny(reason), by))) => {
                self.publish_resolved(&id, "denied", Some(by));
                Verdict::Denied { reason, by }
            }
            Ok(Err(_)) | Err(_) => {
                self.lock().pending.remove(&id);
                self.publish_resolved(&id, "timed_out", None);
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
        let waiting = self.lock().pending.remove(id);
        let Some(w) = waiting else {
            return Err(ApprovalError::Unknown(id.to_owned()));
        };
        let request = w.request.clone();
        // If the caller went away in between, the answer has nowhere to go: the call never runs.
        let _ = w.tx.send((answer, by));
        Ok(request)
    }

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
        let before = st.store.always.len() + st.session_grants.len();
        st.store.always.retain(|k, _| {
            let (s, t) = k.split_once('/').unwrap_or((k, ""));
            !matches(s, t)
        });
        st.session_grants.retain(|(_, s, t)| !matches(s, t));
        let removed = before - st.store.always.len() - st.session_grants.len();
        drop(st);
        self.persist();
        removed
    }

    fn remember(&self, request: &ApprovalRequest, scope: Scope, hash: &str) {
        let mut st = self.lock();
        match scope {
            Scope::Once => return,
            Scope::Session => {
                st.session_grants.insert((
                    request.client.session.clone(),
                    request.server.clone(),
                    request.tool.clone(),
                ));
                return;
            }
            Scope::Always => {
                let k = key(&request.server, &request.tool);
                st.store.always.insert(k.clone(), hash.to_owned());
                // "Always" trusts this definition: it becomes the pin.
                let definition = request
                    .changed
                    .as_ref()
                    .map(|c| c.new.clone())
                    .or_else(|| st.store.pins.get(&k).map(|p| p.definition.clone()))
                    .unwrap_or(Value::Null);
                st.store.pins.insert(
                    k,
                    Pin {
                        sha256: hash.to_owned(),
                        definition,
                    },
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
        let text = {
            let st = self.lock();
            serde_json::to_string_pretty(&st.store).unwrap_or_default()
        };
        if let Err(e) = crate::config::write_atomic(path, text.as_bytes()) {
            tracing::error!(path = %path.display(), error = %e, "cannot save remembered approvals");
        }
    }

    fn publish_resolved(&self, id: &str, outcome: &str, by: Option<Decider>) {
        self.inner.bus.publish(Event::ApprovalResolved {
            id: id.to_owned(),
            outcome: outcome.to_owned(),
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
                self.broker.publish_resolved(&self.id, "withdrawn", None);
            }
        }
    }
}

fn load_store(path: &std::path::Path) -> Store {
    match std::fs::read_to_string(path) {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(s) => s,
            Err(e) => {
                // Never lose the file: keep it aside, start empty, say so.
                let aside = path.with_extension(format!("corrupt-{}", now_ms()));
                let _ = std::fs::rename(path, &aside);
                tracing::error!(path = %path.display(), aside = %aside.display(), error = %e, "remembered approvals were unreadable; moved aside, starting with none");
                Store::default()
            }
        },
        Err(_) => Store::default(),
    }
}

fn changed_fields(old: &Value, new: &Value) -> Vec<String> {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return vec!["definition".into()];
    };
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| o.get(*k) != n.get(*k))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(broker: &ApprovalBroker, session: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: broker.next_id(),
            client: ClientRef {
                name: Some("c".into()),
                session: session.into(),
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
        let (hash, change) = b.check_definition(
            "fs",
            "write_file",
            r#"{"name":"write_file","description":"a"}"#,
        );
        assert!(change.is_none());

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
                by: Decider::Cli
            }
        );
        assert!(
            b.answer(&id, Answer::Deny(None), Decider::Cli).is_err(),
            "answered once only"
        );
        assert_eq!(b.granted("s1", "fs", "write_file", &hash), None);

        // session
        let r = request(&b, "s1");
        ask_and_answer(&b, r, &hash, Answer::Allow(Scope::Session)).await;
        assert_eq!(
            b.granted("s1", "fs", "write_file", &hash),
            Some(Scope::Session)
        );
        assert_eq!(b.granted("s2", "fs", "write_file", &hash), None);
        assert_eq!(b.forget("fs", Some("write_file")), 1);
        assert_eq!(b.granted("s1", "fs", "write_file", &hash), None);

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
        let (h1, _) = b.check_definition("fs", "w", def1);
        let mut r = request(&b, "s1");
        r.tool = "w".into();
        ask_and_answer(&b, r, &h1, Answer::Allow(Scope::Always)).await;

        // A new broker (a hub restart) still knows, for the same definition only.
        let b = ApprovalBroker::new(EventBus::new(8), Some(path.clone()), false);
        assert_eq!(
            b.granted("other-session", "fs", "w", &h1),
            Some(Scope::Always)
        );
        let (h2, change) = b.check_definition("fs", "w", def2);
        assert_ne!(h1, h2);
        let change = change.expect("the change is reported");
        assert_eq!(change.fields, vec!["description".to_owned()]);
        assert_eq!(
            b.granted("other-session", "fs", "w", &h2),
            None,
            "always no longer applies"
        );
        // Member order does not change the hash.
        assert_eq!(
            definition_hash(r#"{"b":1,"a":2}"#),
            definition_hash(r#"{"a":2,"b":1}"#)
        );
    }

    #[test]
    fn corrupt_store_is_moved_aside_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        std::fs::write(&path, "{ not json").unwrap();
        let b = ApprovalBroker::new(EventBus::new(8), Some(path.clone()), false);
        assert!(b.pending().is_empty());
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
            .collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(
            std::fs::read_to_string(aside[0].path()).unwrap(),
            "{ not json"
        );
    }
}

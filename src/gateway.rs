//! The gateway: the MCP server side that AI clients talk to, independent of transport.
//!
//! A client message goes in as raw bytes; the gateway reads only the envelope, answers its own
//! methods (`initialize`, `tools/list`…) and forwards the rest to the owning server with only the
//! id, the tool/prompt name and the progress token rewritten. Results, errors, `_meta`, unknown
//! fields and content pass through as the server's bytes. Transports (`http`, `stdio`) turn an
//! [`Outcome`] into their wire form.
//!
//! - `session`: client sessions and their eviction.
//! - `tools`: `tools/call` — lookup, then [`tools::Admission`] (free, held or refused).
//! - `forward`: one forwarded request — the hold, the relay, the final answer, the activity row.
//! - `approve`: a held call's wait for the person's answer, and what the verdict means.
//! - `lists`: prompts, resources and completions, fanned out to the servers that offer them.
//! - `catalog`: the exposed tools and the cached `tools/list` result.
//! - `listen`: `subscriptions/listen` streams and the change notifications tagged for them.
//! - `own`: what the gateway answers itself — `initialize`, `server/discover`, a client's
//!   notifications and its answers to forwarded requests, a refused envelope.

mod admission;
mod answer;
mod approve;
pub mod apps;
mod ask_client;
mod audit;
mod call;
pub mod catalog;
pub mod conns;
mod failure;
mod forward;
pub mod http;
pub mod incoming;
mod input;
mod limits;
mod listen;
mod lists;
pub mod names;
mod own;
pub mod session;
pub mod stdio;
mod subs;
mod tools;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::events::Event;
use crate::hub::HubHandle;
use crate::jsonrpc::{self, ErrorCode, Kind};
use catalog::Catalog;
use session::{lock, Sessions};

pub use crate::token;
pub use answer::tool_error;
pub use incoming::{Incoming, OwnedIncoming, Refusal};
pub use listen::SUBSCRIPTION_ID_KEY;
use listen::{listen_kind, tagged_notification};
pub use own::{discover_result, envelope_error};
pub use session::{ClientInfo, ClientSession, MAX_SESSIONS};

/// Legacy protocol versions we speak with clients (`initialize`), oldest first; the modern
/// ones are [`crate::protocol::MODERN_VERSIONS`].
pub const SUPPORTED_VERSIONS: &[&str] = crate::protocol::LEGACY_VERSIONS;
/// The version offered to a legacy client that asks for one we do not speak.
pub const LATEST_VERSION: &str = "2025-11-25";

/// How long `tools/list` waits for servers that are still starting (a client that launched
/// `serve --stdio` asks right away and should see the tools, not an empty list).
const STARTUP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// How often a held call with a progress token hears that it is still waiting.
const KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(5);

/// One message for the client while a request is handled.
#[derive(Debug)]
pub enum Out {
    /// Related to the request (progress, a server→client request, a log message).
    Event(Vec<u8>),
    /// The request's response; nothing follows.
    Final(Vec<u8>),
}

/// What handling one client message produced.
pub enum Outcome {
    /// A notification or response was taken; nothing to send back (HTTP 202).
    Accepted,
    /// The response, at once.
    Reply(Vec<u8>),
    /// Messages ending with [`Out::Final`].
    Stream(mpsc::Receiver<Out>),
}

/// The gateway. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    hub: HubHandle,
    /// Guards one swap or clone of the `Arc`.
    catalog: Mutex<Arc<Catalog>>,
    sessions: Sessions,
    lists: lists::Lists,
    counter: AtomicU64,
    /// Milliseconds between "still waiting for approval" progress notifications.
    keepalive_ms: AtomicU64,
    shutdown: CancellationToken,
    watcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Each server's tool list (and origin) last given to the pins: an unchanged list is not
    /// taken again. The `Arc` is held, so a new list can never reuse its address. Guards one
    /// refresh's comparisons.
    listed: Mutex<HashMap<crate::config::ServerId, (ToolList, String)>>,
    /// Calls waiting for a 2026-07-28 client's retry with its input (`input.rs`).
    parked: input::ParkedCalls,
    /// The names given to each client profile (`names.rs`), kept across restarts.
    names: names::Names,
    /// Each profile's rate-limit buckets (`limits.rs`).
    limits: limits::RateLimits,
    /// Upstream resource subscriptions, counted (`subs.rs`).
    subs: Arc<subs::Upstreams>,
}

/// A server's tool list as its handle shares it.
type ToolList = Arc<Vec<Arc<crate::supervisor::status::ToolDef>>>;

/// The methods the gateway answers: every client request goes through this table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Initialize,
    Ping,
    ToolsList,
    ToolsCall,
    PromptsList,
    PromptsGet,
    ResourcesList,
    ResourcesTemplatesList,
    ResourcesRead,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    CompletionComplete,
    LoggingSetLevel,
    ServerDiscover,
    SubscriptionsListen,
}

impl Method {
    const TABLE: [(&'static str, Method); 15] = [
        ("initialize", Method::Initialize),
        ("ping", Method::Ping),
        ("tools/list", Method::ToolsList),
        ("tools/call", Method::ToolsCall),
        ("prompts/list", Method::PromptsList),
        ("prompts/get", Method::PromptsGet),
        ("resources/list", Method::ResourcesList),
        ("resources/templates/list", Method::ResourcesTemplatesList),
        ("resources/read", Method::ResourcesRead),
        ("resources/subscribe", Method::ResourcesSubscribe),
        ("resources/unsubscribe", Method::ResourcesUnsubscribe),
        ("completion/complete", Method::CompletionComplete),
        ("logging/setLevel", Method::LoggingSetLevel),
        ("server/discover", Method::ServerDiscover),
        ("subscriptions/listen", Method::SubscriptionsListen),
    ];

    fn parse(name: &str) -> Option<Method> {
        Method::TABLE
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
    }
}

/// How recent a client's activity is for it to count as connected.
pub const CONNECTED_WITHIN: std::time::Duration = std::time::Duration::from_secs(300);

impl Gateway {
    /// Creates the gateway over a running hub and starts watching it for tool changes. The
    /// watcher ends with [`Gateway::shutdown`].
    pub fn new(hub: HubHandle) -> Gateway {
        let inner = Arc::new(Inner {
            catalog: Mutex::new(Arc::new(Catalog::build(&hub))),
            names: names::Names::load(Some(hub.client_names_path())),
            hub,
            sessions: Sessions::default(),
            lists: lists::Lists::default(),
            counter: AtomicU64::new(1),
            keepalive_ms: AtomicU64::new(KEEPALIVE.as_millis() as u64),
            shutdown: CancellationToken::new(),
            watcher: Mutex::new(None),
            listed: Mutex::new(HashMap::new()),
            parked: Mutex::new(HashMap::new()),
            limits: limits::RateLimits::default(),
            subs: Arc::default(),
        });
        let gw = Gateway { inner };
        // `gatehouse clients` and the Connect view ask the hub who is connected; the hub asks
        // this gateway (weakly: the hub never keeps it alive).
        let weak = Arc::downgrade(&gw.inner);
        gw.inner.hub.set_connected_view(move || {
            weak.upgrade()
                .map(|inner| Gateway { inner }.recent_sessions(CONNECTED_WITHIN))
                .unwrap_or_default()
        });
        let approvals = gw.inner.hub.approvals().clone();
        gw.inner
            .sessions
            .on_end(move |id| approvals.end_session(id));
        let watcher = tokio::spawn(gw.clone().watch());
        *lock(&gw.inner.watcher) = Some(watcher);
        gw
    }

    /// The hub behind the gateway.
    pub fn hub(&self) -> &HubHandle {
        &self.inner.hub
    }

    /// How often a held call with a progress token hears it is still waiting (default 5 s).
    pub fn set_keepalive(&self, every: std::time::Duration) {
        self.inner
            .keepalive_ms
            .store(every.as_millis().max(1) as u64, Ordering::Relaxed);
    }

    /// The current catalog, rebuilt first if any server changed since it was built (so a call
    /// right after a server starts never races the watcher).
    pub fn catalog(&self) -> Arc<Catalog> {
        let current = lock(&self.inner.catalog).clone();
        if current.generation() == self.inner.hub.bus().generation() {
            return current;
        }
        self.refresh_catalog();
        lock(&self.inner.catalog).clone()
    }

    /// Ends every session and the watcher.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.sessions.close_all();
        let watcher = lock(&self.inner.watcher).take();
        if let Some(w) = watcher {
            let _ = w.await;
        }
    }

    /// Rebuilds the catalog when servers change and tells clients when their tool list did.
    async fn watch(self) {
        let mut events = self.inner.hub.events();
        let mut tokens = self.inner.hub.client_tokens().watch();
        let mut tokens_alive = true;
        loop {
            let ev = tokio::select! {
                _ = self.inner.shutdown.cancelled() => return,
                changed = tokens.changed(), if tokens_alive => {
                    tokens_alive = changed.is_ok();
                    if tokens_alive {
                        // A rotated or removed client token ends its sessions at once.
                        let current = self.inner.hub.client_tokens().clone();
                        self.inner.sessions.close_where(|s| match (&s.profile, &s.token) {
                            (Some(p), Some(t)) => current.token(p).as_deref() != Some(&**t),
                            (Some(_), None) => true,
                            (None, _) => false,
                        });
                    }
                    continue;
                }
                ev = events.recv() => ev,
            };
            match ev {
                Ok(Event::Status(_)) | Ok(Event::ToolsChanged { .. }) => self.refresh_catalog(),
                Ok(Event::ResourceUpdated { server, uri }) => {
                    // To the clients that subscribed, of those whose profile sees the server.
                    if let Ok(id) = crate::config::ServerId::parse(&server) {
                        for s in self.inner.sessions.all() {
                            if self.sees(&s, &id) {
                                s.resource_updated(&uri);
                            }
                        }
                    }
                }
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => self.refresh_catalog(),
                Err(_) => return,
            }
        }
    }

    /// Rebuilds the catalog; if the exposed tools changed, sends `list_changed` to every client.
    pub fn refresh_catalog(&self) {
        let new = Arc::new(Catalog::build(&self.inner.hub));
        // First sight of a definition is what later changes are compared with; only a running
        // server's list is its whole list (a stopped one lists nothing, which prunes nothing).
        let config = self.inner.hub.config();
        for server in self.inner.hub.servers() {
            let Some(cfg) = config.servers.get(server.id()) else {
                continue;
            };
            if server.status().state.offers_tools() {
                let tools = server.tools();
                let origin = cfg.origin();
                let mut listed = lock(&self.inner.listed);
                let same = listed
                    .get(server.id())
                    .is_some_and(|(t, o)| Arc::ptr_eq(t, &tools) && *o == origin);
                if !same {
                    self.inner
                        .hub
                        .approvals()
                        .take_listing(server.id().as_str(), &origin, &tools);
                    listed.insert(server.id().clone(), (tools, origin));
                }
            }
        }
        lock(&self.inner.listed).retain(|id, _| config.servers.contains_key(id));
        let (changed, old) = {
            let mut cur = lock(&self.inner.catalog);
            let changed = cur.fingerprint() != new.fingerprint();
            let old = std::mem::replace(&mut *cur, new.clone());
            (changed, old)
        };
        if changed {
            // Each client hears of a change to what it sees: a profile's list is compared
            // before and after (once per profile), the gateway token's is the whole list.
            let line = jsonrpc::notification_line("notifications/tools/list_changed", None);
            let config = self.inner.hub.config();
            let mut seen: std::collections::HashMap<String, bool> = Default::default();
            self.inner
                .sessions
                .notify_where(&line, |s| match &s.profile {
                    None => true,
                    Some(p) => *seen.entry(p.clone()).or_insert_with(|| {
                        let profile = config
                            .clients
                            .iter()
                            .find(|(k, _)| k.as_str() == p)
                            .map(|(_, v)| v.clone())
                            .unwrap_or_default();
                        // Names are given for good, so a profile's named list changes
                        // exactly when the tools it sees do.
                        old.list_result_for(&profile) != new.list_result_for(&profile)
                    }),
                });
        }
    }

    /// Waits (at most `limit`) until no server is freshly `starting`, then refreshes the catalog.
    async fn settle(&self, limit: std::time::Duration) {
        // Only servers that began starting moments ago: one hanging in its handshake (up to its
        // startup timeout) must not slow every client down.
        let starting = || {
            let now = crate::logs::now_ms();
            self.inner.hub.servers().iter().any(|s| {
                let st = s.status();
                st.state == crate::supervisor::State::Starting
                    && now.saturating_sub(st.since_ms) < 10_000
            })
        };
        if !starting() {
            return;
        }
        let mut events = self.inner.hub.events();
        let _ = tokio::time::timeout(limit, async {
            while starting() {
                if events.recv().await.is_err() {
                    events = self.inner.hub.events();
                }
            }
        })
        .await;
        self.refresh_catalog();
    }

    /// A new client session (HTTP: on `initialize`; stdio: at start).
    pub fn open_session(&self) -> Arc<ClientSession> {
        self.inner.sessions.open(None, None)
    }

    /// A new session of client profile `profile` (`None`: the gateway token's, every tool).
    pub fn open_session_as(&self, profile: Option<String>) -> Arc<ClientSession> {
        let token = profile
            .as_deref()
            .and_then(|p| self.inner.hub.client_tokens().token(p));
        self.inner.sessions.open(profile, token)
    }

    /// The session of a modern client of `profile` (`None`: the gateway token's): one per
    /// profile and `clientInfo`, ended 8 h after it began ([`session::MODERN_SESSION_LIFETIME`]).
    pub fn modern_session(
        &self,
        profile: Option<String>,
        envelope: &crate::protocol::Envelope,
    ) -> Arc<ClientSession> {
        let token = profile
            .as_deref()
            .and_then(|p| self.inner.hub.client_tokens().token(p));
        self.inner.sessions.modern(profile, token, &envelope.client)
    }

    /// Marks a session's client as modern (a stdio client whose first request carried the
    /// 2026-07-28 envelope): results, lists and server requests follow the modern rules.
    pub fn mark_modern(&self, s: &ClientSession) {
        s.set_info(|i| {
            i.era = crate::protocol::Era::Modern;
            i.protocol_version = Some(crate::protocol::MODERN_VERSION.into());
            i.initialized = true;
        });
    }

    /// The session with this id, if it is still open.
    pub fn session(&self, id: &str) -> Option<Arc<ClientSession>> {
        self.inner.sessions.get(id)
    }

    /// The session with this id if it belongs to `profile`: a token of one profile never
    /// reaches another's session.
    pub fn session_of(&self, id: &str, profile: &Option<String>) -> Option<Arc<ClientSession>> {
        self.inner
            .sessions
            .get(id)
            .filter(|s| &s.profile == profile)
    }

    /// The clients active within `within` (one per name, version and profile), most recent
    /// first.
    pub fn recent_sessions(&self, within: std::time::Duration) -> Vec<crate::profiles::Connected> {
        let now = crate::logs::now_ms();
        let mut recent = self.inner.sessions.recent(now, within.as_millis() as u64);
        // A name that looks like a known client's, or another one's here, is flagged.
        let names: Vec<String> = recent.iter().map(|c| c.name.clone()).collect();
        for c in &mut recent {
            c.imitates =
                crate::text::imitation::imitates(&c.name, names.iter().map(String::as_str));
        }
        recent
    }

    /// The profile a presented bearer token belongs to, if any (not the gateway token).
    pub fn profile_of_token(&self, presented: &str) -> Option<String> {
        self.inner.hub.client_tokens().resolve(presented)
    }

    /// The names client profile `profile` (`None`: the gateway token's) sees now.
    pub(crate) fn view(&self, profile: Option<&str>) -> Arc<names::View> {
        let setting = profile.map(|p| self.profile_setting(p));
        let hub = &self.inner.hub;
        // A name stays reserved for a tool whose server is configured but not running now.
        let kept = |server: &str| {
            hub.server(server)
                .is_ok_and(|h| !h.status().state.offers_tools())
        };
        self.catalog().view(
            profile.unwrap_or(names::DEFAULT_PROFILE),
            setting.as_ref(),
            &self.inner.names,
            kept,
        )
    }

    /// The client profile config of a session (`None`: everything).
    pub(crate) fn profile_config(&self, s: &ClientSession) -> Option<crate::config::ClientProfile> {
        Some(self.profile_setting(s.profile.as_deref()?))
    }

    /// Client profile `p`'s setting in the config now.
    fn profile_setting(&self, p: &str) -> crate::config::ClientProfile {
        self.inner
            .hub
            .config()
            .clients
            .iter()
            .find(|(k, _)| k.as_str() == p)
            .map(|(_, v)| v.clone())
            // A profile removed from the config sees nothing until its sessions end.
            .unwrap_or_else(|| crate::config::ClientProfile {
                servers: Some(Vec::new()),
                ..Default::default()
            })
    }

    /// Ends a session: its in-flight calls are cancelled upstream.
    pub fn close_session(&self, id: &str) -> bool {
        self.inner.sessions.close(id)
    }

    fn next(&self) -> u64 {
        self.inner.counter.fetch_add(1, Ordering::Relaxed)
    }

    /// Handles one message from the client, read by its transport ([`Incoming`]).
    pub async fn handle(&self, s: &Arc<ClientSession>, message: &Incoming<'_>) -> Outcome {
        s.touch();
        match message.kind() {
            None => Outcome::Reply(jsonrpc::error_line(
                message.reply_id(),
                ErrorCode::InvalidRequest,
                "Invalid Request: a message needs \"method\" (request or notification) or \"result\"/\"error\" (response)",
            )),
            Some(Kind::Response { id }) => {
                self.client_response(s, id, message.envelope()).await;
                Outcome::Accepted
            }
            Some(Kind::Notification { method }) => {
                self.client_notification(s, method, message.params());
                Outcome::Accepted
            }
            Some(Kind::Request { id, method }) => {
                // A modern request's envelope is checked before anything else is done with it;
                // a modern client says who it is and what it can answer on each request.
                match message.modern() {
                    Err(e) => return Outcome::Reply(envelope_error(id.get(), e)),
                    Ok(Some(envelope)) => s.set_info(|i| {
                        if i.name.is_none() {
                            (i.name, i.version) = envelope.client.clone();
                        }
                        let answerable = crate::protocol::answerable(&envelope.capabilities);
                        if i.capabilities.as_deref() != Some(answerable.as_str()) {
                            i.capabilities = Some(answerable);
                        }
                    }),
                    Ok(None) => {}
                }
                self.request(s, id, method, message.params()).await
            }
        }
    }

    /// Reads and handles one message given as bytes (in-process callers and tests; the
    /// transports read it themselves, once).
    pub async fn handle_bytes(&self, s: &Arc<ClientSession>, message: &[u8]) -> Outcome {
        match Incoming::parse(message) {
            Ok(m) => self.handle(s, &m).await,
            Err(refusal) => {
                s.touch();
                Outcome::Reply(refusal.line("at a time"))
            }
        }
    }

    async fn request(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
    ) -> Outcome {
        let reply = |result: &str| Outcome::Reply(answer::ours(id.get(), result, s.era()));
        // A list of ours, as the client's era wants it (a modern one: resultType, ttlMs,
        // cacheScope).
        let era = s.era();
        let list = |result: &str| {
            Outcome::Reply(jsonrpc::result_line(
                id.get(),
                &crate::protocol::list_for_client(result, era),
            ))
        };
        let Some(m) = Method::parse(method) else {
            return Outcome::Reply(jsonrpc::error_line(
                id.get(),
                ErrorCode::MethodNotFound,
                &format!("Method not found: {method}"),
            ));
        };
        // The retry of a call that waits for this client's input goes on with that call.
        if matches!(
            m,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
        ) {
            if let Some(resumed) = self.resume(s, id, params) {
                return resumed;
            }
        }
        match m {
            Method::Initialize => reply(&self.initialize(s, params)),
            Method::Ping | Method::LoggingSetLevel => reply("{}"),
            Method::ToolsList => {
                self.settle(STARTUP_GRACE).await;
                list(&self.view(s.profile.as_deref()).list_result)
            }
            Method::ToolsCall => self.call_tool(s, id, params),
            Method::PromptsList => list(&self.prompts_list(s).await),
            Method::PromptsGet => self.prompts_get(s, id, params).await,
            Method::ResourcesList => list(&self.resources_list(s).await),
            Method::ResourcesTemplatesList => list(&self.resource_templates_list(s).await),
            Method::ResourcesRead => self.resource_request(s, id, "resources/read", params).await,
            Method::ResourcesSubscribe => {
                self.resource_request(s, id, "resources/subscribe", params)
                    .await
            }
            Method::ResourcesUnsubscribe => {
                self.resource_request(s, id, "resources/unsubscribe", params)
                    .await
            }
            Method::CompletionComplete => self.complete(s, id, params).await,
            Method::ServerDiscover => {
                s.log_hello("server/discover");
                reply(&discover_result())
            }
            Method::SubscriptionsListen => self.listen(s, id, params).await,
        }
    }
}

/// A request's params as raw members, plus the one string member `key` it cannot do without
/// (`name`, `uri`); a missing or malformed one is answered with -32602.
#[allow(clippy::result_large_err)]
fn member_params(
    id: &RawValue,
    params: Option<&RawValue>,
    method: &str,
    key: &str,
) -> Result<(BTreeMap<String, Box<RawValue>>, String), Outcome> {
    let invalid = || {
        Outcome::Reply(jsonrpc::error_line(
            id.get(),
            ErrorCode::InvalidParams,
            &format!("Invalid params: {method} needs a string \"{key}\""),
        ))
    };
    let p = params
        .and_then(|p| serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(p.get()).ok())
        .ok_or_else(invalid)?;
    let value = p
        .get(key)
        .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
        .ok_or_else(invalid)?;
    Ok((p, value))
}

#[cfg(test)]
mod rig_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_in_the_table_parses_to_itself() {
        for (name, m) in Method::TABLE {
            assert_eq!(Method::parse(name), Some(m), "{name}");
        }
        assert_eq!(Method::parse("tools/cal"), None);
        assert_eq!(Method::parse("TOOLS/LIST"), None);
    }
}

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
pub mod budget;
mod call;
pub mod catalog;
pub mod conns;
mod context;
mod failure;
mod forward;
pub mod http;
pub mod incoming;
mod input;
mod limits;
mod listen;
mod lists;
pub mod names;
mod outcome;
mod own;
mod params;
mod park;
mod parts;
mod said;
pub mod session;
mod spotlight;
pub mod stdio;
mod subs;
mod tools;

use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::events::Event;
use crate::hub::HubHandle;
use crate::jsonrpc::{self, ErrorCode, Kind};
use catalog::{Catalog, Tools};
use context::{Calls, Cx};
use session::{lock, Sessions};

pub use crate::token;
pub use answer::tool_error;
pub use incoming::{Incoming, OwnedIncoming, Refusal};
pub use listen::SUBSCRIPTION_ID_KEY;
use listen::{listen_kind, tagged_notification};
pub use outcome::{Out, Outcome};
pub use own::{discover_result, envelope_error};
pub use session::{ClientInfo, ClientSession, MAX_SESSIONS};
pub use tools::ParamHeaders;

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

/// The gateway. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    hub: HubHandle,
    /// The exposed tools: the catalog and the names each client profile is shown.
    tools: Arc<Tools>,
    sessions: Arc<Sessions>,
    /// What tool calls share: ids, the keepalive, rate limits, parked calls.
    calls: Arc<Calls>,
    /// Who owns which prompt and resource, as the last lists said.
    lists: lists::Lists,
    /// Upstream resource subscriptions, counted (`subs.rs`).
    subs: Arc<subs::Upstreams>,
    shutdown: CancellationToken,
    watcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

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

    /// The method's name on the wire.
    fn name(self) -> &'static str {
        Method::TABLE
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("", |(n, _)| n)
    }

    /// Whether a request of this method may be the retry of a call waiting for its client's
    /// input (a 2026-07-28 `requestState` of ours).
    fn may_resume(self) -> bool {
        matches!(
            self,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
        )
    }
}

/// How recent a client's activity is for it to count as connected.
pub const CONNECTED_WITHIN: std::time::Duration = std::time::Duration::from_secs(300);

impl Gateway {
    /// Creates the gateway over a running hub and starts watching it for tool changes. The
    /// watcher ends with [`Gateway::shutdown`].
    pub fn new(hub: HubHandle) -> Gateway {
        let inner = Arc::new(Inner {
            tools: Arc::new(Tools::new(&hub)),
            hub,
            sessions: Arc::default(),
            calls: Arc::new(Calls::new(KEEPALIVE)),
            lists: lists::Lists::default(),
            subs: Arc::default(),
            shutdown: CancellationToken::new(),
            watcher: Mutex::new(None),
        });
        let gw = Gateway { inner };
        // `gatehouse clients` and the Connect view ask the hub who is connected; the hub asks
        // this gateway's sessions (weakly: the hub never keeps them alive).
        let weak = Arc::downgrade(&gw.inner.sessions);
        gw.inner.hub.set_connected_view(move || {
            weak.upgrade()
                .map(|sessions| sessions.connected(CONNECTED_WITHIN))
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
        self.inner.calls.set_keepalive(every);
    }

    /// The current catalog, rebuilt first if any server changed since it was built (so a call
    /// right after a server starts never races the watcher).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner
            .tools
            .current(&self.inner.hub, &self.inner.sessions)
    }

    /// Rebuilds the catalog; if the exposed tools changed, sends `list_changed` to every client
    /// whose view changed.
    pub fn refresh_catalog(&self) {
        self.inner
            .tools
            .refresh(&self.inner.hub, &self.inner.sessions);
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

    /// Rebuilds the catalog when servers change, tells subscribed clients of a resource's change,
    /// and ends the sessions of a rotated or removed client token.
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
                        self.end_stale_sessions();
                    }
                    continue;
                }
                ev = events.recv() => ev,
            };
            match ev {
                Ok(Event::Status(_)) | Ok(Event::ToolsChanged { .. }) => self.refresh_catalog(),
                Ok(Event::ResourceUpdated { server, uri }) => self.resource_updated(&server, &uri),
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => self.refresh_catalog(),
                Err(_) => return,
            }
        }
    }

    /// A rotated or removed client token ends its sessions at once.
    fn end_stale_sessions(&self) {
        let current = self.inner.hub.client_tokens().clone();
        self.inner
            .sessions
            .close_where(|s| match (&s.profile, &s.token) {
                (Some(p), Some(t)) => current.token(p).as_deref() != Some(&**t),
                (Some(_), None) => true,
                (None, _) => false,
            });
    }

    /// A resource changed: told to the clients that subscribed, of those whose profile sees the
    /// server.
    fn resource_updated(&self, server: &str, uri: &str) {
        let Ok(id) = crate::config::ServerId::parse(server) else {
            return;
        };
        let config = self.inner.hub.config();
        for s in self.inner.sessions.all() {
            let profile = context::profile_in(&config, s.profile.as_deref());
            if profile.is_none_or(|p| p.sees_server(id.as_str())) {
                s.resource_updated(uri);
            }
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
    /// first; a name that looks like a known client's, or another one's here, is flagged.
    pub fn recent_sessions(&self, within: std::time::Duration) -> Vec<crate::profiles::Connected> {
        self.inner.sessions.connected(within)
    }

    /// The profile a presented bearer token belongs to, if any (not the gateway token).
    pub fn profile_of_token(&self, presented: &str) -> Option<String> {
        self.inner.hub.client_tokens().resolve(presented)
    }

    /// Ends a session: its in-flight calls are cancelled upstream.
    pub fn close_session(&self, id: &str) -> bool {
        self.inner.sessions.close(id)
    }

    /// What a request of session `s` may touch ([`Cx`]).
    fn cx(&self, s: &Arc<ClientSession>) -> Cx {
        Cx {
            session: s.clone(),
            hub: self.inner.hub.clone(),
            tools: self.inner.tools.clone(),
            sessions: self.inner.sessions.clone(),
            calls: self.inner.calls.clone(),
        }
    }

    /// Handles one message from the client, read by its transport ([`Incoming`]).
    pub async fn handle(&self, s: &Arc<ClientSession>, message: &Incoming<'_>) -> Outcome {
        self.handle_with(s, message, None).await
    }

    /// [`Gateway::handle`] for a 2026-07-28 request over HTTP, with the `Mcp-Param-*` headers it
    /// came with: a `tools/call`'s are checked against the arguments of the tool it finds.
    pub async fn handle_with(
        &self,
        s: &Arc<ClientSession>,
        message: &Incoming<'_>,
        headers: Option<&ParamHeaders>,
    ) -> Outcome {
        s.touch();
        match message.kind() {
            None => Outcome::error(
                message.reply_id(),
                ErrorCode::InvalidRequest,
                "Invalid Request: a message needs \"method\" (request or notification) or \"result\"/\"error\" (response)",
            ),
            Some(Kind::Response { id }) => {
                own::client_response(s, id, message.envelope()).await;
                Outcome::Accepted
            }
            Some(Kind::Notification { method }) => {
                own::client_notification(s, method, message.params());
                Outcome::Accepted
            }
            Some(Kind::Request { id, method }) => {
                // A modern request's envelope is checked before anything else is done with it;
                // a modern client says who it is and what it can answer on each request.
                match message.modern() {
                    Err(e) => return envelope_error(id.get(), e),
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
                self.request(&self.cx(s), id, method, message.params(), headers)
                    .await
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
                let line = refusal.line("at a time");
                Outcome::Error(line, refusal.code())
            }
        }
    }

    /// The dispatcher: one line per method, naming the room that answers it and what it is
    /// handed.
    async fn request(
        &self,
        cx: &Cx,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
        headers: Option<&ParamHeaders>,
    ) -> Outcome {
        let s = &cx.session;
        let (lists, subs) = (&self.inner.lists, &self.inner.subs);
        let reply = |result: &str| Outcome::Reply(answer::ours(id.get(), result, s.era()));
        // A list of ours, as the client's era wants it (a modern one: resultType, ttlMs,
        // cacheScope).
        let list = |result: &str| {
            let result = crate::protocol::list_for_client(result, s.era());
            Outcome::Reply(jsonrpc::result_line(id.get(), &result))
        };
        let Some(m) = Method::parse(method) else {
            let text = format!("Method not found: {method}");
            return Outcome::error(id.get(), ErrorCode::MethodNotFound, &text);
        };
        // The retry of a call that waits for this client's input goes on with that call.
        if m.may_resume() {
            if let Some(resumed) = cx.calls.parked.resume(s, id, params) {
                return resumed;
            }
        }
        match m {
            Method::Initialize => reply(&own::initialize(s, params)),
            Method::Ping | Method::LoggingSetLevel => reply("{}"),
            Method::ToolsList => {
                self.settle(STARTUP_GRACE).await;
                list(&cx.view().list_result)
            }
            Method::ToolsCall => tools::call(cx, id, params, headers),
            Method::PromptsList => list(&lists.prompts_list(cx).await),
            Method::PromptsGet => lists.prompts_get(cx, id, params).await,
            Method::ResourcesList => list(&lists.resources_list(cx).await),
            Method::ResourcesTemplatesList => list(&lists.resource_templates_list(cx).await),
            Method::ResourcesRead | Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
                lists.resource_request(cx, subs, id, m.name(), params).await
            }
            Method::CompletionComplete => lists.complete(cx, id, params).await,
            Method::ServerDiscover => {
                s.log_hello("server/discover");
                reply(&discover_result())
            }
            Method::SubscriptionsListen => listen::listen(cx, lists, subs, id, params).await,
        }
    }
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

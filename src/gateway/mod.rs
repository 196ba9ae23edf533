//! The gateway: the MCP server side that AI clients talk to, independent of transport.
//!
//! A client message goes in as raw bytes; the gateway reads only the envelope, answers its own
//! methods (`initialize`, `tools/list`…) and forwards the rest to the owning server with only the
//! id, the tool/prompt name and the progress token rewritten. Results, errors, `_meta`, unknown
//! fields and content pass through as the server's bytes. Transports (`http`, `stdio`) turn an
//! [`Outcome`] into their wire form.

pub mod catalog;
pub mod connect;
pub mod http;
pub mod stdio;
pub mod token;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::activity::CallRecord;
use crate::approval::policy::{self, Decision};
use crate::approval::{ApprovalRequest, ClientRef, Decider, Scope, Verdict};
use crate::config::ServerId;
use crate::events::Event;
use crate::hub::HubHandle;
use crate::jsonrpc::{
    self, Envelope, Kind, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
};
use crate::naming::exposed_name;
use crate::supervisor::rpc::{CallEvent, CallRoute, ResponseBody, RpcPeer};
use crate::supervisor::{Reply, ServerHandle};
use catalog::Catalog;
use serde_json::Value;

/// Protocol versions we speak with clients, oldest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
pub const LATEST_VERSION: &str = "2025-11-25";
/// JSON-RPC error for an unknown resource (MCP).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

const NULL_ID: &str = "null";
/// How long `tools/list` waits for servers that are still starting (a client that launched
/// `serve --stdio` asks right away and should see the tools, not an empty list).
const STARTUP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// One message for the client while a request is handled.
#[derive(Debug)]
pub enum Out {
    /// Related to the request (progress, a server→client request, a log message).
    Event(Vec<u8>),
    /// The request's response; nothing follows.
    Final(Vec<u8>),
}

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
    /// Guards one insert/lookup/remove.
    sessions: Mutex<HashMap<String, Arc<ClientSession>>>,
    /// Exposed prompt name → (server, prompt), refreshed by every `prompts/list`.
    prompts: Mutex<HashMap<String, (ServerId, String)>>,
    /// Resource URI → owning server, refreshed by every `resources/list`. On a URI listed by
    /// several servers, the first server in id order owns it.
    resources: Mutex<HashMap<String, ServerId>>,
    counter: AtomicU64,
    /// Milliseconds between "still waiting for approval" progress notifications.
    keepalive_ms: AtomicU64,
    shutdown: CancellationToken,
    watcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// One connected client (an HTTP session, or the stdio peer).
pub struct ClientSession {
    pub id: String,
    /// Guards a read or write of the client's identity.
    info: Mutex<ClientInfo>,
    /// Messages not tied to a request (`list_changed`): the GET stream or stdout.
    standalone: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// Requests being forwarded, by the client's raw id: aborting one drops the upstream call,
    /// which sends `notifications/cancelled` to the server.
    inflight: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// Server→client requests forwarded to this client, by our raw id.
    forwarded: Mutex<HashMap<String, Forwarded>>,
    /// When the client last sent anything (ms since the epoch), for evicting idle sessions.
    last_seen: AtomicU64,
}

/// Sessions kept at most; beyond it the least recently active one is ended (clients that never
/// send DELETE must not grow the hub forever).
pub const MAX_SESSIONS: usize = 1024;

/// A server→client request awaiting the client's answer: the server's connection and the
/// request's id as the server sent it.
struct Forwarded {
    peer: Arc<RpcPeer>,
    upstream_id: Box<RawValue>,
}

#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub name: Option<String>,
    pub version: Option<String>,
    pub protocol_version: Option<String>,
    pub initialized: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ClientSession {
    pub fn info(&self) -> ClientInfo {
        lock(&self.info).clone()
    }

    /// Where messages not tied to a request go from now on (replaces an older stream).
    pub fn set_standalone(&self, tx: mpsc::Sender<Vec<u8>>) {
        *lock(&self.standalone) = Some(tx);
    }

    fn close(&self) {
        for (_, h) in lock(&self.inflight).drain() {
            h.abort();
        }
        lock(&self.forwarded).clear();
        *lock(&self.standalone) = None;
    }
}

impl Gateway {
    /// Creates the gateway over a running hub and starts watching it for tool changes. The
    /// watcher ends with [`Gateway::shutdown`].
    pub fn new(hub: HubHandle) -> Gateway {
        let inner = Arc::new(Inner {
            catalog: Mutex::new(Arc::new(Catalog::build(&hub))),
            hub,
            sessions: Mutex::new(HashMap::new()),
            prompts: Mutex::new(HashMap::new()),
            resources: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(1),
            keepalive_ms: AtomicU64::new(KEEPALIVE.as_millis() as u64),
            shutdown: CancellationToken::new(),
            watcher: Mutex::new(None),
        });
        let gw = Gateway { inner };
        let watcher = tokio::spawn(gw.clone().watch());
        *lock(&gw.inner.watcher) = Some(watcher);
        gw
    }

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
        let sessions: Vec<_> = lock(&self.inner.sessions).drain().map(|(_, s)| s).collect();
        for s in sessions {
            s.close();
        }
        let watcher = lock(&self.inner.watcher).take();
        if let Some(w) = watcher {
            let _ = w.await;
        }
    }

    /// Rebuilds the catalog when servers change and tells clients when their tool list did.
    async fn watch(self) {
        let mut events = self.inner.hub.events();
        loop {
            let ev = tokio::select! {
                _ = self.inner.shutdown.cancelled() => return,
                ev = events.recv() => ev,
            };
            match ev {
                Ok(Event::Status(_)) | Ok(Event::ToolsChanged { .. }) => self.refresh_catalog(),
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => self.refresh_catalog(),
                Err(_) => return,
            }
        }
    }

    /// Rebuilds the catalog; if the exposed tools changed, sends `list_changed` to every client.
    pub fn refresh_catalog(&self) {
        let new = Arc::new(Catalog::build(&self.inner.hub));
        // First sight of a definition is what later changes are compared with.
        for server in self.inner.hub.servers() {
            let tools = server.tools();
            self.inner.hub.approvals().pin_new(
                server.id().as_str(),
                tools.iter().map(|t| (t.name.as_str(), t.raw.get())),
            );
        }
        let changed = {
            let mut cur = lock(&self.inner.catalog);
            let changed = cur.fingerprint() != new.fingerprint();
            *cur = new;
            changed
        };
        if changed {
            let line = jsonrpc::notification_line("notifications/tools/list_changed", None);
            let sessions: Vec<_> = lock(&self.inner.sessions).values().cloned().collect();
            for s in sessions {
                if let Some(tx) = lock(&s.standalone).clone() {
                    let _ = tx.try_send(line.clone());
                }
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
                st.state == crate::State::Starting && now.saturating_sub(st.since_ms) < 10_000
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
        let s = Arc::new(ClientSession {
            id: token::random_hex(16),
            info: Mutex::new(ClientInfo::default()),
            standalone: Mutex::new(None),
            inflight: Mutex::new(HashMap::new()),
            forwarded: Mutex::new(HashMap::new()),
            last_seen: AtomicU64::new(crate::logs::now_ms()),
        });
        let evicted = {
            let mut sessions = lock(&self.inner.sessions);
            let evicted = if sessions.len() >= MAX_SESSIONS {
                let oldest = sessions
                    .values()
                    .min_by_key(|x| x.last_seen.load(Ordering::Relaxed))
                    .map(|x| x.id.clone());
                oldest.and_then(|id| sessions.remove(&id))
            } else {
                None
            };
            sessions.insert(s.id.clone(), s.clone());
            evicted
        };
        if let Some(old) = evicted {
            tracing::info!(session = %old.id, "ended the least recently active client session ({MAX_SESSIONS} is the limit)");
            old.close();
        }
        s
    }

    pub fn session(&self, id: &str) -> Option<Arc<ClientSession>> {
        lock(&self.inner.sessions).get(id).cloned()
    }

    /// Ends a session: its in-flight calls are cancelled upstream.
    pub fn close_session(&self, id: &str) -> bool {
        let s = lock(&self.inner.sessions).remove(id);
        match s {
            Some(s) => {
                s.close();
                true
            }
            None => false,
        }
    }

    fn next(&self) -> u64 {
        self.inner.counter.fetch_add(1, Ordering::Relaxed)
    }

    /// Handles one message from the client.
    pub async fn handle(&self, s: &Arc<ClientSession>, message: &[u8]) -> Outcome {
        s.last_seen.store(crate::logs::now_ms(), Ordering::Relaxed);
        let message = trim(message);
        if message.first() == Some(&b'[') {
            return Outcome::Reply(error_line(
                NULL_ID,
                INVALID_REQUEST,
                "JSON-RPC batches are not supported: send one message at a time",
            ));
        }
        let env = match Envelope::parse(message) {
            Ok(e) => e,
            Err(e) => {
                return Outcome::Reply(error_line(
                    NULL_ID,
                    PARSE_ERROR,
                    &format!("Parse error: {e}"),
                ))
            }
        };
        match env.kind() {
            None => {
                let id = env.id.map_or(NULL_ID, |i| i.get());
                Outcome::Reply(error_line(id, INVALID_REQUEST, "Invalid Request: a message needs \"method\" (request or notification) or \"result\"/\"error\" (response)"))
            }
            Some(Kind::Response { id }) => {
                self.client_response(s, id, &env).await;
                Outcome::Accepted
            }
            Some(Kind::Notification { method }) => {
                self.client_notification(s, method, env.params);
                Outcome::Accepted
            }
            Some(Kind::Request { id, method }) => self.request(s, id, method, env.params).await,
        }
    }

    async fn request(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
    ) -> Outcome {
        let reply = |result: &str| Outcome::Reply(jsonrpc::result_line(id, result));
        match method {
            "initialize" => reply(&self.initialize(s, params)),
            "ping" => reply("{}"),
            "tools/list" => {
                self.settle(STARTUP_GRACE).await;
                let c = self.catalog();
                reply(c.list_result())
            }
            "tools/call" => self.call_tool(s, id, params),
            "prompts/list" => reply(&self.prompts_list().await),
            "prompts/get" => self.prompts_get(s, id, params),
            "resources/list" => reply(&self.resources_list().await),
            "resources/templates/list" => reply(
                &self
                    .fan_out_list("resources/templates/list", "resourceTemplates", "resources")
                    .await
                    .0,
            ),
            "resources/read" => self.resource_request(s, id, "resources/read", params).await,
            "resources/subscribe" => {
                self.resource_request(s, id, "resources/subscribe", params)
                    .await
            }
            "resources/unsubscribe" => {
                self.resource_request(s, id, "resources/unsubscribe", params)
                    .await
            }
            "completion/complete" => self.complete(s, id, params).await,
            "logging/setLevel" => reply("{}"),
            "server/discover" => {
                tracing::info!("answered a server/discover probe with method-not-found; the client falls back to initialize");
                Outcome::Reply(error_line(id.get(), METHOD_NOT_FOUND, "Method not found: server/discover (protocol 2026-07-28) is not supported yet; use initialize"))
            }
            other => Outcome::Reply(error_line(
                id.get(),
                METHOD_NOT_FOUND,
                &format!("Method not found: {other}"),
            )),
        }
    }

    fn initialize(&self, s: &Arc<ClientSession>, params: Option<&RawValue>) -> String {
        #[derive(Deserialize, Default)]
        struct Params {
            #[serde(rename = "protocolVersion", default)]
            protocol_version: Option<String>,
            #[serde(rename = "clientInfo", default)]
            client_info: Option<Who>,
        }
        #[derive(Deserialize, Default)]
        struct Who {
            name: Option<String>,
            version: Option<String>,
        }
        let p: Params = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        let version = match p.protocol_version.as_deref() {
            Some(v) if SUPPORTED_VERSIONS.contains(&v) => v.to_owned(),
            _ => LATEST_VERSION.to_owned(),
        };
        {
            let mut info = lock(&s.info);
            let who = p.client_info.unwrap_or_default();
            info.name = who.name;
            info.version = who.version;
            info.protocol_version = Some(version.clone());
        }
        serde_json::json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": true},
                "prompts": {"listChanged": false},
                "resources": {"subscribe": true, "listChanged": false},
                "completions": {},
                "logging": {}
            },
            "serverInfo": {"name": "gatehouse", "title": "Gatehouse", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "Gatehouse gathers the tools of the MCP servers it runs; each tool is named server__tool."
        })
        .to_string()
    }

    fn client_notification(&self, s: &Arc<ClientSession>, method: &str, params: Option<&RawValue>) {
        match method {
            "notifications/initialized" => lock(&s.info).initialized = true,
            "notifications/cancelled" => {
                #[derive(Deserialize)]
                struct P<'a> {
                    #[serde(borrow, rename = "requestId")]
                    request_id: &'a RawValue,
                }
                if let Some(p) = params.and_then(|p| serde_json::from_str::<P>(p.get()).ok()) {
                    let handle = lock(&s.inflight).remove(p.request_id.get());
                    if let Some(h) = handle {
                        // Dropping the upstream call sends notifications/cancelled to the server.
                        h.abort();
                    }
                }
            }
            _ => {}
        }
    }

    async fn client_response(&self, s: &Arc<ClientSession>, id: &RawValue, env: &Envelope<'_>) {
        let target = lock(&s.forwarded).remove(id.get());
        let Some(Forwarded { peer, upstream_id }) = target else {
            return;
        };
        let body = match (env.result, env.error) {
            (_, Some(e)) => ResponseBody::Error(e),
            (Some(r), None) => ResponseBody::Result(r),
            (None, None) => return,
        };
        peer.respond(&upstream_id, body).await;
    }

    fn call_tool(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> Outcome {
        let (mut p, name) = match member_params(id, params, "tools/call", "name") {
            Ok(x) => x,
            Err(reply) => return reply,
        };
        let arguments = p
            .get("arguments")
            .map(|a| a.get().to_owned())
            .unwrap_or_else(|| "{}".into());
        let meta = |server: &ServerHandle, tool: &str| CallMeta {
            server: server.id().to_string(),
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            started: std::time::Instant::now(),
        };
        let Some(entry) = self.catalog().lookup(&name).cloned() else {
            // A client may hold a tool list from before its server stopped: name the server
            // and its state rather than calling the tool unknown.
            let server = crate::naming::split_server(&name)
                .and_then(|(srv, _)| self.inner.hub.server(srv).ok());
            if let Some(server) = server {
                let tool = server
                    .tools()
                    .iter()
                    .find(|t| exposed_name(server.id().as_str(), &t.name) == name)
                    .map(|t| t.name.clone());
                // A stopped server lists no tools: the name after `__` is the best we know.
                let tool_or_exposed = tool.clone().unwrap_or_else(|| {
                    crate::naming::split_server(&name).map_or(name.clone(), |(_, t)| t.to_owned())
                });
                if server.status().state != crate::State::Running {
                    let text = tool_error(&not_running(&server, &name));
                    return self.refuse(
                        s,
                        id,
                        &meta(&server, &tool_or_exposed),
                        "not_running",
                        text,
                    );
                }
                // A tool hidden by `enabled: false` is refused with a reason, not "unknown".
                if let Some(tool) = tool {
                    if let Err(text) = self.approval_gate(s, &server, &tool, &name, None) {
                        return self.refuse(s, id, &meta(&server, &tool), "disabled", text);
                    }
                }
            }
            return Outcome::Reply(error_line(
                id.get(),
                INVALID_PARAMS,
                &format!("Unknown tool: {name}"),
            ));
        };
        let server = match self.inner.hub.server(entry.server.as_str()) {
            Ok(h) => h,
            Err(e) => return Outcome::Reply(error_line(id.get(), INVALID_PARAMS, &e.to_string())),
        };
        let meta = meta(&server, &entry.tool);
        if server.status().state != crate::State::Running {
            let text = tool_error(&not_running(&server, &name));
            return self.refuse(s, id, &meta, "not_running", text);
        }
        let (gate, decision) = match self.approval_gate(
            s,
            &server,
            &entry.tool,
            &name,
            p.get("arguments").map(|a| &**a),
        ) {
            Ok(Admission::Free(d)) => (None, d),
            Ok(Admission::Held(g)) => (Some(*g), "held"),
            Err(text) => return self.refuse(s, id, &meta, "disabled", text),
        };
        let Ok(original) = RawValue::from_string(jsonrpc::json_string(&entry.tool)) else {
            return Outcome::Reply(error_line(id.get(), INVALID_PARAMS, "Invalid tool name"));
        };
        p.insert("name".into(), original);
        self.forward(
            s,
            id,
            server,
            "tools/call",
            p,
            Some(ToolCall {
                name,
                gate,
                decision,
                meta,
            }),
        )
    }

    /// A call Gatehouse refuses without running it: recorded, answered with an isError result.
    fn refuse(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        m: &CallMeta,
        decision: &str,
        result: String,
    ) -> Outcome {
        self.record(s, m, decision, Decider::Policy, "not_run");
        Outcome::Reply(jsonrpc::result_line(id, &result))
    }

    fn record(
        &self,
        s: &Arc<ClientSession>,
        m: &CallMeta,
        decision: &str,
        by: Decider,
        outcome: &str,
    ) {
        let by = match by {
            Decider::Policy => "policy",
            Decider::Ui => "ui",
            Decider::Cli => "cli",
        };
        self.inner.hub.activity().record(CallRecord {
            time_ms: crate::logs::now_ms().saturating_sub(m.started.elapsed().as_millis() as u64),
            client: s.info().name,
            session: s.id.clone(),
            server: m.server.clone(),
            tool: m.tool.clone(),
            arguments: m.arguments.clone(),
            decision: decision.to_owned(),
            decided_by: by.to_owned(),
            duration_ms: m.started.elapsed().as_millis() as u64,
            outcome: outcome.to_owned(),
        });
    }

    /// The policy for one call: `Ok(Admission::Free)` runs it, `Ok(Admission::Held)` holds it
    /// for the person, `Err(result)` refuses it (disabled tool).
    fn approval_gate(
        &self,
        s: &Arc<ClientSession>,
        server: &ServerHandle,
        tool: &str,
        exposed: &str,
        arguments: Option<&RawValue>,
    ) -> Result<Admission, String> {
        let config = self.inner.hub.config();
        let def = server.tools().iter().find(|t| t.name == tool).cloned();
        let def_raw = def.as_ref().map_or("{}", |d| d.raw.get());
        let read_only = def.as_ref().is_some_and(|d| d.read_only);
        let decision = match config.servers.get(server.id()) {
            Some(cfg) => policy::evaluate(cfg, config.approval.default, tool, read_only),
            None => Decision::Ask,
        };
        match decision {
            Decision::Allow => return Ok(Admission::Free("allowed")),
            Decision::Disabled => {
                return Err(tool_error(&format!(
                    "{exposed} is disabled in Gatehouse (\"enabled\": false), so it was not run."
                )))
            }
            Decision::Ask => {}
        }
        let broker = self.inner.hub.approvals();
        let (hash, changed) = broker.check_definition(server.id().as_str(), tool, def_raw);
        if changed.is_none() {
            match broker.granted(&s.id, server.id().as_str(), tool, &hash) {
                Some(Scope::Always) => return Ok(Admission::Free("remembered_always")),
                Some(_) => return Ok(Admission::Free("remembered_session")),
                None => {}
            }
        }
        let def_value: Value = serde_json::from_str(def_raw).unwrap_or(Value::Null);
        let text = |k: &str| def_value.get(k).and_then(Value::as_str).map(str::to_owned);
        let annotations = def_value.get("annotations").cloned();
        let title = text("title").or_else(|| {
            annotations
                .as_ref()
                .and_then(|a| a.get("title"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let timeout = std::time::Duration::from_secs(config.approval.timeout_secs.max(1));
        let now = crate::logs::now_ms();
        let info = s.info();
        let request = ApprovalRequest {
            id: broker.next_id(),
            client: ClientRef {
                name: info.name,
                session: s.id.clone(),
            },
            server: server.id().to_string(),
            tool: tool.to_owned(),
            exposed: exposed.to_owned(),
            title,
            description: text("description"),
            annotations,
            // Approvers see the arguments with known secret values masked, never the values.
            arguments: masked_arguments(self.inner.hub.redactions(), arguments),
            requested_at: now,
            expires_at: now + timeout.as_millis() as u64,
            changed,
        };
        Ok(Admission::Held(Box::new(Gate {
            request,
            hash,
            timeout,
        })))
    }

    fn prompts_get(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> Outcome {
        let (mut p, name) = match member_params(id, params, "prompts/get", "name") {
            Ok(x) => x,
            Err(reply) => return reply,
        };
        let Some((server, prompt)) = self.resolve_prompt(&name) else {
            return Outcome::Reply(error_line(
                id.get(),
                INVALID_PARAMS,
                &format!("Unknown prompt: {name}"),
            ));
        };
        let Ok(server) = self.inner.hub.server(server.as_str()) else {
            return Outcome::Reply(error_line(
                id.get(),
                INVALID_PARAMS,
                &format!("Unknown prompt: {name}"),
            ));
        };
        let Ok(original) = RawValue::from_string(jsonrpc::json_string(&prompt)) else {
            return Outcome::Reply(error_line(id.get(), INVALID_PARAMS, "Invalid prompt name"));
        };
        p.insert("name".into(), original);
        self.forward(s, id, server, "prompts/get", p, None)
    }

    fn resolve_prompt(&self, exposed: &str) -> Option<(ServerId, String)> {
        if let Some(hit) = lock(&self.inner.prompts).get(exposed).cloned() {
            return Some(hit);
        }
        // Not listed yet in this run: plain names split at the first "__".
        let (server, prompt) = crate::naming::split_server(exposed)?;
        let id = ServerId::parse(server).ok()?;
        (exposed_name(server, prompt) == exposed).then(|| (id, prompt.to_owned()))
    }

    async fn resource_request(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        method: &'static str,
        params: Option<&RawValue>,
    ) -> Outcome {
        let (p, uri) = match member_params(id, params, method, "uri") {
            Ok(x) => x,
            Err(reply) => return reply,
        };
        let Some(server) = self.resource_owner(&uri).await else {
            return Outcome::Reply(error_line(
                id.get(),
                RESOURCE_NOT_FOUND,
                &format!("Resource not found: {uri}"),
            ));
        };
        self.forward(s, id, server, method, p, None)
    }

    /// The server owning `uri`: the one that listed it, else the one with a matching template.
    async fn resource_owner(&self, uri: &str) -> Option<ServerHandle> {
        let listed = lock(&self.inner.resources).get(uri).cloned();
        let listed = match listed {
            Some(s) => Some(s),
            None => {
                self.resources_list().await;
                lock(&self.inner.resources).get(uri).cloned()
            }
        };
        if let Some(id) = listed {
            return self.inner.hub.server(id.as_str()).ok();
        }
        let (_, owners) = self
            .fan_out_list("resources/templates/list", "resourceTemplates", "resources")
            .await;
        owners
            .into_iter()
            .find(|(item, _)| {
                #[derive(Deserialize)]
                struct T {
                    #[serde(rename = "uriTemplate")]
                    uri_template: String,
                }
                serde_json::from_str::<T>(item.get()).ok().is_some_and(|t| {
                    let prefix = t.uri_template.split('{').next().unwrap_or("");
                    !prefix.is_empty() && uri.starts_with(prefix)
                })
            })
            .and_then(|(_, id)| self.inner.hub.server(id.as_str()).ok())
    }

    async fn complete(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> Outcome {
        #[derive(Deserialize)]
        struct P {
            #[serde(rename = "ref")]
            reference: R,
        }
        #[derive(Deserialize)]
        struct R {
            #[serde(rename = "type")]
            kind: String,
            name: Option<String>,
            uri: Option<String>,
        }
        let Some(raw) = params else {
            return Outcome::Reply(error_line(
                id.get(),
                INVALID_PARAMS,
                "Invalid params: completion/complete needs \"ref\"",
            ));
        };
        let Ok(parsed) = serde_json::from_str::<P>(raw.get()) else {
            return Outcome::Reply(error_line(
                id.get(),
                INVALID_PARAMS,
                "Invalid params: completion/complete needs \"ref\"",
            ));
        };
        let Ok(mut p) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw.get()) else {
            return Outcome::Reply(error_line(id.get(), INVALID_PARAMS, "Invalid params"));
        };
        let server = match (
            parsed.reference.kind.as_str(),
            parsed.reference.name,
            parsed.reference.uri,
        ) {
            ("ref/prompt", Some(name), _) => {
                let Some((server, prompt)) = self.resolve_prompt(&name) else {
                    return Outcome::Reply(error_line(
                        id.get(),
                        INVALID_PARAMS,
                        &format!("Unknown prompt: {name}"),
                    ));
                };
                let new_ref = serde_json::json!({"type": "ref/prompt", "name": prompt}).to_string();
                if let Ok(r) = RawValue::from_string(new_ref) {
                    p.insert("ref".into(), r);
                }
                self.inner.hub.server(server.as_str()).ok()
            }
            ("ref/resource", _, Some(uri)) => self.resource_owner(&uri).await,
            _ => None,
        };
        match server {
            Some(server) => self.forward(s, id, server, "completion/complete", p, None),
            None => Outcome::Reply(jsonrpc::result_line(
                id,
                r#"{"completion":{"values":[],"hasMore":false}}"#,
            )),
        }
    }

    async fn prompts_list(&self) -> String {
        let (_, items) = self
            .fan_out_list("prompts/list", "prompts", "prompts")
            .await;
        let mut names = HashMap::new();
        let mut out = Vec::new();
        for (item, server) in items {
            #[derive(Deserialize)]
            struct N {
                name: String,
            }
            let Ok(n) = serde_json::from_str::<N>(item.get()) else {
                continue;
            };
            let exposed = exposed_name(server.as_str(), &n.name);
            if let Some(renamed) = catalog::rename(item.get(), &exposed) {
                out.push(renamed);
                names.insert(exposed, (server, n.name));
            }
        }
        *lock(&self.inner.prompts) = names;
        format!("{{\"prompts\":[{}]}}", out.join(","))
    }

    async fn resources_list(&self) -> String {
        let (result, items) = self
            .fan_out_list("resources/list", "resources", "resources")
            .await;
        let mut owners = HashMap::new();
        for (item, server) in items {
            #[derive(Deserialize)]
            struct U {
                uri: String,
            }
            if let Ok(u) = serde_json::from_str::<U>(item.get()) {
                owners.entry(u.uri).or_insert(server);
            }
        }
        *lock(&self.inner.resources) = owners;
        result
    }

    /// Asks every running server that declared `capability` for all pages of `method` and
    /// returns `{"<key>":[…]}` plus each item (raw) with its server, in server id order.
    async fn fan_out_list(
        &self,
        method: &str,
        key: &str,
        capability: &str,
    ) -> (String, Vec<(Box<RawValue>, ServerId)>) {
        let servers: Vec<ServerHandle> = self
            .inner
            .hub
            .servers()
            .into_iter()
            .filter(|s| s.status().state == crate::State::Running && s.has_capability(capability))
            .collect();
        let mut set = tokio::task::JoinSet::new();
        for (i, server) in servers.into_iter().enumerate() {
            let method = method.to_owned();
            let key = key.to_owned();
            set.spawn(async move {
                let items = list_all(&server, &method, &key).await;
                (i, server.id().clone(), items)
            });
        }
        let mut results = Vec::new();
        while let Some(Ok(r)) = set.join_next().await {
            results.push(r);
        }
        results.sort_by_key(|(i, _, _)| *i);
        let mut items = Vec::new();
        for (_, id, list) in results {
            items.extend(list.into_iter().map(|item| (item, id.clone())));
        }
        let joined: Vec<&str> = items.iter().map(|(i, _)| i.get()).collect();
        (format!("{{\"{key}\":[{}]}}", joined.join(",")), items)
    }

    /// Forwards a request to `server` and streams what it says about it back to the client.
    fn forward(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        server: ServerHandle,
        method: &'static str,
        mut params: BTreeMap<String, Box<RawValue>>,
        tool: Option<ToolCall>,
    ) -> Outcome {
        // The client's progress token is replaced by one of ours, unique across clients.
        let client_token = params
            .get("_meta")
            .and_then(|m| serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(m.get()).ok())
            .and_then(|m| m.get("progressToken").map(|t| t.get().to_owned()));
        let our_token = client_token
            .as_ref()
            .map(|_| format!("\"gatehouse-{}\"", self.next()));
        if let (Some(ours), Some(meta)) = (&our_token, params.get("_meta")) {
            if let Some(new_meta) = catalog::set_member(meta.get(), "progressToken", ours) {
                if let Ok(raw) = RawValue::from_string(new_meta) {
                    params.insert("_meta".into(), raw);
                }
            }
        }
        // Serialised straight into a RawValue: the members are raw already, no re-validation.
        let params = match serde_json::value::to_raw_value(&params).ok() {
            Some(p) => p,
            None => return Outcome::Reply(error_line(id.get(), INVALID_PARAMS, "Invalid params")),
        };
        let (tx, rx) = mpsc::channel::<Out>(32);
        let (sink, mut events) = mpsc::unbounded_channel();
        let route = CallRoute {
            sink,
            progress_token: our_token.clone(),
        };
        let client_id = id.get().to_owned();
        let gw = self.clone();
        let session = s.clone();
        let task = tokio::spawn({
            let client_id = client_id.clone();
            async move {
                let (tool, gate, mut decision, meta) = match tool {
                    Some(ToolCall {
                        name,
                        gate,
                        decision,
                        meta,
                    }) => (
                        Some(name),
                        gate,
                        (decision.to_owned(), Decider::Policy),
                        Some(meta),
                    ),
                    None => (None, None, (String::new(), Decider::Policy), None),
                };
                let log = |decision: &(String, Decider), outcome: &str| {
                    if let Some(m) = &meta {
                        gw.record(&session, m, &decision.0, decision.1, outcome);
                    }
                };
                if let Some(gate) = gate {
                    let name = tool.clone().unwrap_or_default();
                    match hold(&gw, gate, &tx, client_token.as_deref()).await {
                        Held::Allowed(scope, by) => {
                            decision = (format!("approved_{}", scope_name(scope)), by);
                        }
                        Held::Refused(text, label, by) => {
                            log(&(label.to_owned(), by), "not_run");
                            lock(&session.inflight).remove(&client_id);
                            let _ = tx
                                .send(Out::Final(raw_result_line(
                                    &client_id,
                                    &tool_error(&text.replace("{tool}", &name)),
                                )))
                                .await;
                            return;
                        }
                        Held::ClientGone => {
                            // Withdrawn: the request is gone from the broker and the call never runs.
                            log(&("withdrawn".to_owned(), Decider::Policy), "not_run");
                            lock(&session.inflight).remove(&client_id);
                            return;
                        }
                    }
                }
                let call = server.request_routed(method, Some(&params), Some(route));
                tokio::pin!(call);
                let result = loop {
                    tokio::select! {
                        r = &mut call => break Some(r),
                        Some(ev) = events.recv() => {
                            if let Some(line) = gw.relay(&session, &server, ev, client_token.as_deref()) {
                                if tx.send(Out::Event(line)).await.is_err() {
                                    break None;
                                }
                            }
                        }
                        _ = tx.closed() => break None,
                    }
                };
                lock(&session.inflight).remove(&client_id);
                let Some(result) = result else {
                    // The client went away: dropping `call` cancels it upstream.
                    return;
                };
                let outcome = match &result {
                    Ok(Reply::Result(r)) if is_error_result(r.get()) => "is_error",
                    Ok(Reply::Result(_)) => "ok",
                    Ok(Reply::Error(_)) => "protocol_error",
                    Err(_) => "lost",
                };
                let line = match result {
                    Ok(Reply::Result(r)) => raw_result_line(&client_id, r.get()),
                    Ok(Reply::Error(e)) => raw_error_line(&client_id, e.get()),
                    Err(e) => match &tool {
                        Some(name) => raw_result_line(
                            &client_id,
                            &tool_error(&format!("{e}; the outcome of {name} is unknown.")),
                        ),
                        None => error_line(&client_id, jsonrpc::INTERNAL_ERROR, &e.to_string()),
                    },
                };
                let _ = tx.send(Out::Final(line)).await;
                // After the answer is on its way: logging never delays a call.
                log(&decision, outcome);
            }
        });
        {
            let mut inflight = lock(&s.inflight);
            if !task.is_finished() {
                inflight.insert(client_id, task.abort_handle());
            }
        }
        Outcome::Stream(rx)
    }

    /// Turns a server's message about a call into the client's terms.
    fn relay(
        &self,
        s: &Arc<ClientSession>,
        server: &ServerHandle,
        ev: CallEvent,
        client_token: Option<&str>,
    ) -> Option<Vec<u8>> {
        match ev {
            CallEvent::Notification(line) => {
                let text = std::str::from_utf8(&line).ok()?;
                #[derive(Deserialize)]
                struct M<'a> {
                    #[serde(borrow)]
                    method: &'a str,
                    #[serde(borrow)]
                    params: Option<&'a RawValue>,
                }
                let m: M = serde_json::from_str(text).ok()?;
                if m.method == "notifications/progress" {
                    let token = client_token?;
                    let params = catalog::set_member(m.params?.get(), "progressToken", token)?;
                    let p = RawValue::from_string(params).ok()?;
                    Some(jsonrpc::notification_line(m.method, Some(&p)))
                } else {
                    let mut l = line;
                    l.push(b'\n');
                    Some(l)
                }
            }
            CallEvent::Request { id, line } => {
                let peer = server.peer().ok()?;
                let ours = format!("\"gatehouse-req-{}\"", self.next());
                let text = std::str::from_utf8(&line).ok()?;
                let mut rewritten = catalog::set_member(text, "id", &ours)?.into_bytes();
                rewritten.push(b'\n');
                lock(&s.forwarded).insert(
                    ours,
                    Forwarded {
                        peer,
                        upstream_id: id,
                    },
                );
                Some(rewritten)
            }
        }
    }
}

/// The tool-call specifics of a forwarded request: the exposed name (for error texts) and the
/// approval gate it must pass first, if any.
struct ToolCall {
    name: String,
    gate: Option<Gate>,
    /// The policy's decision if not held (`allowed`, `remembered_…`), else `held`.
    decision: &'static str,
    meta: CallMeta,
}

/// A call held for approval.
struct Gate {
    request: ApprovalRequest,
    hash: String,
    timeout: std::time::Duration,
}

enum Held {
    Allowed(Scope, Decider),
    /// Denied or timed out: the text for the isError result (`{tool}` is filled in), the
    /// decision's name for the activity log, and who decided.
    Refused(String, &'static str, Decider),
    ClientGone,
}

/// What the activity log needs of a tool call.
struct CallMeta {
    server: String,
    tool: String,
    arguments: String,
    started: std::time::Instant,
}

enum Admission {
    /// Runs without asking; the decision's name for the activity log.
    Free(&'static str),
    Held(Box<Gate>),
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Once => "once",
        Scope::Session => "session",
        Scope::Always => "always",
    }
}

fn is_error_result(raw: &str) -> bool {
    #[derive(Deserialize)]
    struct R {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<R>(raw).ok().and_then(|r| r.is_error) == Some(true)
}

/// How often a held call with a progress token hears that it is still waiting.
const KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits for the person's answer. Progress notifications keep the client's request alive when
/// it sent a progress token; a client that goes away withdraws the request.
async fn hold(
    gw: &Gateway,
    gate: Gate,
    tx: &mpsc::Sender<Out>,
    client_token: Option<&str>,
) -> Held {
    let broker = gw.inner.hub.approvals().clone();
    let ask = broker.ask(gate.request, gate.hash, gate.timeout);
    tokio::pin!(ask);
    let every = std::time::Duration::from_millis(gw.inner.keepalive_ms.load(Ordering::Relaxed));
    let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut beats: u64 = 0;
    let verdict = loop {
        tokio::select! {
            v = &mut ask => break v,
            _ = keepalive.tick(), if client_token.is_some() => {
                beats += 1;
                let params = format!(
                    "{{\"progressToken\":{},\"progress\":{beats},\"message\":\"Waiting for approval in Gatehouse\"}}",
                    client_token.unwrap_or("null")
                );
                if let Ok(p) = RawValue::from_string(params) {
                    if tx.send(Out::Event(jsonrpc::notification_line("notifications/progress", Some(&p)))).await.is_err() {
                        return Held::ClientGone;
                    }
                }
            }
            _ = tx.closed() => return Held::ClientGone,
        }
    };
    match verdict {
                Verdict::Allowed { scope, by } => Held::Allowed(scope, by),
                Verdict::Denied { reason, by } => Held::Refused(
            match reason {
                Some(r) if !r.trim().is_empty() => format!("Denied by the user in Gatehouse: {r}"),
                _ => "Denied by the user in Gatehouse: {tool} was not run.".to_owned(),
            },
            "denied",
            by,
        ),
                Verdict::TimedOut { secs } => Held::Refused(
            format!(
                "Gatehouse asked the user to approve {{tool}}, but nobody answered within {secs} s; the call was not run (denied by timeout)."
            ),
            "timed_out",
            Decider::Policy,
        ),
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
        Outcome::Reply(error_line(
            id.get(),
            INVALID_PARAMS,
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

/// All pages of a list method from one server; the items raw.
async fn list_all(server: &ServerHandle, method: &str, key: &str) -> Vec<Box<RawValue>> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let params = cursor.as_ref().and_then(|c| {
            RawValue::from_string(format!("{{\"cursor\":{}}}", jsonrpc::json_string(c))).ok()
        });
        let Ok(Reply::Result(r)) = server.request(method, params.as_deref()).await else {
            break;
        };
        let Ok(mut page) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(r.get()) else {
            break;
        };
        if let Some(list) = page.remove(key) {
            if let Ok(v) = serde_json::from_str::<Vec<Box<RawValue>>>(list.get()) {
                items.extend(v);
            }
        }
        match page
            .remove("nextCursor")
            .and_then(|c| serde_json::from_str::<String>(c.get()).ok())
        {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    items
}

fn not_running(server: &ServerHandle, tool: &str) -> String {
    let status = server.status();
    let mut text = format!(
        "Server \"{}\" is {}, so {tool} was not run.",
        status.id, status.state
    );
    if let Some(e) = status.last_error {
        text.push_str(&format!(" Last error: {e}"));
    }
    text
}

fn masked_arguments(
    redactions: &crate::secrets::Redactions,
    arguments: Option<&RawValue>,
) -> Box<RawValue> {
    let raw = arguments.map_or("{}", |a| a.get());
    let masked = redactions.mask(raw);
    RawValue::from_string(masked)
        .or_else(|_| {
            RawValue::from_string("{\"(hidden)\":\"the arguments contain a secret value\"}".into())
        })
        .unwrap_or_default()
}

/// An `isError: true` tool result with one text.
pub fn tool_error(text: &str) -> String {
    format!(
        "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"isError\":true}}",
        jsonrpc::json_string(text)
    )
}

fn raw_result_line(id: &str, result: &str) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}\n").into_bytes()
}

fn raw_error_line(id: &str, error: &str) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n").into_bytes()
}

pub fn error_line(id: &str, code: i64, message: &str) -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":{code},\"message\":{}}}}}\n",
        jsonrpc::json_string(message)
    )
    .into_bytes()
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

//! One connection to a server's stdio: a pending-request table, a writer task that owns stdin and
//! a reader task that owns stdout. Replies are raw JSON; nothing on this path re-encodes a
//! result.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{self, Envelope, ErrorCode, Kind, Line};
use crate::secrets::Redactions;

/// A reply to one of our requests, exactly as the server sent it.
#[derive(Debug)]
pub enum Reply {
    /// The server's `result`, as sent (its structure checked, its contents not decoded).
    Result(jsonrpc::RawJson),
    /// The server's `error` object.
    Error(Box<RawValue>),
}

/// Why a request to a server got no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The server is not running.
    #[error("server \"{server}\" is {state}, not running")]
    NotRunning {
        /// The server's id.
        server: String,
        /// Its state.
        state: String,
    },
    /// The server died or the connection broke mid-request.
    #[error("server \"{server}\" {detail} while the request was in flight")]
    Lost {
        /// The server's id.
        server: String,
        /// What happened to it.
        detail: String,
    },
    /// The server did not answer in time.
    #[error("server \"{server}\" did not answer within {secs} s")]
    Timeout {
        /// The server's id.
        server: String,
        /// The deadline.
        secs: u64,
    },
}

type Waiter = oneshot::Sender<Result<Reply, CallError>>;

/// Messages the server sends that belong to one call: progress for its token, and — by the rule
/// below — server→client requests and log messages raised while it runs.
#[derive(Debug)]
pub enum CallEvent {
    /// A notification line, as the server sent it (the receiver rewrites the progress token).
    Notification(Vec<u8>),
    /// A server→client request (sampling, elicitation, roots…). Answer with [`RpcPeer::respond`].
    Request {
        /// The request's id as the server sent it.
        id: Box<RawValue>,
        /// The whole request line.
        line: Vec<u8>,
    },
}

/// Bytes of one call's events queued for its client at most; beyond it progress and log
/// messages are dropped and server→client requests refused (the client is not keeping up).
pub const ROUTE_BYTES: usize = 8 * 1024 * 1024;

/// Where a call's [`CallEvent`]s go, and the progress token it was sent with (raw JSON).
pub struct CallRoute {
    /// Where the call's events go.
    pub sink: RouteTx,
    /// Our progress token for the call, raw JSON.
    pub progress_token: Option<String>,
    /// What the calling client's session declared it can answer (a 2025 client's, from its
    /// `initialize`), for a modern server: sent when the request carries none of its own.
    pub client_capabilities: Option<String>,
}

/// The sending side of a call's events: bounded by the bytes it holds ([`ROUTE_BYTES`]).
#[derive(Clone)]
pub struct RouteTx {
    tx: mpsc::UnboundedSender<CallEvent>,
    queued: Arc<std::sync::atomic::AtomicUsize>,
}

/// The receiving side of a call's events.
pub struct RouteRx {
    rx: mpsc::UnboundedReceiver<CallEvent>,
    queued: Arc<std::sync::atomic::AtomicUsize>,
}

/// A channel for one call's events, holding at most [`ROUTE_BYTES`].
pub fn route_channel() -> (RouteTx, RouteRx) {
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    (
        RouteTx {
            tx,
            queued: queued.clone(),
        },
        RouteRx { rx, queued },
    )
}

impl CallEvent {
    fn size(&self) -> usize {
        match self {
            CallEvent::Notification(l) => l.len(),
            CallEvent::Request { line, .. } => line.len(),
        }
    }
}

impl RouteTx {
    /// Queues an event unless that would pass the byte bound (or the call is over).
    pub fn try_send(&self, ev: CallEvent) -> bool {
        let size = ev.size();
        let before = self.queued.fetch_add(size, Ordering::Relaxed);
        if before + size > ROUTE_BYTES || self.tx.send(ev).is_err() {
            self.queued.fetch_sub(size, Ordering::Relaxed);
            return false;
        }
        true
    }
}

impl RouteRx {
    /// The next event; `None` once the call is over.
    pub async fn recv(&mut self) -> Option<CallEvent> {
        let ev = self.rx.recv().await?;
        self.queued.fetch_sub(ev.size(), Ordering::Relaxed);
        Some(ev)
    }
}

/// The member the remote bridge adds to a message that arrived on the response stream of one of
/// our requests: that request's id. Only a remote connection's bridge may set it; a stdio
/// server's own copy of it is ignored.
pub const RELATED: &str = "gatehouse/related";

/// The pending table. The mutex guards one insert/remove/drain; it is never held across `.await`.
#[derive(Default)]
struct Pending {
    closed: Option<String>,
    map: HashMap<u64, Waiter>,
    /// Routed calls by our request id.
    routes: HashMap<u64, RouteTx>,
    progress: HashMap<String, u64>,
}

/// Which call a message from the server belongs to.
enum Target {
    Call(RouteTx),
    /// No routed call is in flight.
    NoCall,
    /// Several are, and nothing says which: never guessed.
    Ambiguous(usize),
}

impl Pending {
    fn remove(&mut self, id: u64) -> Option<Waiter> {
        if self.routes.remove(&id).is_some() {
            self.progress.retain(|_, v| *v != id);
        }
        self.map.remove(&id)
    }

    /// The call a message belongs to: the one the transport related it to, else the one whose
    /// progress token it carries (a token of no call in flight: none), else the only call in
    /// flight.
    fn target(&self, related: Option<u64>, token: Option<&str>) -> Target {
        // A token that names no call in flight names a finished one: never another call's.
        let by_token = match token {
            Some(t) => match self.progress.get(t) {
                Some(id) => Some(*id),
                None if related.is_none() => return Target::NoCall,
                None => None,
            },
            None => None,
        };
        if let Some(id) = related.or(by_token) {
            return match self.routes.get(&id) {
                Some(s) => Target::Call(s.clone()),
                None => Target::NoCall,
            };
        }
        match self.routes.len() {
            0 => Target::NoCall,
            1 => self
                .routes
                .values()
                .next()
                .map_or(Target::NoCall, |s| Target::Call(s.clone())),
            n => Target::Ambiguous(n),
        }
    }
}

/// What the reader saw that the supervisor must act on.
#[derive(Debug)]
pub enum Inbound {
    /// The server sent `notifications/tools/list_changed`.
    ToolsListChanged,
    /// stdout reached EOF or failed: the connection is over (pending requests are not yet
    /// answered; the receiver must call [`RpcPeer::close`]).
    Closed,
}

/// Where a peer reports what it sees besides replies.
pub struct Hooks {
    /// What the supervisor must act on (`list_changed`, the end of the connection). Bounded: a
    /// `list_changed` that finds it full is dropped (one is already waiting).
    pub inbound: mpsc::Sender<Inbound>,
    /// The connection is a remote server's bridge, whose [`RELATED`] marks are trusted.
    pub trust_related: bool,
    /// Notes for the server's log (garbage lines, unknown ids…).
    pub note: NoteFn,
    /// Secret values to mask in anything the server sends that is stored or shown.
    pub redactions: Arc<Redactions>,
    /// Told the URI of each `notifications/resources/updated` the server sends.
    pub updated: UpdatedFn,
}

/// What the reader does with a resource the server says changed (its URI).
pub type UpdatedFn = Arc<dyn Fn(String) + Send + Sync>;

/// Notes the reader makes about protocol problems (garbage lines etc.) for the server's log.
pub type NoteFn = Arc<dyn Fn(String) + Send + Sync>;

/// The JSON-RPC connection to one server.
pub struct RpcPeer {
    server: String,
    out: mpsc::Sender<Vec<u8>>,
    pending: Mutex<Pending>,
    next_id: AtomicU64,
    /// Secret values to mask in what the server sends before any of it is stored or shown.
    redactions: Arc<Redactions>,
    trust_related: bool,
    /// The server's era (0 legacy, 1 modern), set by the handshake: every request to a modern
    /// server carries our envelope, none to a legacy one carries anybody's.
    modern: std::sync::atomic::AtomicBool,
    /// Notes for the server's log.
    note: NoteFn,
    /// The handshake's `server/discover` probe is in flight (a server that dies now died of it).
    probing: std::sync::atomic::AtomicBool,
    /// Where the URIs of resources the server says changed go.
    updated: UpdatedFn,
}

impl RpcPeer {
    /// Creates the peer and starts its writer and reader tasks on the given pipes. The tasks end
    /// when the pipes close or `stop` is cancelled (which also closes the child's stdin).
    pub fn start<W, R>(
        server: &str,
        stdin: W,
        stdout: R,
        stop: CancellationToken,
        hooks: Hooks,
        tasks: &mut tokio::task::JoinSet<()>,
    ) -> Arc<RpcPeer>
    where
        W: AsyncWrite + Unpin + Send + 'static,
        R: AsyncRead + Unpin + Send + 'static,
    {
        let Hooks {
            inbound,
            trust_related,
            note,
            redactions,
            updated,
        } = hooks;
        let (out, out_rx) = mpsc::channel(1024);
        let peer = Arc::new(RpcPeer {
            server: server.to_owned(),
            out,
            pending: Mutex::new(Pending::default()),
            next_id: AtomicU64::new(1),
            redactions,
            trust_related,
            modern: std::sync::atomic::AtomicBool::new(false),
            note: note.clone(),
            probing: std::sync::atomic::AtomicBool::new(false),
            updated,
        });
        tasks.spawn(jsonrpc::write_lines(stdin, out_rx, stop.clone()));
        tasks.spawn(read_loop(peer.clone(), stdout, inbound, note, stop));
        peer
    }

    /// Sends a request and waits for its reply. Dropping the future removes the pending entry
    /// and tells the server with `notifications/cancelled`.
    pub async fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Reply, CallError> {
        self.request_routed(method, params, None).await
    }

    /// Like [`RpcPeer::request`], routing the call's progress and server→client requests to
    /// `route`.
    pub async fn request_routed(
        &self,
        method: &str,
        params: Option<&RawValue>,
        route: Option<CallRoute>,
    ) -> Result<Reply, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let declared = route.as_ref().and_then(|r| r.client_capabilities.clone());
        {
            let mut p = self.lock();
            if let Some(reason) = &p.closed {
                return Err(self.lost(reason));
            }
            p.map.insert(id, tx);
            if let Some(route) = route {
                if let Some(token) = route.progress_token {
                    p.progress.insert(token, id);
                }
                p.routes.insert(id, route.sink);
            }
        }
        let mut guard = PendingGuard {
            peer: self,
            id,
            done: false,
        };
        // This hop's protocol keys are ours: the client's envelope never reaches the server.
        let own = crate::protocol::for_upstream(params, self.era(), declared.as_deref());
        let line =
            jsonrpc::request_line_text(id, method, own.as_deref().or(params.map(|p| p.get())));
        trace(&self.server, "to", &line);
        if self.out.send(line).await.is_err() {
            return Err(self.lost("closed its input"));
        }
        let result = match rx.await {
            Ok(r) => r,
            Err(_) => Err(self.lost("closed the connection")),
        };
        guard.done = true;
        result
    }

    /// Writes a note in the server's log.
    pub fn note(&self, text: String) {
        (self.note)(text);
    }

    /// Marks the `server/discover` probe as in flight (or over).
    pub fn set_probing(&self, on: bool) {
        self.probing.store(on, Ordering::Relaxed);
    }

    /// Whether the `server/discover` probe is in flight.
    pub fn is_probing(&self) -> bool {
        self.probing.load(Ordering::Relaxed)
    }

    /// The server's era as the handshake found it (legacy until then).
    pub fn era(&self) -> crate::protocol::Era {
        if self.modern.load(Ordering::Relaxed) {
            crate::protocol::Era::Modern
        } else {
            crate::protocol::Era::Legacy
        }
    }

    /// Sets the server's era (the handshake's probe).
    pub fn set_era(&self, era: crate::protocol::Era) {
        self.modern
            .store(era == crate::protocol::Era::Modern, Ordering::Relaxed);
    }

    /// Sends the client's answer to a server→client request back to the server.
    pub async fn respond(&self, id: &RawValue, body: ResponseBody<'_>) {
        let line = match body {
            ResponseBody::Result(r) => jsonrpc::result_line(id.get(), r.get()),
            ResponseBody::Error(e) => jsonrpc::error_object_line(id.get(), e.get()),
        };
        self.send_raw(line).await;
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<&RawValue>) -> Result<(), CallError> {
        let line = jsonrpc::notification_line(method, params);
        trace(&self.server, "to", &line);
        self.out
            .send(line)
            .await
            .map_err(|_| self.lost("closed its input"))
    }

    /// Answers every in-flight request with an error and refuses new ones. Idempotent.
    pub fn close(&self, reason: &str) {
        let drained: Vec<Waiter> = {
            let mut p = self.lock();
            if p.closed.is_none() {
                p.closed = Some(reason.to_owned());
            }
            p.routes.clear();
            p.progress.clear();
            p.map.drain().map(|(_, w)| w).collect()
        };
        for w in drained {
            let _ = w.send(Err(self.lost(reason)));
        }
    }

    /// The secret values to mask in what this server sends.
    pub fn redactions(&self) -> &Arc<Redactions> {
        &self.redactions
    }

    /// A short excerpt of a line from the server for a log note: secret values are masked
    /// before the line is cut, so a cut never leaves part of one.
    pub fn excerpt(&self, line: &[u8]) -> String {
        // A window wider than the longest form of any secret we keep, then the mask, then the cut.
        let window = &line[..line.len().min(200 + 8192)];
        let masked = self.redactions.mask(&String::from_utf8_lossy(window));
        let mut text: String = masked.chars().take(200).collect();
        if line.len() > 200 || masked.chars().count() > 200 {
            text.push_str(&format!("… ({} bytes)", line.len()));
        }
        text
    }

    /// Requests waiting for their reply.
    pub fn in_flight(&self) -> usize {
        self.lock().map.len()
    }

    /// Hands a reply to the request waiting for it; the reply comes back when none is.
    fn complete(&self, id: u64, reply: Reply) -> Result<(), Reply> {
        let waiter = self.lock().remove(id);
        match waiter {
            Some(w) => {
                let _ = w.send(Ok(reply));
                Ok(())
            }
            None => Err(reply),
        }
    }

    fn lost(&self, detail: &str) -> CallError {
        CallError::Lost {
            server: self.server.clone(),
            detail: detail.to_owned(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // A poisoned table only means another thread panicked mid-insert; the map is still valid.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn send_raw(&self, line: Vec<u8>) {
        trace(&self.server, "to", &line);
        let _ = self.out.send(line).await;
    }
}

/// The body of a response to a server→client request.
pub enum ResponseBody<'a> {
    /// The client's `result`.
    Result(&'a RawValue),
    /// The client's `error` object.
    Error(&'a RawValue),
}

struct PendingGuard<'a> {
    peer: &'a RpcPeer,
    id: u64,
    done: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        let still_pending = self.peer.lock().remove(self.id).is_some();
        if still_pending && !self.done {
            // The caller gave up (client cancelled, disconnected, or a timeout): tell the server.
            let params = format!(
                "{{\"requestId\":{},\"reason\":\"cancelled by the client\"}}",
                self.id
            );
            if let Ok(p) = RawValue::from_string(params) {
                let line = jsonrpc::notification_line("notifications/cancelled", Some(&p));
                trace(&self.peer.server, "to", &line);
                let _ = self.peer.out.try_send(line);
            }
        }
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    peer: Arc<RpcPeer>,
    stdout: R,
    inbound: mpsc::Sender<Inbound>,
    note: NoteFn,
    stop: CancellationToken,
) {
    let mut lines = jsonrpc::LineReader::new(stdout, jsonrpc::MAX_LINE_BYTES);
    loop {
        let line = tokio::select! {
            _ = stop.cancelled() => break,
            l = lines.next() => l,
        };
        match line {
            Ok(Line::Data(line)) => handle_line(&peer, line, &inbound, &note).await,
            Ok(Line::TooLong(n)) => note(format!(
                "dropped a stdout line of {n} bytes (over the {} MiB limit)",
                jsonrpc::MAX_LINE_BYTES / (1024 * 1024)
            )),
            Ok(Line::Eof) => break,
            Err(e) => {
                note(format!("stdout read failed: {e}"));
                break;
            }
        }
    }
    // The supervisor closes the pending table: it waits a moment for the exit status, which
    // explains the end better ("killed by signal 9") than the EOF does.
    let _ = inbound.send(Inbound::Closed).await;
}

async fn handle_line(
    peer: &RpcPeer,
    line: Vec<u8>,
    inbound: &mpsc::Sender<Inbound>,
    note: &NoteFn,
) {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    // The remote bridge says which of our requests a message came with; it is read, then
    // removed, so the client never sees it. From anyone else it is not believed.
    let (line, related) = match related_mark(peer, &line) {
        Some((stripped, id)) => (stripped, id),
        None => (line, None),
    };
    trace(&peer.server, "from", &line);
    // A result for one of our requests is moved to its caller inside its line, never decoded:
    // the scan finds the id and steps over the result once.
    let line = match jsonrpc::result_response(&line) {
        Some(scanned) => match (scanned.id, jsonrpc::RawJson::in_line(line, scanned)) {
            (id, Ok(raw)) => {
                if let Err(Reply::Result(raw)) = peer.complete(id, Reply::Result(raw)) {
                    note(format!(
                        "dropped a response with unknown id {id}: {}",
                        peer.excerpt(raw.line().as_bytes())
                    ));
                }
                return;
            }
            // Not UTF-8: the envelope parser refuses it with its note.
            (_, Err(line)) => line,
        },
        None => line,
    };
    let line: &[u8] = &line;
    let env = match Envelope::parse(line) {
        Ok(e) => e,
        Err(_) => {
            note(format!(
                "dropped a non-JSON stdout line: {}",
                peer.excerpt(line)
            ));
            return;
        }
    };
    match env.kind() {
        Some(Kind::Response { id }) => {
            let reply = match (env.result, env.error) {
                (_, Some(e)) => Reply::Error(e.to_owned()),
                (Some(r), None) => Reply::Result(jsonrpc::RawJson::from_raw(r)),
                (None, None) => return,
            };
            let known = match id.get().parse::<u64>() {
                Ok(n) => peer.complete(n, reply).is_ok(),
                Err(_) => false,
            };
            if !known {
                note(format!(
                    "dropped a response with unknown id {}: {}",
                    peer.excerpt(id.get().as_bytes()),
                    peer.excerpt(line)
                ));
            }
        }
        Some(Kind::Notification { method }) => match method {
            "notifications/tools/list_changed" => {
                // Full means a refresh is already waiting: this one adds nothing.
                let _ = inbound.try_send(Inbound::ToolsListChanged);
            }
            "notifications/prompts/list_changed" | "notifications/resources/list_changed" => {}
            "notifications/resources/updated" => {
                #[derive(serde::Deserialize)]
                struct P {
                    uri: String,
                }
                if let Some(p) = env
                    .params
                    .and_then(|p| serde_json::from_str::<P>(p.get()).ok())
                {
                    (peer.updated)(p.uri);
                }
            }
            "notifications/progress" => {
                // Progress belongs to the call whose token it carries, and to no other.
                let token = progress_token(env.params);
                let target = match (token, related) {
                    (Some(t), _) => peer.lock().target(None, Some(&t)),
                    (None, Some(id)) => peer.lock().target(Some(id), None),
                    (None, None) => Target::NoCall,
                };
                if let Target::Call(sink) = target {
                    // A client that is not reading loses progress, never the hub's memory.
                    sink.try_send(CallEvent::Notification(line.to_vec()));
                }
            }
            "notifications/message" => {
                let target = peer.lock().target(related, None);
                let delivered = match target {
                    Target::Call(s) => s.try_send(CallEvent::Notification(line.to_vec())),
                    _ => false,
                };
                if !delivered {
                    if let Some(p) = env.params {
                        note(format!("log: {}", peer.excerpt(p.get().as_bytes())));
                    }
                }
            }
            _ => {}
        },
        Some(Kind::Request { id, method }) => {
            if method == "ping" {
                peer.send_raw(jsonrpc::result_line(id.get(), "{}")).await;
                return;
            }
            let token = progress_token(env.params);
            let target = peer.lock().target(related, token.as_deref());
            let reply = match target {
                // Raised during a routed call: that call's client (and no other) answers it.
                Target::Call(sink) => {
                    let ev = CallEvent::Request {
                        id: id.to_owned(),
                        line: line.to_vec(),
                    };
                    match sink.try_send(ev) {
                        true => return,
                        false => jsonrpc::error_line(
                            id.get(),
                            ErrorCode::InternalError,
                            &format!("the client of this call is not keeping up; {method} was not passed on"),
                        ),
                    }
                }
                Target::Ambiguous(n) => {
                    note(format!(
                        "refused a {method} request: {n} calls are in flight and nothing in it says which one it belongs to, so no client is asked"
                    ));
                    jsonrpc::error_line(
                        id.get(),
                        ErrorCode::InvalidRequest,
                        &format!("Gatehouse cannot tell which of the {n} calls in flight this {method} belongs to, so it asks no client; include the call's progress token in its _meta, or raise it with one call in flight"),
                    )
                }
                // Outside any call, Gatehouse answers itself.
                Target::NoCall => match method {
                    "roots/list" => jsonrpc::result_line(id.get(), "{\"roots\":[]}"),
                    other => jsonrpc::error_line(
                        id.get(),
                        ErrorCode::MethodNotFound,
                        &format!("Gatehouse does not support {other} outside a client's call"),
                    ),
                },
            };
            peer.send_raw(reply).await;
        }
        None => note(format!(
            "dropped a JSON line that is not JSON-RPC: {}",
            peer.excerpt(line)
        )),
    }
}

/// The protocol trace (`GATEHOUSE_LOG=debug`): one line per message to or from a server — its
/// kind, method, id and size, never params or results (they may hold arguments or secrets).
fn trace(server: &str, direction: &'static str, line: &[u8]) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let bytes = line.len();
    match Envelope::parse(line.strip_suffix(b"\n").unwrap_or(line)) {
        Ok(env) => {
            let id = env.id.map(|i| {
                let t = i.get();
                // An id is the peer's to choose: a long one is cut, it is not a payload.
                t.chars().take(40).collect::<String>()
            });
            let kind = match env.kind() {
                Some(Kind::Request { .. }) => "request",
                Some(Kind::Notification { .. }) => "notification",
                Some(Kind::Response { .. }) if env.error.is_some() => "error",
                Some(Kind::Response { .. }) => "response",
                None => "invalid",
            };
            tracing::debug!(
                server,
                direction,
                kind,
                method = env.method.as_deref().unwrap_or(""),
                id = id.as_deref().unwrap_or(""),
                bytes,
                "mcp"
            );
        }
        Err(_) => tracing::debug!(server, direction, kind = "not json", bytes, "mcp"),
    }
}

/// The [`RELATED`] mark of a line from a trusted bridge: the line without it, and the request id
/// it names. `None` when there is no mark (or it is not trusted, or not a number).
fn related_mark(peer: &RpcPeer, line: &[u8]) -> Option<(Vec<u8>, Option<u64>)> {
    if !peer.trust_related {
        return None;
    }
    // Cheap test first: almost every line has no mark.
    memchr::memmem::find(line, RELATED.as_bytes())?;
    let text = std::str::from_utf8(line).ok()?;
    let (stripped, id) = jsonrpc::take_member(text, RELATED)?;
    Some((stripped.into_bytes(), id.get().parse().ok()))
}

/// `params._meta.progressToken` (or `params.progressToken`), raw.
fn progress_token(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct P<'a> {
        #[serde(borrow, rename = "progressToken", default)]
        token: Option<&'a RawValue>,
        #[serde(borrow, rename = "_meta", default)]
        meta: Option<M<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct M<'a> {
        #[serde(borrow, rename = "progressToken", default)]
        token: Option<&'a RawValue>,
    }
    let p: P = serde_json::from_str(params?.get()).ok()?;
    p.token
        .or_else(|| p.meta.and_then(|m| m.token))
        .map(|t| t.get().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A peer wired to in-memory pipes: `their_in` is what the "server" reads, `their_out`
    /// what it writes.
    struct Rig {
        peer: Arc<RpcPeer>,
        their_in: tokio::io::DuplexStream,
        their_out: tokio::io::DuplexStream,
        inbound: mpsc::Receiver<Inbound>,
        notes: Arc<Mutex<Vec<String>>>,
        _tasks: tokio::task::JoinSet<()>,
    }

    fn setup() -> Rig {
        let (our_in, their_in) = tokio::io::duplex(1 << 16);
        let (their_out, our_out) = tokio::io::duplex(1 << 16);
        let (tx, rx) = mpsc::channel(8);
        let notes = Arc::new(Mutex::new(Vec::new()));
        let n2 = notes.clone();
        let mut tasks = tokio::task::JoinSet::new();
        let peer = RpcPeer::start(
            "t",
            our_in,
            our_out,
            CancellationToken::new(),
            Hooks {
                inbound: tx,
                trust_related: false,
                note: Arc::new(move |s| n2.lock().unwrap().push(s)),
                redactions: Arc::default(),
                updated: Arc::new(|_| {}),
            },
            &mut tasks,
        );
        Rig {
            peer,
            their_in,
            their_out,
            inbound: rx,
            notes,
            _tasks: tasks,
        }
    }

    #[tokio::test]
    async fn request_reply_garbage_and_close() {
        let Rig {
            peer,
            their_in,
            mut their_out,
            mut inbound,
            notes,
            _tasks,
        } = setup();
        let p2 = peer.clone();
        let call = tokio::spawn(async move { p2.request("tools/list", None).await });
        let mut lines = BufReader::new(their_in).lines();
        let req = lines.next_line().await.unwrap().unwrap();
        assert_eq!(req, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        their_out
            .write_all(b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[],\"x\":1.50}}\n")
            .await
            .unwrap();
        match call.await.unwrap().unwrap() {
            Reply::Result(r) => assert_eq!(r.get(), r#"{"tools":[],"x":1.50}"#),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            inbound.recv().await,
            Some(Inbound::ToolsListChanged)
        ));
        let notes_now = notes.lock().unwrap().clone();
        assert!(
            notes_now.iter().any(|n| n.contains("non-JSON")),
            "{notes_now:?}"
        );
        assert!(
            notes_now.iter().any(|n| n.contains("unknown id 99")),
            "{notes_now:?}"
        );

        // A server→client ping is answered by us.
        their_out
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}\n")
            .await
            .unwrap();
        assert_eq!(
            lines.next_line().await.unwrap().unwrap(),
            r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#
        );

        // In-flight calls fail as soon as the connection is closed.
        let p3 = peer.clone();
        let pending = tokio::spawn(async move { p3.request("slow", None).await });
        lines.next_line().await.unwrap().unwrap();
        peer.close("exited with code 1");
        let err = pending.await.unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "server \"t\" exited with code 1 while the request was in flight"
        );
        assert!(peer.request("x", None).await.is_err());
    }

    #[tokio::test]
    async fn dropped_request_leaves_no_pending_entry() {
        let rig = setup();
        let peer = rig.peer.clone();
        let fut = peer.request("never", None);
        let _ = tokio::time::timeout(std::time::Duration::from_millis(20), fut).await;
        assert_eq!(peer.in_flight(), 0);
    }

    /// A message goes to the call the bridge related it to, else to the call whose progress
    /// token it carries, else to the only call in flight; with several and nothing to tell them
    /// apart, to none.
    #[test]
    fn a_message_is_routed_to_its_own_call_or_to_none() {
        let mut p = Pending::default();
        let is_call = |t: Target, want: &RouteTx| match t {
            Target::Call(s) => Arc::ptr_eq(&s.queued, &want.queued),
            _ => false,
        };
        assert!(matches!(p.target(None, None), Target::NoCall));
        let (a, _ra) = route_channel();
        p.routes.insert(1, a.clone());
        p.progress.insert("\"ta\"".into(), 1);
        assert!(is_call(p.target(None, None), &a), "the only call in flight");
        let (b, _rb) = route_channel();
        p.routes.insert(2, b.clone());
        assert!(matches!(p.target(None, None), Target::Ambiguous(2)));
        assert!(
            is_call(p.target(Some(2), None), &b),
            "related by the bridge"
        );
        assert!(
            is_call(p.target(None, Some("\"ta\"")), &a),
            "by progress token"
        );
        assert!(
            matches!(p.target(Some(9), None), Target::NoCall),
            "related to a call that is over: nobody"
        );
        p.remove(1);
        assert!(is_call(p.target(None, None), &b));
        assert!(matches!(p.target(None, Some("\"ta\"")), Target::NoCall));
    }

    /// One call's queue holds at most ROUTE_BYTES; what does not fit is refused, and reading
    /// makes room again.
    #[tokio::test]
    async fn a_calls_queue_is_bounded_by_bytes() {
        let (tx, mut rx) = route_channel();
        let big = vec![b'x'; ROUTE_BYTES / 4];
        for _ in 0..4 {
            assert!(tx.try_send(CallEvent::Notification(big.clone())));
        }
        assert!(!tx.try_send(CallEvent::Notification(vec![b'y'])), "full");
        assert!(rx.recv().await.is_some());
        assert!(
            tx.try_send(CallEvent::Notification(big.clone())),
            "room again"
        );
    }
}

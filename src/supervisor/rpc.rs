//! One connection to a server's stdio: a pending-request table, a writer task that owns stdin and
//! a reader task that owns stdout. Replies are raw JSON; nothing on this path re-encodes a
//! result.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc;
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
    map: foldhash::HashMap<u64, Waiter>,
    /// Routed calls by our request id.
    routes: foldhash::HashMap<u64, RouteTx>,
    /// Our progress tokens (raw JSON) → our request id.
    progress: foldhash::HashMap<String, u64>,
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

mod reader;

use reader::{read_loop, trace};

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
        mut route: Option<CallRoute>,
    ) -> Result<Reply, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let declared = route.as_mut().and_then(|r| r.client_capabilities.take());
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
        crate::sync::lock(&self.pending)
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

#[cfg(test)]
#[path = "rpc_tests.rs"]
mod tests;

//! Client sessions: who a client is (from `initialize`), where messages not tied to a request go,
//! its requests in flight and the server→client requests it owes an answer to. At most
//! [`MAX_SESSIONS`] are kept per client profile; beyond that the profile's least recently active
//! one is ended (never another profile's).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::AbortHandle;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::profiles::Connected;
use crate::supervisor::rpc::RpcPeer;

/// Sessions kept at most per client profile (the default profile is one); beyond it that
/// profile's least recently active one is ended (clients that never send DELETE must not grow
/// the hub forever, and one profile's flood must not end another's sessions).
pub const MAX_SESSIONS: usize = 1024;

/// How long a modern client's session lasts. MCP 2026-07-28 has no protocol session, so
/// Gatehouse keeps one per client token and `clientInfo` (name and version): it holds that
/// client's "allow for this session" answers, which end with it, at the latest this long after
/// its first request.
pub const MODERN_SESSION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(8 * 3600);

/// The longest a stream of change notifications stays open (a listen stream, a 2025 client's GET
/// stream; a listen stream ends sooner with its session): its client opens another, as both
/// revisions expect of a closed stream.
pub const STREAM_LIFETIME: std::time::Duration = MODERN_SESSION_LIFETIME;

/// One connected client (an HTTP session, or the stdio peer).
pub struct ClientSession {
    /// The session id (`Mcp-Session-Id`).
    pub id: String,
    /// The client profile whose token opened it (`None`: the gateway token, every tool).
    pub profile: Option<String>,
    /// That profile's token when the session opened: a rotated token ends the session.
    pub(super) token: Option<Arc<str>>,
    /// Guards a read or write of the client's identity.
    info: Mutex<ClientInfo>,
    /// Messages not tied to a request (`list_changed`): the GET stream or stdout.
    standalone: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// A modern client's open `subscriptions/listen` streams (at most [`MAX_LISTENERS`]).
    listeners: Mutex<Vec<Listener>>,
    /// The resources a legacy client subscribed to (`resources/subscribe`), at most
    /// [`MAX_SUBSCRIPTIONS`].
    /// Each with its share of the upstream subscription (dropped with it).
    resource_subs: Mutex<HashMap<String, Option<super::subs::Held>>>,
    /// Requests being forwarded, by the client's raw id: aborting one drops the upstream call,
    /// which sends `notifications/cancelled` to the server.
    inflight: Mutex<HashMap<String, InFlight>>,
    /// Server→client requests forwarded to this client, by our raw id.
    pub(super) forwarded: Mutex<HashMap<String, Forwarded>>,
    /// When the client last sent anything (ms since the epoch), for evicting idle sessions.
    last_seen: AtomicU64,
    /// A modern client's session ends at this time (ms since the epoch); legacy sessions end
    /// when their client ends them (or is evicted).
    pub expires_ms: Option<u64>,
}

/// A request being forwarded: Gatehouse's number for its call, and how to end it.
pub(super) struct InFlight {
    call: u64,
    abort: AbortHandle,
}

/// Takes a call out of its session's table of calls in flight however its work ends (answered,
/// refused, its client gone, aborted).
pub(super) struct Tracked {
    session: Arc<ClientSession>,
    call: u64,
}

impl Tracked {
    /// Call number `call` of `session`, untracked when this is dropped.
    pub(super) fn new(session: &Arc<ClientSession>, call: u64) -> Tracked {
        Tracked {
            session: session.clone(),
            call,
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.session.untrack(self.call);
    }
}

/// Open `subscriptions/listen` streams per session, at most: one more is refused.
pub const MAX_LISTENERS: usize = 16;

/// Change notifications a listen stream waits to send, at most: a client that does not read its
/// stream loses it (it re-listens and refetches, as the revision says), never the hub's memory.
pub const LISTEN_QUEUE: usize = 16;

/// One `subscriptions/listen` stream: its request id (raw, the subscription id), the kinds of
/// change it asked for, and where its notifications go.
pub(super) struct Listener {
    pub id: String,
    pub kinds: Vec<&'static str>,
    /// The resource URIs it subscribed to.
    pub resources: Vec<String>,
    /// Ends the stream's watcher (`listen::watch`: its lifetime, its shares of the upstream
    /// subscriptions) when the stream is dropped here.
    pub _watch: Option<tokio_util::sync::DropGuard>,
    pub tx: mpsc::Sender<super::Out>,
}

/// Messages of one call waiting for its client at most.
pub(super) const OUT_QUEUE: usize = 8;
/// Server→client requests one client may leave unanswered at most; more are refused.
pub(super) const MAX_FORWARDED: usize = 64;
/// How long a client may take to answer one round of input requests, and a 2026-07-28 client to
/// retry a parked call with its answer (a person may be asked).
pub const INPUT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);

/// Resources one client (a legacy session, or one listen stream) is subscribed to, at most.
pub const MAX_SUBSCRIPTIONS: usize = 64;

/// A request to the client awaiting its answer: a server's own (2025), sent back to that
/// server's connection under the id the server gave it, or one Gatehouse made of a 2026-07-28
/// server's input request, whose answer goes to the call that waits for it.
pub(super) enum Forwarded {
    Upstream {
        peer: Arc<RpcPeer>,
        upstream_id: Box<RawValue>,
    },
    Input(tokio::sync::oneshot::Sender<InputAnswer>),
}

/// A client's answer to an input request Gatehouse sent it: its result, or its error object.
pub(super) type InputAnswer = Result<Box<RawValue>, Box<RawValue>>;

/// Who a client said it is.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    /// `clientInfo.name`.
    pub name: Option<String>,
    /// `clientInfo.version`.
    pub version: Option<String>,
    /// The protocol version agreed at `initialize`.
    pub protocol_version: Option<String>,
    /// `notifications/initialized` arrived.
    pub initialized: bool,
    /// The era the client speaks: legacy (it sent `initialize`) or modern (its requests carry
    /// the 2026-07-28 envelope). Results, lists and server requests follow it.
    pub era: crate::protocol::Era,
    /// What the client declared it can answer (latest request for a modern client, `initialize`
    /// for a legacy one), reduced by [`crate::protocol::answerable`]: small whatever it sent.
    pub capabilities: Option<String>,
}

pub(super) use crate::sync::lock;

impl ClientSession {
    fn new(profile: Option<String>, token: Option<Arc<str>>) -> ClientSession {
        ClientSession {
            id: crate::token::random_hex(16),
            profile,
            token,
            info: Mutex::new(ClientInfo::default()),
            standalone: Mutex::new(None),
            listeners: Mutex::new(Vec::new()),
            resource_subs: Mutex::new(Default::default()),
            inflight: Mutex::new(HashMap::new()),
            forwarded: Mutex::new(HashMap::new()),
            last_seen: AtomicU64::new(crate::logs::now_ms()),
            expires_ms: None,
        }
    }

    /// The era its client speaks.
    pub fn era(&self) -> crate::protocol::Era {
        lock(&self.info).era
    }

    /// Who the client said it is.
    pub fn info(&self) -> ClientInfo {
        lock(&self.info).clone()
    }

    /// `GATEHOUSE_LOG=debug`: who this client says it is, on what — its name, version, protocol
    /// revision and the capabilities Gatehouse keeps (bounded; never arguments or tokens).
    pub fn log_hello(&self, how: &'static str) {
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
        let i = lock(&self.info);
        tracing::debug!(
            session = %self.id,
            profile = self.profile.as_deref().unwrap_or("default"),
            client = i.name.as_deref().unwrap_or(""),
            version = i.version.as_deref().unwrap_or(""),
            protocol = i.protocol_version.as_deref().unwrap_or(""),
            capabilities = i.capabilities.as_deref().unwrap_or("{}"),
            "client {how}"
        );
    }

    /// Who the client says it is — name, version, protocol revision — for its activity rows (no
    /// copy of its capabilities).
    pub fn identity(&self) -> (Option<String>, Option<String>, Option<String>) {
        let i = lock(&self.info);
        (
            i.name.clone(),
            i.version.clone(),
            i.protocol_version.clone(),
        )
    }

    /// What the client declared it can answer (no copy of the rest of its info).
    pub fn capabilities(&self) -> Option<String> {
        lock(&self.info).capabilities.clone()
    }

    pub(super) fn set_info(&self, f: impl FnOnce(&mut ClientInfo)) {
        f(&mut lock(&self.info));
    }

    /// Where messages not tied to a request go from now on (replaces an older stream).
    pub fn set_standalone(&self, tx: mpsc::Sender<Vec<u8>>) {
        *lock(&self.standalone) = Some(tx);
    }

    /// Sends a message not tied to a request, if the client has a stream for them. A client that
    /// does not read loses the message, never the hub's memory.
    pub(super) fn notify(&self, line: &[u8]) {
        if let Some(tx) = lock(&self.standalone).clone() {
            let _ = tx.try_send(line.to_vec());
        }
        self.notify_listeners(line);
    }

    /// How many listen streams the session has open.
    pub(super) fn listening(&self) -> usize {
        lock(&self.listeners)
            .iter()
            .filter(|l| !l.tx.is_closed())
            .count()
    }

    /// Adds a listen stream; `false` when the session has [`MAX_LISTENERS`] already.
    pub(super) fn listen(&self, l: Listener) -> bool {
        let mut all = lock(&self.listeners);
        all.retain(|l| !l.tx.is_closed());
        if all.len() >= MAX_LISTENERS {
            return false;
        }
        all.push(l);
        true
    }

    /// Whether a legacy client is subscribed to `uri`, and whether it has room for another.
    pub(super) fn subscribed(&self, uri: &str) -> (bool, bool) {
        let subs = lock(&self.resource_subs);
        (subs.contains_key(uri), subs.len() < MAX_SUBSCRIPTIONS)
    }

    /// A legacy client subscribed to a resource, with its share of the upstream subscription.
    pub(super) fn subscribe(&self, uri: &str, held: Option<super::subs::Held>) {
        lock(&self.resource_subs).insert(uri.to_owned(), held);
    }

    /// A legacy client unsubscribed: its share goes (the server is told when it was the last).
    pub(super) fn unsubscribe(&self, uri: &str) {
        let gone = lock(&self.resource_subs).remove(uri);
        drop(gone);
    }

    /// A resource changed: a legacy client subscribed to it hears of it on its own stream, a
    /// modern one on each listen stream that subscribed to it (tagged with its id).
    pub(super) fn resource_updated(&self, uri: &str) {
        if lock(&self.resource_subs).contains_key(uri) {
            if let Ok(p) =
                RawValue::from_string(format!("{{\"uri\":{}}}", crate::jsonrpc::json_string(uri)))
            {
                if let Some(tx) = lock(&self.standalone).clone() {
                    let line = crate::jsonrpc::notification_line(
                        "notifications/resources/updated",
                        Some(&p),
                    );
                    let _ = tx.try_send(line);
                }
            }
        }
        let mut all = lock(&self.listeners);
        all.retain(|l| {
            if !l.resources.iter().any(|r| r == uri) {
                return !l.tx.is_closed();
            }
            let params = format!(
                "{{\"uri\":{},\"_meta\":{{{}:{}}}}}",
                crate::jsonrpc::json_string(uri),
                crate::jsonrpc::json_string(super::SUBSCRIPTION_ID_KEY),
                l.id
            );
            match RawValue::from_string(params) {
                Ok(p) => {
                    let line = crate::jsonrpc::notification_line(
                        "notifications/resources/updated",
                        Some(&p),
                    );
                    l.tx.try_send(super::Out::Event(line)).is_ok()
                }
                Err(_) => true,
            }
        });
    }

    /// Ends the listen stream opened by request `id` (its client cancelled it).
    pub(super) fn unlisten(&self, id: &str) {
        lock(&self.listeners).retain(|l| l.id != id);
    }

    /// A change notification to every listen stream that asked for its kind, tagged with the
    /// stream's subscription id. A stream whose queue is full is ended.
    fn notify_listeners(&self, line: &[u8]) {
        let mut all = lock(&self.listeners);
        if all.is_empty() {
            return;
        }
        #[derive(serde::Deserialize)]
        struct M {
            method: String,
        }
        let Ok(M { method }) = serde_json::from_slice::<M>(line) else {
            return;
        };
        let Some(kind) = super::listen_kind(&method) else {
            return;
        };
        all.retain(|l| {
            if !l.kinds.contains(&kind) {
                return !l.tx.is_closed();
            }
            let tagged = super::tagged_notification(&method, &l.id);
            l.tx.try_send(super::Out::Event(tagged)).is_ok()
        });
    }

    /// Request `id` is forwarded as Gatehouse's call number `call`, ended by `abort`.
    pub(super) fn track(&self, id: &str, call: u64, abort: AbortHandle) {
        lock(&self.inflight).insert(id.to_owned(), InFlight { call, abort });
    }

    /// Call number `call` ended: it is no longer in flight, under whichever request id it runs
    /// now (a parked call's retry took it over under its own).
    pub(super) fn untrack(&self, call: u64) {
        lock(&self.inflight).retain(|_, f| f.call != call);
    }

    /// The client cancelled request `id`: its call is ended (dropping the upstream call sends
    /// `notifications/cancelled` to the server).
    pub(super) fn cancel(&self, id: &str) {
        let gone = lock(&self.inflight).remove(id);
        if let Some(f) = gone {
            f.abort.abort();
        }
    }

    /// How many calls are in flight (the tests' view of the table).
    #[cfg(test)]
    pub(super) fn calls_in_flight(&self) -> usize {
        lock(&self.inflight).len()
    }

    /// Takes request `id`'s call out of the table (a parked call keeps it until its retry).
    pub(super) fn take_inflight(&self, id: &str) -> Option<InFlight> {
        lock(&self.inflight).remove(id)
    }

    /// A parked call's retry, request `id`, runs `call` from now on.
    pub(super) fn put_inflight(&self, id: &str, call: InFlight) {
        lock(&self.inflight).insert(id.to_owned(), call);
    }

    pub(super) fn touch(&self) {
        self.last_seen
            .store(crate::logs::now_ms(), Ordering::Relaxed);
    }

    /// Cancels everything in flight and drops the streams.
    fn close(&self) {
        let listeners = std::mem::take(&mut *lock(&self.listeners));
        drop(listeners);
        let subs = std::mem::take(&mut *lock(&self.resource_subs));
        drop(subs);
        for (_, f) in lock(&self.inflight).drain() {
            f.abort.abort();
        }
        lock(&self.forwarded).clear();
        *lock(&self.standalone) = None;
    }
}

/// (clientInfo name, profile, last seen) of a session.
fn describe(s: &ClientSession, open: bool) -> Connected {
    let info = s.info();
    let name = info.name.unwrap_or_else(|| "unnamed client".into());
    Connected {
        gives_up_after_secs: crate::profiles::known_timeout_secs(&name),
        name,
        version: info.version,
        protocol: info.protocol_version,
        profile: s.profile.clone().unwrap_or_else(|| "default".into()),
        last_seen_ms: s.last_seen.load(Ordering::Relaxed),
        open,
        imitates: None,
    }
}

/// The session table. The mutex guards one insert, lookup, removal or snapshot.
/// What is told of a session that ends.
type EndHook = Box<dyn Fn(&str) + Send + Sync>;

#[derive(Default)]
pub(super) struct Sessions {
    map: Mutex<HashMap<String, Arc<ClientSession>>>,
    /// Told the id of every session that ends (its "session" answers end with it).
    on_end: std::sync::OnceLock<EndHook>,
    /// The keys of the hash that names modern clients' sessions.
    modern_keys: std::hash::RandomState,
    /// The last sessions that ended: (clientInfo name, profile, last seen), at most
    /// [`RECENTLY_ENDED`], for "connected in the last minutes".
    ended: Mutex<std::collections::VecDeque<Connected>>,
}

/// Ended sessions remembered for "connected in the last minutes", at most.
const RECENTLY_ENDED: usize = 32;

impl Sessions {
    /// Sets what is told of every session that ends (once).
    pub fn on_end(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.on_end.set(Box::new(f));
    }

    fn end(&self, s: &ClientSession) {
        s.close();
        {
            let mut ended = lock(&self.ended);
            if ended.len() >= RECENTLY_ENDED {
                ended.pop_front();
            }
            ended.push_back(describe(s, false));
        }
        if let Some(f) = self.on_end.get() {
            f(&s.id);
        }
    }

    /// A new session; the least recently active one is ended when the table is full.
    pub fn open(&self, profile: Option<String>, token: Option<Arc<str>>) -> Arc<ClientSession> {
        self.insert(Arc::new(ClientSession::new(profile, token)))
    }

    /// Adds a session (one already there under its id wins: two first requests of the same
    /// modern client at once share one); the least recently active one is ended when full.
    fn insert(&self, s: Arc<ClientSession>) -> Arc<ClientSession> {
        let evicted = {
            let mut sessions = lock(&self.map);
            if let Some(existing) = sessions.get(&s.id) {
                return existing.clone();
            }
            // Each client profile has its own share (the default profile too): a full share ends
            // that profile's least recently active session, never another profile's.
            let mine = || sessions.values().filter(|x| x.profile == s.profile);
            let evicted = if mine().count() >= MAX_SESSIONS {
                let oldest = mine()
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
            tracing::info!(session = %old.id, profile = old.profile.as_deref().unwrap_or("default"), "ended the profile's least recently active client session ({MAX_SESSIONS} per profile is the limit)");
            self.end(&old);
        }
        s
    }

    /// The session of a modern client: one per client profile and `clientInfo` (name and
    /// version), made on its first request and ended [`MODERN_SESSION_LIFETIME`] later (or
    /// when evicted, or its token is rotated).
    pub fn modern(
        &self,
        profile: Option<String>,
        token: Option<Arc<str>>,
        client: &(Option<String>, Option<String>),
    ) -> Arc<ClientSession> {
        use std::hash::BuildHasher;
        // A keyed hash (keys random per hub) of who the client is: its id, stable for the hub's
        // life, names nothing a client could predict.
        let id = format!(
            "modern-{:016x}",
            self.modern_keys
                .hash_one((profile.as_deref(), &client.0, &client.1))
        );
        let now = crate::logs::now_ms();
        let found = lock(&self.map).get(&id).cloned();
        match found {
            Some(s) if s.expires_ms.is_some_and(|t| t > now) => return s,
            Some(_) => {
                self.close(&id);
            }
            None => {}
        }
        let mut fresh = ClientSession::new(profile, token);
        fresh.id = id;
        fresh.expires_ms = Some(now + MODERN_SESSION_LIFETIME.as_millis() as u64);
        {
            let mut info = lock(&fresh.info);
            info.name = client.0.clone();
            if let Some(name) = &info.name {
                crate::text::imitation::note(name);
            }
            info.version = client.1.clone();
            info.era = crate::protocol::Era::Modern;
            info.protocol_version = Some(crate::protocol::MODERN_VERSION.into());
            info.initialized = true;
        }
        self.insert(Arc::new(fresh))
    }

    pub fn get(&self, id: &str) -> Option<Arc<ClientSession>> {
        lock(&self.map).get(id).cloned()
    }

    /// Ends a session: its in-flight calls are cancelled upstream.
    pub fn close(&self, id: &str) -> bool {
        let s = lock(&self.map).remove(id);
        match s {
            Some(s) => {
                self.end(&s);
                true
            }
            None => false,
        }
    }

    /// The listen streams open across every session of client profile `profile`.
    pub(super) fn listening_on(&self, profile: &Option<String>) -> usize {
        lock(&self.map)
            .values()
            .filter(|s| &s.profile == profile)
            .map(|s| s.listening())
            .sum()
    }

    /// The clients seen within `within_ms` of `now`, open or recently ended, most recent first.
    pub fn recent(&self, now: u64, within_ms: u64) -> Vec<Connected> {
        let open: Vec<Connected> = lock(&self.map)
            .values()
            .map(|s| describe(s, true))
            .collect();
        let ended: Vec<Connected> = lock(&self.ended).iter().cloned().collect();
        let mut out: Vec<Connected> = Vec::new();
        for c in open.into_iter().chain(ended) {
            if now.saturating_sub(c.last_seen_ms) > within_ms {
                continue;
            }
            // One line per client (name and version) and profile: the most recent.
            let same = |o: &Connected| {
                o.name == c.name && o.version == c.version && o.profile == c.profile
            };
            match out.iter_mut().find(|o| same(o)) {
                Some(o) if c.last_seen_ms > o.last_seen_ms || (c.open && !o.open) => {
                    let open = o.open || c.open;
                    *o = c;
                    o.open = open;
                }
                Some(o) => o.open |= c.open,
                None => out.push(c),
            }
        }
        out.sort_by_key(|c| std::cmp::Reverse(c.last_seen_ms));
        out
    }

    /// The clients active within `within` (one per name, version and profile), most recent
    /// first; a name that looks like a known client's, or another one's here, is flagged.
    pub fn connected(&self, within: std::time::Duration) -> Vec<Connected> {
        let now = crate::logs::now_ms();
        let mut recent = self.recent(now, within.as_millis() as u64);
        let names: Vec<String> = recent.iter().map(|c| c.name.clone()).collect();
        for c in &mut recent {
            c.imitates =
                crate::text::imitation::imitates(&c.name, names.iter().map(String::as_str));
        }
        recent
    }

    /// Ends the sessions `stale` says no longer hold a valid token.
    pub fn close_where(&self, stale: impl Fn(&ClientSession) -> bool) {
        let gone: Vec<_> = {
            let mut map = lock(&self.map);
            let ids: Vec<String> = map
                .values()
                .filter(|s| stale(s))
                .map(|s| s.id.clone())
                .collect();
            ids.into_iter().filter_map(|id| map.remove(&id)).collect()
        };
        for s in gone {
            tracing::info!(session = %s.id, profile = ?s.profile, "ended a session whose client token was rotated or removed");
            self.end(&s);
        }
    }

    /// Every open session, as things stand.
    pub fn all(&self) -> Vec<Arc<ClientSession>> {
        lock(&self.map).values().cloned().collect()
    }

    /// Ends every session.
    pub fn close_all(&self) {
        let all: Vec<_> = lock(&self.map).drain().map(|(_, s)| s).collect();
        for s in all {
            self.end(&s);
        }
    }

    /// Sends a message not tied to a request to the sessions `to` picks.
    pub fn notify_where(&self, line: &[u8], mut to: impl FnMut(&ClientSession) -> bool) {
        let all: Vec<_> = lock(&self.map).values().cloned().collect();
        for s in all {
            if to(&s) {
                s.notify(line);
            }
        }
    }
}

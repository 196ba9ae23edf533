//! What a server's actor shares with its handles: the status channel, the live connection, the
//! tools and capabilities of the running session, and the log store.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::config::ServerId;
use crate::events::{Event, EventBus};
use crate::logs::{now_ms, LogLine, LogStore, LogStream};
use crate::secrets::Redactions;

use super::rpc::RpcPeer;
use super::status::{ServerStatus, ToolDef};

/// What the actor shares with handles. Each mutex guards one clone or one swap of an `Arc`.
pub(super) struct Shared {
    pub id: ServerId,
    pub status: watch::Sender<ServerStatus>,
    /// The live connection while starting/running.
    pub peer: Mutex<Option<Arc<RpcPeer>>>,
    /// Last fetched tool list.
    pub tools: Mutex<Arc<Vec<Arc<ToolDef>>>>,
    /// The `capabilities` object of the server's `initialize` result while running.
    pub capabilities: Mutex<Option<Arc<serde_json::Value>>>,
    /// The `instructions` of its handshake (secret values masked), while it runs.
    pub instructions: Mutex<Option<Arc<str>>>,
    pub logs: LogStore,
    pub redactions: Arc<Redactions>,
    /// The deadline of one request to the server in seconds (0: none); follows the config.
    pub call_timeout_secs: std::sync::atomic::AtomicU64,
    /// How long its start may take (`startup_timeout_secs`); follows the config.
    pub startup_timeout_secs: std::sync::atomic::AtomicU64,
    /// Warnings by key (what `status.warnings` shows). Guards one change.
    pub warnings: Mutex<std::collections::BTreeMap<String, String>>,
    pub bus: EventBus,
    /// The sandbox of the current (or last) launch, when confined. Guards one swap or read.
    pub confined: Mutex<Option<Arc<crate::sandbox::Confined>>>,
    /// Requests in flight through handles: an on-demand server is never stopped under one.
    pub in_flight: std::sync::atomic::AtomicUsize,
    /// When the last request began or ended (ms since the epoch; 0: none yet).
    pub last_used_ms: std::sync::atomic::AtomicU64,
}

/// One request in flight: counted while it lives, and the server's last use noted at both ends.
pub(super) struct InUse<'a>(&'a Shared);

impl<'a> InUse<'a> {
    pub fn begin(shared: &'a Shared) -> InUse<'a> {
        use std::sync::atomic::Ordering;
        shared.in_flight.fetch_add(1, Ordering::Relaxed);
        shared.last_used_ms.store(now_ms(), Ordering::Relaxed);
        InUse(shared)
    }
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        self.0.last_used_ms.store(now_ms(), Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Shared {
    /// How long its start may take, in seconds.
    pub fn startup_secs(&self) -> u64 {
        self.startup_timeout_secs
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets (or clears, with `None`) the warning under `key`; a change is published.
    pub fn warn(&self, key: &str, text: Option<String>) {
        let list: Vec<String> = {
            let mut w = lock(&self.warnings);
            let changed = match text {
                Some(t) => w
                    .insert(key.to_owned(), self.redactions.mask(&t))
                    .is_none_or(|old| old != w[key]),
                None => w.remove(key).is_some(),
            };
            if !changed {
                return;
            }
            w.values().cloned().collect()
        };
        let changed = self.status.send_if_modified(|s| {
            let differs = s.warnings != list;
            s.warnings = list;
            differs
        });
        if changed {
            self.bus
                .publish(Event::Status(self.status.borrow().clone()));
        }
    }

    /// Masks secret values, then keeps the line and publishes it.
    pub fn log(&self, bus: &EventBus, stream: LogStream, line: String) {
        let line = LogLine {
            server: self.id.to_string(),
            stream,
            time_ms: now_ms(),
            line: self.redactions.mask(&line),
        };
        self.logs.push(line, |l| bus.publish(Event::Log(l.clone())));
    }
}

pub(super) use crate::sync::lock;

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
    pub logs: LogStore,
    pub redactions: Arc<Redactions>,
}

impl Shared {
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

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

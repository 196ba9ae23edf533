//! The event bus: one broadcast channel carrying status changes and log lines to every subscriber
//! (control socket followers, the desktop shell, tests). Slow subscribers lose old events
//! (`RecvError::Lagged`), they never slow the hub down.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::approval::{ApprovalRequest, Decider};
use crate::logs::LogLine;
use crate::supervisor::ServerStatus;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A server's status changed (state, pid, restarts, tools count, last error…).
    Status(ServerStatus),
    /// A line from a server's stderr, or a note from Gatehouse about that server.
    Log(LogLine),
    /// A server's tool list was (re)fetched.
    ToolsChanged { server: String, tools: usize },
    /// A call is held until the person answers.
    ApprovalRequested(ApprovalRequest),
    /// A held call was allowed, denied, timed out or withdrawn.
    ApprovalResolved {
        id: String,
        outcome: String,
        by: Option<Decider>,
    },
}

#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Event>,
    /// Counts status and tool-list changes: whoever caches a view of the servers (the gateway's
    /// catalog) compares it to know it is stale without waiting for an event.
    generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl EventBus {
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity);
        EventBus {
            tx,
            generation: Default::default(),
        }
    }

    pub fn publish(&self, event: Event) {
        if matches!(event, Event::Status(_) | Event::ToolsChanged { .. }) {
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        // No subscriber is fine: events are a view, not a queue of work.
        let _ = self.tx.send(event);
    }

    /// The number of status and tool-list changes so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}

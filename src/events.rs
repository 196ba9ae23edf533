//! The event bus: one broadcast channel carrying status changes and log lines to every subscriber
//! (control socket followers, the desktop shell, tests). Slow subscribers lose old events
//! (`RecvError::Lagged`), they never slow the hub down. The payload types live in leaf modules
//! (`supervisor::status`, `approval::request`, `logs`), so this file depends on nothing that
//! publishes.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::approval::request::{ApprovalRequest, Decider, Resolution};
use crate::logs::LogLine;
use crate::supervisor::status::ServerStatus;

/// Something that happened in the hub.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A server's status changed (state, pid, restarts, tools count, last error…).
    Status(ServerStatus),
    /// A line from a server's stderr, or a note from Gatehouse about that server.
    Log(LogLine),
    /// A server's tool list was (re)fetched.
    ToolsChanged {
        /// The server's id.
        server: String,
        /// How many tools it lists now.
        tools: usize,
    },
    /// A call is held until the person answers.
    ApprovalRequested(ApprovalRequest),
    /// A held call reached the front of the queue: its countdown runs from now (`expires_at`).
    ApprovalUpdated(ApprovalRequest),
    /// A server said one of its resources changed (`notifications/resources/updated`): the
    /// clients that subscribed to it are told.
    ResourceUpdated {
        /// The server's id.
        server: String,
        /// The resource's URI.
        uri: String,
    },
    /// A remote server needs the person to sign in (again): its tokens are missing, were
    /// refused, or could not be refreshed. Shown as a notification ("Sign in to linear again").
    SignInNeeded {
        /// The server's id.
        server: String,
        /// Why, for the person (never a token).
        reason: String,
    },
    /// A client's file changed outside Gatehouse: a hook, a task, a server entry or a
    /// command-running setting added or changed (`crate::watch`).
    ClientFileChanged(crate::watch::ClientFileAlert),
    /// An alert about a client's file closed: its content put back, or the change kept.
    ClientFileSettled {
        /// The file.
        path: String,
        /// Put back (else kept).
        restored: bool,
    },
    /// A change to what a server says (a prompt, its instructions, an app's HTML) is held until
    /// the person approves it.
    ChangeHeld(crate::approval::change::HeldChange),
    /// A held change was approved (it is the pin now) or denied (the pin stays).
    ChangeResolved {
        /// The change's id.
        id: String,
        /// Approved.
        allowed: bool,
    },
    /// A held call was allowed, denied, timed out or withdrawn.
    ApprovalResolved {
        /// The request's id.
        id: String,
        /// How it ended.
        outcome: Resolution,
        /// Who answered (none for a timeout or a withdrawal).
        by: Option<Decider>,
    },
}

/// The bus. Cheap to clone.
#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Event>,
    /// Counts status and tool-list changes: whoever caches a view of the servers (the gateway's
    /// catalog) compares it to know it is stale without waiting for an event.
    generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl EventBus {
    /// A bus that keeps up to `capacity` events for slow subscribers.
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity);
        EventBus {
            tx,
            generation: Default::default(),
        }
    }

    /// Sends an event to every subscriber (none is fine).
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

    /// Every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}

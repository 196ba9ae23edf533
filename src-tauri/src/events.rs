//! The bridge from the core's event bus to the webview, the tray, and the OS: every event the UI
//! hears is one [`UiEvent`]; a new approval while the window is closed shows the native prompt
//! and posts a notification.

use std::sync::Arc;

use gatehouse::approval::{ApprovalRequest, Decider, Resolution};
use gatehouse::events::Event;
use gatehouse::ServerStatus;
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::broadcast::{error::RecvError, Receiver};

use crate::state::{AppState, PhaseView};

/// Everything the UI is told without asking.
#[derive(Debug, Clone)]
pub enum UiEvent {
    /// The hub is starting, running, failed to start or stopping.
    HubPhase(PhaseView),
    /// A server's status changed.
    ServerStatus(ServerStatus),
    /// A server's tool list was fetched again.
    ToolsChanged { server: String, tools: usize },
    /// A call waits for the person.
    ApprovalRequested(ApprovalRequest),
    /// A waiting call reached the front of the queue: its countdown runs from now.
    ApprovalUpdated(ApprovalRequest),
    /// A held call left the queue.
    ApprovalResolved {
        id: String,
        outcome: Resolution,
        by: Option<Decider>,
    },
    /// The bridge fell behind: the UI should read everything again.
    Resync,
}

#[derive(Serialize, Clone)]
struct ToolsChanged<'a> {
    server: &'a str,
    tools: usize,
}

#[derive(Serialize, Clone)]
struct Resolved<'a> {
    id: &'a str,
    outcome: Resolution,
    by: Option<Decider>,
}

impl UiEvent {
    /// The event's name in the webview (`api.on(name, …)`).
    pub fn name(&self) -> &'static str {
        match self {
            UiEvent::HubPhase(_) => "hub-phase",
            UiEvent::ServerStatus(_) => "server-status",
            UiEvent::ToolsChanged { .. } => "tools-changed",
            UiEvent::ApprovalRequested(_) => "approval-requested",
            UiEvent::ApprovalUpdated(_) => "approval-updated",
            UiEvent::ApprovalResolved { .. } => "approval-resolved",
            UiEvent::Resync => "resync",
        }
    }

    /// Sends it to the webview (a closed window just misses it).
    pub fn emit<R: Runtime>(&self, app: &AppHandle<R>) {
        let name = self.name();
        let _ = match self {
            UiEvent::HubPhase(p) => app.emit(name, p),
            UiEvent::ServerStatus(s) => app.emit(name, s),
            UiEvent::ToolsChanged { server, tools } => app.emit(
                name,
                ToolsChanged {
                    server,
                    tools: *tools,
                },
            ),
            UiEvent::ApprovalRequested(r) | UiEvent::ApprovalUpdated(r) => app.emit(name, r),
            UiEvent::ApprovalResolved { id, outcome, by } => app.emit(
                name,
                Resolved {
                    id,
                    outcome: *outcome,
                    by: *by,
                },
            ),
            UiEvent::Resync => app.emit(name, ()),
        };
    }
}

/// Forwards the bus to the webview and keeps the tray current, until the app quits.
pub fn spawn_bridge<R: Runtime>(
    app: AppHandle<R>,
    state: Arc<AppState>,
    mut events: Receiver<Event>,
) {
    tauri::async_runtime::spawn(async move {
        loop {
            match events.recv().await {
                Ok(Event::Status(s)) => {
                    UiEvent::ServerStatus(s).emit(&app);
                    crate::tray::refresh(&app);
                }
                Ok(Event::ToolsChanged { server, tools }) => {
                    UiEvent::ToolsChanged { server, tools }.emit(&app)
                }
                Ok(Event::ApprovalRequested(req)) => {
                    app.state::<crate::ui_timing::UiTiming>()
                        .approval_arrived(&req.id);
                    bring_forward(&app, &req);
                    UiEvent::ApprovalRequested(req).emit(&app);
                    crate::tray::refresh(&app);
                }
                Ok(Event::ApprovalUpdated(req)) => {
                    UiEvent::ApprovalUpdated(req).emit(&app);
                    crate::prompt::resolved(&app);
                }
                Ok(Event::ApprovalResolved { id, outcome, by }) => {
                    crate::notify::resolved(&id);
                    UiEvent::ApprovalResolved { id, outcome, by }.emit(&app);
                    crate::prompt::resolved(&app);
                    crate::tray::refresh(&app);
                }
                // Log lines reach the UI through the per-view channels (`follow_logs`).
                Ok(Event::Log(_)) => {}
                // For the clients that subscribed; nothing the window shows.
                Ok(Event::ResourceUpdated { .. }) => {}
                // The row shows it (its status event); the person hears it even when hidden.
                Ok(Event::SignInNeeded { server, .. }) => sign_in_needed(&app, &server),
                Err(RecvError::Lagged(n)) => {
                    tracing::debug!(missed = n, "UI bridge lagged; asking the UI to resync");
                    UiEvent::Resync.emit(&app);
                }
                Err(RecvError::Closed) => break,
            }
            if state.quitting.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
        }
    });
}

/// A remote server wants a sign-in: an OS notification says so (never a token: the reason is
/// not shown, the Servers view has it).
fn sign_in_needed<R: Runtime>(app: &AppHandle<R>, server: &str) {
    crate::notify::plain(
        app,
        &format!("Sign in to {server} again"),
        &format!(
            "{server} needs you to sign in before its tools can be used. Open Gatehouse and click Sign in."
        ),
    );
}

/// A call waits for the person: make sure they see it — the window's modal when the window is
/// on screen, else the native prompt (no webview is made for it) and a notification (with Allow
/// once and Deny where the desktop offers them).
fn bring_forward<R: Runtime>(app: &AppHandle<R>, req: &ApprovalRequest) {
    if crate::window::main_visible(app) {
        crate::window::show_main(app);
    } else {
        crate::prompt::request(app);
        crate::notify::approval(app, req);
    }
}

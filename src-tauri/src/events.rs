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

/// Everything the UI is told without asking. Serialised by derive: the variant's name in kebab
/// case is the event's name in the webview (`api.on(name, …)`), its fields the payload.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "name", content = "payload", rename_all = "kebab-case")]
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
    /// A client's file changed outside Gatehouse (a hook, a task, a server entry…).
    ClientFileChanged(gatehouse::watch::ClientFileAlert),
    /// An alert about a client's file closed (put back, or kept).
    ClientFileSettled { path: String, restored: bool },
    /// A change to what a server says (a prompt, its instructions, an app) waits for the person.
    ChangeHeld(gatehouse::approval::HeldChange),
    /// A held change was approved or denied.
    ChangeResolved { id: String, allowed: bool },
    /// The bridge fell behind: the UI should read everything again.
    Resync,
}

impl UiEvent {
    /// The event's name and payload, as the derive spells them.
    fn parts(&self) -> Option<(String, serde_json::Value)> {
        let serde_json::Value::Object(mut m) = serde_json::to_value(self).ok()? else {
            return None;
        };
        let name = m.remove("name")?.as_str()?.to_owned();
        Some((name, m.remove("payload").unwrap_or(serde_json::Value::Null)))
    }

    /// Sends it to the webview (a closed window just misses it).
    pub fn emit<R: Runtime>(&self, app: &AppHandle<R>) {
        if let Some((name, payload)) = self.parts() {
            let _ = app.emit(&name, payload);
        }
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
                Ok(Event::ClientFileChanged(alert)) => {
                    client_file_changed(&app, &alert);
                    UiEvent::ClientFileChanged(alert).emit(&app);
                    crate::tray::refresh(&app);
                }
                Ok(Event::ClientFileSettled { path, restored }) => {
                    UiEvent::ClientFileSettled { path, restored }.emit(&app);
                    crate::tray::refresh(&app);
                }
                Ok(Event::ChangeHeld(change)) => {
                    change_held(&app, &change);
                    UiEvent::ChangeHeld(change).emit(&app);
                }
                Ok(Event::ChangeResolved { id, allowed }) => {
                    UiEvent::ChangeResolved { id, allowed }.emit(&app)
                }
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

/// A client's file changed outside Gatehouse: a notification names the file and what was added
/// (hidden characters shown as code points); the window has the diff and the two actions.
fn client_file_changed<R: Runtime>(app: &AppHandle<R>, alert: &gatehouse::watch::ClientFileAlert) {
    let what = alert.what.join(", ");
    let what = gatehouse::text::reveal(&what);
    crate::notify::plain(
        app,
        "A client's file changed outside Gatehouse",
        &format!(
            "{}: {what}. Open Gatehouse to see the change and put the file back.",
            gatehouse::text::reveal(&alert.path)
        ),
    );
}

/// What a server says changed since it was approved: a notification says what (hidden
/// characters shown as code points); the Permissions view has the diff and the two answers.
fn change_held<R: Runtime>(app: &AppHandle<R>, change: &gatehouse::approval::HeldChange) {
    crate::notify::plain(
        app,
        "A server changed what it says",
        &format!(
            "{}. Open Gatehouse's Permissions view to see the change.",
            gatehouse::text::reveal(&change.reason_text)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the webview listens for (`api.on` in `ui/`) are the derive's: every one of
    /// them is an event's name, and the payload is the variant's fields.
    #[test]
    fn every_name_the_ui_listens_for_is_an_event() {
        let resolved = UiEvent::ApprovalResolved {
            id: "apr-1-1".into(),
            outcome: Resolution::TimedOut,
            by: None,
        };
        let (name, payload) = resolved.parts().expect("parts");
        assert_eq!(name, "approval-resolved");
        assert_eq!(payload["id"], "apr-1-1");
        let (name, payload) = UiEvent::Resync.parts().expect("parts");
        assert_eq!(
            (name.as_str(), payload),
            ("resync", serde_json::Value::Null)
        );
        let tools = UiEvent::ToolsChanged {
            server: "a".into(),
            tools: 3,
        };
        assert_eq!(
            tools.parts().map(|(n, p)| (n, p["tools"].clone())),
            Some(("tools-changed".into(), serde_json::json!(3)))
        );
        let names = [
            "hub-phase",
            "server-status",
            "tools-changed",
            "approval-requested",
            "approval-updated",
            "approval-resolved",
            "client-file-changed",
            "client-file-settled",
            "change-held",
            "change-resolved",
            "resync",
        ];
        let ui = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui");
        for f in std::fs::read_dir(ui).expect("ui/").flatten() {
            let text = std::fs::read_to_string(f.path()).unwrap_or_default();
            for listened in text.split("api.on('").skip(1) {
                let name = listened.split('\'').next().unwrap_or("");
                assert!(
                    names.contains(&name),
                    "{} listens for \"{name}\", which no event is",
                    f.path().display()
                );
            }
        }
    }
}

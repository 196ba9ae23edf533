//! The bridge from the core's event bus to the webview (`emit`), the tray, and the OS: a new
//! approval while the window is hidden brings it back and posts a notification.

use std::sync::Arc;

use gatehouse::events::Event;
use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::broadcast::{error::RecvError, Receiver};

use crate::state::AppState;

pub fn spawn_bridge(app: AppHandle, state: Arc<AppState>, mut events: Receiver<Event>) {
    tauri::async_runtime::spawn(async move {
        loop {
            match events.recv().await {
                Ok(Event::Status(s)) => {
                    let _ = app.emit("server-status", &s);
                    crate::tray::refresh(&app);
                }
                Ok(Event::ToolsChanged { server, tools }) => {
                    let _ = app.emit(
                        "tools-changed",
                        serde_json::json!({ "server": server, "tools": tools }),
                    );
                }
                Ok(Event::ApprovalRequested(req)) => {
                    app.state::<crate::ui_timing::UiTiming>()
                        .approval_arrived(&req.id);
                    let _ = app.emit("approval-requested", &req);
                    bring_forward(&app, &req);
                    crate::tray::refresh(&app);
                }
                Ok(Event::ApprovalResolved { id, outcome, by }) => {
                    let _ = app.emit(
                        "approval-resolved",
                        serde_json::json!({ "id": id, "outcome": outcome, "by": by }),
                    );
                    crate::tray::refresh(&app);
                }
                // Log lines reach the UI through the per-view channels (`follow_logs`).
                Ok(Event::Log(_)) => {}
                Err(RecvError::Lagged(n)) => {
                    tracing::debug!(missed = n, "UI bridge lagged; asking the UI to resync");
                    let _ = app.emit("resync", ());
                }
                Err(RecvError::Closed) => break,
            }
            if state.quitting.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
        }
    });
}

/// A call waits for the person: make sure they see it.
fn bring_forward(app: &AppHandle, req: &gatehouse::approval::ApprovalRequest) {
    let Some(window) = app.get_webview_window("main") else {
        return;
    };
    let hidden = !window.is_visible().unwrap_or(true) || window.is_minimized().unwrap_or(false);
    crate::lifecycle::show_main(app);
    if hidden {
        use tauri_plugin_notification::NotificationExt;
        let who = req.client.name.as_deref().unwrap_or("An AI client");
        let shown = app
            .notification()
            .builder()
            .title("Approval needed")
            .body(format!("{who} wants to run {} on {}", req.tool, req.server))
            .show();
        if let Err(e) = shown {
            tracing::debug!(error = %e, "no OS notification (is a notification service running?)");
        }
    }
}

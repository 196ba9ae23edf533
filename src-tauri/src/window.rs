//! The main window: showing it (from the tray, a second launch, an approval) and closing it to
//! the tray instead of quitting.

use std::sync::Arc;

use tauri::{Manager, Runtime, Window, WindowEvent};

use crate::state::AppState;

/// Shows, un-minimises and focuses the main window.
pub fn show_main<R: Runtime>(app: &tauri::AppHandle<R>) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
    }
}

/// Closing the window hides it: the hub keeps serving from the tray (unless the app quits).
pub fn on_event<R: Runtime>(window: &Window<R>, event: &WindowEvent) {
    if let WindowEvent::CloseRequested { api, .. } = event {
        let state = window.state::<Arc<AppState>>();
        if !state.quitting.load(std::sync::atomic::Ordering::SeqCst) {
            api.prevent_close();
            let _ = window.hide();
        }
    }
}

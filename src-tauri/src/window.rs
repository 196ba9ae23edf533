//! The main window: created when it is first shown (from the tray, a second launch, an
//! approval) and destroyed when closed, so that while Gatehouse sits in the tray no webview — and
//! no WebKit process — is alive. The hub keeps serving; a new window reads the state afresh
//! (waiting approvals included) when it loads.

use tauri::{Manager, Runtime, WebviewWindow};

/// Shows, un-minimises and focuses the main window, creating it first if it is closed.
pub fn show_main<R: Runtime>(app: &tauri::AppHandle<R>) {
    let window = match app.get_webview_window("main") {
        Some(w) => w,
        None => match create_main(app) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "cannot open the window");
                return;
            }
        },
    };
    let _ = window.show();
    let _ = window.unminimize();
    let _ = window.set_focus();
}

/// Whether the main window exists and is on screen (not closed, hidden or minimised).
pub fn main_visible<R: Runtime>(app: &tauri::AppHandle<R>) -> bool {
    app.get_webview_window("main")
        .is_some_and(|w| w.is_visible().unwrap_or(false) && !w.is_minimized().unwrap_or(false))
}

/// The main window from its entry in `tauri.conf.json` (`create: false` there: nothing opens it
/// at start but this).
fn create_main<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::Result<WebviewWindow<R>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == "main")
        .cloned()
        .unwrap_or_default();
    tauri::WebviewWindowBuilder::from_config(app, &config)?.build()
}

//! Starting the core inside the app and stopping it on the way out: the hub is started once the
//! window exists (so start errors can be shown), and every way of quitting (tray Quit, SIGTERM,
//! the OS ending the session) stops every server before the process exits.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use gatehouse::service::{Service, ServiceError};
use tauri::{AppHandle, Emitter, Manager};

use crate::state::{AppState, Phase};

/// Starts the service and records the outcome; the UI hears `hub-phase` either way.
pub async fn start_service(app: AppHandle, state: Arc<AppState>) {
    state.set_phase(Phase::Starting);
    let _ = app.emit("hub-phase", state.view());
    match Service::start(state.opts.clone(), state.keychain.clone()).await {
        Ok(service) => {
            let events = service.hub().events();
            state.set_phase(Phase::Running(Box::new(service)));
            crate::events::spawn_bridge(app.clone(), state.clone(), events);
        }
        Err(e) => {
            let message = match &e {
                ServiceError::Config(c) => {
                    let bak = gatehouse::config::backup_path(&state.opts.config_path);
                    let mut m =
                        format!("The config file has an error, so nothing was started.\n{c}");
                    if bak.exists() {
                        m.push_str(&format!("\nThe last good copy is {}.", bak.display()));
                    }
                    m
                }
                other => other.to_string(),
            };
            tracing::error!("{message}");
            state.set_phase(Phase::Failed(message));
        }
    }
    let _ = app.emit("hub-phase", state.view());
    crate::tray::refresh(&app);
}

/// Stops every server, then exits the process. Safe to call more than once (only the first runs).
pub fn quit(app: &AppHandle) {
    let state = app.state::<Arc<AppState>>().inner().clone();
    if state.quitting.swap(true, Ordering::SeqCst) {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        state.stop_followers();
        if let Some(service) = state.take_service() {
            service.stop().await;
        }
        app.exit(0);
    });
}

/// Quits on SIGTERM and SIGINT (a logout, `kill`, a test); SIGHUP re-reads the config, as it
/// does for the headless hub.
#[cfg(unix)]
pub fn watch_signals(app: AppHandle) {
    use tokio::signal::unix::{signal, SignalKind};
    tauri::async_runtime::spawn(async move {
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) else {
            tracing::error!("cannot install signal handlers");
            return;
        };
        loop {
            tokio::select! {
                _ = term.recv() => break,
                _ = int.recv() => break,
                _ = hup.recv() => {
                    let state = app.state::<Arc<AppState>>().inner().clone();
                    if let Ok(hub) = state.hub() {
                        match hub.reload().await {
                            Ok(()) => tracing::info!("config reloaded"),
                            Err(e) => tracing::error!("config not reloaded: {e}"),
                        }
                    }
                }
            }
        }
        tracing::info!("signal received: quitting");
        quit(&app);
    });
}

#[cfg(not(unix))]
pub fn watch_signals(_app: AppHandle) {}

/// Shows, un-minimises and focuses the main window.
pub fn show_main(app: &AppHandle) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
    }
}

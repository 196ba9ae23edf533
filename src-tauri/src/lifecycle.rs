//! Starting the core inside the app and stopping it on the way out: the hub is started once the
//! window exists (so start errors can be shown), and every way of quitting (tray Quit, SIGTERM,
//! the OS ending the session) stops every server before the process exits.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use gatehouse::service::{Service, ServiceError, Signal, Signals};
use tauri::{AppHandle, Manager, Runtime};

use crate::events::UiEvent;
use crate::state::{AppState, Phase};

/// Starts the service and records the outcome; the UI hears `hub-phase` either way.
pub async fn start_service<R: Runtime>(app: AppHandle<R>, state: Arc<AppState>) {
    state.set_phase(Phase::Starting);
    UiEvent::HubPhase(state.view()).emit(&app);
    match Service::start(state.opts.clone(), state.keychain.clone()).await {
        Ok(service) => {
            let events = service.hub().events();
            // The window and the native prompt show every held call: no client is asked instead.
            service.hub().approvals().set_desktop_attached(true);
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
    UiEvent::HubPhase(state.view()).emit(&app);
    crate::tray::refresh(&app);
}

/// Stops every server, then exits the process. Safe to call more than once (only the first runs).
pub fn quit<R: Runtime>(app: &AppHandle<R>) {
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

/// Quit at once, unless calls are waiting for an answer: then ask first.
pub fn confirm_quit<R: Runtime>(app: &AppHandle<R>) {
    let pending = crate::tray::pending_count(app);
    if pending == 0 {
        quit(app);
        return;
    }
    use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
    let handle = app.clone();
    app.dialog()
        .message(format!(
            "{pending} call(s) are waiting for your approval. Quitting denies them and stops every server."
        ))
        .title("Quit Gatehouse?")
        .kind(MessageDialogKind::Warning)
        .buttons(MessageDialogButtons::OkCancelCustom(
            "Quit".into(),
            "Cancel".into(),
        ))
        .show(move |yes| {
            if yes {
                quit(&handle);
            }
        });
}

/// Quits on SIGTERM and SIGINT (a logout, `kill`, a test); SIGHUP re-reads the config, as it
/// does for the headless hub.
pub fn watch_signals<R: Runtime>(app: AppHandle<R>) {
    tauri::async_runtime::spawn(async move {
        let mut signals = match Signals::install() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("cannot install signal handlers: {e}");
                return;
            }
        };
        loop {
            match signals.recv().await {
                Signal::Quit => break,
                Signal::Reload => {
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

//! The Gatehouse desktop app: the same core as `gatehouse serve` (one `Service::start`), with a
//! window, a tray icon and approval prompts. Every CLI verb works against it through the same
//! control socket.
//!
//! - `commands`: what the UI invokes; `events`: the bus → webview bridge (`UiEvent`).
//! - `lifecycle`: starting the service, quitting (every server stopped first), signals.
//! - `tray`: the tray menu as a pure model; its clicks come back here as a [`tray::TrayAction`].
//! - `window`: showing the window, and closing it to the tray.
//! - `state`, `error`, `ui_timing`: what the app holds, the one command error, bench moments.

mod commands;
mod error;
mod events;
mod lifecycle;
mod notify;
mod prompt;
mod state;
mod tray;
mod ui_timing;
mod window;

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use gatehouse::config;
use gatehouse::control;
use gatehouse::service::{Endpoint, ServiceOptions};
use tauri::{Manager, RunEvent, Runtime};

use crate::state::AppState;

#[derive(Parser)]
#[command(name = "gatehouse-app", version, about = "Gatehouse desktop app")]
struct Args {
    /// Config file (default: the platform config dir's gatehouse/gatehouse.json)
    #[arg(long, env = "GATEHOUSE_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,
    /// Data dir for logs and state (default: the platform data dir's gatehouse/)
    #[arg(long, env = "GATEHOUSE_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Control socket the CLI verbs talk to
    #[arg(long, env = control::CONTROL_ENV, value_name = "PATH")]
    control: Option<PathBuf>,
    /// Gateway address, overriding the config's gateway.listen (loopback only)
    #[arg(long, env = "GATEHOUSE_LISTEN", value_name = "ADDR")]
    listen: Option<String>,
    /// Start in the tray without showing the window (used when started at login)
    #[arg(long)]
    hidden: bool,
}

/// What is remembered of the window: size, place, maximised (not whether it is shown: the app
/// decides that, from `--hidden` and the tray).
const WINDOW_STATE: tauri_plugin_window_state::StateFlags =
    tauri_plugin_window_state::StateFlags::SIZE
        .union(tauri_plugin_window_state::StateFlags::POSITION)
        .union(tauri_plugin_window_state::StateFlags::MAXIMIZED);

/// Runs the app until it quits.
pub fn run() -> std::process::ExitCode {
    let args = Args::parse();
    gatehouse::service::init_tracing();
    let listen = match args
        .listen
        .as_deref()
        .map(config::parse_loopback_addr)
        .transpose()
    {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gatehouse-app: --listen: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let opts = ServiceOptions {
        config_path: args.config.unwrap_or_else(config::default_config_path),
        data_dir: args.data_dir.unwrap_or_else(config::default_data_dir),
        control_path: args.control.unwrap_or_else(control::default_socket_path),
        endpoint: Endpoint::Http { listen },
        deny_unattended: false,
    };
    create_config_if_missing(&opts.config_path);
    let state = Arc::new(AppState::new(
        opts,
        gatehouse::secrets::KeychainStore::start(),
    ));
    let hidden = args.hidden;
    let app = builder(tauri::Builder::default(), state.clone())
        // A second launch only focuses the first one.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            open_window(app)
        }))
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_dialog::init())
        // The window's size and place (and whether maximised) come back where the person left
        // them — kept at exit and whenever the window closes to the tray.
        .plugin(
            tauri_plugin_window_state::Builder::default()
                .with_state_flags(WINDOW_STATE)
                .build(),
        )
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::Destroyed = event {
                window::end_idle_webkit(window.app_handle());
                // Calls still waiting are shown in the prompt: closing the window answers none.
                prompt::request(window.app_handle());
                use tauri_plugin_window_state::AppHandleExt;
                if let Err(e) = window.app_handle().save_window_state(WINDOW_STATE) {
                    tracing::debug!(error = %e, "cannot keep the window's size and place");
                }
            }
        })
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            Some(vec!["--hidden"]),
        ))
        .setup(move |app| {
            let handle = app.handle().clone();
            if let Err(e) = tray::create(&handle, dispatch) {
                // No tray host (a bare X server): the window and everything else still work.
                tracing::warn!(error = %e, "no tray icon");
            }
            lifecycle::watch_signals(handle.clone());
            if !hidden {
                window::show_main(&handle);
            }
            let state = state.clone();
            tauri::async_runtime::spawn(lifecycle::start_service(handle, state));
            Ok(())
        })
        .build(tauri::generate_context!());
    let app = match app {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gatehouse-app: cannot start the desktop app: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    app.run(|app, event| {
        if let RunEvent::ExitRequested { api, code, .. } = event {
            let state = app.state::<Arc<AppState>>();
            if !state.quitting.load(std::sync::atomic::Ordering::SeqCst) {
                api.prevent_exit();
                // No code: the last window was closed, and Gatehouse stays in the tray. Any
                // other exit goes through `quit`: servers stop before the process ends.
                if code.is_some() {
                    lifecycle::quit(app);
                }
            }
        }
    });
    std::process::ExitCode::SUCCESS
}

/// The app's state, commands and window behaviour, on any runtime (the mock one in tests).
fn builder<R: Runtime>(builder: tauri::Builder<R>, state: Arc<AppState>) -> tauri::Builder<R> {
    builder
        .manage(state)
        .manage(ui_timing::UiTiming::default())
        .invoke_handler(tauri::generate_handler![
            commands::app_state,
            commands::retry_start,
            commands::servers,
            commands::server_tools,
            commands::start_server,
            commands::set_server_enabled,
            commands::stop_server,
            commands::restart_server,
            commands::sign_in,
            commands::server_entry,
            commands::server_problem,
            commands::save_server,
            commands::remove_server,
            commands::test_server,
            commands::split_command,
            commands::refresh_tools,
            commands::follow_logs,
            commands::unfollow_logs,
            commands::pending_approvals,
            commands::answer_approval,
            commands::compare_server,
            commands::hidden_characters,
            commands::keychain::secrets,
            commands::keychain::set_secret,
            commands::registry::registry_search,
            commands::registry::registry_plan,
            commands::registry::registry_add,
            commands::keychain::delete_secret,
            commands::history::activity,
            commands::history::export_activity,
            commands::connect_info,
            commands::autostart,
            commands::set_autostart,
            commands::write_client_config,
            commands::client_profiles,
            commands::grants,
            commands::prefs::settings,
            commands::prefs::save_settings,
            commands::revoke_grant,
            commands::pins::held_changes,
            commands::pins::answer_change,
            commands::pins::pins,
            commands::rules::rules,
            commands::rules::add_rule,
            commands::rules::remove_rule,
            commands::rules::test_rules,
            commands::save_client_profile,
            commands::remove_client_profile,
            commands::rotate_client_token,
            commands::import::import_preview,
            commands::import::import_servers,
            commands::import::import_paste,
            commands::import::remove_from_client,
            commands::view::set_text_size,
            commands::client_files::client_file_alerts,
            commands::client_files::restore_client_file,
            commands::client_files::ack_client_file,
            ui_timing::ui_painted,
            ui_timing::approval_shown,
        ])
}

/// What a tray click asks for.
/// Opens the window at the person's asking; its modal takes over from the native prompt.
fn open_window<R: Runtime>(app: &tauri::AppHandle<R>) {
    window::show_main(app);
    prompt::close(app);
}

fn dispatch<R: Runtime>(app: &tauri::AppHandle<R>, action: tray::TrayAction) {
    match action {
        tray::TrayAction::Open => open_window(app),
        tray::TrayAction::Quit => lifecycle::confirm_quit(app),
        tray::TrayAction::SignIn(id) => {
            let state = app.state::<Arc<AppState>>().inner().clone();
            tauri::async_runtime::spawn(async move {
                if let Ok(hub) = state.hub() {
                    if let Err(e) = hub.sign_in(&id).await {
                        tracing::warn!(server = id, error = %e, "a sign-in from the tray failed");
                    }
                }
            });
        }
        tray::TrayAction::Restart(_) | tray::TrayAction::Start(_) | tray::TrayAction::Stop(_) => {
            let state = app.state::<Arc<AppState>>().inner().clone();
            tauri::async_runtime::spawn(async move {
                if let Ok(hub) = state.hub() {
                    let (r, server) = match action {
                        tray::TrayAction::Start(s) => (hub.start_server(&s).await, s),
                        tray::TrayAction::Stop(s) => (hub.stop_server(&s).await, s),
                        tray::TrayAction::Restart(s) => (hub.restart_server(&s).await, s),
                        _ => return,
                    };
                    if let Err(e) = r {
                        tracing::warn!(server, error = %e, "a server action from the tray failed");
                    }
                }
            });
        }
    }
}

/// First run: an empty config, so the app opens on "add a server" instead of an error.
fn create_config_if_missing(path: &std::path::Path) {
    if path.exists() {
        return;
    }
    if let Some(dir) = path.parent() {
        let _ = gatehouse::private::create_dir(dir);
    }
    let empty = gatehouse::Config::default();
    match config::write_atomic(path, empty.to_json().as_bytes()) {
        Ok(()) => tracing::info!(path = %path.display(), "created an empty config"),
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot create the config"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn invoke(
        webview: &tauri::WebviewWindow<tauri::test::MockRuntime>,
        cmd: &str,
    ) -> Result<Value, Value> {
        tauri::test::get_ipc_response(
            webview,
            tauri::webview::InvokeRequest {
                cmd: cmd.into(),
                callback: tauri::ipc::CallbackFn(0),
                error: tauri::ipc::CallbackFn(1),
                // What the app's own pages are served from on Linux (a local origin).
                url: "tauri://localhost".parse().unwrap(),
                body: tauri::ipc::InvokeBody::default(),
                headers: Default::default(),
                invoke_key: tauri::test::INVOKE_KEY.to_string(),
            },
        )
        .map(|b| b.deserialize::<Value>().unwrap())
    }

    /// The commands are wired and answer through the IPC before the hub runs: the phase, and a
    /// "not ready" error (not a panic) for anything that needs the hub.
    #[test]
    fn commands_answer_through_the_ipc_while_the_hub_is_starting() {
        let dir = tempfile::tempdir().unwrap();
        let opts = ServiceOptions {
            config_path: dir.path().join("gatehouse.json"),
            data_dir: dir.path().join("data"),
            control_path: dir.path().join("control.sock"),
            endpoint: Endpoint::Http { listen: None },
            deny_unattended: false,
        };
        let state = Arc::new(AppState::new(
            opts,
            gatehouse::secrets::KeychainStore::start(),
        ));
        let app = builder(tauri::test::mock_builder(), state)
            .build(tauri::test::mock_context(tauri::test::noop_assets()))
            .unwrap();
        let webview = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .unwrap();
        let phase = invoke(&webview, "app_state").unwrap();
        assert_eq!(phase["phase"], "starting");
        assert!(phase["config_path"]
            .as_str()
            .unwrap()
            .ends_with("gatehouse.json"));
        let err = invoke(&webview, "servers").unwrap_err();
        assert_eq!(err["kind"], "not_ready");
        assert_eq!(err["message"], "Gatehouse is still starting");
        assert!(invoke(&webview, "no_such_command").is_err());
    }
}

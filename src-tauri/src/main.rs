//! `gatehouse-app`: the Gatehouse desktop app. The same core as `gatehouse serve` (one
//! `Service::start`), with a window, a tray icon and approval prompts. Every CLI verb works against
//! it through the same control socket.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod commands;
mod error;
mod events;
mod lifecycle;
mod state;
mod tray;
mod ui_timing;

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use gatehouse::config;
use gatehouse::control;
use gatehouse::service::ServiceOptions;
use tauri::{Manager, RunEvent, WindowEvent};

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

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    init_tracing();
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
        listen,
        deny_unattended: false,
    };
    create_config_if_missing(&opts.config_path);
    let state = Arc::new(AppState::new(
        opts,
        gatehouse::secrets::KeychainStore::start(),
    ));
    let hidden = args.hidden;
    let app = tauri::Builder::default()
        // First: a second launch only focuses the first one.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            lifecycle::show_main(app)
        }))
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            Some(vec!["--hidden"]),
        ))
        .manage(state.clone())
        .manage(ui_timing::UiTiming::default())
        .invoke_handler(tauri::generate_handler![
            commands::app_state,
            commands::retry_start,
            commands::servers,
            commands::server_tools,
            commands::start_server,
            commands::stop_server,
            commands::restart_server,
            commands::server_entry,
            commands::save_server,
            commands::remove_server,
            commands::follow_logs,
            commands::unfollow_logs,
            commands::pending_approvals,
            commands::answer_approval,
            commands::secrets,
            commands::set_secret,
            commands::delete_secret,
            commands::activity,
            commands::connect_info,
            commands::autostart,
            commands::set_autostart,
            commands::write_client_config,
            commands::import_preview,
            commands::import_servers,
            ui_timing::ui_painted,
            ui_timing::approval_shown,
        ])
        .on_window_event(|window, event| {
            // Closing the window hides it: the hub keeps serving from the tray.
            if let WindowEvent::CloseRequested { api, .. } = event {
                let state = window.state::<Arc<AppState>>();
                if !state.quitting.load(std::sync::atomic::Ordering::SeqCst) {
                    api.prevent_close();
                    let _ = window.hide();
                }
            }
        })
        .setup(move |app| {
            let handle = app.handle().clone();
            if let Err(e) = tray::create(&handle) {
                // No tray host (a bare X server): the window and everything else still work.
                tracing::warn!(error = %e, "no tray icon");
            }
            lifecycle::watch_signals(handle.clone());
            if !hidden {
                lifecycle::show_main(&handle);
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
        if let RunEvent::ExitRequested { api, .. } = event {
            let state = app.state::<Arc<AppState>>();
            if !state.quitting.load(std::sync::atomic::Ordering::SeqCst) {
                // Every exit goes through `quit`: servers stop before the process ends.
                api.prevent_exit();
                lifecycle::quit(app);
            }
        }
    });
    std::process::ExitCode::SUCCESS
}

/// First run: an empty config, so the app opens on "add a server" instead of an error.
fn create_config_if_missing(path: &std::path::Path) {
    if path.exists() {
        return;
    }
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let empty = gatehouse::Config::default();
    match config::write_atomic(path, empty.to_json().as_bytes()) {
        Ok(()) => tracing::info!(path = %path.display(), "created an empty config"),
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot create the config"),
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("GATEHOUSE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

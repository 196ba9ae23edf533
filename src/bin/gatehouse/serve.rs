//! `gatehouse serve` (HTTP) and `gatehouse serve --stdio` (one client on stdin/stdout): the
//! same `Service`, until SIGINT/SIGTERM (SIGHUP reloads the config) or the stdio client leaves.

use std::path::PathBuf;
use std::process::ExitCode;

use gatehouse::config;
use gatehouse::service::{Endpoint, Service, ServiceError, ServiceOptions, Signal, Signals};

pub struct Options {
    pub config: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub stdio: bool,
    pub deny_unattended: bool,
    pub control_path: PathBuf,
}

pub async fn serve(o: Options) -> ExitCode {
    gatehouse::service::init_tracing();
    let config_path = o.config.unwrap_or_else(config::default_config_path);
    let listen = match o
        .listen
        .map(|a| config::parse_loopback_addr(&a))
        .transpose()
    {
        Ok(l) => l,
        Err(e) => {
            tell!("gatehouse: --listen: {e}; nothing started");
            return ExitCode::from(2);
        }
    };
    let opts = ServiceOptions {
        config_path: config_path.clone(),
        data_dir: o.data_dir.unwrap_or_else(config::default_data_dir),
        control_path: o.control_path,
        endpoint: if o.stdio {
            Endpoint::Stdio
        } else {
            Endpoint::Http { listen }
        },
        deny_unattended: o.deny_unattended,
    };
    let mut signals = match Signals::install() {
        Ok(s) => s,
        Err(e) => {
            tell!("gatehouse: cannot install signal handlers: {e}");
            return ExitCode::from(1);
        }
    };
    let keychain = gatehouse::secrets::KeychainStore::start();
    let service = match Service::start(opts, keychain).await {
        Ok(s) => s,
        Err(ServiceError::Config(e)) => {
            tell!("gatehouse: invalid config, nothing started\n{e}");
            let bak = config::backup_path(&config_path);
            if bak.exists() {
                tell!("  the last good copy is {}", bak.display());
            }
            return ExitCode::from(2);
        }
        Err(e) => {
            tell!("gatehouse: {e}");
            return ExitCode::from(1);
        }
    };
    loop {
        tokio::select! {
            _ = service.finished() => break,
            signal = signals.recv() => match signal {
                Signal::Quit => break,
                Signal::Reload => match service.hub().reload().await {
                    Ok(()) => tracing::info!("config reloaded"),
                    Err(e) => tracing::error!("config not reloaded: {e}"),
                },
            },
        }
    }
    service.stop().await;
    ExitCode::SUCCESS
}

//! A running Gatehouse: the hub plus its HTTP gateway and control socket, started one way by the
//! headless `gatehouse serve` and by the desktop app, and stopped one way (every server gone).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{self, Config, ConfigError};
use crate::control::{ControlError, ControlServer, GatewayInfo};
use crate::gateway::{self, http::HttpError, token::TokenError, Gateway};
use crate::hub::{Hub, HubHandle, HubOptions};
use crate::secrets::KeychainStore;

/// Where a service reads its config and keeps its state.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    pub config_path: PathBuf,
    pub data_dir: PathBuf,
    pub control_path: PathBuf,
    /// Overrides the config's `gateway.listen`.
    pub listen: Option<SocketAddr>,
    pub deny_unattended: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("invalid config, nothing started\n{0}")]
    Config(#[from] ConfigError),
    #[error("cannot create the data dir {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Control(#[from] ControlError),
    #[error(transparent)]
    Listen(#[from] HttpError),
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("{0}")]
    Internal(String),
}

/// The hub, its gateway endpoint and its control socket, running.
pub struct Service {
    hub: HubHandle,
    gateway: Gateway,
    info: GatewayInfo,
    shutdown: CancellationToken,
    http_task: JoinHandle<()>,
    control_task: JoinHandle<()>,
}

impl Service {
    /// Loads the config and starts everything. Nothing is started when any part cannot be had
    /// (a bad config, another hub on the control socket, the gateway port taken).
    pub async fn start(
        opts: ServiceOptions,
        keychain: KeychainStore,
    ) -> Result<Service, ServiceError> {
        let mut config = Config::load(&opts.config_path)?;
        if let Some(addr) = opts.listen {
            config.gateway.listen = addr;
        }
        if let Ok(text) = std::fs::read_to_string(&opts.config_path) {
            if let Err(e) = config::keep_last_good(&opts.config_path, &text) {
                tracing::warn!(error = %e, "could not keep a backup of the config");
            }
        }
        std::fs::create_dir_all(&opts.data_dir).map_err(|source| ServiceError::DataDir {
            path: opts.data_dir.clone(),
            source,
        })?;
        // Bind everything first: if another hub runs, nothing gets started.
        let control = ControlServer::bind(&opts.control_path).await?;
        let listener = gateway::http::bind(config.gateway.listen).await?;
        let token = {
            let dir = opts.data_dir.clone();
            let keychain = keychain.clone();
            tokio::task::spawn_blocking(move || {
                gateway::token::load_or_create_in_keychain(&keychain, &dir)
            })
            .await
            .map_err(|e| ServiceError::Internal(format!("reading the gateway token: {e}")))??
        };
        let addr = listener
            .local_addr()
            .map_err(|e| ServiceError::Internal(format!("reading the gateway address: {e}")))?;
        let info = GatewayInfo {
            url: format!("http://{addr}/mcp"),
            token: token.clone(),
        };
        let origins = config.gateway.allowed_origins.clone();
        let mut hub_opts = HubOptions::new(opts.data_dir.clone());
        hub_opts.config_path = Some(opts.config_path.clone());
        hub_opts.deny_unattended = opts.deny_unattended;
        hub_opts.secrets = std::sync::Arc::new(keychain);
        let hub = Hub::start(config, hub_opts);
        let gw = Gateway::new(hub.clone());
        let shutdown = CancellationToken::new();
        let http_task = tokio::spawn(gateway::http::serve(
            listener,
            gw.clone(),
            token,
            origins,
            shutdown.clone(),
        ));
        let control_task =
            tokio::spawn(control.serve(hub.clone(), Some(info.clone()), shutdown.clone()));
        tracing::info!(gateway = %info.url, control = %opts.control_path.display(), "hub started");
        Ok(Service {
            hub,
            gateway: gw,
            info,
            shutdown,
            http_task,
            control_task,
        })
    }

    pub fn hub(&self) -> &HubHandle {
        &self.hub
    }

    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// The gateway's URL and bearer token.
    pub fn gateway_info(&self) -> &GatewayInfo {
        &self.info
    }

    /// Closes the endpoint and the control socket, then stops every server and waits for them.
    pub async fn stop(self) {
        tracing::info!("stopping every server");
        self.shutdown.cancel();
        self.gateway.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.http_task).await;
        self.hub.shutdown().await;
        let _ = self.control_task.await;
        tracing::info!("stopped");
    }
}

//! A running Gatehouse: the hub plus its client endpoint (Streamable HTTP, or one client on
//! stdio) and its control socket, started one way by `gatehouse serve`, `gatehouse serve --stdio`
//! and the desktop app, and stopped one way (every server gone).

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

/// Where clients reach the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Streamable HTTP on loopback with a bearer token; `listen` overrides `gateway.listen`.
    Http {
        /// The address to bind instead of the config's.
        listen: Option<SocketAddr>,
    },
    /// One client on this process's stdin/stdout (`serve --stdio`). The control socket is
    /// optional here: a client may start this while another hub runs.
    Stdio,
}

/// Where a service reads its config and keeps its state.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// The config file.
    pub config_path: PathBuf,
    /// Logs, the activity log, remembered approvals.
    pub data_dir: PathBuf,
    /// The control socket.
    pub control_path: PathBuf,
    /// How clients reach it.
    pub endpoint: Endpoint,
    /// Deny held calls at once instead of waiting for an approver.
    pub deny_unattended: bool,
}

/// Why a service did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The config does not load.
    #[error("invalid config, nothing started\n{0}")]
    Config(#[from] ConfigError),
    /// The data dir cannot be created.
    #[error("cannot create the data dir {path}: {source}")]
    DataDir {
        /// The dir.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The control socket cannot be had (another hub runs…).
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The gateway's port cannot be had.
    #[error(transparent)]
    Listen(#[from] HttpError),
    /// The gateway token cannot be read or made.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// Anything else, in words.
    #[error("{0}")]
    Internal(String),
}

/// The hub, its client endpoint and its control socket, running.
pub struct Service {
    hub: HubHandle,
    gateway: Gateway,
    info: Option<GatewayInfo>,
    shutdown: CancellationToken,
    /// Cancelled when the endpoint ends on its own (the stdio client closed its input).
    finished: CancellationToken,
    endpoint_task: JoinHandle<()>,
    control_task: Option<JoinHandle<()>>,
}

impl Service {
    /// Loads the config and starts everything. Nothing is started when any part cannot be had
    /// (a bad config, another hub on the control socket, the gateway port taken).
    pub async fn start(
        opts: ServiceOptions,
        keychain: KeychainStore,
    ) -> Result<Service, ServiceError> {
        gateway::conns::raise_fd_limit();
        let config = Self::prepare(&opts)?;
        // Bind everything first: if another hub runs, nothing gets started.
        let control = match opts.endpoint {
            Endpoint::Http { .. } => Some(ControlServer::bind(&opts.control_path).await?),
            Endpoint::Stdio => match ControlServer::bind(&opts.control_path).await {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!("no control socket for this stdio hub: {e}");
                    None
                }
            },
        };
        let http = match opts.endpoint {
            Endpoint::Http { .. } => Some(bind_gateway(&opts, &config, &keychain).await?),
            Endpoint::Stdio => None,
        };
        let origins = config.gateway.allowed_origins.clone();
        let hub = Hub::start(config, hub_options(&opts, keychain, http.as_ref()));
        let gw = Gateway::new(hub.clone());
        let shutdown = CancellationToken::new();
        let finished = CancellationToken::new();
        let (endpoint_task, info) = match http {
            Some((listener, info)) => {
                let task = tokio::spawn(gateway::http::serve(
                    listener,
                    gw.clone(),
                    info.token.clone(),
                    origins,
                    shutdown.clone(),
                ));
                (task, Some(info))
            }
            None => {
                let gw = gw.clone();
                let stop = shutdown.clone();
                let done = finished.clone();
                let task = tokio::spawn(async move {
                    let input = tokio::io::stdin();
                    gateway::stdio::serve(gw, input, tokio::io::stdout(), stop).await;
                    done.cancel();
                });
                (task, None)
            }
        };
        let control_task =
            control.map(|c| tokio::spawn(c.serve(hub.clone(), info.clone(), shutdown.clone())));
        match &info {
            Some(i) => {
                let control = opts.control_path.display();
                tracing::info!(gateway = %i.url, %control, "hub started")
            }
            None => tracing::info!("hub started on stdio"),
        }
        Ok(Service {
            hub,
            gateway: gw,
            info,
            shutdown,
            finished,
            endpoint_task,
            control_task,
        })
    }

    /// The config read (a writer's stale temp files gone first, `--listen` applied, the last
    /// good copy kept) and the data directory made private.
    fn prepare(opts: &ServiceOptions) -> Result<Config, ServiceError> {
        // Temp files of a writer killed mid-write (kill -9 during an import) go first.
        config::remove_stale_temps(&opts.config_path);
        let mut config = Config::load(&opts.config_path)?;
        if let Endpoint::Http { listen: Some(addr) } = opts.endpoint {
            config.gateway.listen = addr;
        }
        if let Ok(text) = std::fs::read_to_string(&opts.config_path) {
            if let Err(e) = config::keep_last_good(&opts.config_path, &text) {
                tracing::warn!(error = %e, "could not keep a backup of the config");
            }
        }
        crate::private::create_dir(&opts.data_dir).map_err(|source| ServiceError::DataDir {
            path: opts.data_dir.clone(),
            source,
        })?;
        secure_files(&opts.config_path, &opts.data_dir);
        Ok(config)
    }

    /// The hub.
    pub fn hub(&self) -> &HubHandle {
        &self.hub
    }

    /// The gateway.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// The gateway's URL and bearer token (none for a stdio endpoint).
    pub fn gateway_info(&self) -> Option<&GatewayInfo> {
        self.info.as_ref()
    }

    /// Resolves when the endpoint ends on its own: the stdio client closed its input. An HTTP
    /// endpoint never does.
    pub async fn finished(&self) {
        self.finished.cancelled().await
    }

    /// Closes the endpoint and the control socket, then stops every server and waits for them.
    pub async fn stop(self) {
        tracing::info!("stopping every server");
        self.shutdown.cancel();
        self.gateway.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.endpoint_task).await;
        self.hub.shutdown().await;
        if let Some(t) = self.control_task {
            let _ = t.await;
        }
        tracing::info!("stopped");
    }
}

/// Tightens what Gatehouse keeps to 0700/0600, saying what was too open: the data dir (the
/// activity log holds call arguments), the config file and its copies, and the config dir when
/// it is Gatehouse's own (`…/gatehouse/`).
fn secure_files(config_path: &std::path::Path, data_dir: &std::path::Path) {
    let mut fixed = crate::private::repair_tree(data_dir);
    if let (Some(dir), Some(name)) = (config_path.parent(), config_path.file_name()) {
        if dir.file_name().is_some_and(|n| n == "gatehouse") {
            fixed.extend(crate::private::repair_tree(dir));
        } else {
            fixed.extend(crate::private::repair_files(dir, &name.to_string_lossy()));
        }
    }
    if !fixed.is_empty() {
        let list: Vec<String> = fixed.iter().map(|p| p.display().to_string()).collect();
        tracing::warn!(
            "other users could read {} of Gatehouse's files; they are private now (0700 directories, 0600 files): {}",
            fixed.len(),
            list.join(", ")
        );
    }
}

/// What the process was asked to do by a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM or SIGINT (Ctrl-C): stop every server and exit.
    Quit,
    /// SIGHUP: re-read the config, as daemons do.
    Reload,
}

/// The signals `serve` and the app act on, as one stream.
pub struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers.
    pub fn install() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
                hup: signal(SignalKind::hangup())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next signal.
    pub async fn recv(&mut self) -> Signal {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => Signal::Quit,
                _ = self.int.recv() => Signal::Quit,
                _ = self.hup.recv() => Signal::Reload,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            Signal::Quit
        }
    }
}

/// Logs to stderr (stdout may carry the protocol), filtered by `GATEHOUSE_LOG` (default
/// `info`). Binaries call it once; the library never installs a subscriber on its own.
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("GATEHOUSE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// The gateway's listener bound, and its address with the gateway token (keychain, else the
/// 0600 file).
async fn bind_gateway(
    opts: &ServiceOptions,
    config: &Config,
    keychain: &KeychainStore,
) -> Result<(tokio::net::TcpListener, GatewayInfo), ServiceError> {
    let listener = gateway::http::bind(config.gateway.listen).await?;
    let token = {
        let dir = opts.data_dir.clone();
        let keychain = keychain.clone();
        tokio::task::spawn_blocking(move || {
            crate::token::load_or_create_in_keychain(&keychain, &dir)
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("reading the gateway token: {e}")))??
    };
    let addr = listener
        .local_addr()
        .map_err(|e| ServiceError::Internal(format!("reading the gateway address: {e}")))?;
    let info = GatewayInfo {
        url: format!("http://{addr}/mcp"),
        token,
    };
    Ok((listener, info))
}

/// What the hub is started with: its files, the keychain for secrets and tokens, the gateway's
/// token and port (so no server is Gatehouse itself).
fn hub_options(
    opts: &ServiceOptions,
    keychain: KeychainStore,
    http: Option<&(tokio::net::TcpListener, GatewayInfo)>,
) -> HubOptions {
    let mut hub_opts = HubOptions::new(opts.data_dir.clone());
    hub_opts.control_path = Some(opts.control_path.clone());
    hub_opts.config_path = Some(opts.config_path.clone());
    hub_opts.deny_unattended = opts.deny_unattended;
    // One hub watches the clients' files: the one on the gateway's port, not a stdio client's.
    hub_opts.watch_client_files = matches!(opts.endpoint, Endpoint::Http { .. });
    hub_opts.client_tokens = Some(std::sync::Arc::new(crate::profiles::ClientTokens::new(
        Some(keychain.clone()),
        opts.data_dir.clone(),
    )));
    hub_opts.gateway_token = http.map(|(_, info)| info.token.clone());
    hub_opts.vault = std::sync::Arc::new(keychain.clone());
    hub_opts.secrets = std::sync::Arc::new(keychain);
    if let Some((listener, _)) = http {
        hub_opts.gateway_ports = listener
            .local_addr()
            .map(|a| a.port())
            .into_iter()
            .collect();
    }
    hub_opts
}

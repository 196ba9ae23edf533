//! How a hub starts: [`HubOptions`], [`Hub::start`] (the only way to start the core) and what it
//! sets up before any server runs — the activity log, the approvals, the client tokens known to
//! the redactions, what no confined server may read.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{HubHandle, HubState, Inner};
use crate::activity::ActivityLog;
use crate::approval::ApprovalBroker;
use crate::config::Config;
use crate::events::EventBus;
use crate::secrets::{NoSecretStore, Redactions, SecretSource};
use crate::supervisor::{Context, Tuning};
use crate::token::{OWN_TOKEN, OWN_TOKEN_GATEWAY};

/// How to start a hub.
pub struct HubOptions {
    /// Where per-server logs (and later the activity log) live.
    pub data_dir: PathBuf,
    /// The config file this hub was started from, for `reload`.
    pub config_path: Option<PathBuf>,
    /// Where secret references get their values.
    pub secrets: Arc<dyn SecretSource>,
    /// Timing knobs of the supervisors.
    pub tuning: Tuning,
    /// Deny held calls at once instead of waiting for an approver (`serve --deny-unattended`).
    pub deny_unattended: bool,
    /// The gateway's actual ports (besides the config's): a server reaching them is refused.
    pub gateway_ports: Vec<u16>,
    /// Where client profiles' tokens are kept (default: files under the data dir).
    pub client_tokens: Option<Arc<crate::profiles::ClientTokens>>,
    /// Where remote servers' sign-in tokens are kept (default: nowhere; sign-in is refused).
    pub vault: Arc<dyn crate::oauth::Vault>,
    /// The program that opens sign-in pages (default: `GATEHOUSE_BROWSER`, else the platform's).
    pub browser: Option<std::ffi::OsString>,
    /// The gateway's own token, when this hub serves one: no server is ever handed it.
    pub gateway_token: Option<String>,
    /// The control socket this hub serves: its directory is closed to confined servers (the
    /// derived one always is).
    pub control_path: Option<PathBuf>,
    /// The store pinned artifacts run from (default: `DATA/store`; a probe runs from the
    /// person's, where Save installs).
    pub store: Option<crate::registry::store::Store>,
    /// Watch the AI clients' files (`crate::watch`; records in `DATA/client-files`): the hub a
    /// person runs (`serve`, the app), not a probe's or a stdio client's.
    pub watch_client_files: bool,
    /// What starts the servers (unit tests: the in-memory fake; default: real processes).
    #[cfg(test)]
    pub(crate) launcher: Option<Arc<dyn crate::supervisor::launch::Launcher>>,
}

impl HubOptions {
    /// Defaults: no secret store, production timings, approvals waited for.
    pub fn new(data_dir: PathBuf) -> Self {
        HubOptions {
            data_dir,
            config_path: None,
            secrets: Arc::new(NoSecretStore),
            tuning: Tuning::default(),
            deny_unattended: false,
            gateway_ports: Vec::new(),
            client_tokens: None,
            vault: Arc::new(crate::oauth::NoVault),
            browser: None,
            gateway_token: None,
            control_path: None,
            store: None,
            watch_client_files: false,
            #[cfg(test)]
            launcher: None,
        }
    }
}

/// Every client profile's token, known to the redactions (replacing the previous set).
pub(super) fn register_client_tokens(
    redactions: &Redactions,
    tokens: &crate::profiles::ClientTokens,
) {
    let named: Vec<(String, String)> = tokens
        .all()
        .into_iter()
        .map(|(id, t)| (format!("{OWN_TOKEN}client:{id}"), t.to_string()))
        .collect();
    redactions.replace_all(&format!("{OWN_TOKEN}client:"), &named);
}

/// The client profiles a config names.
pub(super) fn profile_ids(config: &Config) -> Vec<String> {
    config
        .clients
        .keys()
        .map(|k| k.as_str().to_owned())
        .collect()
}

/// The way to start the core: [`Hub::start`].
pub struct Hub;

impl Hub {
    /// Starts one actor per configured server (enabled ones start at once) and returns the handle.
    pub fn start(config: Config, opts: HubOptions) -> HubHandle {
        let bus = EventBus::new(4096);
        let approvals = ApprovalBroker::new(
            bus.clone(),
            Some(opts.data_dir.join("approvals.json")),
            opts.deny_unattended,
        );
        let redactions = Arc::new(Redactions::default());
        let mut gateway_ports = opts.gateway_ports;
        gateway_ports.push(config.gateway.listen.port());
        let mut ctx = Context::new(
            bus.clone(),
            opts.secrets,
            redactions.clone(),
            Some(opts.data_dir.join("logs")),
            opts.tuning,
            gateway_ports,
            (opts.vault, opts.browser),
        );
        #[cfg(test)]
        if let Some(l) = opts.launcher {
            ctx.launcher = l;
        }
        ctx.sandbox = crate::supervisor::SandboxRoots {
            guarded: sandbox_guarded(
                &opts.data_dir,
                opts.config_path.as_deref(),
                opts.control_path.as_deref(),
            ),
            servers: Some(opts.data_dir.join("servers")),
            store: Some(
                opts.store
                    .unwrap_or_else(|| crate::registry::store::Store::at(&opts.data_dir)),
            ),
        };
        ctx.known_tools_dir = Some(opts.data_dir.join("tools"));
        let ctx = Arc::new(ctx);
        let activity = ActivityLog::open(opts.data_dir.join("activity.db"), redactions.clone());
        let client_tokens = opts.client_tokens.unwrap_or_else(|| {
            Arc::new(crate::profiles::ClientTokens::new(
                None,
                opts.data_dir.clone(),
            ))
        });
        if let Err(e) = client_tokens.sync(&profile_ids(&config)) {
            tracing::error!("client tokens: {e}");
        }
        // Gatehouse's own tokens are known to the redactions before any server starts: masked
        // wherever they would show, and refused in any value a server would be handed.
        if let Some(t) = &opts.gateway_token {
            redactions.register(OWN_TOKEN_GATEWAY, t);
        }
        register_client_tokens(&redactions, &client_tokens);
        let watch = opts
            .watch_client_files
            .then(dirs::home_dir)
            .flatten()
            .map(|home| {
                Arc::new(crate::watch::Watch::new(
                    home,
                    opts.data_dir.join("client-files"),
                ))
            });
        let inner = Arc::new(Inner {
            secret_index: opts.data_dir.join("secret-names.json"),
            bus,
            approvals,
            activity,
            client_tokens,
            redactions: ctx.redactions.clone(),
            ctx,
            config_path: opts.config_path,
            state: Mutex::new(HubState {
                servers: BTreeMap::new(),
                joins: Vec::new(),
                config: Arc::new(Config::default()),
                shutting_down: false,
            }),
            config_edit: tokio::sync::Mutex::new(()),
            connected: Mutex::new(None),
            watch: watch.clone(),
        });
        let hub = HubHandle { inner };
        if let Some(w) = &watch {
            super::watch::start(w, hub.inner.bus.clone(), hub.inner.redactions.clone());
        }
        let mut config = config;
        super::tools::refuse_unmatchable_rules(&hub, &mut config);
        hub.install(config);
        hub
    }
}

/// What no sandboxed server may read: the data directory (tokens, approvals, other servers'
/// places, logs) and the config file with its last good copy.
fn sandbox_guarded(
    data_dir: &std::path::Path,
    config: Option<&std::path::Path>,
    control: Option<&std::path::Path>,
) -> Vec<PathBuf> {
    let mut guarded = vec![data_dir.to_owned()];
    // The derived control socket's directory (Gatehouse's own, where every CLI looks) is not
    // even listed by a confined server; a socket placed elsewhere (`--control`) is closed
    // itself — its directory may be anything (a connection is refused by the filter anyway).
    let derived = crate::control::locate::derived_socket_path();
    if let Some(dir) = derived.parent().filter(|d| d.file_name().is_some()) {
        guarded.push(dir.to_owned());
    }
    if let Some(c) = control.filter(|c| *c != derived) {
        guarded.push(c.to_owned());
    }
    if let Some(c) = config {
        guarded.push(c.to_owned());
        let mut bak = c.as_os_str().to_owned();
        bak.push(".bak");
        guarded.push(PathBuf::from(bak));
    }
    guarded
}

//! The hub: one supervisor actor per configured server, the event bus, and the operations every
//! front end (headless binary, control socket, desktop shell, tests) uses. [`Hub::start`] is the
//! only way to start the core.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::activity::ActivityLog;
use crate::approval::policy::Decision;
use crate::approval::ApprovalBroker;
use crate::config::{Config, ServerId};
use crate::events::{Event, EventBus};
use crate::secrets::{NoSecretStore, Redactions, SecretSource};
use crate::supervisor::{Context, ServerHandle, ServerStatus, Tuning};
use crate::token::{OWN_TOKEN, OWN_TOKEN_GATEWAY};

pub use replay::{ReplayScope, Replayed, RulesReport};
pub use rules::ListedRule;

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
            #[cfg(test)]
            launcher: None,
        }
    }
}

/// Why the hub refused an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HubError {
    /// No server has that id.
    #[error("unknown server \"{id}\"; known servers: {}", if known.is_empty() { "(none configured)".to_owned() } else { known.join(", ") })]
    UnknownServer {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: Vec<String>,
    },
    /// The hub is stopping.
    #[error("the hub is shutting down")]
    ShuttingDown,
    /// The config could not be read, edited or applied (the text says why).
    #[error("{0}")]
    Config(String),
    /// A sign-in could not begin or did not succeed (the text says why).
    #[error("{0}")]
    SignIn(String),
    /// A server could not do what was asked of it (the text says why).
    #[error("{0}")]
    Failed(String),
}

/// One tool as `gatehouse tools` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolInfo {
    /// The server's id.
    pub server: String,
    /// The name clients see: `server__tool`.
    pub name: String,
    /// The server's own name for it.
    pub tool: String,
    /// Its title.
    pub title: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Its annotations (hints), whole.
    pub annotations: Option<serde_json::Value>,
    /// What a call to it does under the current policy: `ask`, `allow` or `disabled`.
    pub approval: Decision,
    /// The name the client profile's clients see (as last listed to them; `None` before the
    /// profile's first listing): the server's own name where it is unique, else `name` fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<String>,
    /// The most characters a name may have for the client the profile serves (64 less the
    /// prefix that client adds).
    #[serde(default)]
    pub budget: usize,
}

/// Per client profile, each canonical tool name and the name that profile was shown.
pub type ClientNames =
    std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>;

/// Every client profile's token, known to the redactions (replacing the previous set).
fn register_client_tokens(redactions: &Redactions, tokens: &crate::profiles::ClientTokens) {
    let named: Vec<(String, String)> = tokens
        .all()
        .into_iter()
        .map(|(id, t)| (format!("{OWN_TOKEN}client:{id}"), t.to_string()))
        .collect();
    redactions.replace_all(&format!("{OWN_TOKEN}client:"), &named);
}

/// The client profiles a config names.
fn profile_ids(config: &Config) -> Vec<String> {
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
        });
        let hub = HubHandle { inner };
        let mut config = config;
        hub.refuse_unmatchable_rules(&mut config);
        hub.install(config);
        hub
    }
}

/// The cloneable handle to a running hub.
#[derive(Clone)]
pub struct HubHandle {
    inner: Arc<Inner>,
}

struct Inner {
    /// The names of secrets set through this hub (never values), for listing ones no server
    /// uses yet: `DATA_DIR/secret-names.json`.
    secret_index: PathBuf,
    bus: EventBus,
    approvals: ApprovalBroker,
    activity: ActivityLog,
    client_tokens: Arc<crate::profiles::ClientTokens>,
    redactions: Arc<Redactions>,
    ctx: Arc<Context>,
    config_path: Option<PathBuf>,
    /// Guards one lookup or one change of the server table; never held across `.await`.
    state: Mutex<HubState>,
    /// Serialises edits of the config file (read → edit → save → apply) so two edits never
    /// interleave; an async mutex because applying awaits the actors.
    config_edit: tokio::sync::Mutex<()>,
    /// Who is connected, as the gateway (which sits above the hub) tells it when asked; the
    /// latest gateway's view. The lock guards one read or replacement; the view takes none of
    /// the hub's locks.
    connected: Mutex<Option<ConnectedView>>,
}

/// The gateway's answer to "which clients were active in the last 5 minutes".
type ConnectedView = Box<dyn Fn() -> Vec<crate::profiles::Connected> + Send + Sync>;

struct HubState {
    servers: BTreeMap<ServerId, ServerHandle>,
    joins: Vec<JoinHandle<()>>,
    /// Shared read-only: callers on the hot path take an `Arc`, never a deep copy.
    config: Arc<Config>,
    shutting_down: bool,
}

mod clients;
mod replay;
mod rules;
mod secrets;
mod sign_in;
mod tools;

impl HubHandle {
    /// Where the gateway keeps the names it gave each client profile (`DATA/names.json`).
    pub fn client_names_path(&self) -> PathBuf {
        self.inner.secret_index.with_file_name("names.json")
    }

    /// The names the gateway gave each client profile (profile → canonical → shown), as last
    /// kept in [`HubHandle::client_names_path`]; none when it is missing or unreadable.
    pub fn client_names(&self) -> ClientNames {
        crate::client_file::read(&self.client_names_path())
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds actors for servers not yet known. Returns the handles that already existed and whose
    /// config may need an update.
    fn install(&self, config: Config) -> Vec<(ServerHandle, crate::config::ServerConfig)> {
        for (key, e) in &config.invalid {
            tracing::warn!(server = %key, "{}", e.reason());
        }
        let mut st = self.lock();
        let mut existing = Vec::new();
        for (id, cfg) in &config.servers {
            match st.servers.get(id) {
                Some(h) => existing.push((h.clone(), cfg.clone())),
                None => {
                    let (h, join) =
                        ServerHandle::spawn(id.clone(), cfg.clone(), self.inner.ctx.clone());
                    st.servers.insert(id.clone(), h);
                    st.joins.push(join);
                }
            }
        }
        st.config = Arc::new(config);
        existing
    }

    /// The current config (shared; cheap to take on every call).
    pub fn config(&self) -> Arc<Config> {
        self.lock().config.clone()
    }

    /// The config file this hub was started from.
    pub fn config_path(&self) -> Option<PathBuf> {
        self.inner.config_path.clone()
    }

    /// Every event from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.inner.bus.subscribe()
    }

    /// The event bus.
    pub fn bus(&self) -> &EventBus {
        &self.inner.bus
    }

    /// Resolved secret values, for masking anything shown or stored.
    pub fn redactions(&self) -> &Redactions {
        &self.inner.redactions
    }

    /// The activity log of routed calls.
    pub fn activity(&self) -> &ActivityLog {
        &self.inner.activity
    }

    /// The approval broker: held calls, remembered answers, pins.
    pub fn approvals(&self) -> &ApprovalBroker {
        &self.inner.approvals
    }

    /// Revokes remembered answers for `target`: a server (`SERVER`) or one of its tools
    /// (`SERVER__TOOL`); how many were revoked. An unknown server names the known ones.
    pub fn forget(&self, target: &str) -> Result<usize, HubError> {
        let (server, tool) = match crate::naming::split_server(target) {
            Some((s, t)) => (s.to_owned(), Some(t.to_owned())),
            None => (target.to_owned(), None),
        };
        self.server(&server)?;
        Ok(self.approvals().forget(&server, tool.as_deref()))
    }

    /// Every server, in id order.
    pub fn servers(&self) -> Vec<ServerHandle> {
        self.lock().servers.values().cloned().collect()
    }

    /// One server; an unknown id names the known ones, an entry that cannot be read says so.
    pub fn server(&self, id: &str) -> Result<ServerHandle, HubError> {
        let st = self.lock();
        if let Some(bad) = st.config.invalid.get(id) {
            return Err(HubError::Config(format!(
                "server \"{id}\": {}",
                bad.reason()
            )));
        }
        st.servers
            .iter()
            .find(|(k, _)| k.as_str() == id)
            .map(|(_, h)| h.clone())
            .ok_or_else(|| HubError::UnknownServer {
                id: id.to_owned(),
                known: st.servers.keys().map(|k| k.to_string()).collect(),
            })
    }

    /// Every server's status, the entries that cannot be read among them (state `invalid`), in
    /// id order.
    pub fn status(&self) -> Vec<ServerStatus> {
        let mut all: Vec<ServerStatus> = self.servers().iter().map(|h| h.status()).collect();
        let config = self.config();
        all.extend(
            config
                .invalid
                .iter()
                .map(|(key, e)| ServerStatus::invalid(key, e)),
        );
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// Starts a server (clearing a `failed` state).
    pub async fn start_server(&self, id: &str) -> Result<(), HubError> {
        self.server(id)?
            .start()
            .await
            .map_err(|_| HubError::ShuttingDown)
    }

    /// Stops a server; it stays stopped until started.
    pub async fn stop_server(&self, id: &str) -> Result<(), HubError> {
        self.server(id)?
            .stop()
            .await
            .map_err(|_| HubError::ShuttingDown)
    }

    /// Restarts a server (clearing a `failed` state).
    pub async fn restart_server(&self, id: &str) -> Result<(), HubError> {
        self.server(id)?
            .restart()
            .await
            .map_err(|_| HubError::ShuttingDown)
    }

    /// Applies a new config: new servers start, removed ones stop, changed ones are updated
    /// (a launch change restarts them; a failed one gets a fresh chance).
    pub async fn apply_config(&self, mut config: Config) -> Result<(), HubError> {
        if self.lock().shutting_down {
            return Err(HubError::ShuttingDown);
        }
        self.refuse_unmatchable_rules(&mut config);
        let removed: Vec<(ServerId, ServerHandle)> = {
            let mut st = self.lock();
            let gone: Vec<ServerId> = st
                .servers
                .keys()
                .filter(|k| !config.servers.contains_key(*k))
                .cloned()
                .collect();
            gone.into_iter()
                .filter_map(|k| st.servers.remove(&k).map(|h| (k, h)))
                .collect()
        };
        for (id, h) in removed {
            let _ = h.shutdown().await;
            if let Some(dir) = &self.inner.ctx.known_tools_dir {
                crate::supervisor::known::forget(dir, id.as_str());
            }
        }
        let ids = profile_ids(&config);
        let tokens = self.inner.client_tokens.clone();
        match tokio::task::spawn_blocking(move || tokens.sync(&ids)).await {
            Ok(Err(e)) => tracing::error!("client tokens: {e}"),
            Err(e) => tracing::error!("client tokens: {e}"),
            Ok(Ok(())) => {}
        }
        register_client_tokens(&self.inner.redactions, &self.inner.client_tokens);
        let before = self.config();
        // Entries that cannot be read are rows of their own: every front end hears of them.
        for (key, e) in &config.invalid {
            if before.invalid.get(key) != Some(e) {
                self.inner
                    .bus
                    .publish(crate::events::Event::Status(ServerStatus::invalid(key, e)));
            }
        }
        for (h, cfg) in self.install(config) {
            // A change of tool flags alone restarts nothing: say so, so that every tool list
            // (the gateway's catalog, the app) is rebuilt under the new flags at once.
            let flags_changed = before.servers.get(h.id()).is_some_and(|old| {
                old.tools != cfg.tools || old.requires_approval != cfg.requires_approval
            });
            let id = h.id().to_string();
            let _ = h.update(cfg).await;
            if flags_changed {
                self.inner.bus.publish(crate::events::Event::ToolsChanged {
                    server: id,
                    tools: h.tools().len(),
                });
            }
        }
        Ok(())
    }

    /// Adds or replaces one server in the config file (validated, saved atomically with a `.bak`)
    /// and applies the result. The desktop's add/edit form and `import` use this.
    pub async fn save_server(
        &self,
        original: Option<&str>,
        id: &str,
        entry: &serde_json::Value,
    ) -> Result<(), HubError> {
        let (original, id, entry) = (original.map(str::to_owned), id.to_owned(), entry.clone());
        self.edit_config(move |c| c.with_server(original.as_deref(), &id, &entry))
            .await
    }

    /// What [`HubHandle::save_server`] would refuse in this entry, checked against the config
    /// as the hub has it, with the field each error is about (for a form).
    pub fn check_server(
        &self,
        original: Option<&str>,
        id: &str,
        entry: &serde_json::Value,
    ) -> Result<(), crate::config::EntryError> {
        self.config().check_server(original, id, entry).map(drop)
    }

    /// Adds imported servers to the config file (one validated, atomic edit) and starts them.
    pub async fn import(&self, prepared: &[crate::import::Prepared]) -> Result<(), HubError> {
        let prepared = prepared.to_vec();
        self.edit_config(move |c| crate::import::apply(c, &prepared))
            .await
    }

    /// Sets one server's `enabled` in the config file and applies it: a disabled server stops
    /// and stays stopped across restarts of the hub; an enabled one starts.
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<(), HubError> {
        let id = id.to_owned();
        self.edit_config(move |c| c.with_enabled(&id, enabled))
            .await
    }

    /// Sets the approval default and timeout in the config file; held calls from now on use
    /// them.
    pub async fn set_approval(
        &self,
        default: crate::config::ApprovalDefault,
        timeout_secs: u64,
    ) -> Result<(), HubError> {
        self.edit_config(move |c| c.with_approval(default, timeout_secs))
            .await
    }

    /// Sets the gateway's address in the config file (loopback only); it is used from the next
    /// start (the running gateway keeps its port).
    pub async fn set_listen(&self, listen: &str) -> Result<(), HubError> {
        let listen = listen.to_owned();
        self.edit_config(move |c| c.with_listen(&listen)).await
    }

    /// Removes one server from the config file and stops it.
    pub async fn remove_server(&self, id: &str) -> Result<(), HubError> {
        let was_remote = self.remote_entry(id).is_ok();
        let owned = id.to_owned();
        self.edit_config(move |c| c.without_server(&owned)).await?;
        // A removed server's sign-in goes with it (revoked where offered): tokens nobody can
        // see or use are not left in the keychain.
        if was_remote {
            if let Err(e) = self.inner.ctx.oauth.sign_out(id).await {
                tracing::warn!(server = id, error = %e, "the removed server's sign-in was not deleted");
            }
        }
        Ok(())
    }

    /// Edits the config file the hub runs from under its edit lock: the file as it is now (it
    /// must parse: a file the person is mid-way through editing is never overwritten), the edit,
    /// an atomic save, then apply.
    async fn edit_config(
        &self,
        edit: impl FnOnce(&Config) -> Result<Config, String> + Send + 'static,
    ) -> Result<(), HubError> {
        let path = self.inner.config_path.clone().ok_or_else(|| {
            HubError::Config("this hub was not started from a config file".into())
        })?;
        let _edit = self.inner.config_edit.lock().await;
        let next = tokio::task::spawn_blocking(move || crate::config::edit(&path, edit))
            .await
            .map_err(|e| HubError::Config(format!("the config edit failed: {e}")))?
            .map_err(|e| HubError::Config(e.to_string()))?;
        self.apply_config(next).await
    }

    /// Re-reads the config file the hub was started from.
    pub async fn reload(&self) -> Result<(), HubError> {
        let path = self.inner.config_path.clone().ok_or_else(|| {
            HubError::Config("this hub was not started from a config file".into())
        })?;
        let config = Config::load(&path).map_err(|e| HubError::Config(e.to_string()))?;
        self.apply_config(config).await
    }

    /// Stops every server (in parallel) and waits until each actor has ended: no child process,
    /// no task of the hub is left behind.
    pub async fn shutdown(&self) {
        self.inner.ctx.oauth.shutdown();
        let (servers, joins) = {
            let mut st = self.lock();
            st.shutting_down = true;
            (
                std::mem::take(&mut st.servers),
                std::mem::take(&mut st.joins),
            )
        };
        let stops: Vec<_> = servers
            .into_values()
            .map(|h| tokio::spawn(async move { h.shutdown().await }))
            .collect();
        for s in stops {
            let _ = s.await;
        }
        for j in joins {
            let _ = j.await;
        }
        // The activity rows of the last calls are on disk before the hub ends: a query is
        // answered only after every record before it is written (it cuts the writer's gathering
        // short), within a bound.
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            self.activity().recent_of(0, None, None),
        )
        .await;
        // Remembered answers are written off the async threads: on disk before the hub ends.
        let approvals = self.approvals().clone();
        let _ =
            tokio::task::spawn_blocking(move || approvals.flush(std::time::Duration::from_secs(5)))
                .await;
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

//! The hub's door: one supervisor actor per configured server, the event bus, and the operations
//! every front end (headless binary, control socket, desktop shell, tests) uses. [`Hub::start`]
//! is the only way to start the core. `impl HubHandle` is here alone: each operation is either
//! the server table's own or one call into the room that does it (`start`, `edits`, `clients`,
//! `secrets`, `sign_in`, `tools`, `rules`, `replay`), handing over what that room may touch.

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
use crate::secrets::Redactions;
use crate::supervisor::{Context, ServerHandle, ServerStatus};

pub use replay::{ReplayScope, Replayed, RulesReport};
pub use rules::ListedRule;
pub use start::{Hub, HubOptions};

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
    /// The watch on the clients' files (`hub/watch.rs`), for the hub a person runs.
    watch: Option<Arc<crate::watch::Watch>>,
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

pub mod artifacts;
mod clients;
mod edits;
mod replay;
mod rules;
mod secrets;
mod sign_in;
mod start;
mod tools;
mod watch;

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
        crate::sync::lock(&self.inner.state)
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
            .get(id)
            .cloned()
            .ok_or_else(|| HubError::UnknownServer {
                id: id.to_owned(),
                known: st.servers.keys().map(|k| k.to_string()).collect(),
            })
    }

    /// Every server's status, the entries that cannot be read among them (state `invalid`), in
    /// id order; a pinned runner entry's with its artifact in the store.
    pub fn status(&self) -> Vec<ServerStatus> {
        let mut all: Vec<ServerStatus> = self.servers().iter().map(|h| h.status()).collect();
        let config = self.config();
        // A pinned runner entry's artifact: installed and checked, or not (it does not start).
        if let Some(store) = &self.inner.ctx.sandbox.store {
            for s in &mut all {
                let entry = config.servers.iter().find(|(k, _)| k.as_str() == s.id);
                if let Some((
                    _,
                    crate::config::ServerConfig {
                        transport: crate::config::Transport::Stdio(t),
                        ..
                    },
                )) = entry
                {
                    s.artifact = store.report(t);
                }
            }
        }
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

    /// Installs into the store the artifacts of `config`'s pinned runner entries that are not
    /// there yet (called where the person changed the config, before it is applied).
    pub async fn install_artifacts(&self, config: &Config) {
        if let Some(store) = &self.inner.ctx.sandbox.store {
            artifacts::install_missing(store, config).await;
        }
    }

    /// The store of pinned artifacts.
    pub fn store(&self) -> Option<&crate::registry::store::Store> {
        self.inner.ctx.sandbox.store.as_ref()
    }

    /// Applies a new config: new servers start, removed ones stop, changed ones are updated
    /// (a launch change restarts them; a failed one gets a fresh chance).
    pub async fn apply_config(&self, config: Config) -> Result<(), HubError> {
        let known_tools = self.inner.ctx.known_tools_dir.as_deref();
        edits::apply(self, known_tools, config).await
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

    /// Removes one server from the config file and stops it (a remote one's sign-in with it).
    pub async fn remove_server(&self, id: &str) -> Result<(), HubError> {
        edits::remove_server(self, &self.inner.ctx.oauth, id).await
    }

    /// Edits the config file the hub runs from under its edit lock, then applies the result.
    async fn edit_config(
        &self,
        edit: impl FnOnce(&Config) -> Result<Config, String> + Send + 'static,
    ) -> Result<(), HubError> {
        let path = self.inner.config_path.clone();
        edits::edit(self, path, &self.inner.config_edit, edit).await
    }

    /// Re-reads the config file the hub was started from.
    pub async fn reload(&self) -> Result<(), HubError> {
        edits::reload(self, self.inner.config_path.clone()).await
    }

    /// Stops every server (in parallel) and waits until each actor has ended: no child process,
    /// no task of the hub is left behind.
    pub async fn shutdown(&self) {
        if let Some(w) = &self.inner.watch {
            w.stop();
        }
        edits::shutdown(self, &self.inner.ctx.oauth).await
    }

    /// Sets where [`HubHandle::clients`] learns which clients are connected: the gateway over
    /// this hub (a later one replaces an earlier one's view).
    pub fn set_connected_view(
        &self,
        view: impl Fn() -> Vec<crate::profiles::Connected> + Send + Sync + 'static,
    ) {
        *crate::sync::lock(&self.inner.connected) = Some(Box::new(view));
    }

    /// Every client profile (the `default` one first) with the tools it sees now.
    pub fn clients(&self) -> Vec<crate::profiles::ClientInfo> {
        let connected = crate::sync::lock(&self.inner.connected)
            .as_ref()
            .map(|v| v())
            .unwrap_or_default();
        clients::list(self, &connected)
    }

    /// Client profiles' tokens.
    pub fn client_tokens(&self) -> &Arc<crate::profiles::ClientTokens> {
        &self.inner.client_tokens
    }

    /// A new token for client profile `id` (the old one stops working, its sessions end).
    pub async fn rotate_client_token(&self, id: &str) -> Result<String, HubError> {
        clients::rotate(&self.inner.client_tokens, &self.inner.redactions, id).await
    }

    /// Adds (or replaces) client profile `id` in the config file and applies it (its token is
    /// created then).
    pub async fn save_client(
        &self,
        id: &str,
        profile: crate::config::ClientProfile,
    ) -> Result<(), HubError> {
        let id = id.to_owned();
        self.edit_config(move |c| c.with_client(&id, profile)).await
    }

    /// Sets which servers client profile `id` sees (`None`: all), creating the profile if it is
    /// new and keeping its other settings — the one profile edit the CLI and the app both make.
    pub async fn set_client_servers(
        &self,
        id: &str,
        servers: Option<Vec<String>>,
    ) -> Result<(), HubError> {
        clients::set_servers(self, id, servers).await
    }

    /// Removes client profile `id` from the config file; its token stops working at once.
    pub async fn remove_client(&self, id: &str) -> Result<(), HubError> {
        let id = id.to_owned();
        self.edit_config(move |c| c.without_client(&id)).await
    }

    /// The token a client of profile `client` presents: `None` for the `default` profile (the
    /// gateway token), the profile's own otherwise; an unknown profile says how to add it.
    pub fn profile_token(&self, client: Option<&str>) -> Result<Option<String>, HubError> {
        clients::token_of(&self.inner.client_tokens, client)
    }

    /// The changes to the AI clients' files not yet restored or acknowledged (`crate::watch`).
    pub fn client_file_alerts(&self) -> Vec<crate::watch::ClientFileAlert> {
        watch::alerts(self.inner.watch.as_ref(), &self.inner.redactions)
    }

    /// Puts back what a client's file held before the change it alerted about.
    pub fn restore_client_file(&self, path: &std::path::Path) -> Result<String, String> {
        watch::restore(self.inner.watch.as_ref(), &self.inner.bus, path)
    }

    /// Keeps the change a client's file alerted about.
    pub fn ack_client_file(&self, path: &std::path::Path) -> Result<(), String> {
        watch::ack(self.inner.watch.as_ref(), &self.inner.bus, path)
    }

    /// Writes Gatehouse's entry into a client's file, told to the watch first (never an alert).
    pub fn write_client_entry(
        &self,
        path: &std::path::Path,
        kind: crate::clients::ClientKind,
        entry: &serde_json::Value,
        managed: &[String],
    ) -> Result<crate::clients::Written, String> {
        watch::write_entry(self.inner.watch.as_ref(), path, kind, entry, managed)
    }

    /// Every secret Gatehouse knows of — referenced by the config or set through it — each
    /// with the servers that use it (possibly none).
    pub fn secret_names(&self) -> BTreeMap<String, Vec<String>> {
        secrets::names(&self.config(), &self.inner.secret_index)
    }

    /// Secret names referenced by the config, each with the servers that use it.
    pub fn secret_users(&self) -> BTreeMap<String, Vec<String>> {
        secrets::users(&self.config())
    }

    /// A secret was set or removed: restarts the servers that use it (unless stopped on purpose).
    /// Returns their ids.
    pub async fn secret_changed(&self, name: &str) -> Vec<String> {
        let index = &self.inner.secret_index;
        secrets::changed(self, &self.inner.ctx.secrets, index, name).await
    }

    /// Begins a sign-in to a remote server (or joins the one running): the authorization URL,
    /// opened in the person's browser. When it succeeds the server is started again.
    pub async fn sign_in(&self, id: &str) -> Result<crate::oauth::SignInStarted, HubError> {
        sign_in::begin(self, &self.inner.ctx.oauth, &self.inner.redactions, id).await
    }

    /// How the sign-in to `id` ends (waits while the browser is out, at most
    /// `oauth::SIGN_IN_TIMEOUT`).
    pub async fn sign_in_wait(&self, id: &str) -> Result<(), HubError> {
        sign_in::wait(self, &self.inner.ctx.oauth, &self.inner.redactions, id).await
    }

    /// Signs out of a remote server: tokens revoked where offered, deleted from the keychain,
    /// the server then waiting in `needs_sign_in`; whether the revocation was accepted (`None`:
    /// none is offered, or there was no sign-in).
    pub async fn sign_out(&self, id: &str) -> Result<Option<bool>, HubError> {
        sign_in::sign_out(self, &self.inner.ctx.oauth, id).await
    }

    /// What a call to one tool does under `config` (a server no longer configured asks).
    pub fn tool_policy(
        &self,
        config: &Config,
        server: &ServerId,
        def: &crate::supervisor::ToolDef,
    ) -> Decision {
        tools::verdict(self.approvals(), config, server, def, None, None).decision
    }

    /// What a call to one tool does, and why it asks, under `config` and — for a call through a
    /// client profile — that profile (`tools::verdict` gathers the policy's layers).
    pub fn tool_verdict(
        &self,
        config: &Config,
        server: &ServerId,
        def: &crate::supervisor::ToolDef,
        profile: Option<&crate::config::ClientProfile>,
        rule: Option<&crate::approval::rules::Ruling>,
    ) -> crate::approval::policy::Verdict {
        tools::verdict(self.approvals(), config, server, def, profile, rule)
    }

    /// Lists a running server's tools again without restarting it; its tools as listed now.
    pub async fn refresh_tools(&self, id: &str) -> Result<Vec<ToolInfo>, HubError> {
        self.server(id)?
            .refresh_tools()
            .await
            .map_err(HubError::Failed)?;
        self.tools(Some(id))
    }

    /// Tools of running servers (all, or one server's), with their exposed names.
    pub fn tools(&self, id: Option<&str>) -> Result<Vec<ToolInfo>, HubError> {
        tools::list(self, id, None)
    }

    /// Tools of running servers as client profile `profile` sees them: only the tools it sees,
    /// each with what a call from it does (`None`: the gateway token's view, every tool).
    pub fn tools_for(
        &self,
        id: Option<&str>,
        profile: Option<&str>,
    ) -> Result<Vec<ToolInfo>, HubError> {
        tools::list(self, id, profile)
    }

    /// Every rule of the running config.
    pub fn rules(&self) -> Vec<ListedRule> {
        rules::listed(&self.config())
    }

    /// Adds `rule` to `server`'s tool `tool` (after its other rules) and applies the config;
    /// a rule that can never match the tool's definition is refused, nothing saved. Returns
    /// the warnings (a rule that may not match as written).
    pub async fn add_rule(
        &self,
        server: &str,
        tool: &str,
        profile: Option<&str>,
        rule: crate::config::rules::Rule,
    ) -> Result<Vec<String>, HubError> {
        rules::add(self, (server, tool), profile, rule).await
    }

    /// Removes the rule named `at`, if it is still `expected` (the rule as it was shown), and
    /// applies the config.
    pub async fn remove_rule(
        &self,
        at: &str,
        expected: Option<crate::config::rules::Rule>,
    ) -> Result<(), HubError> {
        rules::remove(self, at, expected).await
    }

    /// Runs a config's rules over the recorded Activity (`gatehouse rules test`).
    pub async fn rules_test(&self, scope: ReplayScope) -> Result<RulesReport, HubError> {
        replay::rules_test(self, &self.inner.redactions, scope).await
    }
}

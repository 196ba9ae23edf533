//! The commands the UI invokes. Each maps onto one `HubHandle` (or keychain) operation; no logic
//! of its own beyond shaping data for the views.

use std::sync::Arc;

use gatehouse::approval::ApprovalRequest;
use gatehouse::clients::{self, ClientKind};
use gatehouse::config::{EnvValue, Transport};
use gatehouse::hub::ToolInfo;
use gatehouse::logs::LogLine;
use gatehouse::ServerStatus;
use serde::Serialize;
use serde_json::Value;
use tauri::ipc::Channel;
use tauri::{AppHandle, Runtime, State};

use crate::error::{CommandError, CommandResult};
use crate::state::{AppState, PhaseView};

type AppStateRef<'a> = State<'a, Arc<AppState>>;

pub mod client_files;
pub mod history;
pub mod import;
pub mod keychain;
pub mod pins;
pub mod prefs;
pub mod registry;
pub mod rules;
pub mod view;

#[tauri::command]
pub fn app_state(state: AppStateRef<'_>) -> PhaseView {
    state.view()
}

/// Tries to start the hub again after a failed start (the user fixed the config, stopped the other
/// hub, freed the port).
#[tauri::command]
pub async fn retry_start<R: Runtime>(
    app: AppHandle<R>,
    state: AppStateRef<'_>,
) -> CommandResult<PhaseView> {
    if state.hub().is_ok() || state.is_starting() {
        return Ok(state.view());
    }
    crate::lifecycle::start_service(app, state.inner().clone()).await;
    Ok(state.view())
}

/// One row of the Servers panel: the live status plus what the config says about it.
#[derive(Serialize)]
pub struct ServerRow {
    #[serde(flatten)]
    status: ServerStatus,
    /// The exact command line (stdio) or URL (remote).
    target: String,
    /// Env or header names and whether each is a secret reference (values never sent).
    settings: Vec<SettingName>,
    requires_approval: Option<bool>,
}

#[derive(Serialize)]
pub struct SettingName {
    name: String,
    secret: Option<String>,
}

#[tauri::command]
pub fn servers(state: AppStateRef<'_>) -> CommandResult<Vec<ServerRow>> {
    let hub = state.hub()?;
    let config = hub.config();
    let mut rows: Vec<ServerRow> = hub
        .status()
        .into_iter()
        .map(|status| {
            let cfg = config
                .servers
                .iter()
                .find(|(id, _)| id.as_str() == status.id)
                .map(|(_, c)| c);
            let (target, values) = match cfg.map(|c| &c.transport) {
                Some(Transport::Stdio(t)) => (
                    gatehouse::config::command_line(
                        std::iter::once(t.command.as_str())
                            .chain(t.args.iter().map(String::as_str)),
                    ),
                    Some(&t.env),
                ),
                Some(Transport::Remote(r)) => (r.url.clone(), Some(&r.headers)),
                None => (String::new(), None),
            };
            let settings = values
                .into_iter()
                .flatten()
                .map(|(k, v)| SettingName {
                    name: k.clone(),
                    secret: match v {
                        EnvValue::Secret { secret, .. } => Some(secret.clone()),
                        EnvValue::Plain(_) | EnvValue::Env { .. } => None,
                    },
                })
                .collect();
            ServerRow {
                target,
                settings,
                requires_approval: cfg.and_then(|c| c.requires_approval),
                status,
            }
        })
        .collect();
    rows.sort_by(|a, b| a.status.id.cmp(&b.status.id));
    Ok(rows)
}

#[tauri::command]
pub fn server_tools(state: AppStateRef<'_>, id: String) -> CommandResult<Vec<ToolInfo>> {
    Ok(state.hub()?.tools(Some(&id))?)
}

/// Sets a server's `enabled` in the config (kept across restarts) and applies it.
#[tauri::command]
pub async fn set_server_enabled(
    state: AppStateRef<'_>,
    id: String,
    enabled: bool,
) -> CommandResult<()> {
    Ok(state.hub()?.set_enabled(&id, enabled).await?)
}

#[tauri::command]
pub async fn start_server(state: AppStateRef<'_>, id: String) -> CommandResult<()> {
    Ok(state.hub()?.start_server(&id).await?)
}

#[tauri::command]
pub async fn stop_server(state: AppStateRef<'_>, id: String) -> CommandResult<()> {
    Ok(state.hub()?.stop_server(&id).await?)
}

#[tauri::command]
pub async fn restart_server(state: AppStateRef<'_>, id: String) -> CommandResult<()> {
    Ok(state.hub()?.restart_server(&id).await?)
}

/// Signs in to a remote server: its authorization page opens in the browser; answered when
/// the sign-in ends (at most `oauth::SIGN_IN_TIMEOUT`), the server then starting again.
#[tauri::command]
pub async fn sign_in(state: AppStateRef<'_>, id: String) -> CommandResult<()> {
    let hub = state.hub()?;
    hub.sign_in(&id).await?;
    Ok(hub.sign_in_wait(&id).await?)
}

/// A server's entry in the config file format, for the edit form.
#[tauri::command]
pub fn server_entry(state: AppStateRef<'_>, id: String) -> CommandResult<Value> {
    let hub = state.hub()?;
    let config = hub.config();
    // An entry that cannot be read is edited as written, a setting it misspelled read as the
    // one it meant (`server_problem` says what was changed).
    if let Some(bad) = config.invalid.get(&id) {
        return Ok(gatehouse::config::repair_entry(&bad.raw).0);
    }
    let (_, cfg) = config
        .servers
        .iter()
        .find(|(k, _)| k.as_str() == id)
        .ok_or_else(|| CommandError::invalid(format!("there is no server \"{id}\"")))?;
    serde_json::to_value(cfg).map_err(CommandError::failed)
}

/// Why a server's entry cannot be read, what the form changed to show it, and the setting it is
/// about (the form puts the problem there, in view, the field focused); `None`: it can be read.
#[tauri::command]
pub fn server_problem(state: AppStateRef<'_>, id: String) -> CommandResult<Option<CommandError>> {
    let config = state.hub()?.config();
    Ok(config.invalid.get(&id).map(|bad| {
        let (_, said) = gatehouse::config::repair_entry(&bad.raw);
        let mut text = format!("This entry cannot be read: {}.", bad.error);
        if !said.is_empty() {
            text.push_str(&format!(
                " The form shows it with {}: check, then Save.",
                said.join(", ")
            ));
        }
        CommandError {
            field: bad.error.field,
            ..CommandError::invalid(text)
        }
    }))
}

/// Adds (`original` null) or replaces a server; the core validates the entry (an error names
/// the field it is about, for the form) and saves the file.
#[tauri::command]
pub async fn save_server(
    state: AppStateRef<'_>,
    original: Option<String>,
    id: String,
    mut entry: Value,
) -> CommandResult<()> {
    let hub = state.hub()?;
    hub.check_server(original.as_deref(), id.trim(), &entry)?;
    // A new server's package is pinned as every way of adding pins it (the CLI's `add`, the
    // registry, import): past the cool-down, its artifact's integrity recorded.
    if original.is_none() {
        let min_age = hub.config().registry.min_age_days();
        if let Err(e) = gatehouse::registry::pin::pin_new(&mut entry, min_age).await {
            tracing::warn!(server = %id.trim(), "not pinned: {e}");
        }
    }
    Ok(hub
        .save_server(original.as_deref(), id.trim(), &entry)
        .await?)
}

/// Where a Test runs a package from: the running hub's store, pinned as Save would pin it (so
/// the Save after a Test downloads nothing more).
fn from_store(state: &AppStateRef<'_>) -> CommandResult<Option<gatehouse::probe::FromStore>> {
    let hub = state.hub()?;
    Ok(hub
        .store()
        .cloned()
        .map(|store| gatehouse::probe::FromStore {
            store,
            min_age_days: hub.config().registry.min_age_days(),
        }))
}

/// Starts a form's entry on its own and reports on it (the form's Test button): a private hub of
/// its own, never the running one; the report says what it offers or why it failed.
#[tauri::command]
pub async fn test_server(
    state: AppStateRef<'_>,
    id: String,
    entry: Value,
) -> CommandResult<gatehouse::probe::ProbeReport> {
    let cfg = gatehouse::config::parse_entry(&entry)?;
    let id = match id.trim() {
        "" => "test".to_owned(),
        id => id.to_owned(),
    };
    let secrets: Arc<dyn gatehouse::secrets::SecretSource> = Arc::new(state.keychain.clone());
    let from = from_store(&state)?;
    Ok(gatehouse::probe::probe(
        &id,
        cfg,
        secrets,
        std::time::Duration::from_secs(30),
        from.as_ref(),
    )
    .await)
}

/// The form's entry started twice on its own — confined, then with the sandbox off — and the
/// difference said (the form's "Compare with the sandbox off"; `gatehouse test --compare`).
#[tauri::command]
pub async fn compare_server(
    state: AppStateRef<'_>,
    id: String,
    entry: Value,
) -> CommandResult<gatehouse::probe::compare::Comparison> {
    let cfg = gatehouse::config::parse_entry(&entry)?;
    let id = match id.trim() {
        "" => "test".to_owned(),
        id => id.to_owned(),
    };
    let secrets: Arc<dyn gatehouse::secrets::SecretSource> = Arc::new(state.keychain.clone());
    let from = from_store(&state)?;
    gatehouse::probe::compare::compare(
        &id,
        cfg,
        secrets,
        std::time::Duration::from_secs(30),
        from.as_ref(),
    )
    .await
    .map_err(CommandError::invalid)
}

/// A pasted command line as program and arguments (the shell's quoting rules; nothing expanded).
#[tauri::command]
pub fn split_command(line: String) -> CommandResult<Vec<String>> {
    gatehouse::config::split_command_line(&line).map_err(CommandError::invalid)
}

/// Lists a running server's tools again without restarting it.
#[tauri::command]
pub async fn refresh_tools(state: AppStateRef<'_>, id: String) -> CommandResult<Vec<ToolInfo>> {
    Ok(state.hub()?.refresh_tools(&id).await?)
}

#[tauri::command]
pub async fn remove_server(state: AppStateRef<'_>, id: String) -> CommandResult<()> {
    Ok(state.hub()?.remove_server(&id).await?)
}

#[derive(Serialize)]
pub struct Following {
    follower: u64,
    lines: Vec<LogLine>,
}

/// The recent log of a server, then every new line on `on_line` until `unfollow_logs`.
#[tauri::command]
pub fn follow_logs(
    state: AppStateRef<'_>,
    id: String,
    on_line: Channel<LogLine>,
) -> CommandResult<Following> {
    let hub = state.hub()?;
    let server = hub.server(&id)?;
    let mut events = hub.events();
    let lines = server.logs().tail(Some(200));
    let (follower, stop) = state.add_follower();
    tauri::async_runtime::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                ev = events.recv() => match ev {
                    Ok(gatehouse::events::Event::Log(line)) if line.server == id => {
                        if on_line.send(line).is_err() {
                            return;
                        }
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    Ok(Following { follower, lines })
}

#[tauri::command]
pub fn unfollow_logs(state: AppStateRef<'_>, follower: u64) {
    state.remove_follower(follower);
}

#[tauri::command]
pub fn pending_approvals(state: AppStateRef<'_>) -> CommandResult<Vec<ApprovalRequest>> {
    Ok(state.hub()?.approvals().pending())
}

/// The person's answer from the modal: `once`, `session`, `always` or `deny`, for the call with
/// this id and digest (the one the modal showed).
#[tauri::command]
pub fn answer_approval(
    state: AppStateRef<'_>,
    id: String,
    digest: String,
    decision: crate::state::Choice,
    reason: Option<String>,
) -> CommandResult<()> {
    state.answer(&id, &digest, decision, reason)
}

/// The code points the core shows as `⟨U+XXXX⟩` (`gatehouse::text::hidden_ranges`), as
/// `[first, last]` pairs: the webview reveals every text it shows with this one table.
#[tauri::command]
pub fn hidden_characters() -> &'static [(u32, u32)] {
    gatehouse::text::hidden_ranges()
}

#[derive(Serialize)]
pub struct ConnectInfo {
    url: String,
    token: String,
    clients: Vec<ClientSnippet>,
    /// Client sessions active in the last 5 minutes.
    connected: Vec<gatehouse::profiles::Connected>,
}

#[derive(Serialize)]
pub struct ClientSnippet {
    id: &'static str,
    label: &'static str,
    /// Where the client keeps this file on this machine.
    path: Option<String>,
    /// Which files the client reads now, where that changed lately (VS Code), or null.
    reads: Option<&'static str>,
    transport: &'static str,
    snippet: String,
    /// Whether the client's own file reaches this Gatehouse (and as which profile).
    setup: clients::Setup,
}

/// The gateway URL, its token, and a ready-made config for each client.
#[tauri::command]
pub fn connect_info(state: AppStateRef<'_>, profile: Option<String>) -> CommandResult<ConnectInfo> {
    let (url, token, profile) = gateway_for(&state, profile)?;
    let bin = clients::gatehouse_bin();
    // Every token that reaches this gateway, by profile (the gateway token is `default`).
    let mut tokens: Vec<(String, String)> = state
        .hub()?
        .client_tokens()
        .all()
        .into_iter()
        .map(|(p, t)| (p, t.to_string()))
        .collect();
    if let Some(info) = state.gateway_info() {
        tokens.push(("default".into(), info.token));
    }
    let clients = ClientKind::ALL
        .into_iter()
        .map(|k| {
            let mut snippet = clients::snippet(k, &url, &token, &bin);
            if let Some(e) = snippet
                .get_mut(k.servers_key())
                .and_then(|s| s.get_mut(clients::ENTRY_NAME))
            {
                *e = clients::for_control(
                    clients::for_profile(e.take(), profile.as_deref()),
                    &state.opts.control_path,
                );
            }
            let setup = match k.config_path() {
                Some(p) => clients::setup(k, &p, &url, &tokens),
                None => clients::Setup::NotInstalled,
            };
            ClientSnippet {
                id: k.id(),
                label: k.label(),
                reads: k.reads(),
                path: k.config_path().map(|p| p.display().to_string()),
                transport: if k.speaks_http() { "http" } else { "stdio" },
                snippet: k.render(&snippet),
                setup,
            }
        })
        .collect();
    let connected = state
        .gateway()
        .map(|g| g.recent_sessions(gatehouse::gateway::CONNECTED_WITHIN))
        .unwrap_or_default();
    Ok(ConnectInfo {
        url,
        token,
        clients,
        connected,
    })
}

/// The gateway's URL and the token of `profile` (the gateway token for none or `default`).
fn gateway_for(
    state: &AppState,
    profile: Option<String>,
) -> CommandResult<(String, String, Option<String>)> {
    let info = state
        .gateway_info()
        .ok_or_else(|| CommandError::not_ready("the gateway is not running"))?;
    match state.hub()?.profile_token(profile.as_deref())? {
        None => Ok((info.url, info.token, None)),
        Some(token) => Ok((info.url, token, profile.map(|p| p.trim().to_owned()))),
    }
}

/// Every remembered answer ("always" and "session"), newest first.
#[tauri::command]
pub fn grants(state: AppStateRef<'_>) -> CommandResult<Vec<gatehouse::approval::Grant>> {
    Ok(state.hub()?.approvals().grants())
}

/// Revokes one remembered answer: the next call to that tool asks again.
#[tauri::command]
pub fn revoke_grant(
    state: AppStateRef<'_>,
    grant: gatehouse::approval::Grant,
) -> CommandResult<Vec<gatehouse::approval::Grant>> {
    let hub = state.hub()?;
    if !hub.approvals().revoke(&grant) {
        return Err(CommandError::invalid(
            "that answer is not remembered any more (revoked already, or its session ended)",
        ));
    }
    Ok(hub.approvals().grants())
}

/// Every client profile (the `default` one first) with its tool count and known limit.
#[tauri::command]
pub fn client_profiles(
    state: AppStateRef<'_>,
) -> CommandResult<Vec<gatehouse::profiles::ClientInfo>> {
    Ok(state.hub()?.clients())
}

/// Adds a client profile, or sets the servers an existing one sees (its other settings kept).
#[tauri::command]
pub async fn save_client_profile(
    state: AppStateRef<'_>,
    id: String,
    servers: Option<Vec<String>>,
) -> CommandResult<Vec<gatehouse::profiles::ClientInfo>> {
    let hub = state.hub()?;
    hub.set_client_servers(&id, servers).await?;
    Ok(hub.clients())
}

/// Removes a client profile: its token stops working and its sessions end.
#[tauri::command]
pub async fn remove_client_profile(
    state: AppStateRef<'_>,
    id: String,
) -> CommandResult<Vec<gatehouse::profiles::ClientInfo>> {
    let hub = state.hub()?;
    hub.remove_client(&id).await?;
    Ok(hub.clients())
}

/// A new token for a client profile: the old one stops working and its sessions end.
#[tauri::command]
pub async fn rotate_client_token(state: AppStateRef<'_>, id: String) -> CommandResult<()> {
    state.hub()?.rotate_client_token(&id).await?;
    Ok(())
}

#[tauri::command]
pub fn autostart<R: Runtime>(app: AppHandle<R>) -> bool {
    use tauri_plugin_autostart::ManagerExt;
    app.autolaunch().is_enabled().unwrap_or(false)
}

#[tauri::command]
pub fn set_autostart<R: Runtime>(app: AppHandle<R>, enabled: bool) -> CommandResult<bool> {
    use tauri_plugin_autostart::ManagerExt;
    let launcher = app.autolaunch();
    let result = if enabled {
        launcher.enable()
    } else {
        launcher.disable()
    };
    result.map_err(CommandError::failed)?;
    Ok(launcher.is_enabled().unwrap_or(false))
}

/// Writes Gatehouse's entry into a client's own config file (backup kept, other entries kept).
#[tauri::command]
pub async fn write_client_config(
    state: AppStateRef<'_>,
    target: String,
    profile: Option<String>,
) -> CommandResult<String> {
    let kind = ClientKind::parse(&target).map_err(CommandError::invalid)?;
    let (entry, profile) = client_entry(&state, kind, profile).await?;
    let path = kind
        .config_path()
        .ok_or_else(|| CommandError::failed("no home directory to find the client's file"))?;
    // The client's file is read (bounded: 8 MiB, 5 s) and written off the async workers.
    let file = path.clone();
    let hub = state.hub()?;
    let written = tauri::async_runtime::spawn_blocking(move || {
        hub.write_client_entry(&file, kind, &entry, &[])
    })
    .await
    .map_err(CommandError::failed)?
    .map_err(CommandError::failed)?;
    Ok(format!(
        "Wrote {} as client profile {}{}{}",
        path.display(),
        profile.as_deref().unwrap_or("default"),
        private_note(kind),
        written
            .backup_line()
            .map(|l| format!(". {}", capitalised(&l)))
            .unwrap_or_default()
    ))
}

/// The running gateway's port (an import never offers an entry that points at it).
fn own_port(state: &AppState) -> Vec<u16> {
    state
        .gateway_info()
        .and_then(|i| i.url.rsplit_once(':').map(|(_, r)| r.to_owned()))
        .and_then(|r| r.split('/').next().and_then(|p| p.parse().ok()))
        .into_iter()
        .collect()
}

/// Gatehouse's entry for `kind`, for `profile` — or, none chosen, for the client's own profile
/// (made when missing), so what the person allows "always" for it covers it alone, as
/// `client-config NAME --write` does. Returns the entry and the profile it is for.
pub async fn client_entry(
    state: &AppState,
    kind: ClientKind,
    profile: Option<String>,
) -> CommandResult<(serde_json::Value, Option<String>)> {
    let profile = match profile.filter(|p| !p.trim().is_empty()) {
        Some(p) => Some(p),
        None => {
            let hub = state.hub()?;
            let id = kind.id();
            if !hub.config().clients.keys().any(|k| k.as_str() == id) {
                hub.save_client(id, gatehouse::config::ClientProfile::default())
                    .await?;
            }
            Some(id.to_owned())
        }
    };
    let (url, token, profile) = gateway_for(state, profile)?;
    let entry = clients::for_control(
        clients::for_profile(
            clients::entry(kind, &url, &token, &clients::gatehouse_bin()),
            profile.as_deref(),
        ),
        &state.opts.control_path,
    );
    Ok((entry, profile))
}

/// `backup: …` as the start of a sentence.
pub fn capitalised(line: &str) -> String {
    let mut c = line.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

pub fn private_note(kind: ClientKind) -> &'static str {
    if kind.speaks_http() {
        "; it holds a Gatehouse token, so only you can read it (mode 0600)"
    } else {
        ""
    }
}

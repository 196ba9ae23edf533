//! The commands the UI invokes. Each maps onto one `HubHandle` (or keychain) operation; no logic
//! of its own beyond shaping data for the views.

use std::sync::Arc;

use gatehouse::approval::{Answer, ApprovalRequest, Decider, Scope};
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
    let (_, cfg) = config
        .servers
        .iter()
        .find(|(k, _)| k.as_str() == id)
        .ok_or_else(|| CommandError::invalid(format!("there is no server \"{id}\"")))?;
    serde_json::to_value(cfg).map_err(CommandError::failed)
}

/// Adds (`original` null) or replaces a server; the core validates the entry (an error names
/// the field it is about, for the form) and saves the file.
#[tauri::command]
pub async fn save_server(
    state: AppStateRef<'_>,
    original: Option<String>,
    id: String,
    entry: Value,
) -> CommandResult<()> {
    let hub = state.hub()?;
    hub.check_server(original.as_deref(), id.trim(), &entry)?;
    Ok(hub
        .save_server(original.as_deref(), id.trim(), &entry)
        .await?)
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
    Ok(gatehouse::probe::probe(&id, cfg, secrets, std::time::Duration::from_secs(30)).await)
}

/// A pasted command line as program and arguments (the shell's quoting rules; nothing expanded).
#[tauri::command]
pub fn split_command(line: String) -> CommandResult<Vec<String>> {
    gatehouse::config::split_command_line(&line).map_err(CommandError::invalid)
}

/// Lists a running server's tools again without restarting it.
#[tauri::command]
pub async fn refresh_tools(state: AppStateRef<'_>, id: String) -> CommandResult<Vec<ToolInfo>> {
    let hub = state.hub()?;
    hub.server(&id)?
        .refresh_tools()
        .await
        .map_err(CommandError::failed)?;
    Ok(hub.tools(Some(&id))?)
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

/// The person's answer from the modal: `once`, `session`, `always` or `deny`.
#[tauri::command]
pub fn answer_approval(
    state: AppStateRef<'_>,
    id: String,
    decision: String,
    reason: Option<String>,
) -> CommandResult<()> {
    let answer = match decision.as_str() {
        "deny" => Answer::Deny(reason.or_else(|| Some("denied in the Gatehouse app".to_owned()))),
        other => Answer::Allow(other.parse::<Scope>().map_err(CommandError::invalid)?),
    };
    state
        .hub()?
        .approvals()
        .answer(&id, answer, Decider::Ui)
        .map(|_| ())
        .map_err(CommandError::failed)
}

/// Whether a secret has a value in the keychain.
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum SecretState {
    Set,
    Missing,
    /// The keychain could not be asked (the error says why).
    Unknown,
}

#[derive(Serialize)]
pub struct SecretRow {
    name: String,
    state: SecretState,
    error: Option<String>,
    used_by: Vec<String>,
}

/// The secrets the config references, set or not (values never leave the keychain thread).
#[tauri::command]
pub async fn secrets(state: AppStateRef<'_>) -> CommandResult<Vec<SecretRow>> {
    let users = state.hub()?.secret_names();
    let keychain = state.keychain.clone();
    tauri::async_runtime::spawn_blocking(move || {
        users
            .into_iter()
            .map(|(name, used_by)| {
                let (st, error) = match keychain.is_set(&name) {
                    Ok(true) => (SecretState::Set, None),
                    Ok(false) => (SecretState::Missing, None),
                    Err(e) => (SecretState::Unknown, Some(e.to_string())),
                };
                SecretRow {
                    name,
                    state: st,
                    error,
                    used_by,
                }
            })
            .collect()
    })
    .await
    .map_err(CommandError::failed)
}

/// Stores a value in the keychain and restarts the servers that use it; returns their ids.
#[tauri::command]
pub async fn set_secret(
    state: AppStateRef<'_>,
    name: String,
    value: String,
) -> CommandResult<Vec<String>> {
    gatehouse::config::validate_secret_name(&name).map_err(CommandError::invalid)?;
    if value.is_empty() {
        return Err(CommandError::invalid(
            "the value is empty: paste the token, or use Delete to remove it",
        ));
    }
    let hub = state.hub()?;
    let keychain = state.keychain.clone();
    let n = name.clone();
    tauri::async_runtime::spawn_blocking(move || keychain.set(&n, &value))
        .await
        .map_err(CommandError::failed)?
        .map_err(CommandError::failed)?;
    Ok(hub.secret_changed(&name).await)
}

#[tauri::command]
pub async fn delete_secret(state: AppStateRef<'_>, name: String) -> CommandResult<Vec<String>> {
    let hub = state.hub()?;
    let keychain = state.keychain.clone();
    let n = name.clone();
    tauri::async_runtime::spawn_blocking(move || keychain.delete(&n))
        .await
        .map_err(CommandError::failed)?
        .map_err(CommandError::failed)?;
    Ok(hub.secret_changed(&name).await)
}

/// One Activity row: the record plus the group its decision belongs to (what the view filters
/// and colours by).
#[derive(Serialize)]
pub struct ActivityRow {
    #[serde(flatten)]
    record: gatehouse::activity::CallRecord,
    group: gatehouse::activity::DecisionGroup,
}

#[tauri::command]
pub async fn activity(
    state: AppStateRef<'_>,
    limit: Option<usize>,
    server: Option<String>,
    client: Option<String>,
) -> CommandResult<Vec<ActivityRow>> {
    let rows = state
        .hub()?
        .activity()
        .recent_of(
            limit.unwrap_or(200).min(2000),
            server.filter(|s| !s.is_empty()),
            client.filter(|s| !s.is_empty()),
        )
        .await
        .map_err(CommandError::failed)?;
    Ok(rows
        .into_iter()
        .map(|record| ActivityRow {
            group: record.decision.group(),
            record,
        })
        .collect())
}

/// Where an export went and how many calls it holds.
#[derive(Serialize)]
pub struct Exported {
    path: String,
    rows: usize,
}

/// Writes every call matching the Activity view's filters (not only the rows on screen) to a
/// new file in the person's Downloads folder.
#[tauri::command]
pub async fn export_activity(
    state: AppStateRef<'_>,
    format: gatehouse::activity::export::Format,
    server: Option<String>,
    client: Option<String>,
    group: Option<gatehouse::activity::DecisionGroup>,
) -> CommandResult<Exported> {
    use gatehouse::activity::export;
    let mut rows = state
        .hub()?
        .activity()
        .recent_of(
            gatehouse::activity::MAX_ROWS as usize,
            server.filter(|s| !s.is_empty()),
            client.filter(|s| !s.is_empty()),
        )
        .await
        .map_err(CommandError::failed)?;
    if let Some(group) = group {
        rows.retain(|r| r.decision.group() == group);
    }
    let dir = export::default_dir()
        .ok_or_else(|| CommandError::failed("there is no home folder to export to"))?;
    let n = rows.len();
    let path = tauri::async_runtime::spawn_blocking(move || export::write(&dir, &rows, format))
        .await
        .map_err(CommandError::failed)?
        .map_err(|e| CommandError::failed(format!("the export could not be written: {e}")))?;
    Ok(Exported {
        path: path.display().to_string(),
        rows: n,
    })
}

#[derive(Serialize)]
pub struct ConnectInfo {
    url: String,
    token: String,
    clients: Vec<ClientSnippet>,
    /// Client sessions active in the last 5 minutes.
    connected: Vec<ConnectedClient>,
}

#[derive(Serialize)]
pub struct ClientSnippet {
    id: &'static str,
    label: &'static str,
    /// Where the client keeps this file on this machine.
    path: Option<String>,
    transport: &'static str,
    snippet: String,
    /// Whether the client's own file reaches this Gatehouse (and as which profile).
    setup: clients::Setup,
}

/// A client session seen in the last minutes.
#[derive(Serialize)]
pub struct ConnectedClient {
    name: String,
    profile: String,
    ago_ms: u64,
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
                *e = clients::for_profile(e.take(), profile.as_deref());
            }
            let setup = match k.config_path() {
                Some(p) => clients::setup(k, &p, &url, &tokens),
                None => clients::Setup::NoFile,
            };
            ClientSnippet {
                id: k.id(),
                label: k.label(),
                path: k.config_path().map(|p| p.display().to_string()),
                transport: if k.speaks_http() { "http" } else { "stdio" },
                snippet: serde_json::to_string_pretty(&snippet).unwrap_or_default(),
                setup,
            }
        })
        .collect();
    let connected = state
        .gateway()
        .map(|g| g.recent_sessions(std::time::Duration::from_secs(300)))
        .unwrap_or_default()
        .into_iter()
        .map(|(name, profile, ago_ms)| ConnectedClient {
            name,
            profile,
            ago_ms,
        })
        .collect();
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
    let profile = profile.filter(|p| !p.is_empty() && p != gatehouse::profiles::DEFAULT_PROFILE);
    match profile {
        None => Ok((info.url, info.token, None)),
        Some(p) => {
            let token = state.hub()?.client_tokens().token(&p).ok_or_else(|| {
                CommandError::invalid(format!("there is no client profile \"{p}\""))
            })?;
            Ok((info.url, token.to_string(), Some(p)))
        }
    }
}

/// What the Settings view shows and edits.
#[derive(Serialize)]
pub struct Settings {
    approval_default: gatehouse::config::ApprovalDefault,
    approval_timeout_secs: u64,
    /// The address in the config (used from the next start).
    listen: String,
    /// The address the running gateway listens on.
    running_url: Option<String>,
}

#[tauri::command]
pub fn settings(state: AppStateRef<'_>) -> CommandResult<Settings> {
    let config = state.hub()?.config();
    Ok(Settings {
        approval_default: config.approval.default,
        approval_timeout_secs: config.approval.timeout_secs,
        listen: config.gateway.listen.to_string(),
        running_url: state.gateway_info().map(|i| i.url),
    })
}

/// Saves the approval default and timeout (used at once) and the gateway address (used from the
/// next start) in the config.
#[tauri::command]
pub async fn save_settings(
    state: AppStateRef<'_>,
    approval_default: gatehouse::config::ApprovalDefault,
    approval_timeout_secs: u64,
    listen: String,
) -> CommandResult<Settings> {
    let hub = state.hub()?;
    hub.set_approval(approval_default, approval_timeout_secs)
        .await?;
    if listen.trim() != hub.config().gateway.listen.to_string() {
        hub.set_listen(listen.trim()).await?;
    }
    settings(state)
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
    let servers = servers
        .map(|s| {
            s.iter()
                .map(|x| gatehouse::config::ServerId::parse(x))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .map_err(CommandError::invalid)?;
    let mut profile = hub
        .config()
        .clients
        .iter()
        .find(|(k, _)| k.as_str() == id.trim())
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    profile.servers = servers;
    hub.save_client(id.trim(), profile).await?;
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
pub fn write_client_config(
    state: AppStateRef<'_>,
    target: String,
    profile: Option<String>,
) -> CommandResult<String> {
    let kind = ClientKind::parse(&target).map_err(CommandError::invalid)?;
    let (url, token, profile) = gateway_for(&state, profile)?;
    let path = kind
        .config_path()
        .ok_or_else(|| CommandError::failed("no home directory to find the client's file"))?;
    let entry = clients::for_profile(
        clients::entry(kind, &url, &token, &clients::gatehouse_bin()),
        profile.as_deref(),
    );
    let (backup, _) =
        clients::write_entry(&path, kind, &entry, &[]).map_err(CommandError::failed)?;
    Ok(match backup {
        Some(b) => format!(
            "Wrote {} (backup: {}){}",
            path.display(),
            b.display(),
            private_note(kind)
        ),
        None => format!("Wrote {}{}", path.display(), private_note(kind)),
    })
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

fn private_note(kind: ClientKind) -> &'static str {
    if kind.speaks_http() {
        "; it holds the gateway token, so only you can read it (mode 0600)"
    } else {
        ""
    }
}

#[derive(Serialize)]
pub struct ImportSource {
    label: String,
    path: String,
    error: Option<String>,
    servers: Vec<ImportRow>,
}

#[derive(Serialize)]
pub struct ImportRow {
    source_name: String,
    id: String,
    command_line: String,
    credentials: Vec<String>,
    /// Why it cannot be imported as is (the id is taken…), or null.
    skip: Option<String>,
}

/// Client files found on this machine (or `path`), with what importing each server would do.
#[tauri::command]
pub fn import_preview(
    state: AppStateRef<'_>,
    path: Option<String>,
) -> CommandResult<Vec<ImportSource>> {
    let config = state.hub()?.config();
    let sources: Vec<(String, std::path::PathBuf)> = match path.filter(|p| !p.trim().is_empty()) {
        Some(p) => vec![(p.clone(), std::path::PathBuf::from(p))],
        None => ClientKind::ALL
            .into_iter()
            .filter_map(|k| {
                k.config_path()
                    .filter(|p| p.exists())
                    .map(|p| (k.label().to_owned(), p))
            })
            .collect(),
    };
    Ok(sources
        .into_iter()
        .map(|(label, p)| {
            let (servers, error) = match gatehouse::import::read_source(&p) {
                Ok(c) => (
                    gatehouse::import::plan(&config, c, &Default::default(), &own_port(&state))
                        .into_iter()
                        .map(|(c, o)| ImportRow {
                            command_line: c.command_line(),
                            skip: match o {
                                gatehouse::import::Outcome::Add => None,
                                gatehouse::import::Outcome::Skip(why) => Some(why),
                            },
                            source_name: c.source_name,
                            id: c.id,
                            credentials: c.credentials,
                        })
                        .collect(),
                    None,
                ),
                Err(e) => (Vec::new(), Some(e)),
            };
            ImportSource {
                label,
                path: p.display().to_string(),
                error,
                servers,
            }
        })
        .collect())
}

/// Imports the chosen servers (by their name in the file) from `path`; returns the ids added.
#[tauri::command]
pub async fn import_servers(
    state: AppStateRef<'_>,
    path: String,
    names: Vec<String>,
    move_secrets: bool,
) -> CommandResult<Vec<String>> {
    let hub = state.hub()?;
    let candidates = gatehouse::import::read_source(std::path::Path::new(&path))
        .map_err(CommandError::invalid)?;
    let plan = gatehouse::import::plan(
        &hub.config(),
        candidates,
        &Default::default(),
        &own_port(&state),
    );
    if let Some(config_path) = hub.config_path() {
        gatehouse::import::backup(&config_path).map_err(CommandError::failed)?;
    }
    let chosen: Vec<_> = plan
        .into_iter()
        .filter(|(c, o)| names.contains(&c.source_name) && *o == gatehouse::import::Outcome::Add)
        .map(|(c, _)| c)
        .collect();
    let keychain = move_secrets.then(|| state.keychain.clone());
    let prepared = tauri::async_runtime::spawn_blocking(move || {
        gatehouse::import::prepare(chosen, keychain.as_ref())
    })
    .await
    .map_err(CommandError::failed)?
    .map_err(CommandError::failed)?;
    hub.import(&prepared).await?;
    let added: Vec<String> = prepared.into_iter().map(|p| p.id).collect();
    Ok(added)
}

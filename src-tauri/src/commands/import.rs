//! The Import view's commands: what each client's file holds, reviewed, then imported.

use super::own_port;
use super::AppStateRef;
use crate::error::CommandError;
use crate::error::CommandResult;
use crate::state::AppState;
use gatehouse::clients::ClientKind;
use serde::Serialize;

#[derive(Serialize)]
pub struct ImportSource {
    label: String,
    path: String,
    /// The client whose own file this is (`ClientKind::id`), which Gatehouse may edit; else null.
    client: Option<&'static str>,
    error: Option<String>,
    servers: Vec<ImportRow>,
}

#[derive(Serialize)]
pub struct ImportRow {
    source_name: String,
    id: String,
    command_line: String,
    credentials: Vec<String>,
    /// Where in its client it came from (Claude Code: `user`, `local DIR`, `project DIR`), or "".
    scope: String,
    /// Why it cannot be imported as is (the id is taken…), or null.
    skip: Option<String>,
    /// `here`: the same server is in the config already (imported before); `itself`: the entry
    /// is Gatehouse (its token is Gatehouse's own, never a leak); `taken`: another server has its
    /// id (a new one imports it); else "".
    state: &'static str,
    /// Why its client has not approved it (`not approved in Claude Code`), or null: shown, and
    /// not ticked unless the person ticks it.
    unapproved: Option<String>,
}

/// Client files found on this machine (or `path`), with what importing each server would do.
#[tauri::command]
pub fn import_preview(
    state: AppStateRef<'_>,
    path: Option<String>,
) -> CommandResult<Vec<ImportSource>> {
    let config = state.hub()?.config();
    let mut ports = own_port(&state);
    ports.push(config.gateway.listen.port());
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
            let (servers, error) = match candidates_of(&state, &p) {
                Ok(c) => (
                    gatehouse::import::plan(&config, c, &Default::default(), &own_port(&state))
                        .into_iter()
                        .map(|(c, o)| {
                            let parsed = gatehouse::config::parse_entry(&c.entry).ok();
                            let itself = parsed.as_ref().is_some_and(|s| {
                                gatehouse::config::reaches_gatehouse(&s.transport, &ports).is_some()
                            });
                            let existing = config.servers.iter().find(|(k, _)| k.as_str() == c.id);
                            let here = runs_here(&config, &c);
                            let row_state = if itself {
                                "itself"
                            } else if here {
                                "here"
                            } else if existing.is_some() {
                                "taken"
                            } else {
                                ""
                            };
                            ImportRow {
                                command_line: c.command_line(),
                                skip: match o {
                                    gatehouse::import::Outcome::Add => None,
                                    gatehouse::import::Outcome::Skip(why) => Some(why),
                                },
                                scope: c.scope,
                                unapproved: c.unapproved,
                                source_name: c.source_name,
                                id: c.id,
                                // Gatehouse's own entry holds Gatehouse's own token: not a leak.
                                credentials: if itself { Vec::new() } else { c.credentials },
                                state: row_state,
                            }
                        })
                        .collect(),
                    None,
                ),
                Err(e) => (Vec::new(), Some(e)),
            };
            ImportSource {
                label,
                client: client_of(&p).map(ClientKind::id),
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
    renames: Option<std::collections::BTreeMap<String, String>>,
) -> CommandResult<Vec<String>> {
    let hub = state.hub()?;
    let candidates =
        candidates_of(&state, std::path::Path::new(&path)).map_err(CommandError::invalid)?;
    // A server whose id is taken is imported under the new id the person typed beside it.
    let plan = gatehouse::import::plan(
        &hub.config(),
        candidates,
        &renames.unwrap_or_default(),
        &own_port(&state),
    );
    if let Some(config_path) = hub.config_path() {
        gatehouse::client_file::backup::backup(&config_path).map_err(CommandError::failed)?;
    }
    let chosen: Vec<_> = plan
        .into_iter()
        .filter(|(c, o)| names.contains(&c.source_name) && *o == gatehouse::import::Outcome::Add)
        .map(|(c, _)| c)
        .collect();
    let keychain = move_secrets.then(|| state.keychain.clone());
    let mut prepared = tauri::async_runtime::spawn_blocking(move || {
        gatehouse::import::prepare(chosen, keychain.as_ref())
    })
    .await
    .map_err(CommandError::failed)?
    .map_err(CommandError::failed)?;
    // Pinned as every way of adding pins (past the cool-down, integrity recorded).
    for line in
        gatehouse::import::pin_all(&mut prepared, hub.config().registry.min_age_days()).await
    {
        tracing::info!("{line}");
    }
    hub.import(&prepared).await?;
    let added: Vec<String> = prepared.into_iter().map(|p| p.id).collect();
    Ok(added)
}

/// The most a pasted snippet may be.
const MAX_PASTE: usize = 1 << 20;

/// What the Import view names the pasted snippet by (in place of a file's path).
pub const PASTED: &str = "(pasted snippet)";

/// A snippet pasted into the Add form that holds several servers, kept for the Import view to
/// review like a client's file — in memory only, never written (it may hold credentials); the
/// previous one replaced. Returns the name the Import view gives back ([`PASTED`]).
#[tauri::command]
pub fn import_paste(state: AppStateRef<'_>, text: String) -> CommandResult<String> {
    if text.len() > MAX_PASTE {
        return Err(CommandError::invalid(format!(
            "the pasted text is over {} KiB; save it to a file and name that file in Import",
            MAX_PASTE >> 10
        )));
    }
    serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| CommandError::invalid(format!("the pasted text is not JSON: {e}")))?;
    *gatehouse::sync::lock(&state.pasted) = Some(text);
    Ok(PASTED.to_owned())
}

/// The servers of `path`: a client's file, or the pasted snippet when it is [`PASTED`].
fn candidates_of(
    state: &AppState,
    path: &std::path::Path,
) -> Result<Vec<gatehouse::import::Candidate>, String> {
    if path.as_os_str() == PASTED {
        let text = gatehouse::sync::lock(&state.pasted).clone();
        let text = text.ok_or("nothing was pasted in this run; paste the snippet again")?;
        return gatehouse::import::parse_source(&text, std::path::Path::new("pasted.json"));
    }
    gatehouse::import::read_source(path)
}

/// The client whose own config file `path` is.
fn client_of(path: &std::path::Path) -> Option<ClientKind> {
    ClientKind::ALL
        .into_iter()
        .find(|k| k.config_path().as_deref() == Some(path))
}

/// Whether Gatehouse already runs this entry: a server of the same id that starts the same
/// command line or reaches the same URL (its origin) — whatever its environment, which an import
/// turns into keychain references.
fn runs_here(config: &gatehouse::config::Config, c: &gatehouse::import::Candidate) -> bool {
    let parsed = gatehouse::config::parse_entry(&c.entry).ok();
    config
        .servers
        .iter()
        .find(|(k, _)| k.as_str() == c.id)
        .is_some_and(|(_, e)| parsed.as_ref().is_some_and(|p| p.origin() == e.origin()))
}

/// After an import: removes the entries Gatehouse now runs (`names`, as the file names them) from
/// their client's own file — their plain-text credentials with them — and adds Gatehouse's
/// entry, so the client reaches them through Gatehouse. A backup of the file is kept; every
/// other entry and setting stays. Refused for a file that is not a client's own, and for a name
/// Gatehouse does not run.
#[tauri::command]
pub async fn remove_from_client(
    state: AppStateRef<'_>,
    path: String,
    names: Vec<String>,
) -> CommandResult<String> {
    let file = std::path::PathBuf::from(&path);
    let kind = client_of(&file).ok_or_else(|| {
        CommandError::invalid(format!(
            "{path} is not an AI client's own config file: remove the entries yourself"
        ))
    })?;
    let config = state.hub()?.config();
    let candidates = candidates_of(&state, &file).map_err(CommandError::invalid)?;
    let mut managed = Vec::new();
    for name in &names {
        let c = candidates
            .iter()
            .find(|c| &c.source_name == name)
            .ok_or_else(|| CommandError::invalid(format!("{name} is not in {path}")))?;
        if !runs_here(&config, c) {
            return Err(CommandError::invalid(format!(
                "Gatehouse does not run {name} yet: import it first"
            )));
        }
        managed.push(gatehouse::naming::normalise_id(name));
    }
    let (entry, profile) = super::client_entry(&state, kind, None).await?;
    // The client's file is read (bounded) and written off the async workers.
    let target = file.clone();
    let hub = state.hub()?;
    let written = tauri::async_runtime::spawn_blocking(move || {
        hub.write_client_entry(&target, kind, &entry, &managed)
    })
    .await
    .map_err(CommandError::failed)?
    .map_err(CommandError::failed)?;
    Ok(format!(
        "Removed {} from {path}: {} reaches {} through Gatehouse now, as client profile {}{}{}",
        written.removed.join(", "),
        kind.label(),
        if written.removed.len() == 1 {
            "it"
        } else {
            "them"
        },
        profile.as_deref().unwrap_or("default"),
        super::private_note(kind),
        written
            .backup_line()
            .map(|l| format!(". {}", super::capitalised(&l)))
            .unwrap_or_default()
    ))
}

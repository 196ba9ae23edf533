//! The Import view's commands: what each client's file holds, reviewed, then imported.

use super::*;

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
    /// Where in its client it came from (Claude Code: `user`, `local DIR`, `project DIR`), or "".
    scope: String,
    /// Why it cannot be imported as is (the id is taken…), or null.
    skip: Option<String>,
    /// `here`: the same server is in the config already (imported before); `itself`: the entry
    /// is Gatehouse (its token is Gatehouse's own, never a leak); `taken`: another server has its
    /// id (a new one imports it); else "".
    state: &'static str,
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
                            let here = existing.is_some_and(|(_, e)| {
                                parsed.as_ref().is_some_and(|p| p.transport == e.transport)
                            });
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
    *state.pasted.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
    Ok(PASTED.to_owned())
}

/// The servers of `path`: a client's file, or the pasted snippet when it is [`PASTED`].
fn candidates_of(
    state: &AppState,
    path: &std::path::Path,
) -> Result<Vec<gatehouse::import::Candidate>, String> {
    if path.as_os_str() == PASTED {
        let text = state
            .pasted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let text = text.ok_or("nothing was pasted in this run; paste the snippet again")?;
        return gatehouse::import::parse_source(&text, std::path::Path::new("pasted.json"));
    }
    gatehouse::import::read_source(path)
}

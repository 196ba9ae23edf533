//! The Add dialog's "Find in the registry": search the MCP Registry, what a server needs, and
//! adding it pinned — its secrets going straight from the password fields to the keychain.

use std::collections::BTreeMap;

use gatehouse::registry::entry::{self, Inputs};
use gatehouse::registry::model::ServerDetail;
use gatehouse::registry::Registry;

use super::*;

/// One search result, as the dialog lists it.
#[derive(Serialize)]
pub struct Found {
    name: String,
    version: String,
    description: String,
    /// `npm`, `pypi`, `oci`, `remote`…
    transports: Vec<String>,
    /// What it needs: variable names, secrets marked.
    needs: Vec<String>,
}

/// What adding a server would do: the id, the command, the pin, the secrets to type in.
#[derive(Serialize)]
pub struct Plan {
    id: String,
    /// The version shown: what "Add" installs, whatever the registry has published since.
    version: String,
    runs: String,
    pinned: String,
    secrets: Vec<SecretField>,
    /// Why it cannot be added (then nothing else is filled).
    error: Option<String>,
}

#[derive(Serialize)]
pub struct SecretField {
    var: String,
    description: String,
    required: bool,
}

fn registry(state: &AppState) -> CommandResult<Registry> {
    let configured = state.hub()?.config().registry.url.clone();
    Registry::new(configured.as_deref()).map_err(CommandError::failed)
}

fn found(d: &ServerDetail) -> Found {
    let mut transports: Vec<String> = d.packages.iter().map(|p| p.registry_type.clone()).collect();
    if !d.remotes.is_empty() {
        transports.push("remote".into());
    }
    let needs = d
        .packages
        .iter()
        .flat_map(|p| p.environment_variables.iter())
        .map(|v| {
            if v.is_secret {
                format!("{} (secret)", v.name)
            } else {
                v.name.clone()
            }
        })
        .collect();
    Found {
        name: d.name.clone(),
        version: d.version.clone(),
        description: d.description.clone(),
        transports,
        needs,
    }
}

/// The latest versions whose name has `text` (one page).
#[tauri::command]
pub async fn registry_search(state: AppStateRef<'_>, text: String) -> CommandResult<Vec<Found>> {
    let reg = registry(&state)?;
    let page = reg
        .search(text.trim(), None)
        .await
        .map_err(CommandError::failed)?;
    Ok(page.servers.iter().map(|r| found(&r.server)).collect())
}

/// What adding `name` would do.
#[tauri::command]
pub async fn registry_plan(state: AppStateRef<'_>, name: String) -> CommandResult<Plan> {
    let reg = registry(&state)?;
    let d = reg
        .get(&name, None)
        .await
        .map_err(CommandError::failed)?
        .server;
    let id = entry::id_for(&d.name);
    let version = d.version.clone();
    Ok(
        match entry::plan(
            &d,
            &id,
            &Inputs::default(),
            gatehouse::registry::container_engine(),
        ) {
            Ok(p) => Plan {
                id,
                version,
                runs: p.runs,
                pinned: p.pinned,
                secrets: p
                    .ask
                    .into_iter()
                    .map(|a| SecretField {
                        var: a.var,
                        description: a.description,
                        required: a.required,
                    })
                    .collect(),
                error: None,
            },
            Err(e) => Plan {
                id,
                version,
                runs: String::new(),
                pinned: String::new(),
                secrets: Vec::new(),
                error: Some(e),
            },
        },
    )
}

/// Adds version `version` of `name` — the one its plan showed, whatever the registry has
/// published since — as `id`: its secrets (variable → value) into the keychain first, then the
/// entry, pinned.
#[tauri::command]
pub async fn registry_add(
    state: AppStateRef<'_>,
    name: String,
    version: String,
    id: String,
    secrets: BTreeMap<String, String>,
) -> CommandResult<String> {
    let reg = registry(&state)?;
    let d = reg
        .get(&name, Some(&version))
        .await
        .map_err(CommandError::failed)?
        .server;
    let id = id.trim().to_owned();
    let planned = entry::plan(
        &d,
        &id,
        &Inputs::default(),
        gatehouse::registry::container_engine(),
    )
    .map_err(CommandError::invalid)?;
    let mut entry = planned.entry;
    for ask in &planned.ask {
        match secrets.get(&ask.var).filter(|v| !v.is_empty()) {
            Some(v) => {
                let (k, n, v) = (state.keychain.clone(), ask.secret.clone(), v.clone());
                tauri::async_runtime::spawn_blocking(move || k.set(&n, &v))
                    .await
                    .map_err(CommandError::failed)?
                    .map_err(CommandError::failed)?;
            }
            None if ask.required => {
                return Err(CommandError::invalid(format!(
                    "{} is required: {}",
                    ask.var, ask.description
                )))
            }
            None => {
                if let Some(m) = entry.get_mut("env").and_then(Value::as_object_mut) {
                    m.remove(&ask.var);
                }
            }
        }
    }
    let hub = state.hub()?;
    hub.check_server(None, &id, &entry)?;
    hub.save_server(None, &id, &entry).await?;
    Ok(format!("{id} added, pinned to {}", planned.pinned))
}

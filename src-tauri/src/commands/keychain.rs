//! The Secrets view's commands: which secrets exist and whether each is set (values never leave
//! the keychain thread), setting and deleting one.

use super::AppStateRef;
use crate::error::CommandError;
use crate::error::CommandResult;
use serde::Serialize;

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

//! The clients' files changed outside Gatehouse (the hub's watch): listed for Servers' summary,
//! put back or kept — each one `HubHandle` operation, run off the async workers (they read and
//! write a client's file, bounded: 8 MiB, 5 s).

use std::path::PathBuf;

use gatehouse::watch::ClientFileAlert;

use super::AppStateRef;
use crate::error::{CommandError, CommandResult};

/// Every open alert, with its diff (Gatehouse's own tokens masked).
#[tauri::command]
pub fn client_file_alerts(state: AppStateRef<'_>) -> CommandResult<Vec<ClientFileAlert>> {
    Ok(state.hub()?.client_file_alerts())
}

/// Puts back what the file held before the change; what was done, in words.
#[tauri::command]
pub async fn restore_client_file(state: AppStateRef<'_>, path: String) -> CommandResult<String> {
    let hub = state.hub()?;
    tauri::async_runtime::spawn_blocking(move || hub.restore_client_file(&PathBuf::from(path)))
        .await
        .map_err(CommandError::failed)?
        .map_err(CommandError::failed)
}

/// Keeps the change: the alert closes, and what the file holds now is compared with from now on.
#[tauri::command]
pub async fn ack_client_file(state: AppStateRef<'_>, path: String) -> CommandResult<()> {
    let hub = state.hub()?;
    tauri::async_runtime::spawn_blocking(move || hub.ack_client_file(&PathBuf::from(path)))
        .await
        .map_err(CommandError::failed)?
        .map_err(CommandError::failed)
}

//! The pins' commands: the changes to what servers say that wait for the person (a prompt, its
//! instructions, an app's HTML), answered from the Permissions view, and every pin — each one
//! broker operation.

use gatehouse::approval::{HeldChange, PinRow};

use super::AppStateRef;
use crate::error::{CommandError, CommandResult};

/// The changes waiting for the person, oldest first.
#[tauri::command]
pub fn held_changes(state: AppStateRef<'_>) -> CommandResult<Vec<HeldChange>> {
    Ok(state.hub()?.approvals().changes())
}

/// Approves a held change (its content becomes the pin) or keeps the approved version; the
/// changes still waiting.
#[tauri::command]
pub fn answer_change(
    state: AppStateRef<'_>,
    id: String,
    allow: bool,
) -> CommandResult<Vec<HeldChange>> {
    let hub = state.hub()?;
    hub.approvals()
        .answer_change(&id, allow)
        .map_err(CommandError::failed)?;
    Ok(hub.approvals().changes())
}

/// Every pin: each server's tools, prompts, instructions and apps.
#[tauri::command]
pub fn pins(state: AppStateRef<'_>) -> CommandResult<Vec<PinRow>> {
    Ok(state.hub()?.approvals().pins())
}

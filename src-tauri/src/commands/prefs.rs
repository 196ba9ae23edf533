//! Settings: the approval default and patience, the gateway's address (saved, and the one it
//! listens on now, with what overrode it).

use serde::Serialize;

use super::AppStateRef;
use crate::error::CommandResult;

/// What the Settings view shows and edits.
#[derive(Serialize)]
pub struct Settings {
    approval_default: gatehouse::config::ApprovalDefault,
    approval_timeout_secs: u64,
    /// The address in the config (used from the next start).
    listen: String,
    /// The address the running gateway listens on.
    running_url: Option<String>,
    /// The address given with `--listen` or `GATEHOUSE_LISTEN` when the app started, which
    /// overrides the config's for this run.
    listen_override: Option<String>,
    /// Which of the two gave it, as the person would type it.
    listen_given_by: Option<&'static str>,
}

#[tauri::command]
pub fn settings(state: AppStateRef<'_>) -> CommandResult<Settings> {
    let config = state.hub()?.config();
    let listen_override = match &state.opts.endpoint {
        gatehouse::service::Endpoint::Http { listen: Some(a) } => Some(a.to_string()),
        _ => None,
    };
    // The flag wins over the variable: the variable gave it when it names the same address.
    let from_env = std::env::var("GATEHOUSE_LISTEN")
        .ok()
        .and_then(|v| v.parse::<std::net::SocketAddr>().ok());
    let listen_given_by = listen_override.as_ref().map(|a| {
        if from_env.is_some_and(|e| e.to_string() == *a) {
            "the GATEHOUSE_LISTEN variable"
        } else {
            "--listen"
        }
    });
    Ok(Settings {
        approval_default: config.approval.default,
        approval_timeout_secs: config.approval.timeout_secs,
        listen: config.gateway.listen.to_string(),
        running_url: state.gateway_info().map(|i| i.url),
        listen_override,
        listen_given_by,
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

//! The argument rules' commands: listed, added from a held call's offer (checked against the
//! tool's definition first), removed by name, and tried against the recorded Activity — each
//! one `HubHandle` operation.

use super::AppStateRef;
use crate::error::CommandResult;

/// Every rule of the config, by its name in it.
#[tauri::command]
pub fn rules(state: AppStateRef<'_>) -> CommandResult<Vec<gatehouse::hub::ListedRule>> {
    Ok(state.hub()?.rules())
}

/// Adds a rule to a server's tool — for every client, or for client profile `client` only —;
/// the warnings it carries (a rule that can never match is refused instead, nothing saved).
#[tauri::command]
pub async fn add_rule(
    state: AppStateRef<'_>,
    server: String,
    tool: String,
    client: Option<String>,
    rule: gatehouse::config::rules::Rule,
) -> CommandResult<Vec<String>> {
    Ok(state
        .hub()?
        .add_rule(&server, &tool, client.as_deref(), rule)
        .await?)
}

/// Removes the rule named `at` if it is still the one shown; the rules after.
#[tauri::command]
pub async fn remove_rule(
    state: AppStateRef<'_>,
    at: String,
    rule: gatehouse::config::rules::Rule,
) -> CommandResult<Vec<gatehouse::hub::ListedRule>> {
    let hub = state.hub()?;
    hub.remove_rule(&at, Some(rule)).await?;
    Ok(hub.rules())
}

/// The config's rules over the last `days` days of Activity (30 when absent).
#[tauri::command]
pub async fn test_rules(
    state: AppStateRef<'_>,
    days: Option<u64>,
) -> CommandResult<gatehouse::hub::RulesReport> {
    let days = days
        .unwrap_or(30)
        .clamp(1, gatehouse::activity::RETENTION_DAYS);
    let since_ms = gatehouse::logs::now_ms().saturating_sub(days * 86_400_000);
    let scope = gatehouse::hub::ReplayScope {
        since_ms,
        ..Default::default()
    };
    Ok(state.hub()?.rules_test(scope).await?)
}

//! The Add dialog's "Find in the registry": search the MCP Registry, what a server needs, and
//! adding it pinned — the exact command and every variable shown first, a variable that changes
//! how a runtime loads code added only when the person ticks it by name, a runner that is not
//! installed said before anything is added, its secrets going straight from the password fields
//! to the keychain, and the outcome the server's real state once it started.

use super::AppStateRef;
use crate::error::CommandError;
use crate::error::CommandResult;
use crate::state::AppState;
use serde::Serialize;
use serde_json::Value;

use std::collections::BTreeMap;

use gatehouse::registry::entry::{self, Inputs};
use gatehouse::registry::model::ServerDetail;
use gatehouse::registry::Registry;

/// One search result, as the dialog lists it.
#[derive(Serialize)]
pub struct Found {
    name: String,
    version: String,
    description: String,
    /// `npm`, `pypi`, `oci`, `remote`…
    transports: Vec<String>,
    /// The variables it needs (secrets marked).
    needs: Vec<String>,
    /// The ones it can take but does without (secrets marked).
    optional: Vec<String>,
    /// What to install before it can run here, when something is missing.
    missing: Option<String>,
}

/// What adding a server would do: the id, the command, the pin, the secrets to type in.
#[derive(Serialize)]
pub struct Plan {
    id: String,
    /// The version shown: what "Add" installs, whatever the registry has published since.
    version: String,
    runs: String,
    pinned: String,
    /// The exact command (empty for a remote).
    command: Vec<String>,
    /// Every variable it sets, with its value (a secret as `(secret)`; a value to give as
    /// `(your value)`).
    env: BTreeMap<String, String>,
    secrets: Vec<SecretField>,
    /// Plain values to give (a required one has no usable default).
    fields: Vec<entry::Field>,
    /// Variables refused unless ticked by name, with why.
    risky: Vec<RiskyVar>,
    /// What to install before it can run here.
    missing: Option<String>,
    /// Why it cannot be added (then nothing else is filled).
    error: Option<String>,
}

#[derive(Serialize)]
pub struct RiskyVar {
    var: String,
    why: String,
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
    let said = |v: &&gatehouse::registry::model::KeyValue| match v.is_secret {
        true => format!("{} (secret)", v.name),
        false => v.name.clone(),
    };
    let vars: Vec<_> = d
        .packages
        .iter()
        .flat_map(|p| p.environment_variables.iter())
        .collect();
    let needs = vars.iter().filter(|v| v.is_required).map(said).collect();
    let optional = vars.iter().filter(|v| !v.is_required).map(said).collect();
    let missing = plan_for(d, &Inputs::default()).ok().and_then(|p| {
        p.command
            .first()
            .and_then(|c| gatehouse::registry::runner_missing(c))
    });
    Found {
        name: d.name.clone(),
        version: d.version.clone(),
        description: d.description.clone(),
        transports,
        needs,
        optional,
        missing,
    }
}

/// The plan with what the person gave; required plain values not given yet stand as
/// `(your value)` (the form asks for them), risky variables allowed only when named.
fn plan_for(d: &ServerDetail, inputs: &Inputs) -> Result<entry::Planned, String> {
    entry::plan(
        d,
        &entry::id_for(&d.name),
        inputs,
        gatehouse::registry::container_engine(),
    )
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
    let (fields, risky) = entry::needs(&d);
    // Shown with every value: those to give as placeholders, the risky ones as they would be.
    let mut shown = Inputs::default();
    for f in fields.iter().filter(|f| f.default.is_none()) {
        shown.env.insert(f.var.clone(), "(your value)".into());
    }
    shown.allow_env = risky.iter().map(|(v, _)| v.clone()).collect();
    let risky = risky
        .into_iter()
        .map(|(var, why)| RiskyVar { var, why })
        .collect();
    Ok(match plan_for(&d, &shown) {
        Ok(p) => Plan {
            id,
            version,
            missing: p
                .command
                .first()
                .and_then(|c| gatehouse::registry::runner_missing(c)),
            runs: p.runs,
            pinned: p.pinned,
            command: p.command,
            env: p.env,
            secrets: p
                .ask
                .into_iter()
                .map(|a| SecretField {
                    var: a.var,
                    description: a.description,
                    required: a.required,
                })
                .collect(),
            fields,
            risky,
            error: None,
        },
        Err(e) => Plan {
            id,
            version,
            runs: String::new(),
            pinned: String::new(),
            command: Vec::new(),
            env: BTreeMap::new(),
            secrets: Vec::new(),
            fields: Vec::new(),
            risky,
            missing: None,
            error: Some(e),
        },
    })
}

/// Adds version `version` of `name` — the one its plan showed, whatever the registry has
/// published since — as `id`, with the plain values given (`env`) and the risky variables the
/// person ticked (`allow_env`): its secrets (variable → value) into the keychain first, then the
/// entry, pinned with its artifact's integrity; then waits for the server's real state and says
/// it (running, or why not).
#[tauri::command]
#[allow(clippy::too_many_arguments)]
pub async fn registry_add(
    state: AppStateRef<'_>,
    name: String,
    version: String,
    id: String,
    secrets: BTreeMap<String, String>,
    env: Option<BTreeMap<String, String>>,
    allow_env: Option<Vec<String>>,
) -> CommandResult<Added> {
    let reg = registry(&state)?;
    let d = reg
        .get(&name, Some(&version))
        .await
        .map_err(CommandError::failed)?
        .server;
    let id = id.trim().to_owned();
    let inputs = Inputs {
        env: env
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, v)| !v.trim().is_empty())
            .collect(),
        allow_env: allow_env.unwrap_or_default().into_iter().collect(),
        ..Inputs::default()
    };
    let planned = entry::plan(&d, &id, &inputs, gatehouse::registry::container_engine())
        .map_err(CommandError::invalid)?;
    if let Some(m) = planned
        .command
        .first()
        .and_then(|c| gatehouse::registry::runner_missing(c))
    {
        return Err(CommandError::invalid(format!("{m} — nothing was added")));
    }
    let hub = state.hub()?;
    let mut entry = planned.entry;
    if let Some(url) = entry.get("url").and_then(Value::as_str) {
        use gatehouse::supervisor::remote::{check_address, AddressError};
        // Refused where it leads; a name that does not resolve now is checked at each connect.
        if let Err(AddressError::Refused(e)) = check_address(url, false).await {
            return Err(CommandError::invalid(format!("{e} — nothing was added")));
        }
    }
    let min_age = hub.config().registry.min_age_days();
    let note = match gatehouse::registry::pin::record(&mut entry, min_age).await {
        Ok(n) => n,
        Err(e) => Some(format!("its artifact's integrity is not recorded: {e}")),
    };
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
    hub.check_server(None, &id, &entry)?;
    hub.save_server(None, &id, &entry).await?;
    // The outcome is the server's real state, not "added": running, or why not.
    let (outcome, ok) = settled(&hub, &id).await;
    let message = match note {
        Some(n) => format!("{id} {outcome}; pinned to {} ({n})", planned.pinned),
        None => format!("{id} {outcome}; pinned to {}", planned.pinned),
    };
    Ok(Added { message, ok })
}

/// What adding a server came to.
#[derive(Serialize)]
pub struct Added {
    /// The sentence for the person.
    message: String,
    /// It runs (or waits for a sign-in); false when it failed to start.
    ok: bool,
}

/// Waits (at most its start-up timeout and 5 s, 65 s in all) for a server just added to settle,
/// and says how: running with its tools, waiting for a sign-in, failed with why, still starting.
async fn settled(hub: &gatehouse::HubHandle, id: &str) -> (String, bool) {
    use gatehouse::State;
    let Ok(h) = hub.server(id) else {
        return ("was added".into(), true);
    };
    let limit = hub
        .config()
        .servers
        .iter()
        .find(|(k, _)| k.as_str() == id)
        .map_or(60, |(_, s)| s.startup_timeout_secs)
        .min(60)
        + 5;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(limit);
    loop {
        let s = h.status();
        match s.state {
            State::Running => return (format!("was added and runs ({} tools)", s.tools), true),
            State::NeedsSignIn => return ("was added and waits for you to sign in".into(), true),
            State::Failed => {
                return (
                    format!(
                        "was added but failed to start: {}",
                        s.last_error.as_deref().unwrap_or("no reason given")
                    ),
                    false,
                )
            }
            State::Restarting if s.consecutive_failures > 0 => {
                return (
                    format!(
                        "was added but failed to start (it will try again): {}",
                        s.last_error.as_deref().unwrap_or("no reason given")
                    ),
                    false,
                )
            }
            State::Stopped if !s.enabled => return ("was added, turned off".into(), true),
            _ => {}
        }
        if std::time::Instant::now() >= deadline {
            return (
                format!("was added and is still starting after {limit} s"),
                true,
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

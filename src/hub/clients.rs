//! The hub's client profiles: what each sees, their tokens, and the profile edits both front
//! ends make (the control socket's handlers and the app's commands are each one call here).

use std::sync::Arc;

use super::start::register_client_tokens;
use super::{HubError, HubHandle};
use crate::config::ServerId;
use crate::naming::exposed_name;
use crate::profiles::ClientTokens;
use crate::profiles::Connected;
use crate::secrets::Redactions;

/// Every client profile (the `default` one first) with the tools it sees now, and the clients
/// of each among `connected`.
pub(super) fn list(hub: &HubHandle, connected: &[Connected]) -> Vec<crate::profiles::ClientInfo> {
    use crate::profiles::{known_limit, ClientInfo, DEFAULT_PROFILE};
    let config = hub.config();
    let everything = crate::config::ClientProfile::default();
    let count = |profile: &crate::config::ClientProfile| {
        hub.servers()
            .iter()
            .filter(|h| h.status().state.offers_tools())
            .map(|h| {
                let server_cfg = config.servers.get(h.id());
                h.tools()
                    .iter()
                    .filter(|t| {
                        let hidden = server_cfg
                            .and_then(|c| c.tools.get(&t.name))
                            .and_then(|p| p.enabled)
                            == Some(false);
                        let exposed = exposed_name(h.id().as_str(), &t.name);
                        !hidden && profile.sees_tool(h.id().as_str(), &exposed)
                    })
                    .count()
            })
            .sum()
    };
    let of = |profile: &str| -> Vec<Connected> {
        connected
            .iter()
            .filter(|c| c.profile == profile)
            .cloned()
            .collect()
    };
    // The names each profile was shown (`gateway::names` keeps them), for the ones over its
    // client's budget.
    let given = hub.client_names();
    let too_long = |id: &str| -> Vec<String> {
        let budget = crate::naming::budget_for((id != DEFAULT_PROFILE).then_some(id));
        given
            .get(id)
            .map(|names| {
                names
                    .values()
                    .filter(|n| n.chars().count() > budget)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = vec![ClientInfo {
        id: DEFAULT_PROFILE.into(),
        servers: None,
        tools: count(&everything),
        limit: None,
        connected: of(DEFAULT_PROFILE),
        approval_timeout_secs: config.approval.timeout_secs,
        too_long: too_long(DEFAULT_PROFILE),
    }];
    for (id, profile) in &config.clients {
        out.push(ClientInfo {
            id: id.to_string(),
            servers: profile
                .servers
                .as_ref()
                .map(|s| s.iter().map(|x| x.to_string()).collect()),
            tools: count(profile),
            limit: known_limit(id.as_str()),
            connected: of(id.as_str()),
            approval_timeout_secs: config.approval.timeout_secs,
            too_long: too_long(id.as_str()),
        });
    }
    out
}

/// A new token for client profile `id` in `tokens` (the old one stops working, its sessions
/// end), known to the redactions from now on.
pub(super) async fn rotate(
    tokens: &Arc<ClientTokens>,
    redactions: &Redactions,
    id: &str,
) -> Result<String, HubError> {
    let owned = tokens.clone();
    let id = id.to_owned();
    let token = tokio::task::spawn_blocking(move || owned.rotate(&id))
        .await
        .map_err(|e| HubError::Config(e.to_string()))?
        .map_err(HubError::Config)?;
    register_client_tokens(redactions, tokens);
    Ok(token)
}

/// Sets which servers client profile `id` sees (`None`: all), creating the profile if it is
/// new and keeping its other settings — the one profile edit the CLI and the app both make.
/// The names are checked when the file is edited, under its lock.
pub(super) async fn set_servers(
    hub: &HubHandle,
    id: &str,
    servers: Option<Vec<String>>,
) -> Result<(), HubError> {
    let id = id.trim().to_owned();
    let servers = servers
        .map(|s| {
            s.iter()
                .map(|x| ServerId::parse(x.trim()))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .map_err(HubError::Config)?;
    hub.edit_config(move |c| {
        let mut profile = c
            .clients
            .iter()
            .find(|(k, _)| k.as_str() == id)
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        profile.servers = servers;
        c.with_client(&id, profile)
    })
    .await
}

/// The token a client of profile `client` presents, from `tokens`: `None` for the `default`
/// profile (none named, or `default`: the gateway token), the profile's own otherwise; an
/// unknown profile says how to see and add them.
pub(super) fn token_of(
    tokens: &ClientTokens,
    client: Option<&str>,
) -> Result<Option<String>, HubError> {
    match client.map(str::trim) {
        None | Some("") => Ok(None),
        Some(c) if c == crate::profiles::DEFAULT_PROFILE => Ok(None),
        Some(c) => match tokens.token(c) {
            Some(t) => Ok(Some(t.to_string())),
            None => Err(HubError::Config(format!(
                "there is no client profile \"{c}\"; see them with `gatehouse clients`, add one with `gatehouse clients add {c}`"
            ))),
        },
    }
}

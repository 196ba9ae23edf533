//! The hub's client profiles: what each sees, their tokens, and the profile edits both front
//! ends make (the control socket's handlers and the app's commands are each one call here).

use std::sync::Arc;

use super::{register_client_tokens, HubError, HubHandle};
use crate::config::ServerId;
use crate::naming::exposed_name;
use crate::profiles::Connected;

impl HubHandle {
    /// Sets where [`HubHandle::clients`] learns which clients are connected: the gateway over
    /// this hub (a later one replaces an earlier one's view).
    pub fn set_connected_view(&self, view: impl Fn() -> Vec<Connected> + Send + Sync + 'static) {
        *crate::sync::lock(&self.inner.connected) = Some(Box::new(view));
    }

    /// Every client profile (the `default` one first) with the tools it sees now.
    pub fn clients(&self) -> Vec<crate::profiles::ClientInfo> {
        use crate::profiles::{known_limit, ClientInfo, DEFAULT_PROFILE};
        let config = self.config();
        let everything = crate::config::ClientProfile::default();
        let count = |profile: &crate::config::ClientProfile| {
            self.servers()
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
        let connected = crate::sync::lock(&self.inner.connected)
            .as_ref()
            .map(|v| v())
            .unwrap_or_default();
        let of = |profile: &str| -> Vec<Connected> {
            connected
                .iter()
                .filter(|c| c.profile == profile)
                .cloned()
                .collect()
        };
        // The names each profile was shown (`gateway::names` keeps them), for the ones over its
        // client's budget.
        let given = self.client_names();
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

    /// Client profiles' tokens.
    pub fn client_tokens(&self) -> &Arc<crate::profiles::ClientTokens> {
        &self.inner.client_tokens
    }

    /// A new token for client profile `id` (the old one stops working, its sessions end).
    pub async fn rotate_client_token(&self, id: &str) -> Result<String, HubError> {
        let tokens = self.inner.client_tokens.clone();
        let id = id.to_owned();
        let token = tokio::task::spawn_blocking(move || tokens.rotate(&id))
            .await
            .map_err(|e| HubError::Config(e.to_string()))?
            .map_err(HubError::Config)?;
        register_client_tokens(&self.inner.redactions, &self.inner.client_tokens);
        Ok(token)
    }

    /// Adds (or replaces) client profile `id` in the config file and applies it (its token is
    /// created then).
    pub async fn save_client(
        &self,
        id: &str,
        profile: crate::config::ClientProfile,
    ) -> Result<(), HubError> {
        let id = id.to_owned();
        self.edit_config(move |c| c.with_client(&id, profile)).await
    }

    /// Sets which servers client profile `id` sees (`None`: all), creating the profile if it is
    /// new and keeping its other settings — the one profile edit the CLI and the app both make.
    /// The names are checked when the file is edited, under its lock.
    pub async fn set_client_servers(
        &self,
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
        self.edit_config(move |c| {
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

    /// Removes client profile `id` from the config file; its token stops working at once.
    pub async fn remove_client(&self, id: &str) -> Result<(), HubError> {
        let id = id.to_owned();
        self.edit_config(move |c| c.without_client(&id)).await
    }

    /// The token a client of profile `client` presents: `None` for the `default` profile
    /// (none named, or `default`: the gateway token), the profile's own otherwise; an unknown
    /// profile says how to see and add them.
    pub fn profile_token(&self, client: Option<&str>) -> Result<Option<String>, HubError> {
        match client.map(str::trim) {
            None | Some("") => Ok(None),
            Some(c) if c == crate::profiles::DEFAULT_PROFILE => Ok(None),
            Some(c) => match self.inner.client_tokens.token(c) {
                Some(t) => Ok(Some(t.to_string())),
                None => Err(HubError::Config(format!(
                    "there is no client profile \"{c}\"; see them with `gatehouse clients`, add one with `gatehouse clients add {c}`"
                ))),
            },
        }
    }
}

//! The hub's tools as the policy sees them: what a call to one does and why it asks (the layers
//! gathered for `approval::policy::evaluate`), and the tool lists — the whole hub's, or what one
//! client profile sees.

use super::{HubError, HubHandle, ToolInfo};
use crate::approval::policy::{self, Decision};
use crate::approval::ApprovalBroker;
use crate::config::{Config, ServerId};
use crate::naming::exposed_name;

/// A tool's definition as Gatehouse knows it, parsed: the running server's listing, else
/// the definition pinned earlier (what rules are checked against).
pub(super) fn known_definition(
    hub: &HubHandle,
    server: &str,
    tool: &str,
) -> Option<serde_json::Value> {
    let live = hub.server(server).ok().and_then(|h| {
        let tools = h.tools();
        let t = tools.iter().find(|t| t.name == tool)?;
        serde_json::from_str(t.raw.get()).ok()
    });
    live.or_else(|| hub.approvals().pinned(server, tool))
}

/// Refuses every entry with a rule that can never match its tool's definition as Gatehouse
/// knows it (the running server's listing, else the pin): the entry becomes `invalid`, its
/// fix naming the argument. Called on every config the hub takes.
pub(super) fn refuse_unmatchable_rules(hub: &HubHandle, config: &mut Config) {
    let mut refused = Vec::new();
    for (id, server) in &config.servers {
        for (tool, policy) in server.tools.iter().filter(|(_, p)| !p.rules.is_empty()) {
            let Some(def) = known_definition(hub, id.as_str(), tool) else {
                continue;
            };
            let problems = crate::approval::rules::check(tool, &policy.rules, &def);
            if let Some(p) = problems.into_iter().find(|p| p.refuse) {
                let error = crate::config::EntryError {
                    field: Some("tools"),
                    message: format!("tools.{}.{}", crate::text::reveal(tool), p.text),
                    fix: p.fix,
                };
                refused.push((id.clone(), error));
                break;
            }
        }
    }
    for (id, error) in refused {
        config.refuse_entry(&id, error);
    }
}

/// What a call to one tool does, and why it asks, under `config` and — for a call through
/// a client profile — that profile. A quarantined tool's `readOnlyHint` is not believed
/// (the `approvals` say which are; see `approval::pins`). The layers are gathered here for
/// `approval::policy::evaluate`: the gateway, every tool list and [`list`] ask this.
pub(super) fn verdict(
    approvals: &ApprovalBroker,
    config: &Config,
    server: &ServerId,
    def: &crate::supervisor::ToolDef,
    profile: Option<&crate::config::ClientProfile>,
    rule: Option<&crate::approval::rules::Ruling>,
) -> policy::Verdict {
    let Some(cfg) = config.servers.get(server) else {
        return policy::Verdict {
            decision: Decision::Ask,
            reason: Some(crate::approval::AskReason::NotReadOnly),
            by_rule: false,
        };
    };
    // The exposed name is made only for a profile's layer (no allocation on the common path).
    let profile = profile.map(|p| {
        let exposed = exposed_name(server.as_str(), &def.name);
        policy::ProfileLayer {
            sees: p.sees_tool(server.as_str(), &exposed),
            flag: p
                .tool_policy(server.as_str(), &exposed)
                .and_then(|t| t.requires_approval),
            default: p.approval.as_ref().and_then(|a| a.default),
        }
    });
    policy::evaluate(&policy::Layers {
        server: cfg,
        tool: &def.name,
        default: config.approval.default,
        claims_read_only: def.read_only,
        read_only_believed: def.read_only && !approvals.quarantined(server.as_str(), &def.name),
        server_asks: def.asks_for_person,
        profile,
        rule,
    })
}

/// Tools of running servers (all, or server `id`'s) as client profile `profile` sees them: only
/// the tools it sees, each with what a call from it does (`None`: the gateway token's view,
/// every tool).
pub(super) fn list(
    hub: &HubHandle,
    id: Option<&str>,
    profile: Option<&str>,
) -> Result<Vec<ToolInfo>, HubError> {
    let servers = match id {
        Some(id) => vec![hub.server(id)?],
        None => hub.servers(),
    };
    let config = hub.config();
    let profile_id = profile;
    let profile = match profile {
        None => None,
        Some(p) if p == crate::profiles::DEFAULT_PROFILE => None,
        Some(p) => Some(
            config
                .clients
                .iter()
                .find(|(k, _)| k.as_str() == p)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| {
                    HubError::Config(format!(
                        "there is no client profile \"{p}\"; see them with `gatehouse clients`"
                    ))
                })?,
        ),
    };
    // The names each profile was shown (`gateway::names` keeps them in this file).
    let key = profile_id.unwrap_or(crate::profiles::DEFAULT_PROFILE);
    let shown = hub.client_names().remove(key).unwrap_or_default();
    let budget =
        crate::naming::budget_for(profile_id.filter(|p| *p != crate::profiles::DEFAULT_PROFILE));
    let mut out = Vec::new();
    for h in servers {
        for t in h.tools().iter() {
            let approval =
                verdict(hub.approvals(), &config, h.id(), t, profile.as_ref(), None).decision;
            if profile.is_some() && approval == Decision::Disabled {
                continue; // outside the profile a tool does not exist for that client
            }
            let meta = t.meta();
            let name = exposed_name(h.id().as_str(), &t.name);
            out.push(ToolInfo {
                server: h.id().to_string(),
                shown: shown.get(&name).cloned(),
                budget,
                name,
                tool: t.name.clone(),
                title: meta.title.clone(),
                description: meta.description.clone(),
                annotations: meta.annotations.clone(),
                approval,
            });
        }
    }
    Ok(out)
}

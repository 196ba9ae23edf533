//! Per-tool settings (`ToolPolicy`: on `servers.ID.tools.NAME` and `clients.ID.tools.KEY`) and
//! spotlighting: a tool's text results marked as untrusted data for the model, opt-in per server
//! (`"spotlight": true`) or per tool (a profile's tool entry wins over the server's tool entry,
//! which wins over the server).

use serde::{Deserialize, Serialize};

use super::{rules, ClientProfile, Config, RateLimit, ResultBudget, ServerId};

/// Per-tool settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// Ask before every call (`true`) or never (`false`); unset follows the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_approval: Option<bool>,
    /// `false` hides the tool and refuses calls to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Check this tool's arguments against its inputSchema (`true`) or not (`false`); unset
    /// follows the server's `validate_arguments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate_arguments: Option<bool>,
    /// Calls a minute of this tool, counted for each client profile apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Argument rules, in order: a matching deny refuses, else a matching allow runs the call
    /// without asking (see [`rules`]).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "rules::de_rules"
    )]
    pub rules: Vec<rules::Rule>,
    /// The most bytes of one result of this tool a client receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_budget: Option<ResultBudget>,
    /// Mark this tool's text as untrusted data for the model (`true`) or not (`false`); unset
    /// follows the server's `spotlight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spotlight: Option<bool>,
}

/// Whether the text of `server`'s tool `tool` (exposed as `exposed`) reaches `profile` marked as
/// untrusted data.
pub fn spotlight_for(
    config: &Config,
    profile: Option<&ClientProfile>,
    server: &ServerId,
    tool: &str,
    exposed: &str,
) -> bool {
    let own = profile.and_then(|p| p.tool_policy(server.as_str(), exposed)?.spotlight);
    let entry = config.servers.get(server);
    let servers_tool = entry.and_then(|s| s.tools.get(tool)?.spotlight);
    own.or(servers_tool)
        .unwrap_or_else(|| entry.is_some_and(|s| s.spotlight))
}

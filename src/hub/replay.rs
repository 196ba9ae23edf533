//! `gatehouse rules test`: a config's argument rules run over the recorded Activity — for each
//! past call, the decision it got then and the one the rules (with the config's flags and
//! default) would give now — and the rules that cannot match, listed first. Earlier answers
//! ("session", "always", exact grants) are left out: they say what a person said, not the rules.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{HubError, HubHandle};
use crate::approval::policy::Decision;
use crate::config::{Config, ServerId};
use crate::secrets::Redactions;
use crate::supervisor::ToolDef;

/// One past call, then and under the rules.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Replayed {
    /// The activity row's id.
    pub id: u64,
    /// When the call arrived (RFC 3339, UTC).
    pub time: String,
    /// The server's id.
    pub server: String,
    /// The server's own tool name.
    pub tool: String,
    /// The decision it got then (the Activity's `decision`).
    pub was: String,
    /// What the rules would do now: `allow`, `deny` or `ask`.
    pub would: String,
    /// The rule that would decide it, when one would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// What `rules test` reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RulesReport {
    /// Rules that cannot match (or not as written), first.
    pub warnings: Vec<String>,
    /// The past calls, newest first.
    pub calls: Vec<Replayed>,
}

/// Which calls to replay.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ReplayScope {
    /// Only this server's calls.
    #[serde(default)]
    pub server: Option<String>,
    /// Only this tool's (the server's own name).
    #[serde(default)]
    pub tool: Option<String>,
    /// Only calls since this time (ms since the epoch).
    #[serde(default)]
    pub since_ms: u64,
    /// The config whose rules are tried (absent: the one the hub runs).
    #[serde(default)]
    pub config: Option<std::path::PathBuf>,
}

/// Runs a config's rules over the recorded Activity (see the module); a definition read from a
/// pin is masked with `redactions`.
pub(super) async fn rules_test(
    hub: &HubHandle,
    redactions: &Arc<Redactions>,
    scope: ReplayScope,
) -> Result<RulesReport, HubError> {
    let config = match &scope.config {
        Some(path) => {
            let path = path.clone();
            let loaded = tokio::task::spawn_blocking(move || Config::load(&path))
                .await
                .map_err(|e| HubError::Config(e.to_string()))?;
            Arc::new(loaded.map_err(|e| HubError::Config(e.to_string()))?)
        }
        None => hub.config(),
    };
    let rows = hub
        .activity()
        .recent_of(
            crate::activity::MAX_ROWS as usize,
            scope.server.clone(),
            None,
        )
        .await
        .map_err(HubError::Failed)?;
    // Paths are resolved on the disk for every call a path rule sees: off the async threads.
    let (hub, redactions) = (hub.clone(), redactions.clone());
    tokio::task::spawn_blocking(move || replay(&hub, &redactions, &config, &scope, &rows))
        .await
        .map_err(|e| HubError::Failed(e.to_string()))
}

fn replay(
    hub: &HubHandle,
    redactions: &Arc<Redactions>,
    config: &Config,
    scope: &ReplayScope,
    rows: &[crate::activity::CallRecord],
) -> RulesReport {
    let mut report = RulesReport {
        warnings: rule_warnings(hub, config, scope),
        calls: Vec::new(),
    };
    for r in rows.iter().filter(|r| r.time_ms >= scope.since_ms) {
        if scope.tool.as_ref().is_some_and(|t| t != &r.tool) {
            continue;
        }
        let Ok(server) = ServerId::parse(&r.server) else {
            continue;
        };
        let Some(def) = definition(hub, redactions, &r.server, &r.tool) else {
            continue;
        };
        let profile = r
            .profile
            .as_deref()
            .and_then(|p| config.clients.iter().find(|(k, _)| k.as_str() == p))
            .map(|(k, v)| (k.as_str(), v));
        // The row's arguments as recorded: a text the gateway read (older rows, before it
        // refused what it cannot read, may hold one it could not: such a row is left out).
        let Ok(args) = crate::arguments::read(Some(&r.arguments)) else {
            continue;
        };
        let ruling = crate::approval::rules::for_call(
            config,
            (&r.server, &r.tool, def.raw.get()),
            profile,
            args.as_ref(),
        );
        let profile = profile.map(|p| p.1);
        let verdict = super::tools::verdict(
            hub.approvals(),
            config,
            &server,
            &def,
            profile,
            ruling.as_ref(),
        );
        let would = match verdict.decision {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny | Decision::Disabled => "deny",
        };
        report.calls.push(Replayed {
            id: r.id,
            time: crate::logs::Utc::from_secs(r.time_ms / 1000).rfc3339(),
            server: r.server.clone(),
            tool: r.tool.clone(),
            was: r.decision.as_str().to_owned(),
            would: would.to_owned(),
            rule: ruling.filter(|_| verdict.by_rule).map(|r| r.name),
        });
    }
    report
}

/// A tool's definition as Gatehouse knows it: the running server's listing, else its pin,
/// else its name alone.
fn definition(
    hub: &HubHandle,
    redactions: &Arc<Redactions>,
    server: &str,
    tool: &str,
) -> Option<Arc<ToolDef>> {
    let live = hub.server(server).ok().and_then(|h| {
        let tools = h.tools();
        tools.iter().find(|t| t.name == tool).cloned()
    });
    if live.is_some() {
        return live;
    }
    let parse = |v: &serde_json::Value| {
        let raw = serde_json::value::to_raw_value(v).ok()?;
        ToolDef::parse(raw, redactions.clone()).ok()
    };
    // Not running: its pin (the running server's listing was looked at above, whole).
    hub.approvals()
        .pinned(server, tool)
        .and_then(|v| parse(&v))
        .or_else(|| parse(&serde_json::json!({ "name": tool })))
        .map(Arc::new)
}

/// The rules of `config` (within `scope`) that cannot match, or not as written, as lines.
fn rule_warnings(hub: &HubHandle, config: &Config, scope: &ReplayScope) -> Vec<String> {
    let wanted = |server: &str, tool: &str| {
        scope.server.as_ref().is_none_or(|s| s == server)
            && scope.tool.as_ref().is_none_or(|t| t == tool)
    };
    let mut out = Vec::new();
    // A server's tools' rules, then a profile's (keyed by exposed name; `SERVER__*` keys are
    // checked for what they can be: their servers' reach).
    let mut lists = Vec::new();
    for (id, server) in &config.servers {
        for (tool, policy) in &server.tools {
            let at = format!("servers.{id}.tools.{}", crate::text::reveal(tool));
            lists.push((at, id.as_str(), Some(tool.as_str()), &policy.rules));
        }
    }
    for (profile, p) in &config.clients {
        for (key, policy) in &p.tools {
            let Some((server, tool)) = crate::naming::split_server(key) else {
                continue;
            };
            let at = format!("clients.{profile}.tools.{}", crate::text::reveal(key));
            lists.push((at, server, (tool != "*").then_some(tool), &policy.rules));
        }
    }
    for (at, server, tool, rules) in lists {
        if rules.is_empty() || !wanted(server, tool.unwrap_or("*")) {
            continue;
        }
        let def = tool.and_then(|t| super::tools::known_definition(hub, server, t));
        let mut problems = match (tool, def) {
            (Some(t), Some(def)) => crate::approval::rules::check(t, rules, &def),
            _ => Vec::new(),
        };
        problems.extend(super::rules::out_of_reach(hub, server, rules));
        for p in problems {
            let what = if p.refuse {
                "never matches"
            } else {
                "may not match"
            };
            out.push(format!(
                "{at}.rules[{}] {what}: {}; {}",
                p.rule, p.text, p.fix
            ));
        }
    }
    for (key, e) in &config.invalid {
        out.push(format!(
            "servers.{} cannot be read, so its rules are not tried: {}",
            crate::text::reveal(key),
            e.error
        ));
    }
    out
}

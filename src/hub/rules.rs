//! The argument rules of the config as the person manages them: listed with the name each has in
//! the config (`servers.fs.tools.write_file.rules[0]`), added from a held call (checked against
//! the tool's definition first: a rule that can never match is refused, never saved), removed
//! by name (only if it is still the rule that was shown).

use serde::{Deserialize, Serialize};

use super::{HubError, HubHandle};
use crate::config::rules::Rule;
use crate::config::{Config, ToolPolicy};

/// One rule of the config.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ListedRule {
    /// Its name in the config (`servers.fs.tools.write_file.rules[0]`,
    /// `clients.cursor.tools.fs__write_file.rules[1]`).
    pub at: String,
    /// The server's id (a server's rule) or the client profile's (a profile's).
    pub owner: String,
    /// `server` or `client`.
    pub kind: String,
    /// The tool's key: the server's own name, or the profile's exposed name (`fs__write_file`,
    /// `fs__*`).
    pub tool: String,
    /// The rule as the config has it.
    pub rule: Rule,
    /// The rule in words.
    pub text: String,
}

/// The rules of `config`, servers' first, in config order.
pub fn listed(config: &Config) -> Vec<ListedRule> {
    let mut out = Vec::new();
    let mut push =
        |kind: &str, owner: &str, tools: &std::collections::BTreeMap<String, ToolPolicy>| {
            for (tool, policy) in tools {
                for (i, rule) in policy.rules.iter().enumerate() {
                    let section = if kind == "server" {
                        "servers"
                    } else {
                        "clients"
                    };
                    out.push(ListedRule {
                        at: format!("{section}.{owner}.tools.{tool}.rules[{i}]"),
                        owner: owner.to_owned(),
                        kind: kind.to_owned(),
                        tool: tool.clone(),
                        rule: rule.clone(),
                        text: rule.describe(),
                    });
                }
            }
        };
    for (id, server) in &config.servers {
        push("server", id.as_str(), &server.tools);
    }
    for (id, profile) in &config.clients {
        push("client", id.as_str(), &profile.tools);
    }
    out
}

/// The allow rules whose folder the server's sandbox does not open (a running, confined
/// server's plan; nothing is known of one that is not running).
pub(super) fn out_of_reach(
    hub: &HubHandle,
    server: &str,
    rules: &[Rule],
) -> Vec<crate::approval::rules::Problem> {
    let Some(confined) = hub.server(server).ok().and_then(|h| h.confined()) else {
        return Vec::new();
    };
    let home = dirs::home_dir();
    crate::approval::rules::unreachable(server, rules, |p| confined.plan.reads(p), home.as_deref())
}

/// Adds `rule` to `server`'s tool `tool` (after its other rules) and applies the config: for
/// every client (the server's tool), or for client profile `profile` only (the profile's tool,
/// `clients.PROFILE.tools.SERVER__TOOL`). Checked first against the tool's definition as
/// Gatehouse knows it: a rule that can never match is refused with the reason and nothing is
/// saved. Returns the warnings (a rule that may not match as written).
pub(super) async fn add(
    hub: &HubHandle,
    (server, tool): (&str, &str),
    profile: Option<&str>,
    rule: Rule,
) -> Result<Vec<String>, HubError> {
    hub.server(server)?;
    let def = super::tools::known_definition(hub, server, tool);
    let one = std::slice::from_ref(&rule);
    let mut problems = def
        .map(|d| crate::approval::rules::check(tool, one, &d))
        .unwrap_or_default();
    problems.extend(out_of_reach(hub, server, one));
    if let Some(p) = problems.iter().find(|p| p.refuse) {
        return Err(HubError::Config(format!(
            "the rule was not saved: {}; {}",
            p.text.replacen("rules[0]", "it", 1),
            p.fix
        )));
    }
    let (server_id, tool_name) = (server.to_owned(), tool.to_owned());
    let profile = profile.map(str::to_owned);
    hub.edit_config(move |c| {
        let mut next = c.clone();
        let policy = match &profile {
            Some(p) => {
                let entry = next
                    .clients
                    .iter_mut()
                    .find(|(id, _)| id.as_str() == p)
                    .map(|(_, e)| e)
                    .ok_or_else(|| format!("there is no client profile \"{p}\" in the config"))?;
                let key = crate::naming::exposed_name(&server_id, &tool_name);
                entry.tools.entry(key).or_default()
            }
            None => {
                let entry = next
                    .servers
                    .iter_mut()
                    .find(|(id, _)| id.as_str() == server_id)
                    .map(|(_, s)| s)
                    .ok_or_else(|| format!("there is no server \"{server_id}\" in the config"))?;
                entry.tools.entry(tool_name).or_default()
            }
        };
        if policy.rules.len() >= crate::config::rules::MAX_RULES {
            return Err(format!(
                "this tool has {} rules already (the most one tool keeps)",
                crate::config::rules::MAX_RULES
            ));
        }
        policy.rules.push(rule);
        Ok(next)
    })
    .await?;
    Ok(problems
        .into_iter()
        .map(|p| format!("{}; {}", p.text, p.fix))
        .collect())
}

/// Removes the rule named `at`, if it is still `expected` (the rule as it was shown), and
/// applies the config.
pub(super) async fn remove(
    hub: &HubHandle,
    at: &str,
    expected: Option<Rule>,
) -> Result<(), HubError> {
    let at = at.to_owned();
    hub.edit_config(move |c| {
        let found = listed(c).into_iter().find(|r| r.at == at);
        let Some(found) = found else {
            return Err(format!("there is no rule {at} in the config"));
        };
        if expected.as_ref().is_some_and(|e| e != &found.rule) {
            return Err(format!(
                "{at} changed since it was shown; look at the rules again"
            ));
        }
        let index: usize = at
            .rsplit_once("rules[")
            .and_then(|(_, i)| i.trim_end_matches(']').parse().ok())
            .ok_or_else(|| format!("{at} is not a rule's name"))?;
        let mut next = c.clone();
        let tools = if found.kind == "server" {
            next.servers
                .iter_mut()
                .find(|(id, _)| id.as_str() == found.owner)
                .map(|(_, s)| &mut s.tools)
        } else {
            next.clients
                .iter_mut()
                .find(|(id, _)| id.as_str() == found.owner)
                .map(|(_, p)| &mut p.tools)
        };
        let policy = tools
            .and_then(|t| t.get_mut(&found.tool))
            .ok_or_else(|| format!("there is no rule {at} in the config"))?;
        policy.rules.remove(index);
        Ok(next)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each rule is named as `rules test`, the activity log and a deny's refusal name it.
    #[test]
    fn rules_are_listed_by_their_names_in_the_config() {
        let c = Config::parse(
            r#"{"servers": {"fs": {"command": "x", "tools": {"w": {"rules": [
                {"allow": {"path": {"under": "/a"}}}, {"deny": {"path": {"glob": "*.key"}}}]}}}},
               "clients": {"cursor": {"tools": {"fs__w": {"rules": [{"deny": {"n": {"min": 3}}}]}}}}}"#,
            "t".as_ref(),
        )
        .unwrap();
        let at: Vec<String> = listed(&c).into_iter().map(|r| r.at).collect();
        assert_eq!(
            at,
            [
                "servers.fs.tools.w.rules[0]",
                "servers.fs.tools.w.rules[1]",
                "clients.cursor.tools.fs__w.rules[0]"
            ]
        );
    }
}

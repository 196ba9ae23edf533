//! Result budgets: the most bytes of one tool result a client receives
//! (`"result_budget": {"bytes": N}` on `gateway` — every profile's default —, on `clients.ID`,
//! on `servers.ID.tools.NAME` and on `clients.ID.tools.SERVER__NAME`). Where several apply, the
//! smallest holds: no setting for a tool widens what the person set for a client.

use serde::{de, Deserialize, Deserializer, Serialize};

use super::{refusal, ClientProfile, Config, ServerId};

/// The smallest budget a setting may name: room for the note that says where the rest is.
pub const MIN_BUDGET: u64 = 1024;
/// The largest: a message's own bound (16 MiB).
pub const MAX_BUDGET: u64 = 16 << 20;

/// A result budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResultBudget {
    /// The most bytes of a result's JSON text.
    pub bytes: u64,
}

impl<'de> Deserialize<'de> for ResultBudget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            bytes: u64,
        }
        let raw = Raw::deserialize(d)?;
        if !(MIN_BUDGET..=MAX_BUDGET).contains(&raw.bytes) {
            return Err(de::Error::custom(refusal::joined(
                &format!("\"result_budget\" bytes is {}", raw.bytes),
                &format!("give a number of bytes from {MIN_BUDGET} to {MAX_BUDGET}, or leave \"result_budget\" out for none"),
            )));
        }
        Ok(ResultBudget { bytes: raw.bytes })
    }
}

/// The budget of one call of `server`'s tool `tool` (exposed as `exposed`) by `profile`: the
/// smallest that applies, none when none is set.
pub fn budget_for(
    config: &Config,
    profile: Option<&ClientProfile>,
    server: &ServerId,
    tool: &str,
    exposed: &str,
) -> Option<u64> {
    let own_tool = profile.and_then(|p| p.tool_policy(server.as_str(), exposed)?.result_budget);
    let servers_tool = config
        .servers
        .get(server)
        .and_then(|s| s.tools.get(tool)?.result_budget);
    let whole = profile
        .and_then(|p| p.result_budget)
        .or(config.gateway.result_budget);
    [own_tool, servers_tool, whole]
        .into_iter()
        .flatten()
        .map(|b| b.bytes)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest budget that applies holds; a budget out of range is refused with its range.
    #[test]
    fn the_smallest_budget_holds_and_a_wrong_one_is_refused() {
        let config: Config = serde_json::from_value(serde_json::json!({
            "gateway": {"result_budget": {"bytes": 100000}},
            "servers": {"fs": {"command": "x", "tools": {"read": {"result_budget": {"bytes": 50000}}}}},
            "clients": {
                "cursor": {"result_budget": {"bytes": 65536}, "tools": {"fs__read": {"result_budget": {"bytes": 2048}}}},
                "zed": {}
            }
        }))
        .unwrap();
        let fs = ServerId::parse("fs").unwrap();
        let cursor = config
            .clients
            .iter()
            .find(|(k, _)| k.as_str() == "cursor")
            .map(|(_, p)| p);
        let zed = config
            .clients
            .iter()
            .find(|(k, _)| k.as_str() == "zed")
            .map(|(_, p)| p);
        assert_eq!(
            budget_for(&config, cursor, &fs, "read", "fs__read"),
            Some(2048)
        );
        assert_eq!(
            budget_for(&config, cursor, &fs, "write", "fs__write"),
            Some(65536)
        );
        assert_eq!(
            budget_for(&config, zed, &fs, "read", "fs__read"),
            Some(50000)
        );
        assert_eq!(
            budget_for(&config, None, &fs, "write", "fs__write"),
            Some(100000)
        );
        assert_eq!(
            budget_for(&Config::default(), None, &fs, "w", "fs__w"),
            None
        );
        for bad in [
            r#"{"bytes": 10}"#,
            r#"{"bytes": 99999999}"#,
            r#"{"chars": 5000}"#,
        ] {
            assert!(serde_json::from_str::<ResultBudget>(bad).is_err(), "{bad}");
        }
    }
}

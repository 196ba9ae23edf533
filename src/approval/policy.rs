//! Which calls need the person's approval. Pure logic: an explicit flag (tool, then server) wins;
//! an unflagged tool follows `approval.default`, where only `readOnlyHint: true` counts as
//! read-only.

use crate::config::{ApprovalDefault, ServerConfig};

/// What a call to a tool does under the policy (`gatehouse tools` shows it as `allow`, `ask`
/// or `disabled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Runs without asking.
    Allow,
    /// Held until the person answers.
    Ask,
    /// Hidden and refused (`enabled: false`).
    Disabled,
}

/// The policy for one tool. An explicit flag (tool first, then server) always wins; only an
/// unflagged tool follows `default`, where a tool counts as read-only only if it says
/// `readOnlyHint: true`. Annotations can never relax an explicit flag.
pub fn evaluate(
    server: &ServerConfig,
    default: ApprovalDefault,
    tool: &str,
    read_only_hint: bool,
) -> Decision {
    let flags = server.tools.get(tool);
    if flags.and_then(|f| f.enabled) == Some(false) {
        return Decision::Disabled;
    }
    let explicit = flags
        .and_then(|f| f.requires_approval)
        .or(server.requires_approval);
    match explicit {
        Some(true) => Decision::Ask,
        Some(false) => Decision::Allow,
        None => match default {
            ApprovalDefault::Always => Decision::Ask,
            ApprovalDefault::FlaggedOnly => Decision::Allow,
            ApprovalDefault::AskUnlessReadOnly if read_only_hint => Decision::Allow,
            ApprovalDefault::AskUnlessReadOnly => Decision::Ask,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn server(json: &str) -> ServerConfig {
        let c =
            Config::parse(&format!("{{\"servers\": {{\"s\": {json}}}}}"), "t".as_ref()).unwrap();
        c.servers.into_values().next().unwrap()
    }

    #[test]
    fn defaults() {
        let s = server(r#"{"command": "x"}"#);
        use ApprovalDefault::*;
        assert_eq!(evaluate(&s, AskUnlessReadOnly, "t", false), Decision::Ask);
        assert_eq!(evaluate(&s, AskUnlessReadOnly, "t", true), Decision::Allow);
        assert_eq!(evaluate(&s, FlaggedOnly, "t", false), Decision::Allow);
        assert_eq!(evaluate(&s, Always, "t", true), Decision::Ask);
    }

    #[test]
    fn explicit_flags_win_and_annotations_never_relax_them() {
        use ApprovalDefault::*;
        let s = server(
            r#"{"command": "x", "tools": {"w": {"requires_approval": true}, "r": {"requires_approval": false}, "off": {"enabled": false}}}"#,
        );
        for d in [AskUnlessReadOnly, FlaggedOnly, Always] {
            assert_eq!(evaluate(&s, d, "w", true), Decision::Ask, "{d:?}");
            assert_eq!(evaluate(&s, d, "r", false), Decision::Allow, "{d:?}");
            assert_eq!(evaluate(&s, d, "off", true), Decision::Disabled, "{d:?}");
        }
        let all = server(
            r#"{"command": "x", "requires_approval": true, "tools": {"r": {"requires_approval": false}}}"#,
        );
        assert_eq!(evaluate(&all, FlaggedOnly, "any", true), Decision::Ask);
        assert_eq!(
            evaluate(&all, Always, "r", false),
            Decision::Allow,
            "a tool flag beats the server flag"
        );
    }
}

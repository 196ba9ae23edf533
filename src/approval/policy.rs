//! Which calls need the person's approval. Pure logic: an explicit flag (tool, then server) wins;
//! an unflagged tool follows `approval.default`, where only `readOnlyHint: true` counts as
//! read-only.

use super::request::AskReason;
use super::rules::Ruling;
use crate::config::rules::Effect;
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
    /// Refused by a matching deny rule (only for a call's arguments, never a tool's listing).
    Deny,
}

/// Everything that decides a call to one tool, layer by layer: the server's entry (its tool's
/// flags, then its own flag), a client profile's (it may hide the tool, flag or unflag it, or
/// set its own default), the default, and what the tool says of itself.
pub struct Layers<'a> {
    /// The server's entry.
    pub server: &'a ServerConfig,
    /// The tool's own name (the server's).
    pub tool: &'a str,
    /// `approval.default`.
    pub default: ApprovalDefault,
    /// The tool says `readOnlyHint: true`…
    pub claims_read_only: bool,
    /// …and it is believed (not a tool still quarantined, see `approval::pins`).
    pub read_only_believed: bool,
    /// The tool's server asks for a person in each call (`_meta`
    /// `anthropic/requiresUserInteraction: true`): it asks as if flagged, unless a flag of yours
    /// says otherwise.
    pub server_asks: bool,
    /// The calling client's profile, when the call comes through one.
    pub profile: Option<ProfileLayer>,
    /// The argument rules' ruling over this call's arguments (`approval::rules::decide`), when
    /// one matched.
    pub rule: Option<&'a Ruling>,
}

/// What a client profile says about one tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProfileLayer {
    /// The profile sees the tool (its server is in the profile and the tool is not hidden).
    pub sees: bool,
    /// The profile's own `requires_approval` for the tool.
    pub flag: Option<bool>,
    /// The profile's own `approval.default`.
    pub default: Option<ApprovalDefault>,
}

/// The policy's answer: what a call does, and — when it asks — why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Allow, ask or disabled.
    pub decision: Decision,
    /// Why it asks (`None` unless `decision` is `Ask`).
    pub reason: Option<AskReason>,
    /// The decision is the matching rule's ([`Layers::rule`]).
    pub by_rule: bool,
}

/// The one place the approval policy's precedence lives. A tool the server's entry disables, or
/// a profile does not see, is disabled (a profile never un-disables). Then a matching deny rule
/// refuses, and a deny rule that can no longer match the tool (`Ruling::stale`) asks the
/// person. Then an explicit flag wins — the profile's, else the tool's in the entry, else the
/// entry's own — except that a matching allow rule marked `even_if_flagged` beats a flag that
/// asks. Then a matching allow rule runs the call. Only an unflagged, unruled tool follows the
/// default (the profile's, else `approval.default`), where a tool counts as read-only only if it
/// says `readOnlyHint: true` and that is believed. Annotations never relax an explicit flag.
pub fn evaluate(l: &Layers<'_>) -> Verdict {
    let flags = l.server.tools.get(l.tool);
    let disabled = flags.and_then(|f| f.enabled) == Some(false);
    let verdict = |decision, reason, by_rule| Verdict {
        decision,
        reason,
        by_rule,
    };
    if disabled || l.profile.is_some_and(|p| !p.sees) {
        return verdict(Decision::Disabled, None, false);
    }
    let (allow_rule, over_flag) = match l.rule {
        // A deny rule that no longer fits the tool: the person decides, never nobody.
        Some(r) if r.stale.is_some() => {
            return verdict(Decision::Ask, Some(AskReason::StaleRule), true)
        }
        Some(r) if r.effect == Effect::Deny => return verdict(Decision::Deny, None, true),
        Some(r) => (true, r.even_if_flagged),
        None => (false, false),
    };
    let ask = |reason| verdict(Decision::Ask, Some(reason), false);
    let flag = l.profile.and_then(|p| p.flag).or(flags
        .and_then(|f| f.requires_approval)
        .or(l.server.requires_approval));
    // The server's own "a person must take part" is a flag below every one of yours.
    let (flag, flagged) = match flag {
        None if l.server_asks => (Some(true), AskReason::ServerAsks),
        other => (other, AskReason::Flagged),
    };
    match flag {
        Some(true) if over_flag => return verdict(Decision::Allow, None, true),
        Some(true) => return ask(flagged),
        Some(false) => return verdict(Decision::Allow, None, false),
        None if allow_rule => return verdict(Decision::Allow, None, true),
        None => {}
    }
    match l.profile.and_then(|p| p.default).unwrap_or(l.default) {
        ApprovalDefault::Always => ask(AskReason::AlwaysAsk),
        ApprovalDefault::FlaggedOnly => verdict(Decision::Allow, None, false),
        ApprovalDefault::AskUnlessReadOnly if l.read_only_believed => {
            verdict(Decision::Allow, None, false)
        }
        ApprovalDefault::AskUnlessReadOnly if l.claims_read_only => ask(AskReason::NewTool),
        ApprovalDefault::AskUnlessReadOnly => ask(AskReason::NotReadOnly),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// The entry's layers alone (no profile), a claim believed.
    fn eval(s: &ServerConfig, default: ApprovalDefault, tool: &str, read_only: bool) -> Decision {
        evaluate(&Layers {
            server: s,
            tool,
            default,
            claims_read_only: read_only,
            read_only_believed: read_only,
            server_asks: false,
            profile: None,
            rule: None,
        })
        .decision
    }

    fn server(json: &str) -> ServerConfig {
        let c =
            Config::parse(&format!("{{\"servers\": {{\"s\": {json}}}}}"), "t".as_ref()).unwrap();
        c.servers.into_values().next().unwrap()
    }

    #[test]
    fn defaults() {
        let s = server(r#"{"command": "x"}"#);
        use ApprovalDefault::*;
        assert_eq!(eval(&s, AskUnlessReadOnly, "t", false), Decision::Ask);
        assert_eq!(eval(&s, AskUnlessReadOnly, "t", true), Decision::Allow);
        assert_eq!(eval(&s, FlaggedOnly, "t", false), Decision::Allow);
        assert_eq!(eval(&s, Always, "t", true), Decision::Ask);
    }

    #[test]
    fn explicit_flags_win_and_annotations_never_relax_them() {
        use ApprovalDefault::*;
        let s = server(
            r#"{"command": "x", "tools": {"w": {"requires_approval": true}, "r": {"requires_approval": false}, "off": {"enabled": false}}}"#,
        );
        for d in [AskUnlessReadOnly, FlaggedOnly, Always] {
            assert_eq!(eval(&s, d, "w", true), Decision::Ask, "{d:?}");
            assert_eq!(eval(&s, d, "r", false), Decision::Allow, "{d:?}");
            assert_eq!(eval(&s, d, "off", true), Decision::Disabled, "{d:?}");
        }
        let all = server(
            r#"{"command": "x", "requires_approval": true, "tools": {"r": {"requires_approval": false}}}"#,
        );
        assert_eq!(eval(&all, FlaggedOnly, "any", true), Decision::Ask);
        assert_eq!(
            eval(&all, Always, "r", false),
            Decision::Allow,
            "a tool flag beats the server flag"
        );
    }

    /// A profile layer: it hides, flags, unflags or sets its own default, never un-disables;
    /// every ask says why.
    #[test]
    fn a_profile_layer_and_the_reason_for_each_ask() {
        use ApprovalDefault::*;
        let s = server(
            r#"{"command": "x", "tools": {"w": {"requires_approval": true}, "off": {"enabled": false}}}"#,
        );
        let v = |tool: &str, claims: bool, believed: bool, profile: Option<ProfileLayer>| {
            evaluate(&Layers {
                server: &s,
                tool,
                default: AskUnlessReadOnly,
                claims_read_only: claims,
                read_only_believed: believed,
                server_asks: false,
                profile,
                rule: None,
            })
        };
        let seen = |flag, default| {
            Some(ProfileLayer {
                sees: true,
                flag,
                default,
            })
        };
        assert_eq!(v("w", false, false, None).reason, Some(AskReason::Flagged));
        assert_eq!(v("t", true, false, None).reason, Some(AskReason::NewTool));
        assert_eq!(
            v("t", false, false, None).reason,
            Some(AskReason::NotReadOnly)
        );
        assert_eq!(v("t", true, true, None).decision, Decision::Allow);
        assert_eq!(
            v("t", true, true, seen(None, Some(Always))).reason,
            Some(AskReason::AlwaysAsk)
        );
        assert_eq!(
            v("w", false, false, seen(Some(false), None)).decision,
            Decision::Allow
        );
        assert_eq!(
            v("t", true, true, seen(Some(true), None)).reason,
            Some(AskReason::Flagged)
        );
        assert_eq!(
            v("t", false, false, seen(None, Some(FlaggedOnly))).decision,
            Decision::Allow
        );
        assert_eq!(
            v("off", true, true, seen(Some(false), None)).decision,
            Decision::Disabled
        );
        let hidden = Some(ProfileLayer::default());
        assert_eq!(v("t", true, true, hidden).decision, Decision::Disabled);
    }

    /// Rules in the precedence: a deny refuses even an unflagged or `requires_approval: false`
    /// tool; an allow runs an unflagged tool without asking; a flag that asks beats an allow
    /// unless the rule says `even_if_flagged`; a disabled tool stays disabled.
    #[test]
    fn rules_in_the_precedence() {
        use crate::config::rules::Effect;
        let s = server(
            r#"{"command": "x", "tools": {"w": {"requires_approval": true}, "r": {"requires_approval": false}, "off": {"enabled": false}}}"#,
        );
        let ruling = |effect, even_if_flagged| Ruling {
            effect,
            name: "servers.s.tools.t.rules[0]".into(),
            even_if_flagged,
            text: String::new(),
            stale: None,
        };
        let v = |tool: &str, rule: &Ruling| {
            evaluate(&Layers {
                server: &s,
                tool,
                default: ApprovalDefault::Always,
                claims_read_only: false,
                read_only_believed: false,
                server_asks: false,
                profile: None,
                rule: Some(rule),
            })
        };
        let (deny, allow, over) = (
            ruling(Effect::Deny, false),
            ruling(Effect::Allow, false),
            ruling(Effect::Allow, true),
        );
        for tool in ["t", "r", "w"] {
            let d = v(tool, &deny);
            assert_eq!((d.decision, d.by_rule), (Decision::Deny, true), "{tool}");
        }
        assert_eq!(v("off", &deny).decision, Decision::Disabled);
        assert_eq!(v("off", &over).decision, Decision::Disabled);
        let a = v("t", &allow);
        assert_eq!((a.decision, a.by_rule), (Decision::Allow, true));
        let flagged = v("w", &allow);
        assert_eq!((flagged.decision, flagged.by_rule), (Decision::Ask, false));
        let over_flag = v("w", &over);
        assert_eq!(
            (over_flag.decision, over_flag.by_rule),
            (Decision::Allow, true)
        );
        // A deny rule that no longer fits its tool asks, whatever a flag or the tool says.
        let stale = Ruling {
            stale: Some("names the argument \"path\", which the tool does not have".into()),
            ..ruling(Effect::Deny, false)
        };
        for tool in ["t", "r", "w"] {
            let d = v(tool, &stale);
            assert_eq!(d.decision, Decision::Ask, "{tool}");
            assert_eq!(d.reason, Some(AskReason::StaleRule), "{tool}");
        }
        assert_eq!(v("off", &stale).decision, Decision::Disabled);
    }

    /// A tool whose server asks for a person (`anthropic/requiresUserInteraction`) asks as if
    /// flagged — whatever the default and its read-only claim — with the server named as why;
    /// a flag of yours, the entry's or a profile's, says otherwise.
    #[test]
    fn a_server_asking_for_a_person_asks_unless_your_flag_says_otherwise() {
        let plain = server(r#"{"command": "x"}"#);
        let unflagged = server(r#"{"command": "x", "tools": {"t": {"requires_approval": false}}}"#);
        let v = |s: &ServerConfig, profile: Option<ProfileLayer>| {
            evaluate(&Layers {
                server: s,
                tool: "t",
                default: ApprovalDefault::FlaggedOnly,
                claims_read_only: true,
                read_only_believed: true,
                server_asks: true,
                profile,
                rule: None,
            })
        };
        let asked = v(&plain, None);
        assert_eq!(asked.decision, Decision::Ask);
        assert_eq!(asked.reason, Some(AskReason::ServerAsks));
        assert_eq!(v(&unflagged, None).decision, Decision::Allow);
        let profile = Some(ProfileLayer {
            sees: true,
            flag: Some(false),
            default: None,
        });
        assert_eq!(v(&plain, profile).decision, Decision::Allow);
    }
}

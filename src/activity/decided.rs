//! Who or what decided a call, as every activity row says it (`decided_by`): the grant or rule
//! that covered it, or who answered — and, for an answer, where it was given (`answered_in`).

use serde::{Deserialize, Serialize};

use super::Decision;
use crate::approval::Decider;

/// What decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// An argument rule in the config (the row's `rule` names it).
    Rule,
    /// An exact-call grant (this session's, or "exact call, always").
    Exact,
    /// A "this session" grant for the tool.
    Session,
    /// An "always" grant for the tool's definition.
    Always,
    /// The person, asked now (in the app or with the CLI: `answered_in`).
    Person,
    /// The client: it answered through its own UI (`approve_via: client`), or it cancelled or
    /// went away first.
    Client,
    /// Gatehouse's policy, without asking anyone (the default, a flag, a refusal).
    Policy,
}

impl DecidedBy {
    /// The name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Rule => "rule",
            DecidedBy::Exact => "exact",
            DecidedBy::Session => "session",
            DecidedBy::Always => "always",
            DecidedBy::Person => "person",
            DecidedBy::Client => "client",
            DecidedBy::Policy => "policy",
        }
    }

    /// What decided a call that ended with `decision`, answered by `by`, `rule` deciding it or
    /// not; and where an answer was given (`app`, `cli`, `client`).
    pub fn of(decision: Decision, by: Decider, rule: bool) -> (DecidedBy, Option<&'static str>) {
        if rule {
            return (DecidedBy::Rule, None);
        }
        match (decision, by) {
            (Decision::RememberedExact, _) => (DecidedBy::Exact, None),
            (Decision::RememberedSession, _) => (DecidedBy::Session, None),
            (Decision::RememberedAlways, _) => (DecidedBy::Always, None),
            (_, Decider::Ui) => (DecidedBy::Person, Some("app")),
            (_, Decider::Cli) => (DecidedBy::Person, Some("cli")),
            (_, Decider::ClientUi) => (DecidedBy::Client, Some("client")),
            (_, Decider::Client) => (DecidedBy::Client, None),
            (_, Decider::Policy) => (DecidedBy::Policy, None),
        }
    }

    /// A stored name read back, with where it was answered when the name says (rows written
    /// before `person` existed say `ui` or `cli`).
    pub fn parse(s: &str) -> (DecidedBy, Option<&'static str>) {
        match s {
            "rule" => (DecidedBy::Rule, None),
            "exact" => (DecidedBy::Exact, None),
            "session" => (DecidedBy::Session, None),
            "always" => (DecidedBy::Always, None),
            "person" => (DecidedBy::Person, None),
            "ui" => (DecidedBy::Person, Some("app")),
            "cli" => (DecidedBy::Person, Some("cli")),
            "client" => (DecidedBy::Client, None),
            _ => (DecidedBy::Policy, None),
        }
    }
}

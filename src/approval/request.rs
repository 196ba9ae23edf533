//! What an approval is made of, as plain data: the held call approvers see, the answers and
//! scopes they can give, and how a held call ended.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// A held call, as approvers see it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The request's id (`apr-N`), for `approve` / `deny`.
    pub id: String,
    /// What waits: always `tool` for a held call (held changes to what a server says are
    /// [`super::change::HeldChange`]s, of the other kinds, in the same list of `gatehouse approvals`).
    #[serde(default)]
    pub kind: super::change::PinKind,
    /// Which client made the call.
    pub client: ClientRef,
    /// The server's id.
    pub server: String,
    /// The server's own name for the tool.
    pub tool: String,
    /// The name the client used (`server__tool`).
    pub exposed: String,
    /// The tool's title, as its definition gives it.
    pub title: Option<String>,
    /// The tool's description.
    pub description: Option<String>,
    /// The tool's annotations (hints), whole.
    pub annotations: Option<Value>,
    /// The call's arguments as the client sent them, with known secret values masked.
    pub arguments: Box<RawValue>,
    /// The SHA-256 of those arguments in canonical JSON (RFC 8785: keys sorted, numbers in one
    /// spelling): what an "exact call" answer is bound to ([`arguments_digest`]).
    #[serde(default)]
    pub arguments_digest: String,
    /// When the call was held (ms since the Unix epoch).
    pub requested_at: u64,
    /// When it is denied unless answered (ms since the Unix epoch). Its countdown starts when it
    /// reaches the front of the queue: while `queued`, this is the earliest it could be.
    pub expires_at: u64,
    /// Another call is ahead of it: its countdown has not started (it waits its turn).
    #[serde(default)]
    pub queued: bool,
    /// Set when the tool's definition differs from the one pinned earlier.
    pub changed: Option<DefinitionChange>,
    /// Why this call asks (for the modal and `approvals`).
    #[serde(default)]
    pub reason: AskReason,
    /// The same, as the sentence shown to the person ([`AskReason::text`]): front ends show
    /// this and keep no copy of their own.
    #[serde(default)]
    pub reason_text: String,
    /// A digest of what the person is shown to decide (id, client, server, tool, arguments):
    /// every answer from a surface that showed the call carries it, and an answer whose digest
    /// is not the call's is refused ([`ApprovalRequest::digest_of`]).
    #[serde(default)]
    pub digest: String,
    /// The tool's name, its arguments or the client's name hold a character a person cannot
    /// see for what it is: every surface shows them as `⟨U+XXXX⟩` and says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden_characters: bool,
    /// A rule the prompt offers, prefilled from this call (its first path argument's folder):
    /// the person may add it to the config instead of answering for this call alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_rule: Option<Suggestion>,
    /// Where the call goes, for the person: `runs on this computer as PROGRAM` (a local
    /// server) or `sends to HOST` (a remote one) — an approval never implies the data stays
    /// local when it does not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub goes_to: String,
    /// The call is also put to the person through the client's own UI (`approve_via: client`):
    /// it waits for that answer even when nobody attends Gatehouse itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asked_in_client: bool,
}

impl ApprovalRequest {
    /// Fills in what is derived from the call: its [`digest`](Self::digest) and whether it
    /// holds hidden characters. Called once, when the request is made.
    pub fn seal(mut self) -> Self {
        self.digest = self.digest_of();
        self.suggested_rule = super::rules::suggest(self.arguments.get()).map(|rule| Suggestion {
            text: format!(
                "Always allow {} {}",
                crate::text::reveal(&self.tool),
                rule.describe().trim_start_matches("allow ")
            ),
            rule,
        });
        self.hidden_characters = crate::text::has_hidden(&self.tool)
            || crate::text::has_hidden(&self.exposed)
            || self.title.as_deref().is_some_and(crate::text::has_hidden)
            || self
                .client
                .name
                .as_deref()
                .is_some_and(crate::text::has_hidden)
            || crate::text::json_has_hidden(self.arguments.get());
        self
    }

    /// The digest of what a person decides on: the id, the client (its profile, session and
    /// name), the server, the tool and the arguments — 16 hex digits of their SHA-256.
    pub fn digest_of(&self) -> String {
        use sha2::{Digest, Sha256};
        let shown = serde_json::json!([
            self.id,
            self.client.profile,
            self.client.session,
            self.client.name,
            self.server,
            self.tool,
            self.exposed,
            self.arguments.get(),
        ]);
        let hash = Sha256::digest(shown.to_string().as_bytes());
        hash.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }
}

/// The digest an exact-call grant is bound to: the SHA-256 (hex) of `arguments` (JSON text) in
/// canonical form (RFC 8785), so reordered keys and other spellings of the same numbers give the
/// same digest. Text that is not JSON is hashed as it is.
pub fn arguments_digest(arguments: &str) -> String {
    use sha2::{Digest, Sha256};
    let canonical = serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|v| serde_json_canonicalizer::to_string(&v).ok())
        .unwrap_or_else(|| arguments.to_owned());
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What an earlier answer would have to cover for a call to run without asking.
pub struct Covered<'a> {
    /// The calling client's profile.
    pub profile: Option<&'a str>,
    /// Its session.
    pub session: &'a str,
    /// The server's id.
    pub server: &'a str,
    /// The server's own tool name.
    pub tool: &'a str,
    /// The tool definition's hash.
    pub hash: &'a str,
    /// [`arguments_digest`] of the call's (masked) arguments.
    pub arguments_digest: &'a str,
}

/// A rule offered from a held call, and the sentence that offers it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Suggestion {
    /// The rule, as it would be added to the server's tool.
    pub rule: crate::config::rules::Rule,
    /// "Always allow touch when path is under /home/u/notes".
    pub text: String,
}

/// Why a call asks the person.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum AskReason {
    /// The tool does not declare itself read-only (`approval.default` is ask-unless-read-only).
    #[default]
    NotReadOnly,
    /// The config flags the tool or its server (`requires_approval: true`), or the client's
    /// profile does.
    Flagged,
    /// `approval.default` is `always`.
    AlwaysAsk,
    /// The tool appeared after its server's first listing: its own `readOnlyHint` is not
    /// believed until you allow it once.
    NewTool,
    /// Its definition changed since you last saw it.
    Changed,
    /// A deny rule of yours names an argument the tool no longer has (or has with another
    /// type): it cannot refuse what it was written for, so the call is asked about instead.
    StaleRule,
    /// The server marks the tool as needing a person in each call (`_meta`
    /// `anthropic/requiresUserInteraction: true`), and your config does not say otherwise.
    ServerAsks,
}

impl AskReason {
    /// The sentence shown to the person.
    pub fn text(self) -> &'static str {
        match self {
            AskReason::NotReadOnly => "it does not declare itself read-only",
            AskReason::Flagged => "your config flags it as needing approval",
            AskReason::AlwaysAsk => "your default is to ask before every call",
            AskReason::NewTool => "it appeared after the server's first listing and says it only reads: that is not believed until you allow it once",
            AskReason::Changed => "its definition changed since you last saw it",
            AskReason::StaleRule => "a deny rule of yours no longer fits this tool (the server changed its arguments): it is asked about instead of run unchecked",
            AskReason::ServerAsks => "its server asks that a person take part in each call to it (anthropic/requiresUserInteraction)",
        }
    }
}

/// The client a held call came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientRef {
    /// `clientInfo.name`, when the client gave one.
    pub name: Option<String>,
    /// The client's session id.
    pub session: String,
    /// The client profile it connected with (absent: the gateway token, every tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// When the session ends on its own (ms since the epoch): a modern (2026-07-28) client has
    /// no protocol session, so "this session" means its token and `clientInfo` until then.
    /// Absent: until the client disconnects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_ends_ms: Option<u64>,
    /// The clients an "always" answer covers besides this one: every other client (by
    /// `clientInfo` name and version) seen on the same profile in the last 5 minutes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covers: Vec<String>,
    /// How long this client waits for a call's answer before it gives up, when known by its
    /// name (the TypeScript SDK's 60 s): the person has that long, not the approval timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gives_up_after_secs: Option<u64>,
    /// The known client (or other connected client) whose name this client's name imitates:
    /// the same look (TR39 skeleton) without being that name (`text::imitation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imitates: Option<String>,
}

/// A remembered answer: "always" (this exact definition, until revoked) or "session" (this
/// client session, until it ends).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Grant {
    /// `session` or `always`.
    pub scope: Scope,
    /// The server's id.
    pub server: String,
    /// The server's own tool name.
    pub tool: String,
    /// The client profile it was given for (absent: the gateway token's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The client session (session grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The client's name, when known (session grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// When it was given (ms since the epoch; 0 for an "always" kept from before this was
    /// recorded).
    pub since_ms: u64,
    /// The first 12 hex digits of the definition's SHA-256 ("always" grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// The exact call's [`arguments_digest`] (`exact` and `exact-always` grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_digest: Option<String>,
    /// For an exact grant: the call's arguments as the person saw them (masked, cut to 512
    /// characters) — what it covers, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// What changed in a tool's definition since it was pinned.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DefinitionChange {
    /// The pinned definition.
    pub old: Value,
    /// The definition now.
    pub new: Value,
    /// Top-level members that differ (`description`, `inputSchema`, `annotations`…).
    pub fields: Vec<String>,
}

/// How far an "allow" reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// This call only.
    Once,
    /// This tool, for the rest of this client's session.
    Session,
    /// This tool with this exact definition, until revoked (kept across restarts).
    Always,
    /// This exact call (the same arguments, canonicalised) for the rest of this session.
    Exact,
    /// This exact call with this exact definition, until revoked (kept across restarts).
    #[serde(rename = "exact-always", alias = "exact_always")]
    ExactAlways,
}

impl Scope {
    /// The scope's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Once => "once",
            Scope::Session => "session",
            Scope::Always => "always",
            Scope::Exact => "exact",
            Scope::ExactAlways => "exact-always",
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "once" => Ok(Scope::Once),
            "session" => Ok(Scope::Session),
            "always" => Ok(Scope::Always),
            "exact" => Ok(Scope::Exact),
            "exact-always" | "exact_always" => Ok(Scope::ExactAlways),
            other => Err(format!(
                "unknown scope \"{other}\": use once, session, always, exact or exact-always"
            )),
        }
    }
}

/// Who decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// The policy, without asking anyone.
    Policy,
    /// The person, in the desktop app.
    Ui,
    /// The person, with the CLI (control socket).
    Cli,
    /// The client: it cancelled, went away or gave up before an answer (a withdrawal).
    Client,
    /// The person, through the client's own UI (an elicitation, `approve_via: client`).
    ClientUi,
}

impl Decider {
    /// The decider's name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Decider::Policy => "policy",
            Decider::Ui => "ui",
            Decider::Cli => "cli",
            Decider::Client => "client",
            Decider::ClientUi => "client_ui",
        }
    }
}

/// An approver's answer to a held call.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Run it, and remember the answer for the scope.
    Allow(Scope),
    /// Do not run it; the optional reason reaches the client.
    Deny(Option<String>),
}

impl Answer {
    /// A person's answer as every front end spells it: `deny` (with the reason given, else
    /// `default_reason`), or a scope to allow for (`once`, `session`, `always`).
    pub fn parse(
        decision: &str,
        reason: Option<String>,
        default_reason: &str,
    ) -> Result<Answer, String> {
        match decision {
            "deny" => Ok(Answer::Deny(
                reason
                    .filter(|r| !r.trim().is_empty())
                    .or_else(|| Some(default_reason.to_owned())),
            )),
            scope => scope.parse::<Scope>().map(Answer::Allow).map_err(|_| {
                format!("unknown answer \"{scope}\": use once, session, always, exact, exact-always or deny")
            }),
        }
    }
}

/// How a held call ended (a withdrawn call never gets here: its waiter is gone).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Allowed, for `scope`, by `by`.
    Allowed {
        /// How far the answer reaches.
        scope: Scope,
        /// Who allowed it.
        by: Decider,
        /// The process that answered through the control socket, when it did.
        via: Option<String>,
    },
    /// Denied, with the reason if one was given.
    Denied {
        /// The reason given.
        reason: Option<String>,
        /// Who denied it.
        by: Decider,
        /// The process that answered through the control socket, when it did.
        via: Option<String>,
    },
    /// Nobody answered within `secs`.
    TimedOut {
        /// The approval timeout.
        secs: u64,
    },
}

/// Why an answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    /// No such request is waiting.
    #[error("no such call \"{0}\" is waiting for approval (it was answered, withdrawn or timed out, or it is from an earlier run of Gatehouse); see `gatehouse approvals`")]
    Unknown(String),
    /// The answer names a call, but not the one it was given for: what was shown differs.
    #[error("the answer to \"{0}\" was not taken: the call it names is not the one that was shown (its digest differs); look at it again with `gatehouse approvals`")]
    Changed(String),
}

/// How a pending request left the queue (the `approval_resolved` event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Allowed by the person.
    Allowed,
    /// Denied by the person (or at once, unattended).
    Denied,
    /// Nobody answered in time.
    TimedOut,
    /// The client went away or cancelled first.
    Withdrawn,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every front end's spelling of an answer reads the same: a scope allows for it, `deny`
    /// carries the reason given (else the front end's own), anything else is refused by name.
    #[test]
    fn an_answer_is_read_one_way() {
        assert!(matches!(
            Answer::parse("always", None, "x"),
            Ok(Answer::Allow(Scope::Always))
        ));
        assert!(matches!(
            Answer::parse("once", Some("ignored".into()), "x"),
            Ok(Answer::Allow(Scope::Once))
        ));
        match Answer::parse("deny", Some("  ".into()), "denied in the app") {
            Ok(Answer::Deny(Some(r))) => assert_eq!(r, "denied in the app"),
            other => panic!("{other:?}"),
        }
        match Answer::parse("deny", Some("wrong folder".into()), "x") {
            Ok(Answer::Deny(Some(r))) => assert_eq!(r, "wrong folder"),
            other => panic!("{other:?}"),
        }
        let e = Answer::parse("forever", None, "x").unwrap_err();
        assert!(e.contains("\"forever\"") && e.contains("deny"), "{e}");
    }
}

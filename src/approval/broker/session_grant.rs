//! A grant for one client session ("this session", "this exact call"), as the broker keeps it
//! and as `grants` lists it.

use super::super::request::{ApprovalRequest, Grant, Scope};

/// The most of an exact grant's arguments kept to show (characters).
pub(in crate::approval) const SHOWN_ARGUMENTS: usize = 512;

/// A call's (masked) arguments as a grant keeps them to show: compact JSON, cut.
pub(in crate::approval) fn shown_arguments(raw: &str) -> String {
    crate::text::cut(raw, SHOWN_ARGUMENTS)
}

/// Who got a "session" answer, and when.
#[derive(Debug, Clone)]
pub(super) struct SessionGrant {
    client: Option<String>,
    profile: Option<String>,
    since_ms: u64,
    /// For an exact grant: the call's arguments as the person saw them (masked, cut).
    arguments: Option<String>,
}

impl SessionGrant {
    /// The grant as `grants` lists it: `scope` for (session, server, tool), with the arguments
    /// digest of an exact one.
    pub(super) fn listed(
        &self,
        scope: Scope,
        (session, server, tool): (&String, &String, &String),
        digest: Option<&String>,
    ) -> Grant {
        Grant {
            scope,
            server: server.clone(),
            tool: tool.clone(),
            profile: self.profile.clone(),
            session: Some(session.clone()),
            client: self.client.clone(),
            since_ms: self.since_ms,
            definition: None,
            arguments_digest: digest.cloned(),
            arguments: self.arguments.clone(),
        }
    }

    /// The grant an answer to `request` gives its client, from now (an exact one keeps the
    /// arguments it covers, to show).
    pub(super) fn of(request: &ApprovalRequest, exact: bool) -> SessionGrant {
        SessionGrant {
            client: request.client.name.clone(),
            profile: request.client.profile.clone(),
            since_ms: crate::logs::now_ms(),
            arguments: exact.then(|| shown_arguments(request.arguments.get())),
        }
    }
}

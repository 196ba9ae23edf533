//! "Exact call, always" answers in the store: one call — its server, tool, client profile,
//! definition and canonical arguments — allowed until revoked. At most [`MAX_EXACT`] are kept
//! (the oldest goes first).

use serde::{Deserialize, Serialize};

use super::Store;
use crate::logs::now_ms;

/// "Exact call, always" answers kept at most.
pub const MAX_EXACT: usize = 4096;

/// One exact-call answer kept across restarts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(in crate::approval) struct ExactAlways {
    pub server: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The definition's hash the answer was given for.
    pub sha256: String,
    /// The arguments' canonical digest.
    pub arguments_digest: String,
    /// The arguments as the person saw them (masked, cut): what Permissions shows it covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    pub since_ms: u64,
}

impl Store {
    /// Whether "exact call, always" covers this call.
    pub fn exact_allows(&self, c: &crate::approval::Covered<'_>) -> bool {
        self.exact.iter().any(|e| {
            e.server == c.server
                && e.tool == c.tool
                && e.profile.as_deref() == c.profile
                && e.sha256 == c.hash
                && e.arguments_digest == c.arguments_digest
        })
    }

    /// Remembers "exact call, always" for this call (replacing an equal one).
    pub fn trust_exact(&mut self, c: &crate::approval::Covered<'_>, arguments: &str) {
        self.revoke_exact(c.server, c.tool, c.profile, c.arguments_digest);
        if self.exact.len() >= MAX_EXACT {
            self.exact.remove(0);
        }
        self.exact.push(ExactAlways {
            server: c.server.to_owned(),
            tool: c.tool.to_owned(),
            profile: c.profile.map(str::to_owned),
            sha256: c.hash.to_owned(),
            arguments_digest: c.arguments_digest.to_owned(),
            arguments: Some(arguments.to_owned()),
            since_ms: now_ms(),
        });
    }

    /// Every "exact call, always" answer.
    pub fn exact_grants(&self) -> &[ExactAlways] {
        &self.exact
    }

    /// Revokes one; returns whether it existed.
    pub fn revoke_exact(
        &mut self,
        server: &str,
        tool: &str,
        profile: Option<&str>,
        digest: &str,
    ) -> bool {
        let before = self.exact.len();
        self.exact.retain(|e| {
            !(e.server == server
                && e.tool == tool
                && e.profile.as_deref() == profile
                && e.arguments_digest == digest)
        });
        before != self.exact.len()
    }

    /// Drops those matching `matches(server, tool)`; returns how many.
    pub fn forget_exact(&mut self, matches: &impl Fn(&str, &str) -> bool) -> usize {
        let before = self.exact.len();
        self.exact.retain(|e| !matches(&e.server, &e.tool));
        before - self.exact.len()
    }
}

//! The audit phase of a tool call: its one activity row, written with the outcome when the call
//! ends, or — when the call's task is dropped first (the client cancelled or went away) — with
//! what that means at the stage reached.

use std::sync::Arc;

use super::session::ClientSession;
use crate::activity::{ActivityLog, CallOutcome, CallRecord, DecidedBy, Decision};
use crate::approval::Decider;
use crate::supervisor::ServerHandle;

/// What the activity log needs of a tool call.
#[derive(Clone)]
pub(super) struct CallMeta {
    server: String,
    tool: String,
    arguments: String,
    started: std::time::Instant,
    /// How long the call waited for the person (held calls).
    pub waited: Option<std::time::Duration>,
    /// The argument rule that decided the call, as the config names it.
    pub rule: Option<String>,
}

impl CallMeta {
    /// The server's own name of the tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    pub fn new(server: &ServerHandle, tool: &str, arguments: String) -> CallMeta {
        CallMeta {
            server: server.id().to_string(),
            tool: tool.to_owned(),
            arguments,
            started: std::time::Instant::now(),
            waited: None,
            rule: None,
        }
    }
}

/// Writes a tool call's one activity row. [`Audit::finish`] records the outcome; dropped without
/// it (the task aborted by a client's cancel or disconnect, or ended early), it records what
/// that means at the stage reached: withdrawn before the call was sent, cancelled after.
pub(super) struct Audit {
    activity: ActivityLog,
    session: Arc<ClientSession>,
    /// `None` for requests that are no tool call, and once the row is written.
    pub meta: Option<CallMeta>,
    decision: Decision,
    by: Decider,
    /// The approving process, for a decision made through the control socket.
    pub via: Option<String>,
    /// Why the call failed, when it did (`failure::explain`).
    pub error: Option<String>,
    sent: bool,
}

impl Audit {
    pub fn new(
        activity: &ActivityLog,
        session: &Arc<ClientSession>,
        meta: Option<CallMeta>,
    ) -> Audit {
        Audit {
            activity: activity.clone(),
            session: session.clone(),
            meta,
            decision: Decision::Withdrawn,
            by: Decider::Policy,
            via: None,
            error: None,
            sent: false,
        }
    }

    /// The call is on its way to the server with this decision: dropped from now on, the row
    /// says cancelled.
    pub fn sent(&mut self, decision: Decision, by: Decider) {
        (self.decision, self.by, self.sent) = (decision, by, true);
    }

    pub fn finish(&mut self, decision: Decision, by: Decider, outcome: CallOutcome) {
        if let Some(m) = self.meta.take() {
            let via = self.via.take();
            let error = self.error.take();
            record(
                &self.activity,
                &self.session,
                m,
                (decision, by, outcome),
                via,
                error,
            );
        }
    }
}

impl Drop for Audit {
    fn drop(&mut self) {
        if self.sent {
            self.finish(self.decision, self.by, CallOutcome::Cancelled);
        } else {
            // The client cancelled or went away before the call was sent: its decision.
            self.finish(Decision::Withdrawn, Decider::Client, CallOutcome::NotRun);
        }
    }
}

/// Records a tool call in the activity log (never waits on it); its meta moves into the row.
pub(super) fn record(
    activity: &ActivityLog,
    s: &ClientSession,
    m: CallMeta,
    (decision, by, outcome): (Decision, Decider, CallOutcome),
    via: Option<String>,
    error: Option<String>,
) {
    let elapsed = m.started.elapsed().as_millis() as u64;
    let (name, version, protocol) = s.identity();
    let (decided_by, answered_in) = DecidedBy::of(decision, by, m.rule.is_some());
    activity.record(CallRecord {
        time_ms: crate::logs::now_ms().saturating_sub(elapsed),
        client: name,
        client_version: version,
        client_protocol: protocol,
        session: s.id.clone(),
        server: m.server,
        tool: m.tool,
        arguments: m.arguments,
        id: 0,
        decision,
        decided_by,
        answered_in: answered_in.map(str::to_owned),
        rule: m.rule,
        duration_ms: elapsed,
        outcome,
        decided_via: via,
        profile: s.profile.clone(),
        waited_ms: m.waited.map_or(0, |w| w.as_millis() as u64),
        error,
        flags: Default::default(),
    });
}

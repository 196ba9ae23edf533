//! The activity log: every routed tool call (time, client, server, tool, arguments with secret
//! values redacted, the decision and who made it, duration, outcome) in SQLite in the data dir.
//!
//! One dedicated thread owns the connection; callers hand it records over a bounded channel and
//! never wait on it, so a call can never fail or slow down because logging did. A database that
//! cannot be opened or written (corrupt, locked) is reported and moved aside, and a fresh one
//! takes its place. Retention: 30 days and at most 100,000 rows.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::approval::request::Scope;

mod decided;
pub mod export;
mod store;

pub use decided::DecidedBy;

use store::writer;

/// Rows older than this many days are pruned.
pub const RETENTION_DAYS: u64 = 30;
/// A failed call's error text kept in its row, at most (characters).
pub const MAX_ERROR_CHARS: usize = 1000;
/// At most this many rows are kept (the oldest go first).
pub const MAX_ROWS: i64 = 100_000;
const QUEUE: usize = 4096;

/// One routed call.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CallRecord {
    /// When the call arrived (ms since the Unix epoch).
    pub time_ms: u64,
    /// `clientInfo.name`, when the client gave one.
    pub client: Option<String>,
    /// The client's session id.
    pub session: String,
    /// The server's id.
    pub server: String,
    /// The server's own name for the tool.
    pub tool: String,
    /// The arguments as sent, with known secret values replaced by `[secret:NAME]`.
    pub arguments: String,
    /// The row's id in the log (0 before it is written).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub id: u64,
    /// Whether and how the call was let through.
    pub decision: Decision,
    /// What decided: `rule`, `exact`, `session`, `always`, `person`, `client` or `policy`.
    pub decided_by: DecidedBy,
    /// Where the answer was given, for a call someone answered: `app`, `cli` or `client`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_in: Option<String>,
    /// The argument rule that decided it, as the config names it
    /// (`servers.fs.tools.write_file.rules[0]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// From arrival to the answer, waiting for the person included.
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: CallOutcome,
    /// The process that answered through the control socket (`pid N: /path/to/exe`), when the
    /// answer came that way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_via: Option<String>,
    /// The client profile the call came through (absent: the gateway token, `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Of `duration_ms`, how long the call waited for the person (0 when it did not ask); the
    /// rest is the server's own time.
    #[serde(default)]
    pub waited_ms: u64,
    /// `clientInfo.version`, when the client gave one (bounded like the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// The protocol revision the client speaks (`2025-11-25`, `2026-07-28`, …), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_protocol: Option<String>,
    /// Why a call that failed or was refused did (the server's error, its `isError` text, or
    /// Gatehouse's refusal), bounded to 1,000 characters, with the sandbox named when it may
    /// have been the cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Hidden characters in the tool, arguments or client name, and a client name that
    /// imitates a known client's: derived when read, never stored.
    #[serde(flatten)]
    pub flags: crate::text::Flags,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CallRecord {
    /// A call allowed by the policy that ended well, at this moment: the fields every row has,
    /// the rest empty (benches, tests and stand-ins fill in what they mean).
    pub fn allowed(session: &str, server: &str, tool: &str, arguments: String) -> CallRecord {
        CallRecord {
            time_ms: crate::logs::now_ms(),
            client: None,
            session: session.to_owned(),
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
            id: 0,
            decision: Decision::Allowed,
            decided_by: DecidedBy::Policy,
            answered_in: None,
            rule: None,
            duration_ms: 0,
            outcome: CallOutcome::Ok,
            decided_via: None,
            profile: None,
            waited_ms: 0,
            client_version: None,
            client_protocol: None,
            error: None,
            flags: Default::default(),
        }
    }
}

impl CallRecord {
    /// The row of a change to what a server says, held anew (`session`/`profile`: the client
    /// whose request saw it; none for instructions, seen at a listing).
    pub fn change_held(
        change: &crate::approval::change::HeldChange,
        session: &str,
        profile: Option<String>,
    ) -> CallRecord {
        let mut rec = CallRecord::allowed(
            session,
            &change.server,
            &change.row_name(),
            change.arguments.clone().unwrap_or_default(),
        );
        rec.decision = Decision::ChangeHeld;
        // The client got the approved version (a result), or the error.
        rec.outcome = match change.serving.as_str() {
            "pinned" => CallOutcome::Ok,
            _ => CallOutcome::NotRun,
        };
        rec.profile = profile;
        rec.error = Some(change.waits());
        rec
    }
}

/// Whether and how a call was let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The policy let it run without asking.
    Allowed,
    /// The person allowed this call.
    ApprovedOnce,
    /// The person allowed it for the session.
    ApprovedSession,
    /// The person allowed it always (this definition).
    ApprovedAlways,
    /// The person allowed this exact call for the session.
    ApprovedExact,
    /// The person allowed this exact call always (this definition).
    ApprovedExactAlways,
    /// An earlier "exact call" answer covered it.
    RememberedExact,
    /// An earlier "session" answer covered it.
    RememberedSession,
    /// An earlier "always" answer covered it.
    RememberedAlways,
    /// The person denied it (or nobody attends: `--deny-unattended`).
    Denied,
    /// Nobody answered in time.
    TimedOut,
    /// The client cancelled or went away while it was held.
    Withdrawn,
    /// The tool is disabled in the config.
    Disabled,
    /// The server was not running.
    NotRunning,
    /// Over a `rate_limit` the person set.
    RateLimited,
    /// What a server says (a prompt, its instructions, an app's HTML) changed since it was
    /// approved: the change waits for the person, the client got the pinned version or an error.
    ChangeHeld,
    /// Written by a newer Gatehouse; kept as it was.
    #[serde(other)]
    Unknown,
}

/// Decisions grouped the way a person filters them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionGroup {
    /// Ran by policy.
    Allowed,
    /// Ran because the person said so now.
    Approved,
    /// Ran because of an earlier answer.
    Remembered,
    /// Refused by the person.
    Denied,
    /// Refused because nobody answered.
    TimedOut,
    /// Never ran: disabled, not running, withdrawn (or unknown).
    Refused,
}

impl DecisionGroup {
    /// Every group, in the order a filter lists them.
    pub const ALL: [DecisionGroup; 6] = [
        DecisionGroup::Allowed,
        DecisionGroup::Approved,
        DecisionGroup::Remembered,
        DecisionGroup::Denied,
        DecisionGroup::TimedOut,
        DecisionGroup::Refused,
    ];

    /// The group's name, as serialised and filtered by.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionGroup::Allowed => "allowed",
            DecisionGroup::Approved => "approved",
            DecisionGroup::Remembered => "remembered",
            DecisionGroup::Denied => "denied",
            DecisionGroup::TimedOut => "timed_out",
            DecisionGroup::Refused => "refused",
        }
    }
}

impl Decision {
    const ALL: [Decision; 16] = [
        Decision::Allowed,
        Decision::ApprovedOnce,
        Decision::ApprovedSession,
        Decision::ApprovedAlways,
        Decision::ApprovedExact,
        Decision::ApprovedExactAlways,
        Decision::RememberedExact,
        Decision::RememberedSession,
        Decision::RememberedAlways,
        Decision::Denied,
        Decision::TimedOut,
        Decision::Withdrawn,
        Decision::Disabled,
        Decision::NotRunning,
        Decision::RateLimited,
        Decision::ChangeHeld,
    ];

    /// The decision's name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::ApprovedOnce => "approved_once",
            Decision::ApprovedSession => "approved_session",
            Decision::ApprovedAlways => "approved_always",
            Decision::ApprovedExact => "approved_exact",
            Decision::ApprovedExactAlways => "approved_exact_always",
            Decision::RememberedExact => "remembered_exact",
            Decision::RememberedSession => "remembered_session",
            Decision::RememberedAlways => "remembered_always",
            Decision::Denied => "denied",
            Decision::TimedOut => "timed_out",
            Decision::Withdrawn => "withdrawn",
            Decision::Disabled => "disabled",
            Decision::NotRunning => "not_running",
            Decision::RateLimited => "rate_limited",
            Decision::ChangeHeld => "change_held",
            Decision::Unknown => "unknown",
        }
    }

    /// The decision named `s` (`Unknown` for a name this version does not know).
    pub fn parse(s: &str) -> Decision {
        Decision::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .unwrap_or(Decision::Unknown)
    }

    /// "Approved" for the scope the person chose.
    pub fn approved(scope: Scope) -> Decision {
        match scope {
            Scope::Once => Decision::ApprovedOnce,
            Scope::Session => Decision::ApprovedSession,
            Scope::Always => Decision::ApprovedAlways,
            Scope::Exact => Decision::ApprovedExact,
            Scope::ExactAlways => Decision::ApprovedExactAlways,
        }
    }

    /// The group a person filters by.
    pub fn group(self) -> DecisionGroup {
        match self {
            Decision::Allowed => DecisionGroup::Allowed,
            Decision::ApprovedOnce
            | Decision::ApprovedSession
            | Decision::ApprovedAlways
            | Decision::ApprovedExact
            | Decision::ApprovedExactAlways => DecisionGroup::Approved,
            Decision::RememberedSession
            | Decision::RememberedAlways
            | Decision::RememberedExact => DecisionGroup::Remembered,
            Decision::Denied => DecisionGroup::Denied,
            Decision::TimedOut => DecisionGroup::TimedOut,
            Decision::Withdrawn
            | Decision::Disabled
            | Decision::NotRunning
            | Decision::RateLimited
            | Decision::ChangeHeld
            | Decision::Unknown => DecisionGroup::Refused,
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// A result.
    Ok,
    /// A result with `isError: true`.
    IsError,
    /// A JSON-RPC error from the server.
    ProtocolError,
    /// The server died or the connection was lost mid-call: the outcome is unknown.
    Lost,
    /// Gatehouse never sent it to the server.
    NotRun,
    /// The client cancelled or went away after it was sent (the server may have run it).
    Cancelled,
    /// The server did not answer within its `call_timeout_secs`; Gatehouse cancelled it.
    TimedOut,
    /// Written by a newer Gatehouse; kept as it was.
    #[serde(other)]
    Unknown,
}

impl CallOutcome {
    const ALL: [CallOutcome; 7] = [
        CallOutcome::Ok,
        CallOutcome::IsError,
        CallOutcome::ProtocolError,
        CallOutcome::Lost,
        CallOutcome::NotRun,
        CallOutcome::Cancelled,
        CallOutcome::TimedOut,
    ];

    /// The outcome's name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::IsError => "is_error",
            CallOutcome::ProtocolError => "protocol_error",
            CallOutcome::Lost => "lost",
            CallOutcome::NotRun => "not_run",
            CallOutcome::Cancelled => "cancelled",
            CallOutcome::TimedOut => "timed_out",
            CallOutcome::Unknown => "unknown",
        }
    }

    /// The outcome named `s` (`Unknown` for a name this version does not know).
    pub fn parse(s: &str) -> CallOutcome {
        CallOutcome::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .unwrap_or(CallOutcome::Unknown)
    }
}

/// Replaces secret values with `[secret:NAME]` before anything is stored.
pub trait Redactor: Send + Sync {
    /// The text with every known secret value masked.
    fn redact(&self, text: &str) -> String;
}

/// No known secret values (the keychain store registers its values once it exists).
pub struct NoRedaction;

impl Redactor for NoRedaction {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}

enum Msg {
    Record(Box<CallRecord>),
    Query {
        limit: usize,
        server: Option<String>,
        client: Option<String>,
        reply: oneshot::Sender<Result<Vec<CallRecord>, String>>,
    },
}

/// The log's handle. Cheap to clone.
#[derive(Clone)]
pub struct ActivityLog {
    tx: SyncSender<Msg>,
    /// The writer thread, unparked when a query is queued (a record wakes it only as the first
    /// of a batch, from its wait for one; while it gathers, records wake nothing).
    writer: Option<std::thread::Thread>,
    /// Guards the count of records dropped because the writer fell behind (reported once).
    dropped: Arc<Mutex<u64>>,
}

impl ActivityLog {
    /// Opens (or creates) the log at `path` and starts its thread, which masks each record with
    /// `redactor` before anything is stored. The thread ends when every handle is dropped.
    pub fn open(path: PathBuf, redactor: Arc<dyn Redactor>) -> ActivityLog {
        let (tx, rx) = sync_channel(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("gatehouse-activity".into())
            .spawn(move || writer(path, rx, redactor));
        let writer = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(e) => {
                tracing::error!(error = %e, "cannot start the activity log thread; calls are not logged");
                None
            }
        };
        ActivityLog {
            tx,
            writer,
            dropped: Arc::new(Mutex::new(0)),
        }
    }

    /// Queues a record (its arguments and error text are masked by the writer, before anything
    /// is stored); never blocks, never fails the caller, and wakes the writer only when it was
    /// idle (the first record of a batch).
    pub fn record(&self, rec: CallRecord) {
        match self.tx.try_send(Msg::Record(Box::new(rec))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                let mut d = crate::sync::lock(&self.dropped);
                *d += 1;
                if *d == 1 || d.is_power_of_two() {
                    tracing::warn!(dropped = *d, "the activity log is behind; records dropped");
                }
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// The newest `limit` records, optionally of one server, newest first.
    pub async fn recent(
        &self,
        limit: usize,
        server: Option<String>,
    ) -> Result<Vec<CallRecord>, String> {
        self.recent_of(limit, server, None).await
    }

    /// The newest records of one server and/or one client profile (`default` for the gateway
    /// token's calls), newest first.
    pub async fn recent_of(
        &self,
        limit: usize,
        server: Option<String>,
        client: Option<String>,
    ) -> Result<Vec<CallRecord>, String> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Msg::Query {
                limit,
                server,
                client,
                reply,
            })
            .map_err(|_| "the activity log is not running".to_owned())?;
        // The writer may be gathering records, asleep: a query is answered at once.
        if let Some(w) = &self.writer {
            w.unpark();
        }
        rx.await
            .map_err(|_| "the activity log is not running".to_owned())?
    }
}

#[cfg(test)]
mod tests {
    use super::store::*;
    use super::*;
    use std::time::Duration;

    #[test]
    fn group_names_are_the_serialised_ones() {
        for g in DecisionGroup::ALL {
            assert_eq!(serde_json::to_value(g).unwrap(), g.as_str());
        }
    }

    fn rec(i: u64, server: &str) -> CallRecord {
        CallRecord {
            client: Some("c".into()),
            duration_ms: i,
            ..CallRecord::allowed(
                "s",
                server,
                "t",
                format!("{{\"i\":{i},\"token\":\"hunter2\"}}"),
            )
        }
    }

    struct Hide;
    impl Redactor for Hide {
        fn redact(&self, t: &str) -> String {
            t.replace("hunter2", "[secret:pw]")
        }
    }

    #[tokio::test]
    async fn records_queries_and_redacts() {
        let dir = tempfile::tempdir().unwrap();
        let log = ActivityLog::open(dir.path().join("activity.db"), Arc::new(Hide));
        for i in 0..5 {
            log.record(rec(i, if i % 2 == 0 { "a" } else { "b" }));
        }
        let all = log.recent(10, None).await.unwrap();
        assert_eq!(all.len(), 5);
        assert_eq!(all[0].duration_ms, 4, "newest first");
        assert!(all
            .iter()
            .all(|r| r.arguments.contains("[secret:pw]") && !r.arguments.contains("hunter2")));
        assert_eq!(log.recent(10, Some("b".into())).await.unwrap().len(), 2);
        let raw = std::fs::read(dir.path().join("activity.db")).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&raw).contains("hunter2"));
    }

    /// A row keeps who called on what (client version and protocol), and a database made before
    /// those columns existed gains them when it is opened, its rows intact.
    #[tokio::test]
    async fn a_row_keeps_the_clients_version_and_protocol_and_old_databases_gain_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE calls (id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, client TEXT,
                 session TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
                 arguments TEXT NOT NULL, decision TEXT NOT NULL, decided_by TEXT NOT NULL,
                 duration_ms INTEGER NOT NULL, outcome TEXT NOT NULL);
                 INSERT INTO calls (time_ms, client, session, server, tool, arguments, decision,
                 decided_by, duration_ms, outcome) VALUES (1, 'old', 's', 'a', 't', '{}',
                 'allowed', 'policy', 3, 'ok');",
            )
            .unwrap();
        }
        let log = ActivityLog::open(path.clone(), Arc::new(NoRedaction));
        let mut r = rec(9, "a");
        r.client_version = Some("2.1.0".into());
        r.client_protocol = Some("2026-07-28".into());
        log.record(r);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let rows = loop {
            let rows = log.recent(10, None).await.unwrap();
            if rows.len() == 2 || std::time::Instant::now() > deadline {
                break rows;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].client_version.as_deref(), Some("2.1.0"));
        assert_eq!(rows[0].client_protocol.as_deref(), Some("2026-07-28"));
        assert_eq!(rows[1].client.as_deref(), Some("old"));
        assert_eq!(rows[1].client_version, None);
    }

    #[tokio::test]
    async fn a_corrupt_database_is_moved_aside_and_logging_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity.db");
        std::fs::write(
            &path,
            b"this is not a database, it is a note the user cares about",
        )
        .unwrap();
        let log = ActivityLog::open(path.clone(), Arc::new(NoRedaction));
        log.record(rec(1, "a"));
        assert_eq!(log.recent(10, None).await.unwrap().len(), 1);
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
            .collect();
        assert_eq!(aside.len(), 1);
        assert!(std::fs::read_to_string(aside[0].path())
            .unwrap()
            .contains("the user cares about"));
    }

    #[test]
    fn retention_keeps_at_most_max_rows_and_drops_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("a.db")).unwrap();
        let mut old = rec(0, "a");
        old.time_ms = 1;
        insert(&conn, &old).unwrap();
        for i in 0..10 {
            insert(&conn, &rec(i, "a")).unwrap();
        }
        prune(&conn, crate::logs::now_ms(), MAX_ROWS);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 10, "the 30-day-old row is gone");
        prune(&conn, crate::logs::now_ms(), 3);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3, "only the newest rows are kept");
        let newest: i64 = conn
            .query_row("SELECT max(duration_ms) FROM calls", [], |r| r.get(0))
            .unwrap();
        assert_eq!(newest, 9);
    }
}

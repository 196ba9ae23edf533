//! The activity log: every routed tool call (time, client, server, tool, arguments with secret
//! values redacted, the decision and who made it, duration, outcome) in SQLite in the data dir.
//!
//! One dedicated thread owns the connection; callers hand it records over a bounded channel and
//! never wait on it, so a call can never fail or slow down because logging did. A database that
//! cannot be opened or written (corrupt, locked) is reported and moved aside, and a fresh one
//! takes its place. Retention: 30 days and at most 100,000 rows.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, Connection};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::approval::request::{Decider, Scope};

pub mod export;

/// Rows older than this many days are pruned.
pub const RETENTION_DAYS: u64 = 30;
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
    /// Whether and how the call was let through.
    pub decision: Decision,
    /// Who decided.
    pub decided_by: Decider,
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
    const ALL: [Decision; 11] = [
        Decision::Allowed,
        Decision::ApprovedOnce,
        Decision::ApprovedSession,
        Decision::ApprovedAlways,
        Decision::RememberedSession,
        Decision::RememberedAlways,
        Decision::Denied,
        Decision::TimedOut,
        Decision::Withdrawn,
        Decision::Disabled,
        Decision::NotRunning,
    ];

    /// The decision's name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::ApprovedOnce => "approved_once",
            Decision::ApprovedSession => "approved_session",
            Decision::ApprovedAlways => "approved_always",
            Decision::RememberedSession => "remembered_session",
            Decision::RememberedAlways => "remembered_always",
            Decision::Denied => "denied",
            Decision::TimedOut => "timed_out",
            Decision::Withdrawn => "withdrawn",
            Decision::Disabled => "disabled",
            Decision::NotRunning => "not_running",
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
        }
    }

    /// The group a person filters by.
    pub fn group(self) -> DecisionGroup {
        match self {
            Decision::Allowed => DecisionGroup::Allowed,
            Decision::ApprovedOnce | Decision::ApprovedSession | Decision::ApprovedAlways => {
                DecisionGroup::Approved
            }
            Decision::RememberedSession | Decision::RememberedAlways => DecisionGroup::Remembered,
            Decision::Denied => DecisionGroup::Denied,
            Decision::TimedOut => DecisionGroup::TimedOut,
            Decision::Withdrawn | Decision::Disabled | Decision::NotRunning | Decision::Unknown => {
                DecisionGroup::Refused
            }
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

fn decider(s: &str) -> Decider {
    match s {
        "ui" => Decider::Ui,
        "cli" => Decider::Cli,
        _ => Decider::Policy,
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
    redactor: Arc<dyn Redactor>,
    /// Guards the count of records dropped because the writer fell behind (reported once).
    dropped: Arc<Mutex<u64>>,
}

impl ActivityLog {
    /// Opens (or creates) the log at `path` and starts its thread. The thread ends when every
    /// handle is dropped.
    pub fn open(path: PathBuf, redactor: Arc<dyn Redactor>) -> ActivityLog {
        let (tx, rx) = sync_channel(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("gatehouse-activity".into())
            .spawn(move || writer(path, rx));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the activity log thread; calls are not logged");
        }
        ActivityLog {
            tx,
            redactor,
            dropped: Arc::new(Mutex::new(0)),
        }
    }

    /// Queues a record; never blocks, never fails the caller.
    pub fn record(&self, mut rec: CallRecord) {
        rec.arguments = self.redactor.redact(&rec.arguments);
        match self.tx.try_send(Msg::Record(Box::new(rec))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                let mut d = self.dropped.lock().unwrap_or_else(|e| e.into_inner());
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
        rx.await
            .map_err(|_| "the activity log is not running".to_owned())?
    }
}

/// Records kept while the database cannot take them (locked by another process, disk full); the
/// oldest go first beyond this.
const BACKLOG: usize = 10_000;
/// How often a database that could not be written is tried again.
const RETRY: Duration = Duration::from_secs(1);

fn writer(path: PathBuf, rx: Receiver<Msg>) {
    let mut db = open_or_rotate(&path);
    let mut backlog: std::collections::VecDeque<Box<CallRecord>> = Default::default();
    let mut failing = false;
    let mut since_prune = 0usize;
    loop {
        // With records waiting for a database that refused them, wake up to try again.
        let first = if backlog.is_empty() && db.is_some() {
            match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => break,
            }
        } else {
            match rx.recv_timeout(RETRY) {
                Ok(m) => Some(m),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        };
        // Everything already queued goes in one transaction: at thousands of calls a second a
        // transaction per record would cost more than the calls themselves.
        let mut queries = Vec::new();
        let mut next = first;
        let mut taken = 0;
        while let Some(msg) = next.take() {
            match msg {
                Msg::Record(r) => {
                    if backlog.len() == BACKLOG {
                        backlog.pop_front();
                        tracing::warn!("the activity log is unwritable and {BACKLOG} records wait; the oldest is dropped");
                    }
                    backlog.push_back(r);
                    taken += 1;
                }
                q @ Msg::Query { .. } => queries.push(q),
            }
            if taken < 1024 {
                next = rx.try_recv().ok();
            }
        }
        if db.is_none() {
            db = open_or_rotate(&path);
        }
        if let (false, Some(conn)) = (backlog.is_empty(), db.as_mut()) {
            let batch: Vec<&CallRecord> = backlog.iter().map(|r| &**r).collect();
            match insert_batch(conn, &batch) {
                Ok(()) => {
                    since_prune += backlog.len();
                    backlog.clear();
                    if failing {
                        failing = false;
                        tracing::info!(path = %path.display(), "the activity log is written again");
                    }
                }
                Err(e) if is_corrupt(&e) => {
                    tracing::error!(path = %path.display(), error = %e, "the activity log is corrupt; moving it aside");
                    drop(db.take()); // close the file before moving it aside
                    rotate_aside(&path);
                    db = open_or_rotate(&path);
                }
                Err(e) => {
                    // Locked by another process, disk full…: the records wait, the file stays.
                    if !failing {
                        failing = true;
                        tracing::warn!(path = %path.display(), error = %e, "cannot write the activity log for now; retrying, nothing is lost");
                    }
                }
            }
        }
        if since_prune >= 500 {
            since_prune = 0;
            if let Some(conn) = db.as_ref() {
                prune(conn, crate::logs::now_ms(), MAX_ROWS);
            }
        }
        for q in queries {
            if let Msg::Query {
                limit,
                server,
                client,
                reply,
            } = q
            {
                let result = match db.as_ref() {
                    Some(conn) => query(conn, limit, server.as_deref(), client.as_deref())
                        .map_err(|e| e.to_string()),
                    None => Err(format!(
                        "the activity log {} cannot be opened right now (it is retried)",
                        path.display()
                    )),
                };
                let _ = reply.send(result);
            }
        }
    }
}

/// Whether an error means the file is not (or no longer) a sound database — the only case it
/// is moved aside. Locks, a full disk and I/O hiccups are retried instead.
fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

fn insert_batch(conn: &mut Connection, batch: &[&CallRecord]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for r in batch {
        insert(&tx, r)?;
    }
    tx.commit()
}

fn open_or_rotate(path: &Path) -> Option<Connection> {
    match open(path) {
        Ok(c) => Some(c),
        Err(e) if !is_corrupt(&e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot open the activity log for now; retrying");
            None
        }
        Err(e) => {
            tracing::error!(path = %path.display(), error = %e, "the activity log is unreadable; moving it aside and starting a new one");
            rotate_aside(path);
            match open(path) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::error!(path = %path.display(), error = %e, "cannot create the activity log; calls are not logged");
                    None
                }
            }
        }
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    if let Some(dir) = path.parent() {
        let _ = crate::private::create_dir(dir);
    }
    // Created 0600 first: SQLite gives its -wal and -shm files the database file's mode.
    let _ = crate::private::touch(path);
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL;
         PRAGMA synchronous=NORMAL;
         CREATE TABLE IF NOT EXISTS calls (
             id INTEGER PRIMARY KEY,
             time_ms INTEGER NOT NULL,
             client TEXT,
             session TEXT NOT NULL,
             server TEXT NOT NULL,
             tool TEXT NOT NULL,
             arguments TEXT NOT NULL,
             decision TEXT NOT NULL,
             decided_by TEXT NOT NULL,
             duration_ms INTEGER NOT NULL,
             outcome TEXT NOT NULL
         );
         -- No secondary indexes: every insert would update them, while queries read the newest
         -- rows by rowid and pruning scans at most 100,000 rows every 500 inserts.
         DROP INDEX IF EXISTS calls_time;
         DROP INDEX IF EXISTS calls_server;",
    )?;
    // Added after the first release: which process answered through the control socket.
    let has_via: bool = conn.query_row(
        "SELECT count(*) FROM pragma_table_info('calls') WHERE name = 'decided_via'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_via {
        conn.execute_batch("ALTER TABLE calls ADD COLUMN decided_via TEXT;")?;
    }
    // Added with client profiles: which profile's token the call came with (NULL: default).
    let has_profile: bool = conn.query_row(
        "SELECT count(*) FROM pragma_table_info('calls') WHERE name = 'profile'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_profile {
        conn.execute_batch("ALTER TABLE calls ADD COLUMN profile TEXT;")?;
    }
    // Added with the Activity detail pane: the time spent waiting for the person.
    let has_waited: bool = conn.query_row(
        "SELECT count(*) FROM pragma_table_info('calls') WHERE name = 'waited_ms'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_waited {
        conn.execute_batch("ALTER TABLE calls ADD COLUMN waited_ms INTEGER NOT NULL DEFAULT 0;")?;
    }
    // A file that is not a database fails here, not at the first insert.
    conn.query_row("SELECT count(*) FROM calls", [], |r| r.get::<_, i64>(0))?;
    Ok(conn)
}

fn rotate_aside(path: &Path) {
    let aside = path.with_extension(format!("corrupt-{}", crate::logs::now_ms()));
    for suffix in ["", "-wal", "-shm"] {
        let mut from = path.as_os_str().to_owned();
        from.push(suffix);
        let mut to = aside.as_os_str().to_owned();
        to.push(suffix);
        let _ = std::fs::rename(&from, &to);
    }
    tracing::error!(aside = %aside.display(), "the old activity log was kept aside");
}

fn insert(conn: &Connection, r: &CallRecord) -> rusqlite::Result<()> {
    // Prepared once per connection and reused: parsing the SQL would cost more than the insert.
    conn.prepare_cached(
        "INSERT INTO calls (time_ms, client, session, server, tool, arguments, decision, decided_by, duration_ms, outcome, decided_via, profile, waited_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
            r.time_ms as i64,
            r.client,
            r.session,
            r.server,
            r.tool,
            r.arguments,
            r.decision.as_str(),
            r.decided_by.as_str(),
            r.duration_ms as i64,
            r.outcome.as_str(),
            r.decided_via,
            r.profile,
            r.waited_ms as i64
        ],
    )?;
    Ok(())
}

fn prune(conn: &Connection, now_ms: u64, max_rows: i64) {
    let cutoff = now_ms.saturating_sub(RETENTION_DAYS * 24 * 3600 * 1000) as i64;
    let _ = conn.execute("DELETE FROM calls WHERE time_ms < ?1", params![cutoff]);
    let _ = conn.execute(
        "DELETE FROM calls WHERE id <= (SELECT max(id) FROM calls) - ?1",
        params![max_rows],
    );
}

fn query(
    conn: &Connection,
    limit: usize,
    server: Option<&str>,
    client: Option<&str>,
) -> rusqlite::Result<Vec<CallRecord>> {
    let mut stmt = conn.prepare(
        "SELECT time_ms, client, session, server, tool, arguments, decision, decided_by, duration_ms, outcome, decided_via, profile, waited_ms
         FROM calls WHERE (?1 IS NULL OR server = ?1) AND (?3 IS NULL OR coalesce(profile, 'default') = ?3)
         ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![server, limit as i64, client], |r| {
        Ok(CallRecord {
            time_ms: r.get::<_, i64>(0)? as u64,
            client: r.get(1)?,
            session: r.get(2)?,
            server: r.get(3)?,
            tool: r.get(4)?,
            arguments: r.get(5)?,
            decision: Decision::parse(&r.get::<_, String>(6)?),
            decided_by: decider(&r.get::<_, String>(7)?),
            duration_ms: r.get::<_, i64>(8)? as u64,
            outcome: CallOutcome::parse(&r.get::<_, String>(9)?),
            decided_via: r.get(10)?,
            profile: r.get(11)?,
            waited_ms: r.get::<_, i64>(12)? as u64,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names_are_the_serialised_ones() {
        for g in DecisionGroup::ALL {
            assert_eq!(serde_json::to_value(g).unwrap(), g.as_str());
        }
    }

    fn rec(i: u64, server: &str) -> CallRecord {
        CallRecord {
            time_ms: crate::logs::now_ms(),
            client: Some("c".into()),
            session: "s".into(),
            server: server.into(),
            tool: "t".into(),
            arguments: format!("{{\"i\":{i},\"token\":\"hunter2\"}}"),
            decision: Decision::Allowed,
            decided_by: Decider::Policy,
            duration_ms: i,
            outcome: CallOutcome::Ok,
            decided_via: None,
            profile: None,
            waited_ms: 0,
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

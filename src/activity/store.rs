//! The activity log's SQLite side, on its own thread: batched inserts, retention, a damaged
//! database set aside and started afresh, and the queries.

use super::CallOutcome;
use super::CallRecord;
use super::DecidedBy;
use super::Decision;
use super::Msg;
use super::Redactor;
use super::MAX_ROWS;
use super::RETENTION_DAYS;
use rusqlite::params;
use rusqlite::Connection;
use std::path::Path;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;

/// Records kept while the database cannot take them (locked by another process, disk full); the
/// oldest go first beyond this.
const BACKLOG: usize = 10_000;
/// How often a database that could not be written is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How long the writer gathers records after the first of a batch before writing them in one
/// transaction (a query cuts it short, and is answered after every record sent before it): at
/// one call at a time, a transaction per call cost more than the rest of the hub's work on it,
/// and at 10 ms the writer was still 11 % of the hub's CPU with one client (2–3 % at 50 ms).
pub(super) const LINGER: Duration = Duration::from_millis(50);
/// Records in one transaction at most.
const BATCH: usize = 1024;
/// Records masked or inserted between two yields of the writer's CPU (about 0.2 ms of work).
pub(super) const YIELD_EVERY: usize = 64;
/// How often rows past the retention are looked for, at most.
const AGE_PRUNE_EVERY: Duration = Duration::from_secs(600);

pub(super) fn writer(path: PathBuf, rx: Receiver<Msg>, redactor: Arc<dyn Redactor>) {
    let mut db = open_or_rotate(&path);
    let mut backlog: std::collections::VecDeque<Box<CallRecord>> = Default::default();
    let mut failing = false;
    let mut since_prune = 0usize;
    // The first prune looks at the age too (a log that was not opened for weeks).
    let mut aged_at: Option<std::time::Instant> = None;
    let mut pacer = Pacer::default();
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
        let queries = gather(first, &rx, &mut backlog, redactor.as_ref(), &mut pacer);
        if db.is_none() {
            db = open_or_rotate(&path);
        }
        if let (false, Some(conn)) = (backlog.is_empty(), db.as_mut()) {
            let batch: Vec<&CallRecord> = backlog.iter().map(|r| &**r).collect();
            match insert_batch(conn, &batch, &mut pacer) {
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
                // The count by rowid every 500 rows; the age (a scan of the table) at most once
                // every `AGE_PRUNE_EVERY`: a day's precision is plenty for a 30-day retention.
                prune_count(conn, MAX_ROWS);
                if aged_at.is_none_or(|t| t.elapsed() >= AGE_PRUNE_EVERY) {
                    aged_at = Some(std::time::Instant::now());
                    prune_age(conn, crate::logs::now_ms());
                }
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

/// Everything queued within [`LINGER`] of the `first` message goes in one transaction (at
/// thousands of calls a second a transaction per record would cost more than the calls): the
/// records, masked here (off the calls' path), into `backlog`; the queries returned, answered
/// after the records before them are written. The writer sleeps while it gathers — a record
/// queued meanwhile wakes nothing (a sender never blocks on this thread); a query unparks it, so
/// it is answered at once.
fn gather(
    first: Option<Msg>,
    rx: &Receiver<Msg>,
    backlog: &mut std::collections::VecDeque<Box<CallRecord>>,
    redactor: &dyn Redactor,
    pacer: &mut Pacer,
) -> Vec<Msg> {
    let mut queries = Vec::new();
    let mut taken = 0;
    let until = std::time::Instant::now() + LINGER;
    let mut next = first;
    loop {
        while let Some(msg) = next.take().or_else(|| rx.try_recv().ok()) {
            match msg {
                Msg::Record(mut r) => {
                    masked(&mut r, redactor);
                    if backlog.len() == BACKLOG {
                        backlog.pop_front();
                        tracing::warn!("the activity log is unwritable and {BACKLOG} records wait; the oldest is dropped");
                    }
                    backlog.push_back(r);
                    taken += 1;
                    pacer.step();
                }
                q @ Msg::Query { .. } => queries.push(q),
            }
            if taken >= BATCH || !queries.is_empty() {
                return queries;
            }
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return queries;
        }
        std::thread::park_timeout(left);
    }
}

/// A record's arguments with every known secret value masked, and its error text masked whole,
/// then cut (a cut first could leave part of a secret unmasked).
fn masked(r: &mut CallRecord, redactor: &dyn Redactor) {
    r.arguments = redactor.redact(&r.arguments);
    // An error text quotes the server (its message, its result's text): masked the same.
    r.error = r
        .error
        .take()
        .map(|e| crate::text::cut(&redactor.redact(&e), super::MAX_ERROR_CHARS));
}

/// Whether an error means the file is not (or no longer) a sound database — the only case it
/// is moved aside. Locks, a full disk and I/O hiccups are retried instead.
pub(super) fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// The writer's share of its CPU, given back as it goes: it yields after every
/// [`YIELD_EVERY`] records it masks or inserts. A full batch is milliseconds of work; run
/// whole, it held its CPU while a thread woken there on a call's path (the server's, the
/// client's, the hub's own) waited behind it — with the other CPU idle, for the kernel does not
/// move a thread that ran a moment ago. That wait was most of the gateway's p99 with 16
/// clients (`cargo bench --bench gateway`).
#[derive(Default)]
pub(super) struct Pacer {
    since: usize,
    /// Yields so far (read by the tests).
    pub(super) yields: usize,
}

impl Pacer {
    /// One record handled; every [`YIELD_EVERY`]th gives the CPU to whatever waits for it.
    pub(super) fn step(&mut self) {
        self.since += 1;
        if self.since == YIELD_EVERY {
            self.since = 0;
            self.yields += 1;
            std::thread::yield_now();
        }
    }
}

pub(super) fn insert_batch(
    conn: &mut Connection,
    batch: &[&CallRecord],
    pacer: &mut Pacer,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        // Looked up once per batch: the statement cache hashes the whole SQL text on each look.
        let mut stmt = tx.prepare_cached(INSERT)?;
        for r in batch {
            insert_with(&mut stmt, r)?;
            pacer.step();
        }
    }
    tx.commit()
}

pub(super) fn open_or_rotate(path: &Path) -> Option<Connection> {
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

pub(super) fn open(path: &Path) -> rusqlite::Result<Connection> {
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
    // Columns added after the first release, each added to an older database when it opens:
    // which process answered through the control socket; which profile's token the call came
    // with (NULL: default); the time spent waiting for the person; the client's version and
    // protocol revision.
    for (column, declared) in [
        ("decided_via", "TEXT"),
        ("profile", "TEXT"),
        ("waited_ms", "INTEGER NOT NULL DEFAULT 0"),
        ("client_version", "TEXT"),
        ("client_protocol", "TEXT"),
        ("error", "TEXT"),
        ("answered_in", "TEXT"),
        ("rule", "TEXT"),
    ] {
        let has: bool = conn.query_row(
            "SELECT count(*) FROM pragma_table_info('calls') WHERE name = ?1",
            [column],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !has {
            conn.execute_batch(&format!(
                "ALTER TABLE calls ADD COLUMN {column} {declared};"
            ))?;
        }
    }
    // A file that is not a database fails here, not at the first insert.
    conn.query_row("SELECT count(*) FROM calls", [], |r| r.get::<_, i64>(0))?;
    Ok(conn)
}

pub(super) fn rotate_aside(path: &Path) {
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

/// The one insert of a row, prepared once per connection and reused: parsing the SQL would cost
/// more than the insert.
const INSERT: &str = "INSERT INTO calls (time_ms, client, session, server, tool, arguments, decision, decided_by, duration_ms, outcome, decided_via, profile, waited_ms, client_version, client_protocol, error, answered_in, rule)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";

/// Inserts one row (the unit tests').
#[cfg(test)]
pub(super) fn insert(conn: &Connection, r: &CallRecord) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(INSERT)?;
    insert_with(&mut stmt, r)
}

fn insert_with(stmt: &mut rusqlite::Statement<'_>, r: &CallRecord) -> rusqlite::Result<()> {
    stmt.execute(params![
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
        r.waited_ms as i64,
        r.client_version,
        r.client_protocol,
        r.error,
        r.answered_in,
        r.rule,
    ])?;
    Ok(())
}

/// Both prunes at once (the unit tests').
#[cfg(test)]
pub(super) fn prune(conn: &Connection, now_ms: u64, max_rows: i64) {
    prune_age(conn, now_ms);
    prune_count(conn, max_rows);
}

/// Rows older than the retention go (a scan: the table has no index on time).
fn prune_age(conn: &Connection, now_ms: u64) {
    let cutoff = now_ms.saturating_sub(RETENTION_DAYS * 24 * 3600 * 1000) as i64;
    let _ = conn.execute("DELETE FROM calls WHERE time_ms < ?1", params![cutoff]);
}

/// Rows past the newest `max_rows` go (by rowid: cheap).
fn prune_count(conn: &Connection, max_rows: i64) {
    let _ = conn.execute(
        "DELETE FROM calls WHERE id <= (SELECT max(id) FROM calls) - ?1",
        params![max_rows],
    );
}

pub(super) fn query(
    conn: &Connection,
    limit: usize,
    server: Option<&str>,
    client: Option<&str>,
) -> rusqlite::Result<Vec<CallRecord>> {
    let mut stmt = conn.prepare(
        "SELECT time_ms, client, session, server, tool, arguments, decision, decided_by, duration_ms, outcome, decided_via, profile, waited_ms, client_version, client_protocol, error, answered_in, rule, id
         FROM calls WHERE (?1 IS NULL OR server = ?1) AND (?3 IS NULL OR coalesce(profile, 'default') = ?3)
         ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![server, limit as i64, client], |r| {
        let (by, legacy_in) = DecidedBy::parse(&r.get::<_, String>(7)?);
        let row = CallRecord {
            time_ms: r.get::<_, i64>(0)? as u64,
            client: r.get(1)?,
            session: r.get(2)?,
            server: r.get(3)?,
            tool: r.get(4)?,
            arguments: r.get(5)?,
            id: r.get::<_, i64>(18)? as u64,
            decision: Decision::parse(&r.get::<_, String>(6)?),
            decided_by: by,
            answered_in: r
                .get::<_, Option<String>>(16)?
                .or(legacy_in.map(str::to_owned)),
            rule: r.get(17)?,
            duration_ms: r.get::<_, i64>(8)? as u64,
            outcome: CallOutcome::parse(&r.get::<_, String>(9)?),
            decided_via: r.get(10)?,
            profile: r.get(11)?,
            waited_ms: r.get::<_, i64>(12)? as u64,
            client_version: r.get(13)?,
            client_protocol: r.get(14)?,
            error: r.get(15)?,
            flags: Default::default(),
        };
        let flags = crate::text::Flags::of(row.client.as_deref(), &row.tool, &row.arguments);
        Ok(CallRecord { flags, ..row })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    /// The writer gives its CPU back as it goes: a full batch, masked and then inserted, yields
    /// after every `YIELD_EVERY` records, so a thread woken on its CPU for a call never waits
    /// for the whole batch. Every record is still written, in one transaction.
    #[test]
    fn a_full_batch_gives_its_cpu_back_every_few_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("a.db")).unwrap();
        let (tx, rx) = sync_channel(BATCH);
        for i in 0..BATCH {
            let r = CallRecord::allowed("s", "fx", "echo", format!(r#"{{"i":{i}}}"#));
            tx.send(Msg::Record(Box::new(r))).unwrap();
        }
        let mut backlog = std::collections::VecDeque::new();
        let mut pacer = Pacer::default();
        let queries = gather(
            None,
            &rx,
            &mut backlog,
            &super::super::NoRedaction,
            &mut pacer,
        );
        assert!(queries.is_empty());
        assert_eq!(backlog.len(), BATCH);
        assert_eq!(
            pacer.yields,
            BATCH / YIELD_EVERY,
            "masking yields as it goes"
        );
        let batch: Vec<&CallRecord> = backlog.iter().map(|r| &**r).collect();
        insert_batch(&mut conn, &batch, &mut pacer).unwrap();
        assert_eq!(
            pacer.yields,
            2 * BATCH / YIELD_EVERY,
            "inserting yields too"
        );
        let n: i64 = conn
            .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, BATCH as i64);
    }
}

//! Activity rows as a file a person keeps or opens elsewhere: JSON (the records as
//! `gatehouse activity --json` prints them) or CSV (RFC 4180, one row per call).
//!
//! Every text in a row can come from a client or a server (tool names, client names, arguments),
//! so a CSV cell that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, tab
//! or carriage return) is written with a leading `'`. Files are created new, readable by the
//! person only (arguments are private even with secrets masked), never overwriting one.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::CallRecord;
use crate::logs::Utc;

/// A file format for exported rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// A JSON array of records.
    Json,
    /// Comma-separated values with a header line.
    Csv,
}

impl Format {
    /// The file name extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
        }
    }
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 17] = [
    "time",
    "time_ms",
    "client",
    "profile",
    "session",
    "server",
    "tool",
    "decision",
    "decided_by",
    "decided_via",
    "waited_ms",
    "server_ms",
    "duration_ms",
    "outcome",
    "arguments",
    "answered_in",
    "rule",
];

/// The rows in `format`.
pub fn render(rows: &[CallRecord], format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(rows).unwrap_or_else(|_| "[]".into()),
        Format::Csv => csv(rows),
    }
}

/// RFC 4180 CSV with a header line and CRLF line ends.
pub fn csv(rows: &[CallRecord]) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push_str("\r\n");
    for r in rows {
        let t = Utc::from_secs(r.time_ms / 1000);
        let time = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year,
            t.month,
            t.day,
            t.hour,
            t.minute,
            t.second,
            r.time_ms % 1000
        );
        let cells: [&str; 17] = [
            &time,
            &r.time_ms.to_string(),
            r.client.as_deref().unwrap_or(""),
            r.profile.as_deref().unwrap_or("default"),
            &r.session,
            &r.server,
            &r.tool,
            r.decision.as_str(),
            r.decided_by.as_str(),
            r.decided_via.as_deref().unwrap_or(""),
            &r.waited_ms.to_string(),
            &r.duration_ms.saturating_sub(r.waited_ms).to_string(),
            &r.duration_ms.to_string(),
            r.outcome.as_str(),
            &r.arguments,
            r.answered_in.as_deref().unwrap_or(""),
            r.rule.as_deref().unwrap_or(""),
        ];
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            cell_into(&mut out, cell);
        }
        out.push_str("\r\n");
    }
    out
}

/// One cell: quoted when it holds a separator, a quote or a line break; defused when a
/// spreadsheet would read it as a formula.
fn cell_into(out: &mut String, cell: &str) {
    let formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let quote = formula || cell.contains([',', '"', '\n', '\r']);
    if !quote {
        out.push_str(cell);
        return;
    }
    out.push('"');
    if formula {
        out.push('\'');
    }
    let _ = write!(out, "{}", cell.replace('"', "\"\""));
    out.push('"');
}

/// The folder exports go to: the person's Downloads folder, else their home.
pub fn default_dir() -> Option<PathBuf> {
    dirs::download_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join("Downloads")))
        .filter(|d| d.is_dir())
        .or_else(dirs::home_dir)
}

/// Writes the rows to a new file `gatehouse-activity-YYYYMMDD-HHMMSS.EXT` in `dir` (`-2`, `-3`, …
/// when that name is taken; nothing is ever overwritten), 0600. Returns its path.
pub fn write(dir: &Path, rows: &[CallRecord], format: Format) -> std::io::Result<PathBuf> {
    let body = render(rows, format);
    let stem = format!("gatehouse-activity-{}", Utc::now().stamp());
    for n in 1..=100 {
        let name = match n {
            1 => format!("{stem}.{}", format.extension()),
            n => format!("{stem}-{n}.{}", format.extension()),
        };
        let path = dir.join(name);
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        match o.open(&path) {
            Ok(mut f) => {
                return match f.write_all(body.as_bytes()).and_then(|()| f.sync_all()) {
                    Ok(()) => Ok(path),
                    Err(e) => {
                        // A full disk leaves no half file behind.
                        let _ = std::fs::remove_file(&path);
                        Err(e)
                    }
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("{}: 100 exports this second already", dir.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::{CallOutcome, Decision};

    fn row(tool: &str, arguments: &str, client: Option<&str>) -> CallRecord {
        CallRecord {
            time_ms: 1_764_000_000_123,
            client: client.map(str::to_owned),
            session: "s1".into(),
            server: "files".into(),
            tool: tool.into(),
            arguments: arguments.into(),
            id: 0,
            decision: Decision::ApprovedOnce,
            decided_by: crate::activity::DecidedBy::Person,
            answered_in: Some("app".into()),
            rule: None,
            duration_ms: 1_250,
            outcome: CallOutcome::Ok,
            decided_via: None,
            profile: None,
            waited_ms: 1_000,
            client_version: None,
            client_protocol: None,
            error: None,
            flags: Default::default(),
        }
    }

    /// Splits RFC 4180 text back into cells (a reader as a spreadsheet would be).
    fn parse(text: &str) -> Vec<Vec<String>> {
        let (mut rows, mut row, mut cell) = (vec![], vec![], String::new());
        let (mut quoted, mut chars) = (false, text.chars().peekable());
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    cell.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => cell.push(c),
                (false, '"') => quoted = true,
                (false, ',') => row.push(std::mem::take(&mut cell)),
                (false, '\r') => {}
                (false, '\n') => {
                    row.push(std::mem::take(&mut cell));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => cell.push(c),
            }
        }
        rows
    }

    #[test]
    fn csv_round_trips_every_text_and_defuses_formulas() {
        let args = "{\"path\": \"a,b\", \"note\": \"line 1\\nline \\\"2\\\"\"}\nreal break";
        let rows = [
            row("read", args, Some("Claude, \"Code\"")),
            row("=HYPERLINK(\"http://evil\")", "{}", Some("@SUM(A1)")),
            row("plain", "-1+1", None),
        ];
        let cells = parse(&csv(&rows));
        assert_eq!(cells.len(), 4);
        assert_eq!(cells[0], CSV_COLUMNS);
        assert!(cells.iter().all(|r| r.len() == CSV_COLUMNS.len()));
        let first = &cells[1];
        assert_eq!(first[0], "2025-11-24T16:00:00.123Z");
        assert_eq!(first[2], "Claude, \"Code\"");
        assert_eq!(first[3], "default");
        assert_eq!(first[14], args);
        // The two durations: waiting for the person, and the server's own time.
        assert_eq!(
            (&*first[10], &*first[11], &*first[12]),
            ("1000", "250", "1250")
        );
        // A cell a spreadsheet would evaluate is kept as text.
        assert_eq!(cells[2][6], "'=HYPERLINK(\"http://evil\")");
        assert_eq!(cells[2][2], "'@SUM(A1)");
        assert_eq!(cells[3][14], "'-1+1");
    }

    #[test]
    fn exports_are_new_private_files_that_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [row("read", "{}", None)];
        let a = write(dir.path(), &rows, Format::Json).unwrap();
        let b = write(dir.path(), &rows, Format::Json).unwrap();
        assert_ne!(a, b);
        let back: Vec<CallRecord> =
            serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
        assert_eq!(back, rows);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&b).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}

//! Per-server logs: a bounded ring buffer of recent lines (what `gatehouse logs` and the UI show)
//! and a size-rotated log file in the data dir.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Lines kept in memory per server.
pub const RING_LINES: usize = 1000;
/// The most of one line the ring keeps (the file keeps it whole): 1,000 lines of a server that
/// prints 64 KiB lines hold 8 MiB, not 64.
pub const RING_LINE_BYTES: usize = 8 * 1024;
/// A log file is rotated when it grows past this size; `LOG_KEEP` old files are kept.
pub const LOG_ROTATE_BYTES: u64 = 5 * 1024 * 1024;
/// Old log files kept beside the current one.
pub const LOG_KEEP: usize = 3;

/// One line of a server's log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LogLine {
    /// The server's id.
    pub server: String,
    /// `stderr` for the child's own output, `gatehouse` for what Gatehouse noted about it.
    pub stream: LogStream,
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// The text, with secret values masked.
    pub line: String,
}

/// Where a log line came from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LogStream {
    /// The server's own stderr.
    Stderr,
    /// A note Gatehouse made about the server.
    Gatehouse,
}

/// One server's logs. The mutex guards one push or one snapshot; never held across `.await`.
#[derive(Debug)]
pub struct LogStore {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    ring: VecDeque<LogLine>,
    file: Option<RotatingFile>,
}

impl LogStore {
    /// `file`: where to persist lines; `None` keeps them in memory only.
    pub fn new(file: Option<PathBuf>) -> Self {
        LogStore {
            inner: Mutex::new(Inner {
                ring: VecDeque::with_capacity(64),
                file: file.map(RotatingFile::new),
            }),
        }
    }

    /// Keeps a line (ring buffer and file) and hands it to `publish` while no other line can be
    /// pushed or followed, so a follower never misses or repeats one.
    pub fn push(&self, line: LogLine, publish: impl FnOnce(&LogLine)) {
        let mut inner = self.lock();
        if let Some(f) = inner.file.as_mut() {
            f.write_line(&line);
        }
        publish(&line);
        if inner.ring.len() == RING_LINES {
            inner.ring.pop_front();
        }
        let mut line = line;
        if line.line.len() > RING_LINE_BYTES {
            let mut at = RING_LINE_BYTES;
            while !line.line.is_char_boundary(at) {
                at -= 1;
            }
            let more = line.line.len() - at;
            line.line.truncate(at);
            line.line
                .push_str(&format!(" … [{more} bytes more in the log file]"));
        }
        inner.ring.push_back(line);
    }

    /// The last `n` lines (all kept when `None`) and `subscribe()`'s result, taken together: every
    /// line pushed later is published after the subscription, every earlier one is in the
    /// snapshot.
    pub fn follow<R>(&self, n: Option<usize>, subscribe: impl FnOnce() -> R) -> (Vec<LogLine>, R) {
        let inner = self.lock();
        let skip = n.map_or(0, |n| inner.ring.len().saturating_sub(n));
        let snapshot = inner.ring.iter().skip(skip).cloned().collect();
        (snapshot, subscribe())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A poisoned store only means a writer panicked mid-push; the ring is still valid.
        crate::sync::lock(&self.inner)
    }

    /// The last `n` lines (all kept lines when `n` is `None`).
    pub fn tail(&self, n: Option<usize>) -> Vec<LogLine> {
        let inner = self.lock();
        let skip = n.map_or(0, |n| inner.ring.len().saturating_sub(n));
        inner.ring.iter().skip(skip).cloned().collect()
    }

    /// The last `n` stderr lines written at or after `since_ms`, whole, one per line (for
    /// reading what a server said, e.g. a refusal the sandbox may have caused).
    pub fn stderr_since(&self, n: usize, since_ms: u64) -> String {
        let inner = self.lock();
        let mut lines: Vec<&str> = inner
            .ring
            .iter()
            .rev()
            .take_while(|l| l.time_ms >= since_ms)
            .filter(|l| l.stream == LogStream::Stderr)
            .take(n)
            .map(|l| l.line.as_str())
            .collect();
        lines.reverse();
        lines.join("\n")
    }

    /// The last `n` stderr lines written at or after `since_ms`, joined, for error messages
    /// ("exited with code 1: …"). Old lines (a startup banner) would only mislead.
    pub fn last_stderr(&self, n: usize, since_ms: u64) -> Option<String> {
        let inner = self.lock();
        let lines: Vec<&str> = inner
            .ring
            .iter()
            .rev()
            .take_while(|l| l.time_ms >= since_ms)
            .filter(|l| l.stream == LogStream::Stderr && !l.line.trim().is_empty())
            .take(n)
            .map(|l| l.line.as_str())
            .collect();
        if lines.is_empty() {
            return None;
        }
        let mut text = lines.into_iter().rev().collect::<Vec<_>>().join(" | ");
        if text.len() > 400 {
            let mut cut = 400;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        Some(text)
    }
}

#[derive(Debug)]
struct RotatingFile {
    path: PathBuf,
    file: Option<File>,
    size: u64,
    failed: bool,
}

impl RotatingFile {
    fn new(path: PathBuf) -> Self {
        RotatingFile {
            path,
            file: None,
            size: 0,
            failed: false,
        }
    }

    fn write_line(&mut self, line: &LogLine) {
        if self.failed {
            return;
        }
        if self.file.is_none() || self.size >= LOG_ROTATE_BYTES {
            if self.size >= LOG_ROTATE_BYTES {
                self.file = None;
                rotate(&self.path);
            }
            match open_append(&self.path) {
                Ok((f, size)) => {
                    self.file = Some(f);
                    self.size = size;
                }
                Err(e) => {
                    // Logging must never break supervision; say it once and keep the ring buffer.
                    tracing::warn!(path = %self.path.display(), error = %e, "cannot open server log file; keeping logs in memory only");
                    self.failed = true;
                    return;
                }
            }
        }
        let tag = match line.stream {
            LogStream::Stderr => "stderr",
            LogStream::Gatehouse => "gatehouse",
        };
        let text = format!("{} {tag} {}\n", line.time_ms, line.line);
        if let Some(f) = self.file.as_mut() {
            if f.write_all(text.as_bytes()).is_ok() {
                self.size += text.len() as u64;
            }
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<(File, u64)> {
    if let Some(dir) = path.parent() {
        crate::private::create_dir(dir)?;
    }
    let f = crate::private::open_append(path)?;
    let size = f.metadata()?.len();
    Ok((f, size))
}

/// `x.log` → `x.log.1` → … → `x.log.LOG_KEEP` (the oldest is dropped).
fn rotate(path: &Path) {
    let numbered = |i: usize| {
        let mut s = path.as_os_str().to_owned();
        s.push(format!(".{i}"));
        PathBuf::from(s)
    };
    let _ = std::fs::remove_file(numbered(LOG_KEEP));
    for i in (1..LOG_KEEP).rev() {
        let _ = std::fs::rename(numbered(i), numbered(i + 1));
    }
    let _ = std::fs::rename(path, numbered(1));
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A time in UTC: year, month, day, hour, minute, second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    /// The year.
    pub year: i64,
    /// 1–12.
    pub month: u32,
    /// 1–31.
    pub day: u32,
    /// 0–23.
    pub hour: u32,
    /// 0–59.
    pub minute: u32,
    /// 0–59.
    pub second: u32,
}

impl Utc {
    /// The civil UTC time `secs` seconds after the Unix epoch (Howard Hinnant's algorithm).
    pub fn from_secs(secs: u64) -> Utc {
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        Utc {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem % 3600 / 60) as u32,
            second: (rem % 60) as u32,
        }
    }

    /// Now.
    pub fn now() -> Utc {
        Utc::from_secs(now_ms() / 1000)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339).
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `YYYYMMDD-HHMMSS`, for file names.
    pub fn stamp(&self) -> String {
        let Utc {
            year,
            month,
            day,
            hour,
            minute,
            second,
        } = *self;
        format!("{year:04}{month:02}{day:02}-{hour:02}{minute:02}{second:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(i: usize) -> LogLine {
        LogLine {
            server: "s".into(),
            stream: LogStream::Stderr,
            time_ms: 0,
            line: format!("line {i} {}", "x".repeat(100)),
        }
    }

    #[test]
    fn ring_keeps_last_lines() {
        let store = LogStore::new(None);
        for i in 0..RING_LINES + 10 {
            store.push(line(i), |_| {});
        }
        let all = store.tail(None);
        assert_eq!(all.len(), RING_LINES);
        assert!(all[0].line.starts_with("line 10 "));
        assert_eq!(store.tail(Some(2)).len(), 2);
        assert!(store
            .last_stderr(1, 0)
            .unwrap()
            .starts_with(&format!("line {} ", RING_LINES + 9)));
        assert_eq!(store.last_stderr(1, 1), None);
    }

    /// A huge line is kept whole in the file and cut in the ring, at a character boundary, saying
    /// how much more the file has.
    #[test]
    fn a_huge_line_is_cut_in_the_ring_and_whole_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.log");
        let store = LogStore::new(Some(path.clone()));
        let mut l = line(1);
        l.line = "é".repeat(32 * 1024); // 64 KiB of two-byte characters
        store.push(l, |_| {});
        let kept = &store.tail(None)[0].line;
        assert!(kept.len() < RING_LINE_BYTES + 64, "{}", kept.len());
        assert!(kept.ends_with(&format!(
            " … [{} bytes more in the log file]",
            64 * 1024 - RING_LINE_BYTES
        )));
        let file = std::fs::read_to_string(&path).unwrap();
        assert!(file.contains(&"é".repeat(32 * 1024)));
    }

    #[test]
    fn file_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.log");
        let store = LogStore::new(Some(path.clone()));
        // ~130 bytes a line: enough lines to rotate more than LOG_KEEP times.
        let n = (LOG_ROTATE_BYTES as usize / 120) * (LOG_KEEP + 2);
        for i in 0..n {
            store.push(line(i), |_| {});
        }
        assert!(path.exists());
        for i in 1..=LOG_KEEP {
            let mut p = path.as_os_str().to_owned();
            p.push(format!(".{i}"));
            let p = PathBuf::from(p);
            assert!(p.exists(), "{}", p.display());
            assert!(std::fs::metadata(&p).unwrap().len() <= LOG_ROTATE_BYTES + 200);
        }
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{}", LOG_KEEP + 1));
        assert!(!PathBuf::from(p).exists());
    }
}

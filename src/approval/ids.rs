//! The run part of approval ids (`apr-RUN-N`). Ids restarting at `apr-1` with every hub start let
//! an id read before a restart (a script, a person typing `gatehouse approve apr-3`) answer a
//! different call after it. Each run over a data dir takes the next number from a small file
//! beside `approvals.json` (written before any id is given); without one (a memory-only broker,
//! or a file that cannot be written), the run part is random (40 bits) and says so with a letter.

use std::path::Path;

/// The file beside `approvals.json` that keeps the last run's number.
const RUNS_FILE: &str = "approval-runs";

/// This run's part of every request id.
pub fn this_run(approvals: Option<&Path>) -> String {
    approvals
        .and_then(|p| next_run(&p.with_file_name(RUNS_FILE)))
        .map_or_else(random_run, |n| n.to_string())
}

/// The next run number, kept in `path` (a number in a text file), or `None` when it cannot be
/// kept.
fn next_run(path: &Path) -> Option<u64> {
    let last = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let next = last.checked_add(1)?;
    match crate::config::write_atomic(path, format!("{next}\n").as_bytes()) {
        Ok(()) => Some(next),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot keep the approval run number; ids of this run are random");
            None
        }
    }
}

/// A random run part: `r` and 8 base-32 characters (40 bits from the OS's generator).
fn random_run() -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: the clock is still unlikely to repeat a run.
        let ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        bytes = ns.to_le_bytes();
    }
    let chars: String = bytes
        .iter()
        .take(8)
        .map(|b| ALPHABET[(*b & 31) as usize] as char)
        .collect();
    format!("r{chars}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each run over the same data dir gets a new number; a broker without one a random part.
    #[test]
    fn runs_never_repeat() {
        let dir = tempfile::tempdir().unwrap();
        let approvals = dir.path().join("approvals.json");
        let first = this_run(Some(&approvals));
        let second = this_run(Some(&approvals));
        assert_eq!(first, "1");
        assert_eq!(second, "2");
        let a = this_run(None);
        let b = this_run(None);
        assert!(a.starts_with('r') && a.len() == 9, "{a}");
        assert_ne!(a, b);
    }
}

//! The copy kept of a file before Gatehouse replaces it (a client's file, Gatehouse's own config
//! before an import): `FILE.YYYYMMDD-HHMMSS.bak` beside it, 0600, created new (never over another
//! copy), at most [`KEEP`] per file (the oldest go). A copy of a client's file whose credentials
//! moved to the keychain has them replaced (`scrub`): no moved secret stays behind in a copy.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Copies kept per file, at most: enough to undo the last few edits, not a growing pile of old
/// secrets and settings.
pub const KEEP: usize = 5;

/// What a scrubbed value becomes in a copy.
pub const MOVED: &str = "(moved to the keychain by Gatehouse)";

/// Keeps `bytes` (what `path` held) as a new copy beside it, every value of `scrub` (raw and as
/// JSON writes it) replaced by [`MOVED`]; the oldest copies beyond [`KEEP`] are removed.
pub fn keep(path: &Path, bytes: &[u8], scrub: &[String]) -> std::io::Result<PathBuf> {
    let text = scrubbed(bytes, scrub);
    let stamp = crate::logs::Utc::now().stamp();
    // After the highest number this second already has: a newer copy never takes the name of
    // one that was pruned (it would sort as the oldest).
    let first = copies(path)
        .iter()
        .filter_map(|p| copy_key(path, p))
        .filter(|(time, _)| *time == stamp)
        .map(|(_, n)| n + 1)
        .max()
        .unwrap_or(1);
    for n in first..first + 1000 {
        let mut name = path.as_os_str().to_owned();
        if n == 1 {
            name.push(format!(".{stamp}.bak"));
        } else {
            name.push(format!(".{stamp}-{n}.bak"));
        }
        let bak = PathBuf::from(name);
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        match open.open(&bak) {
            Ok(mut f) => {
                let data: &[u8] = if scrub.is_empty() {
                    bytes
                } else {
                    text.as_bytes()
                };
                f.write_all(data)?;
                f.sync_all()?;
                prune(path);
                return Ok(bak);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("more than 999 backups in one second"))
}

/// `bytes` with every value of `scrub` (raw and as JSON writes it) replaced by [`MOVED`].
pub fn scrubbed(bytes: &[u8], scrub: &[String]) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    for secret in scrub.iter().filter(|s| s.len() >= 4) {
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        for form in [secret.as_str(), escaped] {
            if !form.is_empty() {
                text = text.replace(form, MOVED);
            }
        }
    }
    text
}

/// A copy of the file at `path` as it is now (nothing when it does not exist).
pub fn backup(path: &Path) -> std::io::Result<Option<PathBuf>> {
    match std::fs::read(path) {
        Ok(b) => keep(path, &b, &[]).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The copies of `path`, oldest first.
pub fn copies(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{name}.");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_str()?.to_owned();
                    let stamp = n.strip_prefix(&prefix)?.strip_suffix(".bak")?;
                    // `YYYYMMDD-HHMMSS` or `YYYYMMDD-HHMMSS-N`: Gatehouse's, nothing else.
                    let ours = stamp.len() >= 15
                        && stamp.as_bytes()[8] == b'-'
                        && stamp.bytes().all(|b| b.is_ascii_digit() || b == b'-');
                    ours.then(|| e.path())
                })
                .collect()
        })
        .unwrap_or_default();
    // By time, then by the number a second's later copies get (`-2` after the plain one).
    found.sort_by_key(|p| copy_key(path, p).unwrap_or_default());
    found
}

/// A copy's (time stamp, number within that second) — the plain name is number 1.
fn copy_key(path: &Path, copy: &Path) -> Option<(String, u32)> {
    let prefix = format!("{}.", path.file_name()?.to_str()?);
    let name = copy.file_name()?.to_str()?;
    let stamp = name.strip_prefix(&prefix)?.strip_suffix(".bak")?;
    let time = stamp.get(..15)?.to_owned();
    let count = match stamp.get(15..)?.strip_prefix('-') {
        Some(c) => c.parse::<u32>().ok()?,
        None => 1,
    };
    Some((time, count))
}

fn prune(path: &Path) {
    let found = copies(path);
    let extra = found.len().saturating_sub(KEEP);
    for old in found.into_iter().take(extra) {
        let _ = std::fs::remove_file(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy is private and new; a scrubbed one holds no moved secret, in any spelling; at most
    /// five are kept.
    #[test]
    fn copies_are_private_scrubbed_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("mcp.json");
        let text = "{\"env\": {\"API_KEY\": \"sk-live-9\\\"x\"}, \"other\": \"kept\"}";
        std::fs::write(&f, text).unwrap();
        let secret = "sk-live-9\"x".to_owned();
        let b = keep(&f, text.as_bytes(), std::slice::from_ref(&secret)).unwrap();
        let copy = std::fs::read_to_string(&b).unwrap();
        assert!(!copy.contains("sk-live-9"), "{copy}");
        assert!(
            copy.contains(MOVED) && copy.contains("\"other\": \"kept\""),
            "{copy}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&b).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        for _ in 0..8 {
            backup(&f).unwrap();
        }
        assert_eq!(copies(&f).len(), KEEP);
        std::fs::write(dir.path().join("mcp.json.notes.bak"), "mine").unwrap();
        assert!(dir.path().join("mcp.json.notes.bak").exists());
    }
}

//! One writer at a time: every read-modify-write of a config file (the hub's edits, the app's,
//! `gatehouse import`, the CLI's verbs when no hub runs) holds an exclusive lock on
//! `PATH.lock` from the read to the rename, so two edits never lose one another. Temp files left
//! by a writer that was killed mid-write are removed by the next one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Config, ConfigError};

/// How long an edit waits for another one to finish.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Holds the lock until dropped.
pub struct ConfigLock {
    #[cfg(unix)]
    _flock: nix::fcntl::Flock<std::fs::File>,
    #[cfg(not(unix))]
    _file: std::fs::File,
}

/// `gatehouse.json` → `gatehouse.json.lock`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Takes the config's edit lock, waiting at most [`LOCK_WAIT`]. Blocking: call it from a
/// blocking context.
pub fn lock(path: &Path) -> Result<ConfigLock, ConfigError> {
    let lock = lock_path(path);
    let err = |source| ConfigError::Write {
        path: lock.clone(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private::create_dir(dir).map_err(err)?;
    }
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let mut file = open.open(&lock).map_err(err)?;
    #[cfg(unix)]
    {
        use nix::fcntl::{Flock, FlockArg};
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(flock) => {
                    remove_stale_temps(path);
                    return Ok(ConfigLock { _flock: flock });
                }
                Err((f, nix::errno::Errno::EWOULDBLOCK)) if Instant::now() < deadline => {
                    file = f;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err((_, e)) => {
                    return Err(err(std::io::Error::other(format!(
                        "another Gatehouse (or `gatehouse import`) is editing this config and did not finish within {} s ({e})",
                        LOCK_WAIT.as_secs()
                    ))))
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = Instant::now();
        remove_stale_temps(path);
        Ok(ConfigLock { _file: file })
    }
}

/// Under the lock: the config as it is now (it must parse: a file the person is mid-way through
/// editing is never overwritten), `edit` applied, saved atomically with `.bak`. Blocking.
pub fn edit(
    path: &Path,
    edit: impl FnOnce(&Config) -> Result<Config, String>,
) -> Result<Config, EditError> {
    let _lock = lock(path).map_err(EditError::Config)?;
    let current = match Config::load(path) {
        Ok(c) => c,
        Err(ConfigError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Config::default()
        }
        Err(e) => return Err(EditError::Config(e)),
    };
    let next = edit(&current).map_err(EditError::Refused)?;
    next.save(path).map_err(EditError::Config)?;
    Ok(next)
}

/// Why an edit did not happen.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The file could not be locked, read or written.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The edit itself was refused (the message says why).
    #[error("{0}")]
    Refused(String),
}

/// Removes `.NAME.tmp-PID-N` files (ours and the `.bak`'s) whose writer is gone.
pub fn remove_stale_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!(".{}", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = file.strip_prefix(&prefix) else {
            continue;
        };
        let Some(tail) = rest
            .strip_prefix(".tmp-")
            .or_else(|| rest.strip_prefix(".bak.tmp-"))
        else {
            continue;
        };
        let Some(pid) = tail.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !process_alive(pid) {
            match std::fs::remove_file(e.path()) {
                Ok(()) => {
                    tracing::info!(file = %e.path().display(), "removed a temp file left by an interrupted write")
                }
                Err(err) => {
                    tracing::warn!(file = %e.path().display(), error = %err, "cannot remove a stale temp file")
                }
            }
        }
    }
}

fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(raw) = i32::try_from(pid) else {
            return false;
        };
        !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None),
            Err(nix::errno::Errno::ESRCH)
        )
    }
    #[cfg(not(unix))]
    {
        pid == std::process::id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_editor_waits_for_the_first_and_both_edits_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gatehouse.json");
        std::fs::write(&path, "{}").unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    edit(&path, |c| {
                        // Widen the race: read, wait, write.
                        std::thread::sleep(Duration::from_millis(10));
                        c.with_server(None, &format!("s{i}"), &serde_json::json!({"command": "x"}))
                    })
                    .unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let c = Config::load(&path).unwrap();
        assert_eq!(c.servers.len(), 8, "{:?}", c.servers.keys());
    }

    #[test]
    fn temp_files_of_dead_writers_are_removed_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gatehouse.json");
        std::fs::write(&path, "{}").unwrap();
        // pid 0x7ffffffe is not running anywhere we test.
        let stale = dir.path().join(".gatehouse.json.tmp-2147483646-7");
        let stale_bak = dir.path().join(".gatehouse.json.bak.tmp-2147483646-9");
        let live = dir
            .path()
            .join(format!(".gatehouse.json.tmp-{}-1", std::process::id()));
        let other = dir.path().join(".other.json.tmp-2147483646-1");
        for f in [&stale, &stale_bak, &live, &other] {
            std::fs::write(f, "x").unwrap();
        }
        drop(lock(&path).unwrap());
        assert!(!stale.exists() && !stale_bak.exists());
        assert!(live.exists() && other.exists());
    }
}

//! A client's own lock on its file, taken the way that client takes it, so an edit never
//! interleaves with the client's locked read-modify-write. Claude Code locks `~/.claude.json`
//! with `proper-lockfile`'s convention: a directory `FILE.lock` made with `mkdir` (atomic), its
//! modification time kept fresh while held, one older than [`STALE`] left by a process that
//! died. Gatehouse waits up to [`WAIT`] for it, never breaks a fresh one, and removes its own
//! when done.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A lock not refreshed for this long was left by a process that died (Claude Code's own
/// `staleMs`).
pub const STALE: Duration = Duration::from_secs(30);
/// How long an edit waits for the client to let go of its lock.
pub const WAIT: Duration = Duration::from_secs(10);

/// The lock directory a client that locks `file` this way uses: `FILE.lock`.
pub fn lock_dir_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// A lock held; released when dropped.
#[derive(Debug)]
pub struct Held {
    dir: PathBuf,
}

impl Held {
    /// Takes the lock `dir` on `file` (named in messages), waiting up to [`WAIT`].
    pub fn take(dir: &Path, file: &Path) -> Result<Held, String> {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            match std::fs::create_dir(dir) {
                Ok(()) => {
                    return Ok(Held {
                        dir: dir.to_owned(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if is_stale(dir) {
                        // Left by a process that died: taken over as proper-lockfile does.
                        let _ = std::fs::remove_dir(dir);
                        continue;
                    }
                }
                Err(e) => {
                    return Err(format!(
                        "cannot lock {} ({}): {e}; nothing was written",
                        file.display(),
                        dir.display()
                    ))
                }
            }
            if std::time::Instant::now() >= deadline {
                return Err(format!(
                    "{} is locked by the program that owns it ({} held for more than {} s): nothing was written; try again once it is done saving",
                    file.display(),
                    dir.display(),
                    WAIT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn is_stale(dir: &Path) -> bool {
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > STALE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh lock is waited for (and never broken); a stale one is taken over; the lock goes
    /// when the edit is done.
    #[test]
    fn a_fresh_lock_is_waited_for_and_a_stale_one_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".claude.json");
        let lock = lock_dir_of(&file);
        std::fs::create_dir(&lock).unwrap();
        let l2 = lock.clone();
        let released = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            std::fs::remove_dir(&l2).unwrap();
            std::time::Instant::now()
        });
        let held = Held::take(&lock, &file).unwrap();
        let got = std::time::Instant::now();
        assert!(got >= released.join().unwrap(), "a held lock was broken");
        assert!(lock.is_dir());
        drop(held);
        assert!(!lock.exists(), "the lock stayed behind");
        // Left by a process that died 60 s ago.
        std::fs::create_dir(&lock).unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::open(&lock)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let held = Held::take(&lock, &file).unwrap();
        drop(held);
    }
}

//! `approvals.json` written off the async threads: each change hands the file's new text to one
//! writer thread, which writes the latest text it has (atomically, fsynced) and skips texts a
//! newer one replaced. `flush` waits until what was handed over is on disk (the hub's shutdown).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The writer of one file.
pub(super) struct Persister {
    tx: Mutex<mpsc::Sender<(u64, String)>>,
    handed: AtomicU64,
    written: Arc<(Mutex<u64>, Condvar)>,
}

impl Persister {
    /// Starts the writer thread for `path`; `None` when no thread can be started (the texts
    /// are then written by the caller, as before).
    pub(super) fn start(path: PathBuf) -> Option<Persister> {
        let (tx, rx) = mpsc::channel::<(u64, String)>();
        let written = Arc::new((Mutex::new(0u64), Condvar::new()));
        let done = written.clone();
        std::thread::Builder::new()
            .name("gatehouse-approvals".into())
            .spawn(move || {
                while let Ok(mut next) = rx.recv() {
                    // A newer text replaces any still waiting: only the latest is written.
                    while let Ok(newer) = rx.try_recv() {
                        next = newer;
                    }
                    if let Err(e) = crate::config::write_atomic(&path, next.1.as_bytes()) {
                        tracing::error!(path = %path.display(), error = %e, "cannot save remembered approvals");
                    }
                    let (seq, cv) = &*done;
                    *crate::sync::lock(seq) = next.0;
                    cv.notify_all();
                }
            })
            .ok()?;
        Some(Persister {
            tx: Mutex::new(tx),
            handed: AtomicU64::new(0),
            written,
        })
    }

    /// Hands over the file's new text. Call it in the order the texts were made (under the
    /// lock that made them), so the latest is written last.
    pub(super) fn save(&self, text: String) {
        let tx = crate::sync::lock(&self.tx);
        let seq = self.handed.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = tx.send((seq, text));
    }

    /// Waits (at most `limit`) until every text handed over is written. Blocking.
    pub(super) fn flush(&self, limit: Duration) -> bool {
        let want = self.handed.load(Ordering::SeqCst);
        let (seq, cv) = &*self.written;
        let guard = crate::sync::lock(seq);
        let (guard, _) = cv
            .wait_timeout_while(guard, limit, |w| *w < want)
            .unwrap_or_else(|e| e.into_inner());
        *guard >= want
    }
}

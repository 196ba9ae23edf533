//! The watch on the AI clients' own files: a change Gatehouse did not make that adds a hook, a
//! task run when a folder opens, an MCP server entry or a command-running setting is an alert —
//! with the diff, who owns the file when that is not the person, and the content before it, which
//! [`Watch::restore`] puts back byte for byte. Gatehouse's own writes ([`Watch::expect`], told
//! the exact bytes before they go in place) never alert; neither does anything else a client
//! saves (its counters, its window sizes, an entry removed).
//!
//! Mechanism: polling every [`PERIOD`] (`hub/watch.rs` runs it). Each watched file's identity
//! (device, inode, size, modification and change times) is compared; only a file whose identity
//! changed is read (bounded like every client file: 8 MiB, 5 s) and hashed. Polling works the
//! same on every filesystem (inotify misses changes made on another machine of a network mount,
//! and watching ~1,000 paths would take as many watches); its cost is one `stat` per file per
//! second. What it cannot see: who wrote a file (only its owner, when that is another user —
//! fanotify and the audit log need root), a change undone within one period, and a file of a
//! project Claude Code does not list. Changes made while Gatehouse was not running are found at
//! its next start: the records (`record.rs`) keep what was last accepted. A file first seen is
//! taken as it is.

mod act;
pub mod classify;
mod record;
pub mod targets;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use classify::ChangeKind;
use record::{sha, Entry, Index, Records};
use targets::Target;

/// How often the watched files are looked at.
pub const PERIOD: Duration = Duration::from_secs(1);
/// A file modified more recently than this is looked at again next period (a client mid-save).
const QUIET: Duration = Duration::from_millis(50);
/// Digests of Gatehouse's own writes remembered per file, at most.
const EXPECTED: usize = 8;

/// A change to a client's file that Gatehouse did not make, not yet restored or acknowledged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientFileAlert {
    /// The file.
    pub path: String,
    /// The client that reads it (`claude-code`, `vscode`, `cursor`…).
    pub client: String,
    /// What the change does, the worst of its parts.
    pub change: ChangeKind,
    /// When it was seen (Unix ms).
    pub seen_ms: u64,
    /// Whether the content before it is kept ([`Watch::restore`] can put it back).
    pub restorable: bool,
    /// Each part added or changed (`hook SessionStart added`, `server "x" changed`…).
    pub what: Vec<String>,
    /// The unified diff from the content before to now (cut at [`classify::MAX_DIFF`]).
    pub diff: String,
    /// Who owns the file, when that is not the person running Gatehouse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// The watch: its records and what it saw. Three locks, so that nobody waits on a look at the
/// files (which reads them, and a `stat` on a stalled mount may not return): `state`, held by a
/// scan, a restore and an acknowledgement; `told`, what writers say (held for a push); `shown`,
/// the open alerts as of the last change (held for a copy).
pub struct Watch {
    home: PathBuf,
    records: Records,
    state: Mutex<State>,
    told: Mutex<Told>,
    shown: Mutex<Vec<ClientFileAlert>>,
    stopped: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct State {
    index: Index,
    /// Each file's identity when last read: an unchanged one is not read again.
    stamps: HashMap<PathBuf, Stamp>,
    /// The projects Claude Code lists.
    projects: Vec<PathBuf>,
}

/// What Gatehouse's writers told the watch, per file.
#[derive(Default)]
struct Told {
    /// Digests of what Gatehouse is putting in place (at most [`EXPECTED`] each).
    expected: HashMap<PathBuf, Vec<String>>,
    /// Credentials moved to the keychain out of the file (at most [`EXPECTED`] each): taken out
    /// of its kept content at the next scan or restore.
    scrubs: HashMap<PathBuf, Vec<String>>,
}

type Stamp = [i64; 7];

fn stamp(m: &std::fs::Metadata) -> Stamp {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        [
            m.dev() as i64,
            m.ino() as i64,
            m.size() as i64,
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        ]
    }
    #[cfg(not(unix))]
    {
        let t = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        [0, 0, m.len() as i64, t, 0, 0, 0]
    }
}

/// What looking at one file found.
enum Look {
    Same,
    Updated,
    Alert(ClientFileAlert),
}

impl Watch {
    /// A watch of `home`'s client files with its records in `dir` (`DATA/client-files`).
    pub fn new(home: PathBuf, dir: PathBuf) -> Self {
        let records = Records::at(dir);
        let index = records.load().unwrap_or_default();
        let shown = open_alerts(&index);
        Watch {
            home,
            records,
            state: Mutex::new(State {
                index,
                ..State::default()
            }),
            told: Mutex::default(),
            shown: Mutex::new(shown),
            stopped: Default::default(),
        }
    }

    /// Asks the thread that runs the watch to end (the hub is shutting down).
    pub fn stop(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether [`Watch::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn told(&self) -> std::sync::MutexGuard<'_, Told> {
        self.told.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gatehouse is about to put `bytes` in place at `path`: that content is its own.
    pub fn expect(&self, path: &Path, bytes: &[u8]) {
        push_bounded(&mut self.told().expected, path, sha(bytes));
    }

    /// Credentials Gatehouse moved to the keychain out of `path`: taken out of the content kept
    /// for a restore too (an alert open while Gatehouse removed an entry), so no restore puts a
    /// moved secret back.
    pub fn scrub(&self, path: &Path, scrub: &[String]) {
        let mut told = self.told();
        for value in scrub {
            push_bounded(&mut told.scrubs, path, value.clone());
        }
    }

    /// Every open alert (as of the last change: never waits for a scan).
    pub fn alerts(&self) -> Vec<ClientFileAlert> {
        self.shown.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The index changed: what [`Watch::alerts`] gives follows, and it is saved.
    fn changed(&self, index: &Index) -> std::io::Result<()> {
        *self.shown.lock().unwrap_or_else(|p| p.into_inner()) = open_alerts(index);
        self.records.save(index)
    }

    /// Looks at every watched file once; the alerts that are new or say more than before.
    pub fn scan(&self) -> Vec<ClientFileAlert> {
        let mut st = self.lock();
        self.apply_scrubs(&mut st);
        let list = targets::targets(&self.home, &st.projects);
        let mut dirty = false;
        let mut out = Vec::new();
        for t in &list {
            match self.look(&mut st, t) {
                Look::Same => {}
                Look::Updated => dirty = true,
                Look::Alert(a) => {
                    dirty = true;
                    out.push(a);
                }
            }
        }
        if dirty {
            if let Err(e) = self.changed(&st.index) {
                tracing::warn!("client files: the watch's records could not be saved: {e}");
            }
        }
        out
    }

    fn look(&self, st: &mut State, t: &Target) -> Look {
        let path = &t.path;
        let entry = st.index.files.get(path).cloned();
        let meta = match std::fs::metadata(path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => return Look::Same,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                st.stamps.remove(path);
                return self.gone(st, path, entry);
            }
            Err(_) => return Look::Same,
        };
        let now = stamp(&meta);
        if st.stamps.get(path) == Some(&now) {
            return Look::Same;
        }
        if meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age < QUIET)
        {
            return Look::Same;
        }
        let Ok(bytes) = crate::client_file::read_bytes(path) else {
            return Look::Same;
        };
        st.stamps.insert(path.clone(), now);
        let digest = sha(&bytes);
        let text = std::str::from_utf8(&bytes)
            .ok()
            .map(|t| t.trim_start_matches('\u{feff}'));
        let parsed = text.and_then(|x| classify::parse(t.role, x));
        if t.role == classify::Role::ClaudeJson {
            if let Some(v) = &parsed {
                st.projects = targets::projects_of(v);
            }
        }
        let Some(mut e) = entry else {
            // First sight: taken as it is.
            self.accept(st, path, Entry::default(), &bytes, digest);
            return Look::Updated;
        };
        if e.sha.as_deref() == Some(&digest) {
            return Look::Same;
        }
        // Told under the path it wrote: a symlinked file's target.
        let real = crate::config::resolve_link(path);
        let mut told = self.told();
        let ours = [path, real.as_path()].into_iter().find_map(|p| {
            let l = told.expected.get_mut(p)?;
            let at = l.iter().position(|d| *d == digest)?;
            Some(l.remove(at))
        });
        drop(told);
        if ours.is_some() && e.alert.is_some() {
            // Gatehouse wrote over an open alert: the content before the change stays kept.
            e.sha = Some(digest);
            st.index.files.insert(path.clone(), e);
            return Look::Updated;
        }
        if ours.is_some() {
            self.accept(st, path, e, &bytes, digest);
            return Look::Updated;
        }
        match (parsed, text) {
            (Some(after), Some(text)) => {
                self.foreign(st, t, e, (&bytes, text, &after), digest, &meta)
            }
            // Text no client would read (caught mid-save, or broken): looked at again when it
            // changes; what was accepted stays.
            _ => Look::Same,
        }
    }

    /// Someone else's change (`now`: its bytes, text and reading): judged against the content
    /// last accepted.
    fn foreign(
        &self,
        st: &mut State,
        t: &Target,
        mut e: Entry,
        now: (&[u8], &str, &serde_json::Value),
        digest: String,
        meta: &std::fs::Metadata,
    ) -> Look {
        let path = &t.path;
        let (bytes, text, after) = now;
        let before = match &e.kept {
            Some(k) => match self.records.kept(path, k) {
                Some(b) => Some(b),
                // The kept content is gone: nothing to judge against, taken as it is.
                None => {
                    self.accept(st, path, e, bytes, digest);
                    return Look::Updated;
                }
            },
            None => None,
        };
        let before_text = before.as_deref().map(|b| {
            String::from_utf8_lossy(b)
                .trim_start_matches('\u{feff}')
                .to_owned()
        });
        let before_value = before_text
            .as_deref()
            .and_then(|b| classify::parse(t.role, b));
        e.sha = Some(digest.clone());
        let Some((change, what)) = classify::judge(t.role, before_value.as_ref(), after) else {
            if e.alert.is_none() {
                self.accept(st, path, e, bytes, digest);
            } else {
                st.index.files.insert(path.clone(), e);
            }
            return Look::Updated;
        };
        let alert = ClientFileAlert {
            path: path.display().to_string(),
            client: t.client.id().to_owned(),
            change,
            seen_ms: crate::logs::now_ms(),
            restorable: true,
            what,
            diff: classify::diff(before_text.as_deref().unwrap_or(""), text),
            by: owner(meta),
        };
        let said_before = e
            .alert
            .as_ref()
            .is_some_and(|a| a.change == alert.change && a.what == alert.what);
        e.alert = Some(alert.clone());
        st.index.files.insert(path.clone(), e);
        if said_before {
            Look::Updated
        } else {
            Look::Alert(alert)
        }
    }

    /// The file is not there (any more).
    fn gone(&self, st: &mut State, path: &Path, entry: Option<Entry>) -> Look {
        match entry {
            Some(e) if e.sha.is_none() => Look::Same,
            Some(mut e) if e.alert.is_some() => {
                e.sha = None;
                st.index.files.insert(path.to_owned(), e);
                Look::Updated
            }
            _ => {
                let _ = self.records.keep(path, None);
                st.index.files.insert(path.to_owned(), Entry::default());
                Look::Updated
            }
        }
    }

    /// `bytes` become the accepted content of `path`.
    fn accept(&self, st: &mut State, path: &Path, mut e: Entry, bytes: &[u8], digest: String) {
        match self.records.keep(path, Some(bytes)) {
            Ok(()) => e.kept = Some(digest.clone()),
            Err(err) => {
                tracing::warn!("client files: {} could not be kept: {err}", path.display());
                e.kept = None;
            }
        }
        e.sha = Some(digest);
        e.alert = None;
        st.index.files.insert(path.to_owned(), e);
    }
}

/// `value` at the end of `path`'s list, the oldest going past [`EXPECTED`].
fn push_bounded(lists: &mut HashMap<PathBuf, Vec<String>>, path: &Path, value: String) {
    let list = lists.entry(path.to_owned()).or_default();
    list.push(value);
    if list.len() > EXPECTED {
        list.remove(0);
    }
}

/// The alerts an index holds.
fn open_alerts(index: &Index) -> Vec<ClientFileAlert> {
    index
        .files
        .values()
        .filter_map(|e| e.alert.clone())
        .collect()
}

/// The file's owner, when that is not who runs Gatehouse.
fn owner(m: &std::fs::Metadata) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = nix::unistd::geteuid().as_raw();
        if m.uid() == me {
            return None;
        }
        let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(m.uid()))
            .ok()
            .flatten()
            .map(|u| u.name);
        Some(match name {
            Some(n) => format!("owned by {n} (uid {}), not you", m.uid()),
            None => format!("owned by uid {}, not you", m.uid()),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

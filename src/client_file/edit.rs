//! Editing a file another program owns (an AI client's config) without ever losing that
//! program's save: read, edit, and replace the file only if it is still what was read —
//! otherwise read it again and redo the edit (at most [`ATTEMPTS`] times), or stop saying so.
//! On Linux the replacement is one atomic exchange (`renameat2(RENAME_EXCHANGE)`): the file that
//! was swapped out is compared with what was read, and swapped back if a save landed in between.
//! A byte-order mark, CRLF line ends, the file's mode and owner are kept; a symbolic link is
//! followed (the file it points at is edited, the link stays). What was replaced is kept as a
//! copy ([`super::backup`]), with any moved secret scrubbed from it.

use std::path::{Path, PathBuf};

/// Edits redone at most, when the file keeps changing under the edit.
pub const ATTEMPTS: u32 = 16;

/// How long an edit may wait, in all, for its owner to stop writing the file.
pub const EDIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a file must have been left alone before it is read for an edit: a program saving
/// a large file where it is writes it piece by piece, and its modification time moves with
/// every piece.
const QUIET: std::time::Duration = std::time::Duration::from_millis(25);

/// Waits until nobody has written the file at `path` for [`QUIET`] (or it does not exist), or
/// `deadline` passes (then `false`). Edits start right after a save this way, with the most
/// time before the next one, instead of racing each save and losing.
fn wait_quiet(path: &Path, deadline: std::time::Instant) -> bool {
    loop {
        let Ok(m) = std::fs::metadata(path) else {
            return true;
        };
        let age = m
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or(QUIET);
        if age >= QUIET {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep((QUIET - age).min(std::time::Duration::from_millis(5)));
    }
}

const BOM: &str = "\u{feff}";

/// Told the exact bytes an edit is about to put in place (the watch on the clients' files: what
/// Gatehouse writes never alerts).
/// With the bytes come the credentials the edit removed (moved to the keychain): no copy of the
/// file anyone keeps may hold them.
pub type Note = std::sync::Arc<dyn Fn(&Path, &[u8], &[String]) + Send + Sync>;

/// How to write the result.
#[derive(Clone, Default)]
pub struct Options {
    /// The file holds a token: 0600 (or stricter, if it already was).
    pub private: bool,
    /// The client's own lock for the file, where it has one ([`super::lock`]): held while the
    /// file is read, edited and replaced.
    pub lock: Option<PathBuf>,
    /// Told the bytes before each attempt to put them in place.
    pub note: Option<Note>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("private", &self.private)
            .field("lock", &self.lock)
            .field("note", &self.note.is_some())
            .finish()
    }
}

/// What an edit makes of the text it was given.
#[derive(Debug, Clone)]
pub struct Change<R> {
    /// The new text.
    pub text: String,
    /// What the edit reports.
    pub result: R,
    /// Values to scrub from the copy kept of what was replaced (credentials that moved to the
    /// keychain), found in the very text the edit was given.
    pub scrub: Vec<String>,
    /// Bytes written as they are instead of the text (a file put back byte for byte: its own
    /// byte-order mark and line ends, not those of what it replaces).
    pub exact: Option<Vec<u8>>,
}

impl<R> Change<R> {
    /// A change with nothing to scrub.
    pub fn new(text: String, result: R) -> Self {
        Change {
            text,
            result,
            scrub: Vec::new(),
            exact: None,
        }
    }
}

/// What an edit did.
#[derive(Debug, Clone, PartialEq)]
pub struct Edited {
    /// The copy of what was replaced (none when the file did not exist, or nothing changed).
    pub backup: Option<PathBuf>,
    /// How many times the file changed under the edit and it was redone.
    pub redone: u32,
    /// Whether values were scrubbed from the copy.
    pub scrubbed: bool,
}

/// The file's text as the editor sees it: no byte-order mark, `\n` line ends.
struct Decoded {
    text: String,
    bom: bool,
    crlf: bool,
}

fn decode(bytes: &[u8]) -> Result<Decoded, String> {
    let raw = std::str::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
    let (bom, raw) = match raw.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, raw),
    };
    // CRLF when every line break is one (a file mixing both is kept as the editor writes).
    let crlf = raw.contains("\r\n") && !raw.replace("\r\n", "").contains('\n');
    let text = if crlf {
        raw.replace("\r\n", "\n")
    } else {
        raw.to_owned()
    };
    Ok(Decoded { text, bom, crlf })
}

fn encode(text: &str, bom: bool, crlf: bool) -> Vec<u8> {
    let mut out = String::with_capacity(text.len() + 8);
    if bom {
        out.push_str(BOM);
    }
    if crlf {
        out.push_str(&text.replace("\r\n", "\n").replace('\n', "\r\n"));
    } else {
        out.push_str(text);
    }
    out.into_bytes()
}

/// What was read: the bytes and the file's identity then.
struct Seen {
    bytes: Vec<u8>,
    meta: Option<std::fs::Metadata>,
}

/// The file's bytes and the identity they were read from: the identity is taken before and
/// after the read, and the read repeated when a save landed in between.
fn read(path: &Path, deadline: std::time::Instant) -> Result<Option<Seen>, String> {
    for _ in 0..ATTEMPTS {
        wait_quiet(path, deadline);
        let before = std::fs::metadata(path).ok();
        let bytes = match super::read_bytes(path) {
            Ok(b) => b,
            Err(super::ReadError::Missing(_)) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let after = std::fs::metadata(path).ok();
        if let (Some(a), Some(b)) = (&before, &after) {
            if same_file(a, b) {
                return Ok(Some(Seen { bytes, meta: after }));
            }
        }
    }
    Err(format!(
        "{} kept changing while Gatehouse read it: nothing was written; try again",
        path.display()
    ))
}

/// One file, unchanged: the same inode, size and modification time (`rename` over it brings
/// another inode; a write in place a new time or size).
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev()
            && a.ino() == b.ino()
            && a.size() == b.size()
            && a.mtime() == b.mtime()
            && a.mtime_nsec() == b.mtime_nsec()
    }
    #[cfg(not(unix))]
    {
        a.len() == b.len() && a.modified().ok() == b.modified().ok()
    }
}

/// Whether the file at `path` is still what was `seen`: its content (a write in place within
/// one clock tick keeps the time), then its identity — the last thing checked before ours goes
/// in place, so the window a save could land in is one system call wide.
fn still(seen: &Seen, path: &Path) -> std::io::Result<bool> {
    let same = |m: Option<&std::fs::Metadata>| -> std::io::Result<bool> {
        let now = std::fs::metadata(path)?;
        Ok(m.is_none_or(|m| same_file(m, &now)))
    };
    Ok(
        same(seen.meta.as_ref())?
            && std::fs::read(path)? == seen.bytes
            && same(seen.meta.as_ref())?,
    )
}

/// Edits the file at `path` with `f`, which gets its text (`""` when it does not exist) and
/// returns the change. See the module's rules.
pub fn edit<R>(
    path: &Path,
    opts: &Options,
    f: impl FnMut(&str) -> Result<Change<R>, String>,
) -> Result<(R, Edited), String> {
    let path = crate::config::resolve_link(path);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    crate::private::create_dir(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _held = match &opts.lock {
        Some(lock) => Some(super::lock::Held::take(lock, &path)?),
        None => None,
    };
    edit_unlocked(&path, &dir, opts, f)
}

fn edit_unlocked<R>(
    path: &Path,
    dir: &Path,
    opts: &Options,
    mut f: impl FnMut(&str) -> Result<Change<R>, String>,
) -> Result<(R, Edited), String> {
    let shown = path.display().to_string();
    let deadline = std::time::Instant::now() + EDIT_DEADLINE;
    for attempt in 0..ATTEMPTS {
        if std::time::Instant::now() >= deadline {
            break;
        }
        let seen = read(path, deadline)?;
        if let Some(m) = seen.as_ref().and_then(|s| s.meta.as_ref()) {
            kept_as_it_is(m, &shown)?;
        }
        let (decoded, mode) = match &seen {
            Some(s) => (
                decode(&s.bytes).map_err(|e| format!("{shown}: {e}; nothing was written"))?,
                s.meta.as_ref().map(permissions),
            ),
            None => (
                Decoded {
                    text: String::new(),
                    bom: false,
                    crlf: false,
                },
                None,
            ),
        };
        let change = match f(&decoded.text) {
            Ok(c) => c,
            // Text that does not read, from a file written since: caught mid-save (a program
            // writing where the file is), read again once it is left alone.
            Err(_) if changed_since(seen.as_ref(), path) => {
                pause(attempt);
                continue;
            }
            Err(e) => return Err(format!("{shown}: {e}")),
        };
        let result = change.result;
        let bytes = match change.exact {
            Some(b) => b,
            None => encode(&change.text, decoded.bom, decoded.crlf),
        };
        if seen.as_ref().is_some_and(|s| s.bytes == bytes) {
            return Ok((
                result,
                Edited {
                    backup: None,
                    redone: attempt,
                    scrubbed: false,
                },
            ));
        }
        // Saved meanwhile (the common case, caught before any writing): redone at once.
        if let Some(m) = seen.as_ref().and_then(|s| s.meta.as_ref()) {
            if !std::fs::metadata(path).is_ok_and(|now| same_file(m, &now)) {
                pause(attempt);
                continue;
            }
        }
        let tmp = temp_beside(
            path,
            &bytes,
            mode,
            opts.private,
            seen.as_ref().and_then(|s| s.meta.as_ref()),
        )
        .map_err(|e| format!("cannot write beside {shown}: {e}"))?;
        if let Some(note) = &opts.note {
            note(path, &bytes, &change.scrub);
        }
        match swap(&tmp, path, seen.as_ref()) {
            Ok(true) => {
                sync_dir(dir);
                let backup = match &seen {
                    Some(s) => Some(super::backup::keep(path, &s.bytes, &change.scrub).map_err(
                        |e| format!("{shown} was written, but its copy could not be kept: {e}"),
                    )?),
                    None => None,
                };
                return Ok((
                    result,
                    Edited {
                        scrubbed: backup.is_some() && !change.scrub.is_empty(),
                        backup,
                        redone: attempt,
                    },
                ));
            }
            // Saved by its owner meanwhile: read it again and redo the edit.
            Ok(false) => pause(attempt),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(format!("cannot replace {shown}: {e}"));
            }
        }
    }
    Err(format!(
        "{shown} kept changing while Gatehouse edited it (waited {} s for a moment between its owner's saves, {ATTEMPTS} tries at most): nothing was written; close the program that keeps saving it, or try again",
        EDIT_DEADLINE.as_secs()
    ))
}

/// A file replaced whole would lose its other names (hard links keep the old content): refused,
/// naming them.
fn kept_as_it_is(m: &std::fs::Metadata, shown: &str) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if m.nlink() > 1 {
            return Err(format!(
                "{shown} has {} hard links: Gatehouse replaces a file whole (so no save is ever half-written), which would leave its other names with the old content; nothing was written — write the entry in the client, or make it a file of its own",
                m.nlink()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = (m, shown);
    Ok(())
}

/// Whether the file at `path` is no longer the one `seen` was read from.
fn changed_since(seen: Option<&Seen>, path: &Path) -> bool {
    let now = std::fs::metadata(path).ok();
    match (seen.and_then(|s| s.meta.as_ref()), now) {
        (Some(a), Some(b)) => !same_file(a, &b),
        (None, None) => false,
        _ => true,
    }
}

/// Before an edit is redone: a pause that grows, so a client saving in a burst is let finish.
fn pause(attempt: u32) {
    std::thread::sleep(std::time::Duration::from_millis(
        15 * u64::from(attempt + 1),
    ));
}

#[cfg(unix)]
fn permissions(m: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn permissions(_: &std::fs::Metadata) -> u32 {
    0o644
}

/// The new text in a temporary file beside the target (same directory, so the rename is
/// atomic), with the target's mode (0600 when private or new and private) and owner, synced.
fn temp_beside(
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
    private: bool,
    meta: Option<&std::fs::Metadata>,
) -> std::io::Result<PathBuf> {
    use std::io::Write;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(
        ".{name}.gatehouse-{}.tmp",
        crate::supervisor::process::new_tag()
    ));
    let mut mode = mode.unwrap_or(0o644);
    // Holding a token: nobody else's to read — the group's and others' bits taken away, the
    // owner's kept (a file made read-only stays read-only: 0444 becomes 0400, never 0600).
    if private {
        mode &= !0o077;
    }
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let mut file = open.open(&tmp)?;
    file.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        if let Some(m) = meta {
            // Another owner's file (a person editing as root) keeps its owner when allowed.
            let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
        }
    }
    #[cfg(not(unix))]
    let _ = (meta, mode);
    file.sync_all()?;
    Ok(tmp)
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Puts `tmp` (holding `ours`) in place of `path` only if `path` is still what was `seen`.
/// `Ok(false)`: it was not (nothing of ours left in place; `tmp` removed).
#[cfg(target_os = "linux")]
fn swap(tmp: &Path, path: &Path, seen: Option<&Seen>) -> std::io::Result<bool> {
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
    let exchange =
        |a: &Path, b: &Path| renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE);
    let Some(seen) = seen else {
        // It did not exist: only a file that still does not gets ours.
        return match renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RenameFlags::RENAME_NOREPLACE) {
            Ok(()) => Ok(true),
            Err(nix::errno::Errno::EEXIST) => {
                let _ = std::fs::remove_file(tmp);
                Ok(false)
            }
            Err(nix::errno::Errno::EINVAL) => check_then_rename(tmp, path, None),
            Err(e) => Err(e.into()),
        };
    };
    // Ours is never put in place over a file that is not the one read.
    if !still(seen, path)? {
        std::fs::remove_file(tmp)?;
        return Ok(false);
    }
    let ours = std::fs::metadata(tmp)?;
    match exchange(tmp, path) {
        Ok(()) => {}
        // A filesystem without the exchange: the check just before the rename.
        Err(nix::errno::Errno::EINVAL) => return check_then_rename(tmp, path, Some(seen)),
        Err(e) => return Err(e.into()),
    }
    // `tmp` names what was in place now: the one read, unless a save landed between the check
    // and the exchange — then it goes straight back, ours away.
    let displaced = std::fs::metadata(tmp)?;
    if seen.meta.as_ref().is_none_or(|m| same_file(m, &displaced)) {
        std::fs::remove_file(tmp)?;
        return Ok(true);
    }
    exchange(tmp, path)?;
    if !same_file(&ours, &std::fs::metadata(tmp)?) {
        // The owner saved again in that instant: its newest save goes back in place.
        exchange(tmp, path)?;
    }
    std::fs::remove_file(tmp)?;
    Ok(false)
}

#[cfg(not(target_os = "linux"))]
fn swap(tmp: &Path, path: &Path, seen: Option<&Seen>) -> std::io::Result<bool> {
    check_then_rename(tmp, path, seen)
}

/// Where no atomic exchange exists: the file compared with what was read just before the rename.
fn check_then_rename(tmp: &Path, path: &Path, seen: Option<&Seen>) -> std::io::Result<bool> {
    let still = match seen {
        None => !path.exists(),
        Some(s) => still(s, path).unwrap_or(false),
    };
    if !still {
        let _ = std::fs::remove_file(tmp);
        return Ok(false);
    }
    std::fs::rename(tmp, path)?;
    Ok(true)
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;

//! Files only the person can read: Gatehouse's data (the activity log with call arguments,
//! remembered approvals, server logs, the token fallback) and config live in 0700 directories as
//! 0600 files, whatever the umask. Looser modes found at start are tightened, with a warning.

use std::path::{Path, PathBuf};

/// Creates `dir` (and its parents) with mode 0700 for the directories it creates.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Opens `path` for appending, creating it 0600.
pub fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

/// Creates `path` empty and 0600 if it does not exist (so a library that creates it later, such
/// as SQLite with its `-wal` and `-shm` files, inherits the mode).
pub fn touch(path: &Path) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path).map(drop)
}

/// Tightens `dir` to 0700 and every file under it (recursively) to 0600 where group or others
/// had any access. Returns what was changed. Symlinks are left alone.
pub fn repair_tree(dir: &Path) -> Vec<PathBuf> {
    let mut fixed = Vec::new();
    repair(dir, true, &mut fixed);
    fixed
}

/// Tightens the files whose names start with `stem` in `dir` (a config file, its `.bak`, its
/// backups and lock) to 0600.
pub fn repair_files(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let mut fixed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return fixed;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(stem) {
            repair(&e.path(), false, &mut fixed);
        }
    }
    fixed
}

#[cfg(unix)]
fn repair(path: &Path, recurse: bool, fixed: &mut Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode();
    let want = if meta.is_dir() {
        0o700
    } else if meta.is_file() {
        // A program (an installed artifact's) stays runnable by its owner.
        0o600 | (mode & 0o100)
    } else {
        return;
    };
    if mode & 0o077 != 0
        && std::fs::set_permissions(path, std::fs::Permissions::from_mode(want)).is_ok()
    {
        fixed.push(path.to_owned());
    }
    if recurse && meta.is_dir() {
        if let Ok(entries) = std::fs::read_dir(path) {
            for e in entries.flatten() {
                repair(&e.path(), true, fixed);
            }
        }
    }
}

#[cfg(not(unix))]
fn repair(_path: &Path, _recurse: bool, _fixed: &mut Vec<PathBuf>) {}

/// Whether `gid` is the user's private group (the user's primary group, with no other listed
/// member): the default on Debian, Ubuntu and Fedora, whose umask 0002 leaves new directories
/// group-writable without letting anyone else in.
#[cfg(unix)]
fn own_private_group(gid: u32) -> bool {
    use nix::unistd::{Gid, Group, User};
    if nix::unistd::getgid() != Gid::from_raw(gid) {
        return false;
    }
    let me = User::from_uid(nix::unistd::getuid()).ok().flatten();
    match Group::from_gid(Gid::from_raw(gid)) {
        Ok(Some(g)) => g
            .mem
            .iter()
            .all(|m| me.as_ref().is_some_and(|u| &u.name == m)),
        _ => false,
    }
}

/// Why a directory may not hold the control socket, if it may not: it must be ours and not
/// writable by group or others, or another local user could have prepared it or could replace
/// our socket with theirs (and answer our CLI). Group-writable is accepted only for the user's
/// own private group. Reading it is harmless: connecting needs write
/// permission on the socket itself, which is 0600.
pub fn check_private_dir(dir: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(dir)
            .map_err(|e| format!("cannot inspect {}: {e}", dir.display()))?;
        let me = nix::unistd::getuid().as_raw();
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(format!(
                "{} is not a plain directory; remove it, or pass --control with a socket in a directory only you can use",
                dir.display()
            ));
        }
        if meta.uid() != me {
            return Err(format!(
                "{} belongs to uid {}, not to you (uid {me}): another user may have prepared it; remove it, or set XDG_RUNTIME_DIR or pass --control with a socket in a directory only you can use",
                dir.display(),
                meta.uid()
            ));
        }
        if meta.mode() & 0o002 != 0 || (meta.mode() & 0o020 != 0 && !own_private_group(meta.gid()))
        {
            return Err(format!(
                "{} is writable by other users (mode {:o}); run `chmod 700 {}` or pass --control with a socket in a directory only you can use",
                dir.display(),
                meta.mode() & 0o777,
                dir.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn looser_modes_are_tightened_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("logs")).unwrap();
        std::fs::write(data.join("activity.db"), "x").unwrap();
        std::fs::write(data.join("logs/a.log"), "x").unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Set explicitly: what create_dir_all leaves depends on the umask.
        std::fs::set_permissions(data.join("logs"), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        std::fs::set_permissions(
            data.join("activity.db"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        std::fs::set_permissions(
            data.join("logs/a.log"),
            std::fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        let fixed = repair_tree(&data);
        assert_eq!(fixed.len(), 3, "{fixed:?}");
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join("activity.db")), 0o600);
        assert_eq!(mode(&data.join("logs/a.log")), 0o600);
        assert!(repair_tree(&data).is_empty(), "nothing left to fix");
    }

    #[test]
    fn a_socket_dir_open_to_others_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        // Set explicitly: the mode tempdir leaves depends on the umask.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(check_private_dir(dir.path()).is_ok());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(
            check_private_dir(dir.path()).is_ok(),
            "readable is harmless"
        );
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_private_dir(dir.path()).unwrap_err();
        assert!(err.contains("chmod 700"), "{err}");
        // Group-writable: fine for the user's private group (umask 0002), refused otherwise.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o775)).unwrap();
        use std::os::unix::fs::MetadataExt;
        let gid = std::fs::metadata(dir.path()).unwrap().gid();
        assert_eq!(
            check_private_dir(dir.path()).is_ok(),
            own_private_group(gid)
        );
        let other = nix::unistd::getgid().as_raw().wrapping_add(4242);
        assert!(!own_private_group(other), "another group is never ours");
    }
}

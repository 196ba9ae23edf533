//! Where the hub's control socket is, for a process whose environment lost the variables that
//! say so. Clients start `gatehouse connect` with what they choose to pass: Codex keeps `HOME`
//! and drops `XDG_RUNTIME_DIR`, so the socket path it would compute is not the hub's. A hub
//! serving on the derived path leaves a pointer to it in the user's home
//! (`~/.local/state/gatehouse/control-socket`, 0600 in a 0700 directory); a client that finds no
//! socket where it looks first follows the pointer — only when the pointer, the socket's
//! directory and the socket are all its own user's, the same checks as the socket's directory
//! gets when the hub binds it.

use std::path::{Path, PathBuf};

use super::CONTROL_ENV;

/// The socket path from the environment, ignoring `GATEHOUSE_CONTROL`:
/// `$XDG_RUNTIME_DIR/gatehouse/control.sock`, else a per-user dir under the temp dir.
pub fn derived_socket_path() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|p| !p.is_empty()) {
        return PathBuf::from(dir).join("gatehouse").join("control.sock");
    }
    #[cfg(unix)]
    let user = nix::unistd::getuid().as_raw().to_string();
    #[cfg(not(unix))]
    let user = std::env::var("USERNAME").unwrap_or_else(|_| "user".into());
    std::env::temp_dir()
        .join(format!("gatehouse-{user}"))
        .join("control.sock")
}

/// The socket a client talks to: `$GATEHOUSE_CONTROL` when set; else the derived path when a
/// socket is there; else the one the hub's pointer names, when it passes the checks; else the
/// derived path (which the "not running" error then names).
pub fn find_socket() -> PathBuf {
    if let Some(p) = std::env::var_os(CONTROL_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let derived = derived_socket_path();
    if derived.exists() {
        return derived;
    }
    pointed().unwrap_or(derived)
}

/// Whether this process's environment lacks what locates the hub's socket (the hint of the
/// "not running" error).
pub fn environment_was_trimmed() -> bool {
    std::env::var_os(CONTROL_ENV).is_none() && std::env::var_os("XDG_RUNTIME_DIR").is_none()
}

/// The pointer file: under `$HOME`, or the home the user database gives when `HOME` is unset.
fn pointer_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .or_else(home_from_user_database)?;
    Some(home.join(".local/state/gatehouse/control-socket"))
}

#[cfg(unix)]
fn home_from_user_database() -> Option<PathBuf> {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.dir)
}

#[cfg(not(unix))]
fn home_from_user_database() -> Option<PathBuf> {
    None
}

/// Records `socket` as the hub's, when it is the derived path (a socket placed with
/// `--control` or `GATEHOUSE_CONTROL` is the person's to pass on). Returns what to remove when
/// the hub stops.
pub fn advertise(socket: &Path) -> Option<PathBuf> {
    if std::env::var_os(CONTROL_ENV).is_some_and(|p| !p.is_empty())
        || socket != derived_socket_path()
    {
        return None;
    }
    let pointer = pointer_path()?;
    let dir = pointer.parent()?;
    if let Err(e) = crate::private::create_dir(dir) {
        tracing::debug!(error = %e, "no pointer to the control socket");
        return None;
    }
    if let Err(why) = crate::private::check_private_dir(dir) {
        tracing::debug!("no pointer to the control socket: {why}");
        return None;
    }
    let text = socket.to_str()?;
    crate::token::write_token_file(&pointer, text).ok()?;
    Some(pointer)
}

/// Removes the pointer at `pointer` if it still names `socket` (a newer hub's stays).
pub fn withdraw(pointer: &Path, socket: &Path) {
    if std::fs::read_to_string(pointer).is_ok_and(|t| Path::new(t.trim()) == socket) {
        let _ = std::fs::remove_file(pointer);
    }
}

/// The socket the pointer names, if the pointer and the socket are this user's alone.
fn pointed() -> Option<PathBuf> {
    let pointer = pointer_path()?;
    crate::private::check_private_dir(pointer.parent()?).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = nix::unistd::getuid().as_raw();
        let meta = std::fs::symlink_metadata(&pointer).ok()?;
        if !meta.is_file() || meta.uid() != me || meta.mode() & 0o022 != 0 || meta.len() > 4096 {
            return None;
        }
        let socket = PathBuf::from(std::fs::read_to_string(&pointer).ok()?.trim());
        if !socket.is_absolute() {
            return None;
        }
        crate::private::check_private_dir(socket.parent()?).ok()?;
        let meta = std::fs::symlink_metadata(&socket).ok()?;
        (meta.uid() == me).then_some(socket)
    }
    #[cfg(not(unix))]
    None
}

//! Spawning a stdio server in its own process group (Unix) / Job Object (Windows) via
//! `process-wrap`, with a minimal environment, and signalling or inspecting the whole group.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};

use crate::config::{expand_tilde, StdioTransport};

/// What the child inherits from our environment; everything else comes from its `env` block.
const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    // Needed by npx/uvx wrappers to reach a registry through a corporate proxy or CA.
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    // Windows basics without which most programs do not start.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
];

/// The variable every stdio server gets with a value unique to its launch. Descendants inherit
/// it, so one that left the process group (`setsid`, a daemonising tool) is still found — by
/// this mark in `/proc/PID/environ` — and stopped with the rest (Linux).
pub const TAG_VAR: &str = "GATEHOUSE_SERVER_TAG";

/// A fresh launch tag.
pub fn new_tag() -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = fastrand::u128(..).to_le_bytes()[..12]
            .try_into()
            .unwrap_or_default();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The child's environment: the inherited basics plus the declared (already resolved) env.
pub fn child_env(declared: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = INHERITED_ENV
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v)))
        .collect();
    env.extend(declared.iter().map(|(k, v)| (k.clone(), v.clone())));
    env.into_iter().collect()
}

/// Spawns the server with piped stdio in a new process group. Errors are user-facing sentences.
pub fn spawn(
    t: &StdioTransport,
    env: &[(String, String)],
    confinement: Option<super::confine::Confinement>,
    #[cfg(target_os = "linux")] cell: Option<std::sync::Arc<super::cgroup::Cell>>,
) -> Result<Box<dyn ChildWrapper>, String> {
    let program = expand_tilde(&t.command);
    let cwd = t.cwd.as_deref().map(expand_tilde);
    if let Some(dir) = &cwd {
        if !Path::new(dir).is_dir() {
            return Err(format!(
                "cannot start: working directory \"{dir}\" does not exist; create it or fix \"cwd\""
            ));
        }
    }
    let mut cmd = CommandWrap::with_new(&program, |c| {
        c.args(t.args.iter().map(|a| expand_tilde(a)))
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &cwd {
            c.current_dir(dir);
        }
        // Into its cgroup first: once confined it could not write the cgroup's files.
        #[cfg(target_os = "linux")]
        if let Some(cell) = cell {
            // SAFETY: runs in the child between fork and exec; `enter` only opens, writes
            // and closes a file, allocating nothing.
            unsafe {
                c.pre_exec(move || cell.enter());
            }
        }
        #[cfg(target_os = "linux")]
        if let Some(mut confinement) = confinement {
            // SAFETY: runs in the child between fork and exec; `apply` only calls prctl and the
            // Landlock and seccomp system calls, allocates nothing and takes no lock.
            unsafe {
                c.pre_exec(move || confinement.apply());
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = confinement;
    });
    // A session of its own (and so a process group): no controlling terminal, so nothing it
    // runs can read from or type into the terminal Gatehouse was started from (stdin is a pipe).
    #[cfg(unix)]
    cmd.wrap(process_wrap::tokio::ProcessSession);
    #[cfg(windows)]
    cmd.wrap(process_wrap::tokio::JobObject);
    // If the owning task is ever dropped without a clean stop, the whole group dies with it.
    cmd.wrap(KillOnDrop);
    cmd.spawn()
        .map_err(|e| describe_spawn_error(&program, env, &e))
}

fn describe_spawn_error(program: &str, env: &[(String, String)], e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            let path = env
                .iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.as_str())
                .unwrap_or("");
            if program.contains('/') || program.contains('\\') {
                format!("cannot start: \"{program}\" does not exist; fix \"command\" or install it")
            } else {
                format!("cannot start: command \"{program}\" was not found in PATH ({path}); install it or give its full path in \"command\"")
            }
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot start: \"{program}\" is not executable (permission denied); check the file's permissions")
        }
        _ => format!("cannot start \"{program}\": {e}"),
    }
}

/// Sends `sig` to every process in the group (Unix). Errors (group already gone) are ignored.
#[cfg(unix)]
pub fn signal_group(pgid: u32, sig: nix::sys::signal::Signal) {
    if let Ok(raw) = i32::try_from(pgid) {
        if raw > 1 {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(raw), sig);
        }
    }
}

/// Live (non-zombie) processes carrying launch tag `tag` in their environment, whatever group
/// or session they moved to. Only processes we may read (our own user's) can be found, which
/// is every process a server of ours can start without privileges.
#[cfg(target_os = "linux")]
pub fn tagged(tag: &str) -> Vec<u32> {
    let needle = format!("{TAG_VAR}={tag}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .filter(|pid| proc_stat(*pid).is_some_and(|(state, _, _)| state != 'Z' && state != 'X'))
        .collect()
}

/// Sends `sig` to every process carrying launch tag `tag` (Linux).
#[cfg(target_os = "linux")]
pub fn signal_tagged(tag: &str, sig: nix::sys::signal::Signal) {
    for pid in tagged(tag) {
        if let Ok(raw) = i32::try_from(pid) {
            if raw > 1 {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), sig);
            }
        }
    }
}

/// Live (non-zombie) members of a process group.
#[cfg(target_os = "linux")]
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            proc_stat(*pid)
                .is_some_and(|(state, _ppid, pgrp)| pgrp == pgid && state != 'Z' && state != 'X')
        })
        .collect()
}

/// (state, ppid, pgrp) from `/proc/PID/stat`.
#[cfg(target_os = "linux")]
pub fn proc_stat(pid: u32) -> Option<(char, u32, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

#[cfg(all(unix, not(target_os = "linux")))]
pub fn group_members(pgid: u32) -> Vec<u32> {
    // Without /proc, ask the kernel whether the group still has members at all.
    match i32::try_from(pgid) {
        Ok(raw) if raw > 1 => {
            match nix::sys::signal::killpg(nix::unistd::Pid::from_raw(raw), None) {
                Ok(()) => vec![pgid],
                Err(_) => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_is_minimal_plus_declared() {
        let mut declared = BTreeMap::new();
        declared.insert("FOO".to_owned(), "bar".to_owned());
        let env = child_env(&declared);
        assert!(env.iter().any(|(k, v)| k == "FOO" && v == "bar"));
        assert!(env
            .iter()
            .all(|(k, _)| k == "FOO" || INHERITED_ENV.contains(&k.as_str())));
    }
}

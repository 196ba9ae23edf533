//! Every local server in a sandbox: what an entry asks for ([`policy`]), the paths that makes
//! ([`plan`]), and how the kernel enforces it (`linux`: Landlock and seccomp, applied in the child
//! between fork and exec). The hub itself is never confined.
//!
//! What a confined server cannot do, whatever it runs: read the credential stores under the
//! home directory, Gatehouse's own files or other servers' places; write outside its own places
//! and the paths its entry names; open any local (Unix) socket — so neither the control socket
//! nor the keychain's D-Bus service — nor, with `network: false`, any IP socket; signal or trace
//! a process outside its sandbox (the hub's memory and `/proc/PID/environ` included).

pub mod plan;
pub mod policy;

#[cfg(target_os = "linux")]
pub mod linux;

use serde::{Deserialize, Serialize};

pub use policy::{Level, SandboxPolicy};

/// What `status --json` says of a stdio server's sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReport {
    /// `default`, `strict` or `off`.
    pub policy: String,
    /// The policy in a phrase (`default, no network, +1 path`).
    pub summary: String,
    /// What enforces it: `landlock ABI 7 + seccomp`, or `none: …` with the reason.
    pub mechanism: String,
    /// Whether the server really runs confined.
    pub confined: bool,
}

/// The kernel's sandboxing on this machine, in a phrase; `None` when it has none.
pub fn mechanism() -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        let abi = linux::landlock_abi();
        if abi == 0 {
            return None;
        }
        let seccomp = if linux::seccomp_available() {
            " + seccomp"
        } else {
            ""
        };
        Some(format!("landlock ABI {abi}{seccomp}"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The report for a stdio server with `policy`.
pub fn report(policy: &SandboxPolicy) -> SandboxReport {
    let (mechanism, confined) = match (policy.confines(), mechanism()) {
        (false, _) => ("none: the entry turns the sandbox off".to_owned(), false),
        (true, Some(m)) => (m, true),
        (true, None) => (unavailable().to_owned(), false),
    };
    SandboxReport {
        policy: policy.level.as_str().to_owned(),
        summary: policy.summary(),
        mechanism,
        confined,
    }
}

/// Why nothing confines a server here.
pub fn unavailable() -> &'static str {
    if cfg!(target_os = "linux") {
        "none: this kernel has no Landlock (it runs unconfined)"
    } else {
        "none: not built for this platform yet (it runs unconfined)"
    }
}

/// Words in a server's stderr that say the system refused it something.
const REFUSALS: &[&str] = &[
    "permission denied",
    "eacces",
    "eperm",
    "operation not permitted",
    "read-only file system",
];

/// When a confined server's log line says it was refused something, the hint to log beside it.
pub fn hint_for(line: &str, policy: &SandboxPolicy) -> Option<String> {
    if !policy.confines() {
        return None;
    }
    let lower = line.to_ascii_lowercase();
    if !REFUSALS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let path = line
        .split(|c: char| c.is_whitespace() || "'\"`,()[]".contains(c))
        .map(|w| w.trim_end_matches([':', ';', '.']))
        .find(|w| w.starts_with('/') && w.len() > 1);
    let allow = match path {
        Some(p) => format!("\"sandbox\": {{\"write\": [\"{p}\"]}} (or \"read\")"),
        None => "\"sandbox\": {\"write\": [PATH]} or {\"read\": [PATH]}".to_owned(),
    };
    let what = path.map(|p| format!(" {p}")).unwrap_or_default();
    Some(format!(
        "the sandbox ({}) may have denied this{what}; allow it with {allow} in the entry, or \"sandbox\": \"off\"",
        policy.summary()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal in a confined server's log gets a hint naming the path and the setting; the
    /// same line from an unconfined server, or an ordinary line, gets none.
    #[test]
    fn a_refusal_in_a_confined_servers_log_gets_a_hint() {
        let line = "Error: EACCES: permission denied, open '/home/me/.ssh/id_rsa'";
        let hint = hint_for(line, &SandboxPolicy::default()).unwrap();
        assert!(hint.contains("/home/me/.ssh/id_rsa"), "{hint}");
        assert!(hint.contains("\"sandbox\": \"off\""), "{hint}");
        assert_eq!(hint_for(line, &SandboxPolicy::of(Level::Off)), None);
        assert_eq!(
            hint_for("listening on stdio", &SandboxPolicy::default()),
            None
        );
    }
}

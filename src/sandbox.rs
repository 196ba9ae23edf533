//! Every local server in a sandbox: what an entry asks for ([`policy`]), the paths that makes
//! ([`plan`]), and how the kernel enforces it (`linux`: Landlock and seccomp, applied in the child
//! between fork and exec). The hub itself is never confined.
//!
//! What a confined server cannot do, whatever it runs: read the credential stores under the
//! home directory, Gatehouse's own files or other servers' places; write outside its own places
//! and the paths its entry names ([`places`]: within limits); open any local (Unix) socket — so
//! neither the control socket nor the keychain's D-Bus service — nor, with `network: false`, any
//! IP socket; open a terminal, a console or shared memory, or push keystrokes into a terminal
//! (`TIOCSTI`); signal or trace a process outside its sandbox (the hub's memory and
//! `/proc/PID/environ` included). When it fails, [`blame`] says whether the sandbox may be why.

pub mod blame;
pub mod network;
pub mod paths;
pub mod places;
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
    /// Paths named in its arguments, environment or working directory that were not opened for
    /// writing (as written), since its last launch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// For each of `left_out`: where it was named, why it was left out, the entry line that
    /// opens it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out_why: Vec<places::LeftOut>,
    /// Fenced (`"network": {"allow": [...]}`): the allow list, what was refused since the
    /// launch, and whether the kernel refuses its direct connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<network::NetworkReport>,
}

/// A confined launch: what its sandbox opened and left out, kept for status and for
/// [`blame`].
#[derive(Debug, Clone, Default)]
pub struct Confined {
    /// The paths opened.
    pub plan: plan::Plan,
    /// Named paths not opened for writing.
    pub left_out: Vec<places::LeftOut>,
    /// The policy in a phrase.
    pub summary: String,
    /// The home directory it was planned with.
    pub home: Option<std::path::PathBuf>,
    /// When it was launched (ms since the epoch): what the server said since is read for
    /// [`blame`].
    pub launched_ms: u64,
    /// Fenced: what its egress proxy refused since the launch.
    pub refused: Option<std::sync::Arc<network::Refused>>,
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
        left_out: Vec::new(),
        left_out_why: Vec::new(),
        network: policy.network.allow().map(|list| network::NetworkReport {
            allow: list.iter().map(ToString::to_string).collect(),
            refused: Vec::new(),
            fenced: confined && fences_network(),
        }),
    }
}

/// Whether the kernel here refuses a fenced server's direct TCP connections (Landlock ABI 4+).
pub fn fences_network() -> bool {
    #[cfg(target_os = "linux")]
    {
        linux::fences_network()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
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

//! The Linux sandbox: a Landlock ruleset (files, signals, abstract sockets) and a seccomp filter
//! (no local sockets, no network when it is off, no io_uring, no keystrokes pushed into a
//! terminal: `TIOCSTI`, `TIOCLINUX`), both built in the hub and only *applied* in the child
//! between fork and exec — nothing of Gatehouse's own runs confined.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::plan::Plan;

/// The newest Landlock ABI this build asks for.
const WANTED: ABI = ABI::V6;

/// The Landlock ABI the running kernel offers (0: none), found once by asking for each version
/// in turn as a hard requirement.
pub fn landlock_abi() -> u8 {
    static ABI_FOUND: OnceLock<u8> = OnceLock::new();
    *ABI_FOUND.get_or_init(|| {
        let versions = [
            (7, ABI::V7),
            (6, ABI::V6),
            (5, ABI::V5),
            (4, ABI::V4),
            (3, ABI::V3),
            (2, ABI::V2),
            (1, ABI::V1),
        ];
        for (n, abi) in versions {
            let created = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi))
                .and_then(|r| r.create());
            if created.is_ok() {
                return n;
            }
        }
        0
    })
}

/// Whether seccomp filters can be installed here (the kernel has them and nothing forbids it).
pub fn seccomp_available() -> bool {
    std::path::Path::new("/proc/sys/kernel/seccomp/actions_avail").exists()
}

/// A sandbox ready to apply in a child.
pub struct Confinement {
    ruleset: Option<RulesetCreated>,
    filter: Option<BpfProgram>,
}

fn ruleset(plan: &Plan) -> Result<RulesetCreated, String> {
    let failed = |e: landlock::RulesetError| format!("cannot build the sandbox: {e}");
    let read = AccessFs::from_read(WANTED);
    let write = AccessFs::from_all(WANTED);
    let mut rs = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(write)
        .map_err(failed)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(failed)?
        .create()
        .map_err(failed)?;
    let list = AccessFs::ReadDir.into();
    for (paths, access) in [(&plan.list, list), (&plan.read, read), (&plan.write, write)] {
        for p in paths {
            // A path that vanished since the plan was made is simply not opened.
            let Ok(fd) = PathFd::new(p) else { continue };
            rs = rs.add_rule(PathBeneath::new(fd, access)).map_err(failed)?;
        }
    }
    Ok(rs)
}

fn filter(plan: &Plan) -> Result<BpfProgram, String> {
    let failed = |e: seccompiler::BackendError| format!("cannot build the sandbox's filter: {e}");
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| failed(e))?;
    let domain = |family: i32| -> Result<SeccompRule, String> {
        let family = u64::try_from(family).unwrap_or_default();
        let c = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family)
            .map_err(failed)?;
        SeccompRule::new(vec![c]).map_err(failed)
    };
    // Local sockets reach the control socket and the keychain's D-Bus service: none, ever.
    let mut socket = vec![domain(nix::libc::AF_UNIX)?];
    if !plan.network {
        socket.push(domain(nix::libc::AF_INET)?);
        socket.push(domain(nix::libc::AF_INET6)?);
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(nix::libc::SYS_socket, socket);
    // io_uring can open sockets without the socket() call above.
    rules.insert(nix::libc::SYS_io_uring_setup, Vec::new());
    // Typing into a terminal (the person's shell) or a console: refused whatever the
    // descriptor. The request is compared on its low 32 bits, as the kernel reads it.
    let ioctl = |request: u64| -> Result<SeccompRule, String> {
        let c = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
            .map_err(failed)?;
        SeccompRule::new(vec![c]).map_err(failed)
    };
    rules.insert(
        nix::libc::SYS_ioctl,
        vec![ioctl(nix::libc::TIOCSTI)?, ioctl(nix::libc::TIOCLINUX)?],
    );
    let f = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(nix::libc::EACCES).unwrap_or(13)),
        arch,
    )
    .map_err(failed)?;
    f.try_into()
        .map_err(|e: seccompiler::BackendError| failed(e))
}

impl Confinement {
    /// Builds the ruleset and the filter (in the hub: opens the plan's paths).
    pub fn prepare(plan: &Plan) -> Result<Confinement, String> {
        let ruleset = if landlock_abi() > 0 {
            Some(ruleset(plan)?)
        } else {
            None
        };
        let filter = if seccomp_available() {
            Some(filter(plan)?)
        } else {
            None
        };
        Ok(Confinement { ruleset, filter })
    }

    /// Confines the calling process — called in the child after fork, before exec: no
    /// allocation, only `prctl` and the two kernel calls.
    pub fn apply(&mut self) -> std::io::Result<()> {
        if let Some(rs) = self.ruleset.take() {
            rs.restrict_self()
                .map_err(|_| std::io::Error::from_raw_os_error(nix::libc::EPERM))?;
        }
        if let Some(f) = &self.filter {
            seccompiler::apply_filter(f)
                .map_err(|_| std::io::Error::from_raw_os_error(nix::libc::EPERM))?;
        }
        Ok(())
    }
}

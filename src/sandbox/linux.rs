//! The Linux sandbox: a Landlock ruleset (files, signals, abstract sockets) and a seccomp filter
//! (sockets by an allow-list of families — IPv4, IPv6 and the kernel's own netlink when the
//! network is on, none when it is off, never a local one —, no SysV IPC between servers, no
//! io_uring, no keystrokes pushed into a terminal: `TIOCSTI`, `TIOCLINUX`; a foreign
//! architecture's calls kill the process, the x32 range is refused), both built in the hub and
//! only *applied* in the child between fork and exec — nothing of Gatehouse's own runs confined.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::plan::Plan;

/// The newest Landlock ABI this build asks for.
const WANTED: ABI = ABI::V6;

/// The Landlock ABI that fences TCP connections by port.
pub const NETWORK_ABI: u8 = 4;

/// `GATEHOUSE_LANDLOCK_ABI=N` makes Gatehouse use at most ABI N, as on an older kernel (for
/// testing what it does there: what it reports, and `"require": "network"`).
pub const ABI_CAP_VAR: &str = "GATEHOUSE_LANDLOCK_ABI";

/// The Landlock ABI Gatehouse uses (0: none): the running kernel's, found once by asking for
/// each version in turn as a hard requirement, or less under [`ABI_CAP_VAR`].
pub fn landlock_abi() -> u8 {
    let cap = std::env::var(ABI_CAP_VAR)
        .ok()
        .and_then(|v| v.parse::<u8>().ok())
        .unwrap_or(u8::MAX);
    kernel_abi().min(cap)
}

/// Whether a fenced server's direct TCP connections are refused by the kernel here.
pub fn fences_network() -> bool {
    landlock_abi() >= NETWORK_ABI
}

fn kernel_abi() -> u8 {
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
    let mut attr = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(write)
        .map_err(failed)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(failed)?;
    // Fenced: TCP connects only to its egress proxy's port.
    let fence = plan.egress_port.filter(|_| fences_network());
    if fence.is_some() {
        attr = attr.handle_access(AccessNet::ConnectTcp).map_err(failed)?;
    }
    let mut rs = attr.create().map_err(failed)?;
    if let Some(port) = fence {
        rs = rs
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(failed)?;
    }
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
    // Sockets by an allow-list of families. Local sockets reach the control socket and the
    // keychain's D-Bus service: none, ever. Without network, no socket at all (no raw packet,
    // netlink or vsock socket either: as root a packet socket would read the loopback's
    // traffic, bearer tokens included); with it, IPv4, IPv6 and netlink (the kernel's own
    // routing answers, which finding the machine's addresses needs).
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if plan.network {
        let other = |family: i32| -> Result<SeccompCondition, String> {
            let family = u64::try_from(family).unwrap_or_default();
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family)
                .map_err(failed)
        };
        let not_allowed = SeccompRule::new(vec![
            other(nix::libc::AF_INET)?,
            other(nix::libc::AF_INET6)?,
            other(nix::libc::AF_NETLINK)?,
        ])
        .map_err(failed)?;
        let mut refused = vec![not_allowed];
        // Fenced: an IP socket only of the stream type (TCP, which Landlock sends to the proxy):
        // no UDP — so no DNS but the proxy's —, no raw or ICMP socket. Every other type of the
        // type field's low four bits is refused (its flags, SOCK_NONBLOCK and SOCK_CLOEXEC,
        // sit above them).
        if plan.egress_port.is_some() {
            for family in [nix::libc::AF_INET, nix::libc::AF_INET6] {
                let family = u64::try_from(family).unwrap_or_default();
                for kind in (0u64..16).filter(|k| *k != nix::libc::SOCK_STREAM as u64) {
                    let is = |arg: u8, op: SeccompCmpOp, v: u64| {
                        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, v).map_err(failed)
                    };
                    refused.push(
                        SeccompRule::new(vec![
                            is(0, SeccompCmpOp::Eq, family)?,
                            is(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
                        ])
                        .map_err(failed)?,
                    );
                }
            }
        }
        rules.insert(nix::libc::SYS_socket, refused);
    } else {
        rules.insert(nix::libc::SYS_socket, Vec::new());
    }
    // SysV IPC passes data between processes that share no file: between confined servers.
    for call in [
        nix::libc::SYS_shmget,
        nix::libc::SYS_shmat,
        nix::libc::SYS_shmctl,
        nix::libc::SYS_shmdt,
        nix::libc::SYS_msgget,
        nix::libc::SYS_msgsnd,
        nix::libc::SYS_msgrcv,
        nix::libc::SYS_msgctl,
        nix::libc::SYS_semget,
        nix::libc::SYS_semop,
        nix::libc::SYS_semtimedop,
        nix::libc::SYS_semctl,
    ] {
        rules.insert(call, Vec::new());
    }
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
    let program: BpfProgram = f
        .try_into()
        .map_err(|e: seccompiler::BackendError| failed(e))?;
    Ok(without_x32(program))
}

/// `program` refusing the x32 system calls too (x86-64 numbers with bit 30 set: the same
/// architecture to the arch check, other numbers to every rule), right after its arch check
/// (three instructions: a call of another architecture kills the process).
#[cfg(target_arch = "x86_64")]
fn without_x32(program: BpfProgram) -> BpfProgram {
    use seccompiler::sock_filter;
    const X32_BIT: u32 = 0x4000_0000;
    let errno = 0x0005_0000 | u32::try_from(nix::libc::EACCES).unwrap_or(13);
    let check = [
        // Load the call's number (offset 0 of seccomp_data).
        sock_filter {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        },
        // At or past the x32 bit: refused; else on to the filter.
        sock_filter {
            code: 0x35,
            jt: 0,
            jf: 1,
            k: X32_BIT,
        },
        sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: errno,
        },
    ];
    let at = 3.min(program.len());
    let mut out = Vec::with_capacity(program.len() + check.len());
    out.extend_from_slice(&program[..at]);
    out.extend_from_slice(&check);
    out.extend_from_slice(&program[at..]);
    out
}

#[cfg(not(target_arch = "x86_64"))]
fn without_x32(program: BpfProgram) -> BpfProgram {
    program
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

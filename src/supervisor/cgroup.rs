//! One cgroup (v2) per server launch, where the hub may make them: every descendant of the
//! server stays in it whatever it does — `setsid`, a clean environment (`env -i`), a double fork —
//! so the stop sequence finds and ends them all. Without a writable cgroup v2 tree (no
//! delegation) the launch tag and the process group are what is left (`process.rs`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The hub's own directory of server cgroups (`…/gatehouse-PID`), made once; `None` when this
/// process may not make cgroups.
fn base() -> Option<&'static Path> {
    static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
    BASE.get_or_init(|| {
        let made = make_base();
        match &made {
            Some(dir) => tracing::info!(
                cgroup = %dir.display(),
                "each server launch gets a cgroup of its own: no descendant outlives its server"
            ),
            None => tracing::info!(
                "no writable cgroup v2 tree here: a server's descendants are found by process group and launch tag only"
            ),
        }
        made
    })
    .as_deref()
}

/// Makes the hub's directory of server cgroups under its own cgroup, when it may.
fn make_base() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // `… MOUNTPOINT … - cgroup2 …`
    let mount = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        right
            .starts_with("cgroup2 ")
            .then(|| left.split(' ').nth(4).map(PathBuf::from))?
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))?
        .trim_start_matches('/');
    let parent = mount.join(rel);
    sweep(&parent);
    let dir = parent.join(format!("gatehouse-{}", std::process::id()));
    std::fs::create_dir(&dir).ok().map(|()| dir)
}

/// Removes the empty cgroups of hubs that are gone.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("gatehouse-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            if let Ok(cells) = std::fs::read_dir(e.path()) {
                for c in cells.flatten().filter(|c| c.path().is_dir()) {
                    let _ = std::fs::remove_dir(c.path());
                }
            }
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// One launch's cgroup.
pub struct Cell {
    dir: PathBuf,
    /// `…/cgroup.procs`, NUL-terminated, for the child to open between fork and exec.
    procs: std::ffi::CString,
}

impl Cell {
    /// A new cgroup for server `id`'s launch `tag`, when cgroups can be made here.
    pub fn new(id: &str, tag: &str) -> Option<Cell> {
        let dir = base()?.join(format!("{id}-{tag}"));
        std::fs::create_dir(&dir).ok()?;
        let procs = std::ffi::CString::new(
            dir.join("cgroup.procs")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .ok()?;
        Some(Cell { dir, procs })
    }

    /// Moves the calling process into the cgroup — in the child between fork and exec: only
    /// `open`, `write` and `close`, nothing allocated. Best effort: a server that cannot enter
    /// it still starts (its process group and launch tag still find it).
    pub fn enter(&self) -> std::io::Result<()> {
        // SAFETY: a NUL-terminated path and a one-byte buffer that outlive the calls.
        unsafe {
            let fd = nix::libc::open(
                self.procs.as_ptr(),
                nix::libc::O_WRONLY | nix::libc::O_CLOEXEC,
            );
            if fd >= 0 {
                nix::libc::write(fd, b"0".as_ptr().cast(), 1);
                nix::libc::close(fd);
            }
        }
        Ok(())
    }

    /// The live processes in it.
    pub fn members(&self) -> Vec<u32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Sends `sig` to every process in it.
    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        for pid in self.members() {
            if let Ok(raw) = i32::try_from(pid) {
                if raw > 1 {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), sig);
                }
            }
        }
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        // Empty by now (the stop sequence ended its members); a cgroup with members stays.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

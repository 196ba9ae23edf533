//! Which paths a confined server may read and write: computed from its policy, its own places
//! and the home directory, before anything is confined. Landlock only *allows* (a rule on a
//! directory opens everything beneath it), so "everything but `~/.ssh`" is built by opening each
//! sibling on the way down to a denied path and never the denied path itself.

use std::path::{Path, PathBuf};

use super::paths::{expand, CREDENTIAL_STORES};
use super::policy::{Level, SandboxPolicy};

/// Where package runners keep what they download: writable so `npx`/`uvx` work confined.
pub const RUNNER_CACHES: &[&str] = &[
    ".npm",
    ".cache/uv",
    ".cache/pip",
    ".cache/pnpm",
    ".cache/node-gyp",
    ".cache/deno",
    ".local/share/uv",
    ".local/share/pnpm",
    ".bun",
    ".yarn",
];

/// Runners' own settings, readable under `strict` too.
const RUNNER_SETTINGS: &[&str] = &[".npmrc", ".config/uv", ".config/pip", ".pip", ".yarnrc"];

/// The system a program needs to start at all, readable under `strict`.
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/proc",
    "/sys",
    "/dev",
    "/run/systemd/resolve",
];

/// Devices any program may write. Not a terminal (`/dev/tty`, `/dev/pts`, the consoles: a
/// confined server could read the person's keystrokes or type into their shell) and not shared
/// memory (`/dev/shm`: two servers could pass data through it); those are not even readable
/// ([`closed_devices`]).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Devices no confined server may open at all: terminals and consoles (`tty*`, `pts`, `ptmx`,
/// `console`, `vcs*`), input devices, shared memory.
pub fn closed_devices() -> Vec<PathBuf> {
    let closed = |name: &str| {
        name.starts_with("tty")
            || name.starts_with("vcs")
            || matches!(
                name,
                "pts" | "ptmx" | "console" | "shm" | "input" | "uinput"
            )
    };
    std::fs::read_dir("/dev")
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_str().is_some_and(closed))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// At most this many rules in one sandbox; a home directory with more entries than that has the
/// rest left unreadable (and the launch says so).
pub const MAX_RULES: usize = 4096;

/// One server's places and the paths its entry names.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// The home directory.
    pub home: Option<PathBuf>,
    /// Gatehouse's own directories (config, data, state, the control socket's).
    pub guarded: Vec<PathBuf>,
    /// The data directory Gatehouse gives the server.
    pub data: PathBuf,
    /// Its private temporary directory.
    pub tmp: PathBuf,
    /// The program it runs, resolved through PATH.
    pub program: Option<PathBuf>,
    /// What the paths it is told about (arguments, environment, working directory) open
    /// ([`super::places::open`]).
    pub opened: super::places::Opened,
}

/// What the sandbox allows: read (and run) beneath `read`, read and write beneath `write`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Read and execute.
    pub read: Vec<PathBuf>,
    /// Read, execute, write, create, remove.
    pub write: Vec<PathBuf>,
    /// Listing only (the names in a directory and beneath, not what the files hold): a folder
    /// the server was given that is opened entry by entry (the home directory, a folder holding
    /// Gatehouse's files), so that walking into it works.
    pub list: Vec<PathBuf>,
    /// TCP/UDP allowed.
    pub network: bool,
    /// Entries left out because the plan reached [`MAX_RULES`].
    pub left_out: usize,
}

impl Plan {
    /// Whether the plan lets the server write `p` (a real path).
    pub fn writes(&self, p: &Path) -> bool {
        self.write.iter().any(|w| p.starts_with(w))
    }

    /// Whether the plan lets the server read `p` (a real path).
    pub fn reads(&self, p: &Path) -> bool {
        self.writes(p) || self.read.iter().any(|r| p.starts_with(r))
    }
}

struct Builder {
    denied: Vec<PathBuf>,
    plan: Plan,
}

fn real(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

impl Builder {
    fn is_denied(&self, p: &Path) -> bool {
        self.denied.iter().any(|d| p.starts_with(d))
    }
    fn holds_denied(&self, p: &Path) -> bool {
        self.denied.iter().any(|d| d.starts_with(p) && d != p)
    }
    fn push(&mut self, p: PathBuf, write: bool) {
        if self.plan.read.len() + self.plan.write.len() >= MAX_RULES {
            self.plan.left_out += 1;
            return;
        }
        let list = if write {
            &mut self.plan.write
        } else {
            &mut self.plan.read
        };
        if !list.contains(&p) {
            list.push(p);
        }
    }

    /// Opens `p` (an existing path) unless it is or leads into a denied place: a directory that
    /// holds one is opened entry by entry instead.
    fn grant(&mut self, p: &Path, write: bool) {
        let Some(r) = real(p) else { return };
        if self.is_denied(&r) {
            return;
        }
        if self.holds_denied(&r) {
            self.cover(&r, write, 0);
        } else {
            self.push(r, write);
        }
    }

    /// The home directory named as a whole: its folders and ordinary files for writing, its
    /// dot-entries and the startup files for reading, the credential stores not at all.
    fn home_entries(&mut self, home: &Path) {
        let Ok(entries) = std::fs::read_dir(home) else {
            return;
        };
        let startup: Vec<PathBuf> = super::places::STARTUP
            .iter()
            .map(|s| home.join(s))
            .collect();
        for e in entries.flatten() {
            let p = e.path();
            let hidden = e.file_name().to_str().is_none_or(|n| n.starts_with('.'));
            let settings = hidden || startup.iter().any(|s| s.starts_with(&p));
            if settings {
                self.grant(&p, false);
            } else {
                self.grant(&p, true);
            }
        }
    }

    /// Every entry of `dir` but the denied ones; entries on the way to a denied path are
    /// descended into. A symbolic link is opened only when where it leads is neither denied nor
    /// holds a denied path.
    fn cover(&mut self, dir: &Path, write: bool, depth: usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Some(r) = real(&p) else { continue };
            if self.is_denied(&r) || self.is_denied(&p) {
                continue;
            }
            let link = e.file_type().is_ok_and(|t| t.is_symlink());
            if self.holds_denied(&r) || self.holds_denied(&p) {
                if !link && depth < 16 {
                    self.cover(&r, write, depth + 1);
                }
                continue;
            }
            self.push(r, write);
        }
    }
}

/// The sandbox's plan for one server (`None` when its policy is `off`).
pub fn plan(policy: &SandboxPolicy, places: &Places) -> Option<Plan> {
    if !policy.confines() {
        return None;
    }
    let home = places.home.as_deref();
    let mut denied: Vec<PathBuf> = places.guarded.iter().filter_map(|p| real(p)).collect();
    if let Some(h) = home {
        denied.extend(CREDENTIAL_STORES.iter().filter_map(|c| real(&h.join(c))));
    }
    denied.extend(closed_devices());
    // The server's own places live inside Gatehouse's guarded data directory: they are opened
    // by their own rules, which Landlock adds to whatever the parents allow.
    let mut b = Builder {
        denied,
        plan: Plan {
            network: policy.network,
            ..Plan::default()
        },
    };
    let own: Vec<PathBuf> = [&places.data, &places.tmp]
        .into_iter()
        .filter_map(|p| real(p))
        .collect();
    for p in &own {
        b.push(p.clone(), true);
    }
    match policy.level {
        Level::Default => b.grant(Path::new("/"), false),
        Level::Strict => {
            for s in SYSTEM {
                b.grant(Path::new(s), false);
            }
            if let Some(h) = home {
                for s in RUNNER_SETTINGS {
                    b.grant(&h.join(s), false);
                }
            }
            // The program's own installation: `…/node/v20/bin/node` → `…/node/v20`.
            if let Some(prog) = places.program.as_deref().and_then(real) {
                if let Some(root) = prog.parent().and_then(Path::parent) {
                    if root.parent().is_some() {
                        b.grant(root, false);
                    }
                }
            }
        }
        Level::Off => {}
    }
    for d in DEVICES {
        b.grant(Path::new(d), true);
    }
    if let Some(h) = home {
        for c in RUNNER_CACHES {
            b.grant(&h.join(c), true);
        }
    }
    for p in &places.opened.write {
        if real(p).is_some_and(|r| b.holds_denied(&r)) {
            b.plan.list.push(p.clone());
        }
        b.grant(p, true);
    }
    if let (true, Some(h)) = (places.opened.home_entries, home.and_then(real)) {
        b.plan.list.push(h.clone());
        b.home_entries(&h);
    }
    // What the person wrote in the entry is theirs to open, credential store or not.
    for (list, write) in [(&policy.read, false), (&policy.write, true)] {
        for p in list {
            if let Some(r) = real(&expand(p, home)) {
                b.push(r, write);
            }
        }
    }
    Some(b.plan)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

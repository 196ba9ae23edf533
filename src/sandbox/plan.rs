//! Which paths a confined server may read and write: computed from its policy, its own places
//! and the home directory, before anything is confined. Reads are an allow-list: the system's
//! runtime (`/usr`, `/etc`, …), the program's own installation and its interpreter's, its
//! pinned artifact, its places and what its entry grants — never the rest of the home, so a
//! credential file nobody listed (a token in `~/.lmstudio`, `~/.npmrc`, a backup) is unreadable
//! because nothing opened it. Landlock only *allows* (a rule on a directory opens everything
//! beneath it), so a folder that holds a denied path (a credential store, Gatehouse's own files)
//! is opened entry by entry on the way down to it, never the denied path itself.

use std::path::{Path, PathBuf};

use super::paths::{expand, CREDENTIAL_STORES};
use super::policy::{Level, SandboxPolicy};

/// Where package runners keep what they download, under the home directory: shared by every
/// program that runs `npx`/`uvx` — the person's own shell included —, so no confined server may
/// read or write them (one could rewrite what another runs). A confined runner gets a cache of
/// its own instead ([`RUNNER_CACHE_VARS`]); a pinned one runs from Gatehouse's store.
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

/// The variables that point every package runner at a cache of the server's own (each its
/// place `cache/`): npm/npx, pnpm, yarn, bun, uv/uvx, pip, deno and everything that follows
/// the XDG cache directory.
pub const RUNNER_CACHE_VARS: &[&str] = &[
    "npm_config_cache",
    "npm_config_store_dir",
    "YARN_CACHE_FOLDER",
    "BUN_INSTALL_CACHE_DIR",
    "UV_CACHE_DIR",
    "UV_TOOL_DIR",
    "PIP_CACHE_DIR",
    "DENO_DIR",
    "XDG_CACHE_HOME",
];

/// The system a program needs to start at all: what every confined server reads.
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
    /// The program it runs, resolved through PATH (as written: a link is followed here).
    pub program: Option<PathBuf>,
    /// Its pinned artifact in Gatehouse's store, read-only.
    pub artifact: Option<PathBuf>,
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
    /// Fenced (`"network": {"allow": [...]}`): TCP connects only to this port — its egress
    /// proxy's — and no UDP. Set by the launch, which starts the proxy.
    pub egress_port: Option<u16>,
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
    /// Readable, never writable (inside a place, what runs code later).
    protected: Vec<PathBuf>,
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
    fn holds_protected(&self, p: &Path) -> bool {
        self.protected.iter().any(|d| d.starts_with(p) && d != p)
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
        if self.holds_denied(&r) || (write && self.holds_protected(&r)) {
            self.cover(&r, write, 0);
        } else if write && self.protected.contains(&r) {
            self.push(r, false);
        } else {
            self.push(r, write);
        }
    }

    /// The home directory named as a whole: its folders and ordinary files for writing, the
    /// startup files among them for reading; its dot-entries (settings, caches, credentials,
    /// other programs' files) not at all.
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
            if e.file_name().to_str().is_none_or(|n| n.starts_with('.')) {
                continue;
            }
            let runs_code = startup.iter().any(|s| s.starts_with(&p));
            self.grant(&p, !runs_code);
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
            let protects = write && (self.holds_protected(&r) || self.holds_protected(&p));
            if self.holds_denied(&r) || self.holds_denied(&p) || protects {
                if !link && depth < 16 {
                    self.cover(&r, write, depth + 1);
                }
                continue;
            }
            let kept = write && (self.protected.contains(&r) || self.protected.contains(&p));
            self.push(r, write && !kept);
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
        denied.extend(RUNNER_CACHES.iter().filter_map(|c| real(&h.join(c))));
    }
    denied.extend(closed_devices());
    // The server's own places live inside Gatehouse's guarded data directory: they are opened
    // by their own rules, which Landlock adds to whatever the parents allow.
    let protected = places
        .opened
        .protected
        .iter()
        .filter_map(|p| real(p))
        .collect();
    let mut b = Builder {
        denied,
        protected,
        plan: Plan {
            network: policy.network.on(),
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
    // Its artifact lives in the store, among Gatehouse's guarded files: opened by a rule of its
    // own, for reading only.
    if let Some(a) = places.artifact.as_deref().and_then(real) {
        b.push(a, false);
    }
    if policy.level != Level::Off {
        for s in SYSTEM {
            b.grant(Path::new(s), false);
        }
        for root in program_roots(places.program.as_deref(), home) {
            b.grant(&root, false);
        }
    }
    for d in DEVICES {
        b.grant(Path::new(d), true);
    }
    // What its arguments name that may not be written (a settings folder, a system file): read.
    for p in &places.opened.read {
        b.grant(p, false);
    }
    for p in &places.opened.write {
        if real(p).is_some_and(|r| b.holds_denied(&r)) {
            b.plan.list.push(p.clone());
        }
        b.grant(p, true);
    }
    let whole_home = policy.level == Level::Default && places.opened.home_entries;
    if let (true, Some(h)) = (whole_home, home.and_then(real)) {
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

/// What a program needs to read to run at all, beyond the system: its own installation (the
/// folder above its `bin/`, or the folder holding the `node_modules` it lives in) and the
/// installation of the interpreter its first line names (`#!/usr/bin/env node`,
/// `#!/…/venv/bin/python`). Never the home directory itself or `/`: a program right in such a
/// folder gets its own folder only.
pub fn program_roots(program: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let Some(program) = program else {
        return Vec::new();
    };
    let real_home = home.and_then(real);
    let fits = |p: &Path| {
        p.parent().is_some()
            && real_home.as_deref() != Some(p)
            && !real_home.as_deref().is_some_and(|h| h.starts_with(p))
    };
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if fits(&p) && !out.contains(&p) {
            out.push(p);
        }
    };
    let mut root_of = |file: &Path| {
        // A package in a `node_modules` tree reads its siblings: the folder holding the tree.
        let written = file
            .components()
            .position(|c| c.as_os_str() == "node_modules");
        if let Some(i) = written {
            let above: PathBuf = file.components().take(i).collect();
            add(above);
        }
        // A link (`venv/bin/python` → the interpreter it was made from): the folder it was
        // written in counts too (the venv, with its `pyvenv.cfg` and packages).
        if let Some(root) = file.parent().and_then(Path::parent).filter(|r| fits(r)) {
            if let Some(r) = real(root) {
                add(r);
            }
        }
        let Some(r) = real(file) else { return };
        if let Some(i) = r.components().position(|c| c.as_os_str() == "node_modules") {
            add(r.components().take(i).collect());
        }
        match r.parent().and_then(Path::parent) {
            Some(root) if fits(root) => add(root.to_owned()),
            _ => {
                if let Some(dir) = r.parent() {
                    add(dir.to_owned());
                }
            }
        }
    };
    root_of(program);
    if let Some(interpreter) = interpreter(program) {
        root_of(&interpreter);
    }
    out
}

/// The interpreter a script's first line names (`#!/usr/bin/env node` → `node` found through
/// PATH), when it is a script.
fn interpreter(program: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = std::str::from_utf8(head.get(..n)?).ok()?;
    let line = line.strip_prefix("#!")?.lines().next()?;
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name().and_then(|f| f.to_str()) != Some("env") {
        return Some(first);
    }
    let name = words.find(|w| !w.starts_with('-'))?;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

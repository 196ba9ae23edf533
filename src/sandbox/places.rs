//! The paths a server is told about — in its arguments, in its environment's values, its working
//! directory — become its places, within limits. A path that exists opens itself (a directory)
//! or the directory it is in (a file: programs write beside their files — journals, atomic
//! saves); one that does not exist yet opens the nearest directory that does. Never opened for
//! writing this way, whatever an entry (or a registry, or an imported client file) says: `/`, the
//! home directory itself, a system directory, a shared temporary directory, a credential store or
//! a directory that holds one, a file that runs code at login or on a command (shell startup
//! files, autostart, `~/.local/bin`, git's and the package runners' settings), Gatehouse's own
//! files. Each such path is left out, with why and the one entry line that opens it.
//!
//! The home directory given as a whole (filesystem servers often are) opens entry by entry: its
//! folders and ordinary files for reading and writing, its dot-files and the startup files for
//! reading only, the credential stores not at all. A new file directly in the home directory
//! cannot be created then (Landlock opens a directory whole, `.bashrc` included, or not at all).

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::paths::CREDENTIAL_STORES;

/// Whole trees of the system: nothing beneath them is written from an argument.
const SYSTEM_TREES: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run",
    "/sbin", "/sys", "/usr", "/var",
];

/// Directories shared by everyone or holding others' homes: never opened whole (what is beneath
/// them may be).
const SHARED: &[&str] = &[
    "/", "/tmp", "/home", "/mnt", "/media", "/opt", "/srv", "/root", "/snap", "/nix",
];

/// Under the home directory: files and directories that run code at login, on a command or when
/// a package is fetched — writable only by the person, never from an argument.
pub const STARTUP: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".pam_environment",
    ".config/fish",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".local/share/systemd",
    ".local/bin",
    "bin",
    ".gitconfig",
    ".config/git",
    ".npmrc",
    ".pypirc",
    ".config/pip",
    ".pip",
    ".config/uv",
    ".yarnrc",
];

/// Inside a folder opened for writing: what a client, an editor or git runs code from when the
/// folder is opened as a project (a project's MCP servers, hooks, tasks, settings) — kept
/// read-only, the folder itself opened entry by entry around them so none is renamed aside or
/// made anew at its top. Looked for at the folder's top and one level down.
pub const RUNS_CODE_INSIDE: &[&str] = &[
    ".git/config",
    ".git/hooks",
    ".mcp.json",
    ".vscode",
    ".cursor",
    ".claude",
    ".gemini",
    ".idea",
    ".github/workflows",
];

/// The most entries of a folder looked at for [`RUNS_CODE_INSIDE`] one level down.
const PROJECTS_LOOKED_AT: usize = 256;

/// Where a named path came from, for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The path as written (`~/data/db.sqlite`).
    pub written: String,
    /// `argument 3`, `env MEMORY_FILE_PATH`, `cwd`.
    pub from: String,
}

/// A named path that was not opened for writing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    /// The path as written.
    pub path: String,
    /// Where it was named (`argument 3`, `env MEMORY_FILE_PATH`, `cwd`).
    pub from: String,
    /// Why it was not opened.
    pub why: String,
    /// The entry line that would open it.
    pub allow: String,
    /// A path to name in its place, when no line can open it where it is (a new file directly
    /// in the home directory: the line then opens a folder of its own, made at the next start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rename: Option<String>,
}

impl LeftOut {
    /// One line for the log and `status`.
    pub fn line(&self) -> String {
        format!(
            "{} ({}) was not opened for writing: {}; to allow it, {}",
            self.path,
            self.from,
            self.why,
            self.fix()
        )
    }

    /// What to change in the entry so that it opens: `add LINE to the entry`, or, when it cannot
    /// be opened where it is, `name "NEW" in place of "OLD" and add LINE to the entry`.
    pub fn fix(&self) -> String {
        match &self.rename {
            None => format!("add {} to the entry", self.allow),
            Some(new) => format!(
                "name {} in place of {} and add {} to the entry",
                serde_json::Value::String(new.clone()),
                serde_json::Value::String(self.path.clone()),
                self.allow
            ),
        }
    }
}

/// What the named paths open.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Opened {
    /// Opened for reading and writing.
    pub write: Vec<PathBuf>,
    /// The home directory was named as a whole: its entries open one by one.
    pub home_entries: bool,
    /// Inside what is opened for writing, what runs code later ([`RUNS_CODE_INSIDE`]): readable,
    /// never writable.
    pub protected: Vec<PathBuf>,
    /// Named, not opened for writing, but readable: what the server was told about (a package
    /// folder, a file in a settings folder) — never `/`, a shared folder or the home itself,
    /// and never a credential store (the plan's denials hold).
    pub read: Vec<PathBuf>,
    /// What was not opened, and why.
    pub left_out: Vec<LeftOut>,
}

/// `p` with `.` and `..` taken out lexically (a path that does not exist cannot be
/// canonicalised; `~/.ssh/..` is the home directory).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The real path of `p` when it exists, else its nearest existing ancestor's real path with
/// the rest appended (a symbolic link on the way is followed, so no spelling escapes a rule).
fn resolved(p: &Path) -> PathBuf {
    if let Ok(r) = std::fs::canonicalize(p) {
        return r;
    }
    let p = normalize(p);
    let mut base = p.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(r) = std::fs::canonicalize(&base) {
            let mut out = r;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (base.file_name().map(|n| n.to_owned()), base.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                base = parent.to_owned();
            }
            _ => return p,
        }
    }
}

/// Why `dir` (a real, existing directory or file) may not be opened for writing from an
/// argument, if it may not.
fn refused(dir: &Path, home: Option<&Path>, guarded: &[PathBuf]) -> Option<String> {
    if SHARED.iter().any(|s| dir == Path::new(s)) {
        return Some(if dir == Path::new("/") {
            "it is the root of the filesystem".into()
        } else {
            format!("{} is shared by everyone on this machine", dir.display())
        });
    }
    if SYSTEM_TREES.iter().any(|s| dir.starts_with(s)) {
        return Some("it is a system directory".into());
    }
    if let Some(why) = runs_programs(dir) {
        return Some(why);
    }
    // Inside Gatehouse's own files: refused. A folder that merely holds them (a project folder
    // with a config in it) opens entry by entry around them, as the plan does for every
    // guarded path.
    let guarded_by = |dir: &Path| {
        guarded.iter().any(|g| {
            let g = std::fs::canonicalize(g).unwrap_or_else(|_| g.clone());
            dir.starts_with(&g)
        })
    };
    let Some(h) = home else {
        return guarded_by(dir).then(|| "it is among Gatehouse's own files".into());
    };
    let h = std::fs::canonicalize(h).unwrap_or_else(|_| h.to_owned());
    if dir == h {
        return Some("it is your home directory itself".into());
    }

    for s in CREDENTIAL_STORES {
        let store = h.join(s);
        if dir.starts_with(&store) {
            return Some(format!("it is a credential store (~/{s})"));
        }
        if store.starts_with(dir) {
            return Some(format!("it holds a credential store (~/{s})"));
        }
    }
    for s in STARTUP {
        let f = h.join(s);
        if dir.starts_with(&f) {
            return Some(format!("~/{s} runs code at login or on a command"));
        }
        if f.starts_with(dir) && dir != h {
            return Some(format!(
                "it holds ~/{s}, which runs code at login or on a command"
            ));
        }
    }
    if guarded_by(dir) {
        return Some("it is among Gatehouse's own files".into());
    }
    // A settings folder of the home (`~/.config`, `~/.local`, `~/.cargo`…): programs read
    // what is there when they start, desktop entries and user services included.
    if let Some(first) = dir
        .strip_prefix(&h)
        .ok()
        .and_then(|r| r.components().next())
    {
        let name = first.as_os_str().to_string_lossy();
        if name.starts_with('.') {
            return Some(format!(
                "it is among your settings (~/{name}), which programs read and run when they start"
            ));
        }
    }
    None
}

/// The entry line that opens a left-out path so that it works (and, where no line can open it
/// where it is, the path to name instead): `"sandbox": "off"` for `/`; for a file, its folder
/// (programs write beside their files: journals, temporary copies), where that is not a system
/// tree (the file alone there) — a folder that does not exist yet written with a final `/`, which
/// the next start makes; a new file directly in the home directory (which opens whole or not at
/// all) moves into a folder of its own, named after it.
fn opening_line(
    written: &str,
    target: &Path,
    path: &Path,
    in_home_itself: bool,
) -> (String, Option<String>) {
    let allow = |p: &str| format!("\"sandbox\": {{\"write\": [\"{p}\"]}}");
    if target == Path::new("/") {
        return ("\"sandbox\": \"off\"".to_owned(), None);
    }
    let as_written = Path::new(written);
    if in_home_itself && !path.exists() {
        let stem = as_written
            .file_stem()
            .map(|s| s.to_string_lossy().trim_start_matches('.').to_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "data".to_owned());
        let folder = as_written
            .parent()
            .map_or_else(|| stem.clone(), |p| p.join(&stem).display().to_string());
        let name = as_written
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        return (
            allow(&format!("{folder}/")),
            Some(format!("{folder}/{name}")),
        );
    }
    let system = SYSTEM_TREES
        .iter()
        .any(|s| target.starts_with(s) && *s != "/var");
    let parent_missing = path.parent().is_some_and(|p| !p.exists());
    match as_written.parent().map(|p| p.display().to_string()) {
        Some(folder) if target != path && !system && !folder.is_empty() => {
            let slash = if parent_missing { "/" } else { "" };
            (allow(&format!("{folder}{slash}")), None)
        }
        _ => (allow(written), None),
    }
}

/// Why `dir` holds programs that run later, if it does: a folder on the search path for
/// programs (`PATH`), or a Python package folder (`site-packages`, `dist-packages`).
fn runs_programs(dir: &Path) -> Option<String> {
    let code = dir.components().find(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("site-packages" | "dist-packages")
        )
    });
    if code.is_some() {
        return Some("it is among Python's installed packages, which run when imported".into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .find(|p| dir.starts_with(p) || (p.starts_with(dir) && p != dir && dir != Path::new("/")))
        .map(|p| {
            format!(
                "{} is where programs are found (PATH): what is written there runs in place of a command",
                p.display()
            )
        })
}

/// What in `dir` (opened for writing) runs code later ([`RUNS_CODE_INSIDE`]), at its top and
/// one level down: existing paths only.
pub fn runs_code_inside(dir: &Path) -> Vec<PathBuf> {
    let look = |base: &Path, out: &mut Vec<PathBuf>| {
        for rel in RUNS_CODE_INSIDE {
            let p = base.join(rel);
            if std::fs::symlink_metadata(&p).is_ok() {
                out.push(p);
            }
        }
    };
    let mut out = Vec::new();
    look(dir, &mut out);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten().take(PROJECTS_LOOKED_AT) {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                look(&e.path(), &mut out);
            }
        }
    }
    out
}

/// What `named` open for writing (see the module's rules).
pub fn open(named: &[Named], home: Option<&Path>, guarded: &[PathBuf]) -> Opened {
    let mut out = Opened::default();
    let real_home = home.and_then(|h| std::fs::canonicalize(h).ok());
    for n in named {
        let path = resolved(&super::paths::expand(&n.written, home));
        let allow = |p: &str| format!("\"sandbox\": {{\"write\": [\"{p}\"]}}");
        let mut left = |why: String, (allow, rename): (String, Option<String>)| {
            if !out.left_out.iter().any(|l| l.path == n.written) {
                out.left_out.push(LeftOut {
                    path: n.written.clone(),
                    from: n.from.clone(),
                    why,
                    allow,
                    rename,
                });
            }
        };
        if real_home.as_deref() == Some(path.as_path()) {
            // The home directory as a whole: its entries, one by one.
            out.home_entries = true;
            left(
                "your home directory is opened entry by entry — its folders and files for writing, its settings (dot-files) and startup files for reading only, its credential stores not at all — so nothing new can be created directly in it".into(),
                (allow(&n.written), None),
            );
            continue;
        }
        let (target, exists) = if path.is_dir() {
            (path.clone(), true)
        } else if path.exists() {
            (path.parent().map_or(path.clone(), Path::to_owned), true)
        } else {
            let mut a = path.parent().map(Path::to_owned);
            while let Some(p) = a.clone() {
                if p.exists() {
                    break;
                }
                a = p.parent().map(Path::to_owned);
            }
            (a.unwrap_or_else(|| PathBuf::from("/")), false)
        };
        match refused(&target, home, guarded) {
            None => {
                let inside = runs_code_inside(&target);
                if !inside.is_empty() {
                    let shown: Vec<String> = inside
                        .iter()
                        .filter_map(|p| p.strip_prefix(&target).ok())
                        .map(|p| p.display().to_string())
                        .collect();
                    left(
                        format!(
                            "what it holds that runs code when it is opened as a project ({}) stays read-only, and the folder opens entry by entry around it, so nothing new can be made directly in it",
                            shown.join(", ")
                        ),
                        (allow(&n.written), None),
                    );
                    out.protected.extend(inside);
                }
                if !out.write.contains(&target) {
                    out.write.push(target);
                }
            }
            Some(why) if exists && path.is_file() && refused(&path, home, guarded).is_none() => {
                // A file in a folder that may not be opened whole: the file alone.
                let _ = why;
                if !out.write.contains(&path) {
                    out.write.push(path);
                }
            }
            Some(why) => {
                let wide = SHARED.iter().any(|s| target == Path::new(s))
                    || real_home.as_deref() == Some(target.as_path());
                let seen = if exists { &path } else { &target };
                if !wide && !out.read.contains(seen) {
                    out.read.push(seen.clone());
                }
                // A file's own reason first (`~/.bashrc` runs code at login), else its folder's.
                let own = exists.then(|| refused(&path, home, guarded)).flatten();
                let why = if let Some(own) = own {
                    own
                } else if exists || target == path {
                    why
                } else {
                    format!(
                        "it does not exist yet, and the nearest folder that does, {}, may not be opened ({why})",
                        target.display()
                    )
                };
                let home_itself = real_home.as_deref() == path.parent();
                left(why, opening_line(&n.written, &target, &path, home_itself));
            }
        }
    }
    out
}

/// The paths a stdio entry names: absolute or `~/` paths among its arguments (`--flag=/x` too),
/// among the plain values of its environment (a secret's value is never looked at), and its
/// working directory. Search-path variables (`PATH`, `PYTHONPATH`, …) are not places.
pub fn named(args: &[String], env: &[(String, String)], cwd: Option<&str>) -> Vec<Named> {
    let pathish =
        |v: &str| (v.starts_with('/') || v.starts_with("~/") || v == "~") && !v.contains(':');
    let mut out: Vec<Named> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let v = match a.split_once('=') {
            Some((flag, value)) if flag.starts_with('-') => value,
            _ => a.as_str(),
        };
        if pathish(v) {
            out.push(Named {
                written: v.to_owned(),
                from: format!("argument {}", i + 1),
            });
        }
    }
    const SEARCH_PATHS: &[&str] = &[
        "PATH",
        "HOME",
        "SHELL",
        "TMPDIR",
        "TMP",
        "TEMP",
        "PWD",
        "OLDPWD",
        "LD_LIBRARY_PATH",
        "NODE_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "GEM_PATH",
        "PERL5LIB",
        "CLASSPATH",
        "MANPATH",
        "INFOPATH",
        "XDG_DATA_DIRS",
        "XDG_CONFIG_DIRS",
    ];
    for (k, v) in env {
        if pathish(v) && !SEARCH_PATHS.contains(&k.as_str()) {
            out.push(Named {
                written: v.clone(),
                from: format!("env {k}"),
            });
        }
    }
    if let Some(c) = cwd {
        out.push(Named {
            written: c.to_owned(),
            from: "cwd".into(),
        });
    }
    out
}

#[cfg(test)]
#[path = "places_tests.rs"]
mod tests;

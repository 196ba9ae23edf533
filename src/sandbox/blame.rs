//! Saying when the sandbox may have caused a failure, with the path and the one entry line that
//! allows it. The kernel does not tell an unprivileged process what Landlock denied (its audit
//! records go to the system's audit log), and seccomp's user notification sees a call before
//! Landlock decides it, not its result — so Gatehouse reads what the server said (its stderr, an
//! error it returned, how it exited) for the words a refusal leaves (`EACCES`, "permission
//! denied", "unable to open database file", `PermissionError`, …) and the paths in it, and checks
//! each path against the plan it built: a path the plan does not open is named; a path it does
//! open clears the sandbox. What it cannot see: a refusal a server swallows, or reports without
//! any of those words — `gatehouse test ID --compare` runs it confined and unconfined and says
//! the difference.

use std::path::{Path, PathBuf};

use super::Confined;

/// Words a refused system call leaves in what a program says.
const REFUSALS: &[&str] = &[
    "permission denied",
    "eacces",
    "eperm",
    "operation not permitted",
    "read-only file system",
    "erofs",
    "errno 13",
    "permissionerror",
    "unable to open database file",
    "access denied",
    "access is denied",
    "not permitted",
];

/// Whether `text` says the system refused something.
pub fn refusal(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    REFUSALS.iter().any(|w| lower.contains(w))
}

/// The paths `text` names (`/x`, `~/x`), in order — not the program's own code that a stack
/// trace names (`…/site-packages/…`, `…/node_modules/…`, `server.py`, `index.js:10:5`).
fn paths(text: &str) -> Vec<String> {
    let code = |w: &str| {
        let bare = w.trim_end_matches(|c: char| c.is_ascii_digit() || c == ':');
        w.contains("/site-packages/")
            || w.contains("/node_modules/")
            || w.contains("/lib/python")
            || [
                ".py", ".pyc", ".js", ".mjs", ".cjs", ".ts", ".so", ".node", ".rb",
            ]
            .iter()
            .any(|e| bare.ends_with(e))
    };
    // A stack trace's frames name code, not what was refused: Python's `File "…"`, Node's
    // `at …`. Lines, and the ` | `-joined tails of an error text, are looked at one by one.
    let said: Vec<&str> = text
        .lines()
        .flat_map(|l| l.split(" | "))
        .filter(|l| {
            let t = l.trim_start();
            !t.starts_with("File \"") && !t.starts_with("at ")
        })
        .collect();
    said.join("\n")
        .split(|c: char| c.is_whitespace() || "'\"`,()[]{}<>=".contains(c))
        .map(|w| w.trim_end_matches([':', ';', '.', '!']))
        .filter(|w| (w.starts_with('/') && w.len() > 1) || w.starts_with("~/"))
        .filter(|w| !code(w))
        .map(str::to_owned)
        .collect()
}

/// `p` as the kernel would find it: its real path, or (not there yet) its nearest existing
/// ancestor's with the rest appended.
fn real(p: &Path) -> PathBuf {
    let mut base = super::places::normalize(p);
    let mut rest = Vec::new();
    loop {
        if let Ok(r) = std::fs::canonicalize(&base) {
            return rest.iter().rev().fold(r, |acc, part| acc.join(part));
        }
        match (base.file_name().map(|n| n.to_owned()), base.parent()) {
            (Some(n), Some(parent)) => {
                rest.push(n);
                base = parent.to_owned();
            }
            _ => return base,
        }
    }
}

/// `p` as a person would write it in an entry (`~/…` under the home directory).
fn written(p: &Path, home: Option<&Path>) -> String {
    match home.and_then(|h| p.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".into(),
        Some(rest) => format!("~/{}", rest.display()),
        None => p.display().to_string(),
    }
}

/// What to open so that a refused path works: a folder itself; for a file (or a path not there
/// yet), the folder it is in — programs write beside their files (a temporary copy renamed over
/// it, a journal) — unless that folder is `/`, the home directory or a system tree, where the
/// file alone is named.
fn to_open(p: &Path, home: Option<&Path>) -> PathBuf {
    const SYSTEM: &[&str] = &[
        "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/proc", "/sys",
        "/dev", "/run",
    ];
    if p.is_dir() {
        return p.to_owned();
    }
    match p.parent() {
        Some(dir)
            if dir != Path::new("/")
                && home.is_none_or(|h| real(h) != dir)
                && !SYSTEM.iter().any(|s| dir.starts_with(s)) =>
        {
            dir.to_owned()
        }
        _ => p.to_owned(),
    }
}

/// The other way out, where the line given is not already it.
fn or_off(l: &super::places::LeftOut) -> &'static str {
    if l.allow == "\"sandbox\": \"off\"" {
        ""
    } else {
        ", or \"sandbox\": \"off\""
    }
}

/// When `text` (what a confined server said, or how it failed) may be the sandbox's doing: a
/// sentence that contains the word "sandbox", the path when known and the one entry line that
/// allows it. `None` when nothing points at the sandbox (no refusal, or every path it names is
/// open to the server).
pub fn blame(text: &str, c: &Confined, id: &str) -> Option<String> {
    let home = c.home.as_deref();
    let refused = refusal(text);
    let named = paths(text);
    // A path the entry named that was left out, named in the text (itself, or a file in it
    // unless it is `/` or the home directory, which every path is under).
    let root_or_home = |p: &Path| p == Path::new("/") || home.is_some_and(|h| real(h) == p);
    let left = c.left_out.iter().find(|l| {
        let target = real(&super::paths::expand(&l.path, home));
        named.iter().any(|n| {
            let p = real(&super::paths::expand(n, home));
            p == target || (p.parent() == Some(target.as_path()) && !root_or_home(&target))
        }) || (!root_or_home(&target) && l.path.len() > 2 && text.contains(&l.path))
    });
    if let Some(l) = left.filter(|_| refused || !named.is_empty()) {
        return Some(format!(
            "the sandbox may have caused this: {} ({}) was not opened for writing — {}; to allow it, {}{}",
            l.path,
            l.from,
            l.why,
            l.fix(),
            or_off(l)
        ));
    }
    if !refused {
        return None;
    }
    let closed = named.iter().find_map(|n| {
        let p = real(&super::paths::expand(n, home));
        (!c.plan.writes(&p)).then_some((p, c.plan.reads(&super::paths::expand(n, home))))
    });
    match closed {
        Some((p, readable)) => {
            let what = if readable { "write" } else { "read or write" };
            let line = written(&p, home);
            let open = written(&to_open(&p, home), home);
            Some(format!(
                "the sandbox may have caused this: it does not let the server {what} {line}; to allow it, add \"sandbox\": {{\"write\": [\"{open}\"]}} to the entry (or \"sandbox\": \"off\"), or see `gatehouse test {id} --compare`"
            ))
        }
        None if !named.is_empty() => None,
        None => match c.left_out.first() {
            Some(l) => Some(format!(
                "the sandbox may have caused this: it left out {} ({}: {}); to allow it, {}{}",
                l.path,
                l.from,
                l.why,
                l.fix(),
                or_off(l)
            )),
            None => Some(format!(
                "the sandbox ({}) may have caused this refusal (no path was named); `gatehouse test {id} --compare` runs it confined and unconfined and says the difference, and \"sandbox\": {{\"write\": [PATH]}} in the entry opens a path",
                c.summary
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::places::LeftOut;
    use crate::sandbox::plan::Plan;

    fn confined(write: &Path, left_out: Vec<LeftOut>) -> Confined {
        Confined {
            plan: Plan {
                read: vec![PathBuf::from("/")],
                write: vec![write.to_owned()],
                network: true,
                left_out: 0,
                list: Vec::new(),
                egress_port: None,
            },
            left_out,
            summary: "default".into(),
            home: None,
            launched_ms: 0,
            refused: None,
        }
    }

    /// A refusal naming a path the plan does not open is blamed on the sandbox, with the path
    /// and the line that allows it; one naming a path the plan opens is not; no refusal, no
    /// blame.
    #[test]
    fn a_refusal_outside_the_plan_names_the_path_and_the_fix() {
        let own = tempfile::tempdir().unwrap();
        let own_real = std::fs::canonicalize(own.path()).unwrap();
        let c = confined(&own_real, Vec::new());
        let b = blame(
            "Error: EACCES: permission denied, open '/etc/memory.json'",
            &c,
            "memory",
        )
        .unwrap();
        assert!(
            b.contains("sandbox") && b.contains("/etc/memory.json"),
            "{b}"
        );
        assert!(
            b.contains("\"sandbox\": {\"write\": [\"/etc/memory.json\"]}"),
            "{b}"
        );
        assert!(b.contains("gatehouse test memory --compare"), "{b}");
        let inside = format!("EACCES: permission denied, open '{}/x'", own_real.display());
        assert_eq!(blame(&inside, &c, "memory"), None);
        assert_eq!(blame("listening on stdio", &c, "memory"), None);
    }

    /// A refusal without a path names what the entry asked for and was left out; without any,
    /// it still says the sandbox may be the cause and how to find out.
    #[test]
    fn a_refusal_without_a_path_names_what_was_left_out() {
        let own = tempfile::tempdir().unwrap();
        let left = LeftOut {
            path: "~/new.db".into(),
            from: "argument 2".into(),
            why: "it is your home directory itself".into(),
            allow: "\"sandbox\": {\"write\": [\"~/new.db\"]}".into(),
            rename: None,
        };
        let c = confined(own.path(), vec![left]);
        let b = blame(
            "sqlite3.OperationalError: unable to open database file",
            &c,
            "db",
        )
        .unwrap();
        assert!(
            b.contains("sandbox") && b.contains("~/new.db") && b.contains("argument 2"),
            "{b}"
        );
        // `/` as a root: the line is `"sandbox": "off"`, said once.
        let root = LeftOut {
            path: "/".into(),
            from: "argument 1".into(),
            why: "it is the root of the filesystem".into(),
            allow: "\"sandbox\": \"off\"".into(),
            rename: None,
        };
        let c = confined(own.path(), vec![root]);
        let b = blame("PermissionError: [Errno 13] Permission denied", &c, "fs").unwrap();
        assert_eq!(b.matches("\"sandbox\": \"off\"").count(), 1, "{b}");
        let c = confined(own.path(), Vec::new());
        let b = blame("PermissionError: [Errno 13]", &c, "db").unwrap();
        assert!(
            b.contains("sandbox") && b.contains("gatehouse test db --compare"),
            "{b}"
        );
    }
}

//! A PyPI package installed into the store by uv, as Gatehouse directs it: a virtual
//! environment of the artifact's own, the package and its dependencies resolved from the index
//! Gatehouse checked the pin against, as they were at the cool-down's date (`--exclude-newer`),
//! with a hash for every file (`--generate-hashes`, then `--require-hashes`); then checked: the
//! package's version is the pin's and the pin's sha256 is among its files' hashes.

use std::path::{Path, PathBuf};

use super::{rfc3339, run, tool, Artifact};
use crate::registry::pin::Spec;

/// Installs `spec` at `version` into `staging` (blocking).
pub(super) fn install(
    root: &Path,
    staging: &Path,
    spec: &Spec,
    version: &str,
    integrity: &str,
    before_ms: Option<u64>,
) -> Result<Artifact, String> {
    let uv = tool("uv", "uvx")
        .ok_or_else(|| "cannot install it: uv is not on PATH (it comes with uvx)".to_owned())?;
    let index = format!(
        "{}/simple",
        crate::registry::index::base(crate::registry::pin::Index::Pypi)
    );
    let cache = root.join("uv-cache");
    let base = |cmd: &mut std::process::Command| {
        cmd.current_dir(staging)
            .env("UV_NO_CONFIG", "1")
            .env_remove("UV_INDEX_URL")
            .env_remove("UV_EXTRA_INDEX_URL")
            .env_remove("UV_INDEX")
            .env_remove("PIP_INDEX_URL")
            .arg(format!("--cache-dir={}", cache.display()));
    };
    let wanted = staging.join("wanted.in");
    std::fs::write(&wanted, format!("{}=={version}\n", spec.name)).map_err(|e| e.to_string())?;
    let lock = staging.join("requirements.lock");
    let mut compile = std::process::Command::new(&uv);
    base(&mut compile);
    compile
        .args([
            "pip",
            "compile",
            "--quiet",
            "--generate-hashes",
            "--no-header",
        ])
        .arg(format!("--index-url={index}"))
        .arg("--output-file")
        .arg(&lock)
        .arg(&wanted);
    if let Some(ms) = before_ms {
        compile.arg(format!("--exclude-newer={}", rfc3339(ms)));
    }
    run(compile, "uv pip compile")?;
    let locked = std::fs::read_to_string(&lock).map_err(|e| e.to_string())?;
    let hashes = hashes_of(&locked, &spec.name);
    let want = integrity.strip_prefix("sha256:").unwrap_or(integrity);
    if !hashes.iter().any(|h| h == want) {
        return Err(format!(
            "the index serves no file of {} whose sha256 is the pinned {integrity}: refused",
            spec.pinned(version)
        ));
    }
    let venv = staging.join("venv");
    let mut make = std::process::Command::new(&uv);
    base(&mut make);
    make.args(["venv", "--quiet"]).arg(&venv);
    run(make, "uv venv")?;
    let mut sync = std::process::Command::new(&uv);
    base(&mut sync);
    sync.args(["pip", "sync", "--quiet", "--require-hashes"])
        .arg(format!("--index-url={index}"))
        .arg("--python")
        .arg(venv.join("bin/python"))
        .arg(&lock);
    run(sync, "uv pip sync")?;
    crate::private::repair_tree(staging);
    let packages = tree(staging);
    let program = program(&venv, spec)?;
    Ok(Artifact {
        store: staging.to_owned(),
        program,
        index: "pypi".into(),
        name: spec.name.clone(),
        version: version.to_owned(),
        integrity: integrity.to_owned(),
        locked: !packages.is_empty() && lines_hashed(&locked),
        packages: packages.len(),
        installed_ms: 0,
    })
}

/// The program uvx would run: the console script named as the package.
fn program(venv: &Path, spec: &Spec) -> Result<PathBuf, String> {
    let p = venv.join("bin").join(&spec.name);
    if p.is_file() {
        return Ok(p);
    }
    Err(format!(
        "{} installs no program named {} (uvx runs the one named as the package)",
        spec.name, spec.name
    ))
}

/// The sha256 hashes a lock gives `name`'s files.
fn hashes_of(lock: &str, name: &str) -> Vec<String> {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    let mut out = Vec::new();
    let mut mine = false;
    for line in lock.lines() {
        let t = line.trim();
        if !line.starts_with(' ') && !t.is_empty() && !t.starts_with('#') {
            mine = t
                .split(['=', ' ', '['])
                .next()
                .is_some_and(|n| norm(n) == norm(name));
        }
        if mine {
            for part in t.split_whitespace() {
                if let Some(h) = part.strip_prefix("--hash=sha256:") {
                    out.push(h.to_owned());
                }
            }
        }
    }
    out
}

/// Whether every requirement of a lock carries a hash.
fn lines_hashed(lock: &str) -> bool {
    let reqs: Vec<&str> = lock
        .split('\n')
        .filter(|l| !l.starts_with(' ') && !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    !reqs.is_empty() && lock.split("\n").filter(|l| l.contains("--hash=")).count() >= reqs.len()
}

/// The packages of an installed tree and their versions (its lock).
pub(super) fn tree(dir: &Path) -> Vec<(String, String)> {
    let lock = std::fs::read_to_string(dir.join("requirements.lock")).unwrap_or_default();
    let mut out: Vec<(String, String)> = lock
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#'))
        .filter_map(|l| {
            let (name, rest) = l.split_once("==")?;
            let version = rest.split([' ', '\\', ';']).next()?.trim();
            Some((name.trim().to_owned(), version.to_owned()))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = "anyio==4.6.0 \\\n    --hash=sha256:aaa \\\n    --hash=sha256:bbb\n    # via mcp-server-time\nmcp-server-time==2026.10.19 \\\n    --hash=sha256:ccc\ntzdata==2025.1 ; sys_platform == 'win32' \\\n    --hash=sha256:ddd\n";

    /// The hashes a lock gives a package (its name normalised as PyPI does), and every
    /// requirement of the lock with its version.
    #[test]
    fn a_locks_hashes_and_tree_are_read() {
        assert_eq!(hashes_of(LOCK, "mcp_server.time"), ["ccc"]);
        assert_eq!(hashes_of(LOCK, "anyio"), ["aaa", "bbb"]);
        assert!(hashes_of(LOCK, "other").is_empty());
        assert!(lines_hashed(LOCK));
        assert!(!lines_hashed(
            "anyio==4.6.0\nmcp==1.0 \\\n    --hash=sha256:x\n"
        ));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("requirements.lock"), LOCK).unwrap();
        assert_eq!(
            tree(dir.path()),
            [
                ("anyio".to_owned(), "4.6.0".to_owned()),
                ("mcp-server-time".to_owned(), "2026.10.19".to_owned()),
                ("tzdata".to_owned(), "2025.1".to_owned())
            ]
        );
    }
}

//! Gatehouse installs what runs: a pinned package (`npx pkg@1.4.2`, `uvx pkg==1.4.2`) is
//! fetched by Gatehouse itself — the package and its whole dependency tree, resolved under the
//! cool-down, checked against the pin and locked with an integrity for every package — into a
//! store under Gatehouse's data directory (`DATA/store`), which no confined server can write
//! (the sandbox guards the data directory; a server reads its own artifact only). The server
//! then runs from the store, offline: a start never downloads, and a runner's shared cache,
//! which any program may rewrite, is never what runs. Installing is an explicit step — adding or
//! saving an entry (the CLI, the app's form), `gatehouse pin ID`, `pin ID --update --yes` —
//! never a start.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::pin::{Index, Spec};
use crate::config::Pin;

mod npm;
mod pypi;

/// The file each artifact's folder holds: what was installed and checked.
const MARKER: &str = "gatehouse-artifact.json";

/// How long an install may take, whole (a large dependency tree on a slow link).
pub const INSTALL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);

/// The most an installer's output kept for an error message.
const MAX_OUTPUT: usize = 16 * 1024;

/// An artifact in the store, as its marker records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Artifact {
    /// Its folder in the store.
    pub store: PathBuf,
    /// What runs: the package's program in the folder.
    pub program: PathBuf,
    /// The package, `npm` or `pypi`.
    pub index: String,
    /// The package's name.
    pub name: String,
    /// Its exact version.
    pub version: String,
    /// The integrity the pin names, which the installed package was checked against.
    pub integrity: String,
    /// Packages in its tree (itself included).
    pub packages: usize,
    /// Every package in the tree has its integrity in the lock.
    pub locked: bool,
    /// When it was installed (ms since the epoch).
    pub installed_ms: u64,
}

/// One package that would change in a tree, for `pin --update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The package.
    pub name: String,
    /// Its version now (`None`: new in the tree).
    pub from: Option<String>,
    /// Its version after (`None`: gone from the tree).
    pub to: Option<String>,
}

/// Gatehouse's store of installed artifacts.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The store of the data directory `data`.
    pub fn at(data: &Path) -> Store {
        Store {
            root: data.join("store"),
        }
    }

    /// The store in folder `root` (a running hub's, as it names it).
    pub fn at_root(root: PathBuf) -> Store {
        Store { root }
    }

    /// Its folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What `status` says of `t`'s artifact, when `t` is a pinned runner entry.
    pub fn report(
        &self,
        t: &crate::config::StdioTransport,
    ) -> Option<crate::supervisor::status::ArtifactReport> {
        let pin = t.pin.as_ref()?;
        let spec = super::pin::spec(&t.command, &t.args)?;
        Some(match self.installed(&spec, pin) {
            Ok(a) => crate::supervisor::status::ArtifactReport {
                store: a.store,
                verified: true,
                packages: a.packages,
                locked: a.locked,
            },
            Err(_) => crate::supervisor::status::ArtifactReport {
                store: self.dir(&spec, pin),
                verified: false,
                packages: 0,
                locked: false,
            },
        })
    }

    /// Where `spec` pinned as `pin` lives: one folder per package, version and integrity.
    pub fn dir(&self, spec: &Spec, pin: &Pin) -> PathBuf {
        use sha2::{Digest, Sha256};
        let kind = kind(spec.index);
        let safe: String = spec
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '+'
                }
            })
            .collect();
        let id = Sha256::digest(format!(
            "{}\0{}\0{:?}",
            spec.name, pin.version, pin.integrity
        ));
        let short: String = id.iter().take(6).map(|b| format!("{b:02x}")).collect();
        self.root
            .join(kind)
            .join(format!("{safe}@{}-{short}", pin.version))
    }

    /// The installed artifact of `spec` as `pin` says, checked against the pin: the same
    /// package, version and integrity, its program present. What is not there, or not that,
    /// is refused with the step that installs it.
    pub fn installed(&self, spec: &Spec, pin: &Pin) -> Result<Artifact, String> {
        let dir = self.dir(spec, pin);
        let pinned = spec.pinned(&pin.version);
        let failed = std::fs::read_to_string(failure_note(&dir))
            .ok()
            .map(|why| format!("; its last install failed: {}", why.trim()))
            .unwrap_or_default();
        let missing = || {
            format!(
                "its pinned artifact {pinned} is not installed in Gatehouse's store (a start never downloads){failed}; install it with `gatehouse pin ID`, or save the server again in the app"
            )
        };
        let text = std::fs::read_to_string(dir.join(MARKER)).map_err(|_| missing())?;
        let mut a: Artifact = serde_json::from_str(&text).map_err(|_| missing())?;
        let want = pin.integrity.as_deref().unwrap_or_default();
        if a.name != spec.name || a.version != pin.version || a.integrity != want {
            return Err(format!(
                "the store's artifact for {pinned} is not the one pinned: install it again with `gatehouse pin ID`"
            ));
        }
        // Where the store is reached from may differ (a link to the data directory): the
        // program is the one in this folder, at the place the record gives within it.
        let within = a.program.strip_prefix(&a.store).map(Path::to_owned);
        let Ok(within) = within else {
            return Err(missing());
        };
        a.program = dir.join(within);
        a.store = dir;
        if !a.program.is_file() {
            return Err(missing());
        }
        Ok(a)
    }

    /// Installs `spec` at `pin` into the store (blocking; at most [`INSTALL_DEADLINE`]): the
    /// package from the index Gatehouse checked the pin against, its dependencies resolved as
    /// they were `min_age_days` ago (or when the package itself was published, if later), no
    /// install script run; then the installed package checked against the pin's version and
    /// integrity, its tree counted and its lock read. Done in a folder of its own, moved into
    /// place only when checked: a failed install leaves the store as it was.
    pub fn install(
        &self,
        spec: &Spec,
        pin: &Pin,
        before_ms: Option<u64>,
    ) -> Result<Artifact, String> {
        let Some(integrity) = pin.integrity.clone() else {
            return Err(format!(
                "its pin of {} records no integrity, so what an index serves cannot be checked against it: pin it again with `gatehouse pin ID`",
                spec.pinned(&pin.version)
            ));
        };
        crate::private::create_dir(&self.root)
            .map_err(|e| format!("cannot make the store: {e}"))?;
        let staging = self.root.join(format!(".staging-{}", random_id()));
        crate::private::create_dir(&staging).map_err(|e| format!("cannot make the store: {e}"))?;
        let install = match spec.index {
            Index::Npm => npm::install,
            Index::Pypi => pypi::install,
        };
        let done = install(
            &self.root,
            &staging,
            spec,
            &pin.version,
            &integrity,
            before_ms,
        );
        let result = done.and_then(|mut a| {
            let dir = self.dir(spec, pin);
            let _ = remove_tree(&dir);
            if let Some(parent) = dir.parent() {
                crate::private::create_dir(parent).map_err(|e| e.to_string())?;
            }
            std::fs::rename(&staging, &dir)
                .map_err(|e| format!("cannot move the artifact into the store: {e}"))?;
            a.program = dir.join(a.program.strip_prefix(&staging).unwrap_or(&a.program));
            a.store = dir.clone();
            a.integrity = integrity.clone();
            a.installed_ms = crate::logs::now_ms();
            let text = serde_json::to_string_pretty(&a).map_err(|e| e.to_string())?;
            std::fs::write(dir.join(MARKER), text.as_bytes())
                .map_err(|e| format!("cannot write the artifact's record: {e}"))?;
            Ok(a)
        });
        let _ = remove_tree(&staging);
        let note = failure_note(&self.dir(spec, pin));
        match &result {
            Ok(_) => {
                let _ = std::fs::remove_file(&note);
            }
            Err(why) => {
                let _ = std::fs::write(&note, crate::text::cut(why, 2000));
            }
        }
        result
    }

    /// The packages of `spec`'s tree that would change from `from` to `to` (each pinned), by
    /// resolving the new tree in a scratch folder of the store (blocking): what `pin --update`
    /// shows before anything is written.
    pub fn changes(
        &self,
        spec: &Spec,
        from: &Pin,
        to: &Pin,
        before_ms: Option<u64>,
    ) -> Result<Vec<Change>, String> {
        let old = self
            .installed(spec, from)
            .ok()
            .map(|a| tree(spec.index, &a.store))
            .unwrap_or_default();
        let scratch = Store {
            root: self.root.join(format!(".preview-{}", random_id())),
        };
        let new = scratch
            .install(spec, to, before_ms)
            .map(|a| tree(spec.index, &a.store));
        let _ = remove_tree(&scratch.root);
        let new = new?;
        let mut out = Vec::new();
        for (name, v) in &new {
            match old.iter().find(|(n, _)| n == name) {
                Some((_, o)) if o == v => {}
                Some((_, o)) => out.push(Change {
                    name: name.clone(),
                    from: Some(o.clone()),
                    to: Some(v.clone()),
                }),
                None => out.push(Change {
                    name: name.clone(),
                    from: None,
                    to: Some(v.clone()),
                }),
            }
        }
        for (name, o) in &old {
            if !new.iter().any(|(n, _)| n == name) {
                out.push(Change {
                    name: name.clone(),
                    from: Some(o.clone()),
                    to: None,
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

/// Where the reason of an artifact's last failed install is kept, beside its folder.
fn failure_note(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_owned();
    name.push(".failed");
    dir.with_file_name(name)
}

/// The cool-down's date for installing `spec` at `version`: `min_age_days` before now, or
/// when that version was published if it is younger (the person chose it: its dependencies
/// are then those of its own day). `None` without a cool-down.
pub async fn cooldown_before(
    spec: &Spec,
    version: &str,
    min_age_days: u64,
) -> Result<Option<u64>, String> {
    if min_age_days == 0 {
        return Ok(None);
    }
    let releases = super::index::releases(spec.index, &spec.name).await?;
    let published = releases.get(version).and_then(|r| r.published_ms);
    let edge = crate::logs::now_ms().saturating_sub(min_age_days * 24 * 3600 * 1000);
    Ok(Some(published.map_or(edge, |p| edge.max(p + 60_000))))
}

/// The packages of an installed tree and their versions, from its lock.
fn tree(index: Index, dir: &Path) -> Vec<(String, String)> {
    match index {
        Index::Npm => npm::tree(dir),
        Index::Pypi => pypi::tree(dir),
    }
}

fn kind(index: Index) -> &'static str {
    match index {
        Index::Npm => "npm",
        Index::Pypi => "pypi",
    }
}

fn random_id() -> String {
    let mut b = [0u8; 6];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn remove_tree(p: &Path) -> std::io::Result<()> {
    if p.exists() {
        std::fs::remove_dir_all(p)
    } else {
        Ok(())
    }
}

/// Runs an installer (`npm`, `uv`) to its end within [`INSTALL_DEADLINE`], its output bounded;
/// a failure says what it printed last.
fn run(mut cmd: std::process::Command, what: &str) -> Result<(), String> {
    use std::io::Read;
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {what}: {e}"))?;
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        return Err(format!("cannot read what {what} prints"));
    };
    let read = |r: &mut dyn Read| {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            if buf.len() > MAX_OUTPUT {
                buf.drain(..buf.len() - MAX_OUTPUT);
            }
        }
        buf
    };
    let errs = std::thread::spawn(move || read(&mut err));
    let outs = std::thread::spawn(move || read(&mut out));
    let deadline = std::time::Instant::now() + INSTALL_DEADLINE;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let said = [
        errs.join().unwrap_or_default(),
        outs.join().unwrap_or_default(),
    ]
    .concat();
    let said = crate::text::cut(String::from_utf8_lossy(&said).trim(), 2000);
    match status {
        Some(s) if s.success() => Ok(()),
        Some(_) => Err(format!(
            "{what} failed: {}",
            crate::text::reveal_lines(&said)
        )),
        None => Err(format!(
            "{what} did not finish within {} s",
            INSTALL_DEADLINE.as_secs()
        )),
    }
}

/// A program found through PATH (`npm`, `uv`), preferring the folder of `beside` (the entry's
/// runner: `/opt/node/bin/npx` → `/opt/node/bin/npm`).
fn tool(name: &str, beside: &str) -> Option<PathBuf> {
    let near = Path::new(beside)
        .parent()
        .filter(|p| !p.as_os_str().is_empty());
    if let Some(p) = near.map(|d| d.join(name)).filter(|p| p.is_file()) {
        return Some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `ms` since the epoch as RFC 3339 (what `npm --before` and `uv --exclude-newer` take).
fn rfc3339(ms: u64) -> String {
    jiff::Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> Spec {
        Spec {
            index: Index::Npm,
            at: 1,
            name: name.into(),
            version: Some("1.0.0".into()),
        }
    }

    /// Each package, version and integrity has a folder of its own, its name made safe.
    #[test]
    fn each_pin_has_a_folder_of_its_own() {
        let s = Store::at(Path::new("/data"));
        let pin = |i: &str| Pin {
            version: "1.0.0".into(),
            integrity: Some(i.into()),
        };
        let a = s.dir(&spec("@scope/pkg"), &pin("sha512-a"));
        assert!(a.starts_with("/data/store/npm"), "{}", a.display());
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("+scope+pkg@1.0.0-"), "{name}");
        assert_ne!(a, s.dir(&spec("@scope/pkg"), &pin("sha512-b")));
        assert_ne!(a, s.dir(&spec("@scope/pkh"), &pin("sha512-a")));
    }

    /// An artifact that is not there, or not the pinned one, is refused with the step that
    /// installs it — never run.
    #[test]
    fn an_artifact_not_installed_or_not_pinned_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::at(dir.path());
        let p = Pin {
            version: "1.0.0".into(),
            integrity: Some("sha512-a".into()),
        };
        let e = s.installed(&spec("pkg"), &p).unwrap_err();
        assert!(e.contains("gatehouse pin ID"), "{e}");
        let d = s.dir(&spec("pkg"), &p);
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::write(d.join("bin/run"), "x").unwrap();
        let a = Artifact {
            store: d.clone(),
            program: d.join("bin/run"),
            index: "npm".into(),
            name: "pkg".into(),
            version: "1.0.0".into(),
            integrity: "sha512-other".into(),
            packages: 1,
            locked: true,
            installed_ms: 0,
        };
        std::fs::write(d.join(MARKER), serde_json::to_string(&a).unwrap()).unwrap();
        assert!(s
            .installed(&spec("pkg"), &p)
            .unwrap_err()
            .contains("not the one pinned"));
        let a = Artifact {
            integrity: "sha512-a".into(),
            ..a
        };
        std::fs::write(d.join(MARKER), serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(
            s.installed(&spec("pkg"), &p).unwrap().program,
            d.join("bin/run")
        );
    }
}

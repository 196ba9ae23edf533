//! A stdio server's sandbox, made ready before it is spawned: its own places (a data and a
//! private temp directory), the variables that point at them, the runner caches it needs, and
//! the kernel's confinement built from its plan (applied in the child by `process::spawn`).

use std::path::{Path, PathBuf};

use crate::config::{expand_tilde, EnvValue, StdioTransport};
use crate::sandbox::plan::{self, Places};
use crate::sandbox::{places, Confined};

/// The variable naming the data directory Gatehouse gives a confined server.
pub const DATA_VAR: &str = "GATEHOUSE_SERVER_DATA";

/// What no confined server may read, and where servers' own places are made.
#[derive(Debug, Clone, Default)]
pub struct SandboxRoots {
    /// Gatehouse's own files and directories (its data directory, its config file and backup).
    pub guarded: Vec<PathBuf>,
    /// `DATA/servers`: each server's places are made under `ID/`.
    pub servers: Option<PathBuf>,
}

/// The confinement to apply in the child (`None`: it runs unconfined, as its entry or the
/// kernel decided).
#[cfg(target_os = "linux")]
pub type Confinement = crate::sandbox::linux::Confinement;
/// Nothing confines a server on this platform yet.
#[cfg(not(target_os = "linux"))]
pub struct Confinement;

/// Package runners and the caches they write.
fn runner_caches(program: &str) -> &'static [&'static str] {
    let base = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    match base {
        "npx" | "npm" | "node" | "pnpm" | "pnpx" | "yarn" => &[".npm"],
        "uvx" | "uv" => &[".cache/uv", ".local/share/uv"],
        "pip" | "pipx" | "python" | "python3" => &[".cache/pip"],
        "bunx" | "bun" => &[".bun"],
        _ => &[],
    }
}

fn make_private(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot make the sandbox's directory {}: {e}", dir.display()))
}

/// `program` as PATH finds it.
fn resolve(program: &str, env: &[(String, String)]) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    let path = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v)?;
    std::env::split_paths(path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// A confined launch made ready: the confinement to apply in the child and what it opened and
/// left out (kept for status and for saying when the sandbox may have caused a failure).
pub struct Prepared {
    /// Applied in the child between fork and exec.
    pub confinement: Confinement,
    /// The plan and what it left out.
    pub confined: Confined,
}

/// Prepares `t`'s sandbox for server `id`: makes its places, points `TMPDIR` and
/// [`DATA_VAR`] at them in `env`, and builds the confinement. Blocking (it opens every path of
/// the plan): call it off the async workers. `Ok(None)` when the entry turns the sandbox off or
/// the kernel has none; `notes` then say so when it matters, and name every path the entry
/// names that was left out.
pub fn prepare(
    t: &StdioTransport,
    id: &str,
    roots: &SandboxRoots,
    env: &mut Vec<(String, String)>,
    notes: &mut Vec<String>,
) -> Result<Option<Prepared>, String> {
    if !t.sandbox.confines() {
        return Ok(None);
    }
    if crate::sandbox::mechanism().is_none() {
        notes.push(format!("sandbox {}", crate::sandbox::unavailable()));
        return Ok(None);
    }
    let Some(servers) = &roots.servers else {
        return Ok(None);
    };
    let home = dirs::home_dir();
    let own = servers.join(id);
    let (data, tmp) = (own.join("data"), own.join("tmp"));
    // The temp directory starts empty at each launch; the data directory is kept.
    let _ = std::fs::remove_dir_all(&tmp);
    make_private(&data)?;
    make_private(&tmp)?;
    if let Some(h) = &home {
        for c in runner_caches(&t.command) {
            let _ = make_private(&h.join(c));
        }
    }
    let set = |env: &mut Vec<(String, String)>, k: &str, v: &Path| {
        env.retain(|(key, _)| key != k);
        env.push((k.to_owned(), v.to_string_lossy().into_owned()));
    };
    for k in ["TMPDIR", "TMP", "TEMP"] {
        set(env, k, &tmp);
    }
    set(env, DATA_VAR, &data);
    let program = expand_tilde(&t.command);
    // Only the entry's plain values are looked at: a secret's value is never a place.
    let plain: Vec<(String, String)> = t
        .env
        .iter()
        .filter_map(|(k, v)| match v {
            EnvValue::Plain(v) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect();
    let named = places::named(&t.args, &plain, t.cwd.as_deref());
    let opened = places::open(&named, home.as_deref(), &roots.guarded);
    let left_out = opened.left_out.clone();
    let places = Places {
        home: home.clone(),
        guarded: roots.guarded.clone(),
        data,
        tmp,
        program: resolve(&program, env),
        opened,
    };
    let Some(plan) = plan::plan(&t.sandbox, &places) else {
        return Ok(None);
    };
    notes.extend(left_out.iter().map(|l| format!("sandbox: {}", l.line())));
    if plan.left_out > 0 {
        notes.push(format!(
            "the sandbox opened its first {} paths and left {} out (a directory with very many entries); name what the server needs in \"sandbox\": {{\"read\": [...]}}",
            plan::MAX_RULES,
            plan.left_out
        ));
    }
    let confined = Confined {
        summary: t.sandbox.summary(),
        plan,
        left_out,
        home,
        launched_ms: crate::logs::now_ms(),
    };
    #[cfg(target_os = "linux")]
    {
        Confinement::prepare(&confined.plan).map(|confinement| {
            Some(Prepared {
                confinement,
                confined,
            })
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = confined;
        Ok(None)
    }
}

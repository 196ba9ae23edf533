//! A stdio server's sandbox, made ready before it is spawned: its own places (a data and a
//! private temp directory), the variables that point at them, the runner caches it needs, and
//! the kernel's confinement built from its plan (applied in the child by `process::spawn`).

use std::path::{Path, PathBuf};

use crate::config::{expand_tilde, StdioTransport};
use crate::sandbox::plan::{self, Places};

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

/// Prepares `t`'s sandbox for server `id`: makes its places, points `TMPDIR` and
/// [`DATA_VAR`] at them in `env`, and builds the confinement. Blocking (it opens every path of
/// the plan): call it off the async workers. `Ok(None)` when the entry turns the sandbox off or
/// the kernel has none; `note` then says so when it matters.
pub fn prepare(
    t: &StdioTransport,
    id: &str,
    roots: &SandboxRoots,
    env: &mut Vec<(String, String)>,
    note: &mut Option<String>,
) -> Result<Option<Confinement>, String> {
    if !t.sandbox.confines() {
        return Ok(None);
    }
    if crate::sandbox::mechanism().is_none() {
        *note = Some(format!("sandbox {}", crate::sandbox::unavailable()));
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
    let places = Places {
        home: home.clone(),
        guarded: roots.guarded.clone(),
        data,
        tmp,
        cwd: t.cwd.as_deref().map(|c| PathBuf::from(expand_tilde(c))),
        program: resolve(&program, env),
        named: plan::named_paths(&t.args, home.as_deref()),
    };
    let Some(plan) = plan::plan(&t.sandbox, &places) else {
        return Ok(None);
    };
    if plan.left_out > 0 {
        *note = Some(format!(
            "the sandbox opened its first {} paths and left {} out (a directory with very many entries); name what the server needs in \"sandbox\": {{\"read\": [...]}}",
            plan::MAX_RULES,
            plan.left_out
        ));
    }
    #[cfg(target_os = "linux")]
    {
        Confinement::prepare(&plan).map(Some)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(None)
    }
}

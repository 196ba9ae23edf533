//! A stdio server's sandbox, made ready before it is spawned: its own places (a data and a
//! private temp directory), the variables that point at them, the runner caches it needs, and
//! the kernel's confinement built from its plan (applied in the child by `process::spawn`).

use std::path::{Path, PathBuf};

use crate::config::{expand_tilde, EnvValue, StdioTransport};
use crate::egress::Egress;
use crate::sandbox::plan::{self, Places};
use crate::sandbox::{places, Confined};

/// The variable naming the data directory Gatehouse gives a confined server.
pub const DATA_VAR: &str = "GATEHOUSE_SERVER_DATA";

/// The variables that point a fenced server's HTTP clients at its egress proxy.
pub const PROXY_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
];

/// What no confined server may read, and where servers' own places are made.
#[derive(Debug, Clone, Default)]
pub struct SandboxRoots {
    /// Gatehouse's own files and directories (its data directory, its config file and backup).
    pub guarded: Vec<PathBuf>,
    /// `DATA/servers`: each server's places are made under `ID/`.
    pub servers: Option<PathBuf>,
    /// `DATA/store`: the pinned artifacts servers run from.
    pub store: Option<crate::registry::store::Store>,
}

/// The confinement to apply in the child (`None`: it runs unconfined, as its entry or the
/// kernel decided).
#[cfg(target_os = "linux")]
pub type Confinement = crate::sandbox::linux::Confinement;
/// Nothing confines a server on this platform yet.
#[cfg(not(target_os = "linux"))]
pub struct Confinement;

fn make_private(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot make the sandbox's directory {}: {e}", dir.display()))
}

/// What the entry's own `sandbox.write` does before its plan is built: a folder written with a
/// final `/` that does not exist yet is made (private), as the sandbox's own advice writes one;
/// a grant that opens the whole home, or a folder holding what runs code later, is warned of.
fn entry_grants(write: &[String], home: Option<&Path>, notes: &mut Vec<String>) {
    // A folder the entry opens that does not exist yet, written with a final `/` (as the
    // sandbox's own advice writes one): made now, private, so it opens at this start.
    for w in write.iter().filter(|w| w.ends_with('/')) {
        let p = crate::sandbox::paths::expand(w, home);
        if p.is_absolute() && std::fs::symlink_metadata(&p).is_err() {
            match make_private(&p) {
                Ok(()) => notes.push(format!("sandbox: made the folder {w} its entry opens")),
                Err(e) => notes.push(format!("sandbox: {e}")),
            }
        }
    }
    // What the entry opens by name is opened whole: said when that takes in what runs code.
    for w in write {
        let p = crate::sandbox::paths::expand(w, home);
        if home.is_some_and(|h| std::fs::canonicalize(h).ok() == std::fs::canonicalize(&p).ok()) {
            notes.push(format!(
                "warning: \"sandbox\": {{\"write\": [\"{w}\"]}} opens your whole home directory for writing — its credential stores and the files that run at login included"
            ));
        }
        let inside = places::runs_code_inside(&p);
        if !inside.is_empty() {
            notes.push(format!(
                "warning: \"sandbox\": {{\"write\": [\"{w}\"]}} opens {w} whole — {} included — so this server can plant code there that runs when a client, an editor or git opens the folder",
                inside.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
}

/// What server `id`'s egress proxy lets through, when its entry fences its network and it runs
/// confined here; refused (`Err`) when its entry says `"require": "network"` and this kernel
/// cannot fence it.
pub fn fence(
    t: &StdioTransport,
    id: &str,
    (hub_ports, redactions): (&[u16], &std::sync::Arc<crate::secrets::Redactions>),
    log: std::sync::Arc<dyn Fn(String) + Send + Sync>,
) -> Result<Option<crate::egress::Fence>, String> {
    use crate::sandbox::network::Network;
    if !t.sandbox.confines() || crate::sandbox::mechanism().is_none() {
        if t.sandbox.require_network && t.sandbox.network != Network::All {
            return Err(format!(
                "refused to start: its entry says \"require\": \"network\", and it would run unconfined here ({})",
                crate::sandbox::unavailable()
            ));
        }
        return Ok(None);
    }
    let Some(allow) = t.sandbox.network.allow() else {
        return Ok(None);
    };
    if t.sandbox.require_network && !crate::sandbox::fences_network() {
        return Err(format!(
            "refused to start: its entry says \"require\": \"network\", and this kernel cannot fence a server's network ({}; fencing needs Landlock ABI 4, Linux 6.7 or later) — it would reach every address",
            crate::sandbox::mechanism().unwrap_or_default()
        ));
    }
    Ok(Some(crate::egress::Fence {
        server: id.to_owned(),
        allow: allow.to_vec(),
        hub_ports: hub_ports.to_vec(),
        log,
        redactions: redactions.clone(),
    }))
}

/// The data directory, as a confined child's working directory.
fn confined_cwd(data: &Path) -> PathBuf {
    data.to_owned()
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
    /// Where it starts when its entry names no working directory: its data directory (the
    /// hub's own, a folder it could not read, never is).
    pub cwd: PathBuf,
    /// The plan and what it left out.
    pub confined: Confined,
}

/// Prepares `t`'s sandbox for server `id`: makes its places, points `TMPDIR` and
/// [`DATA_VAR`] at them in `env`, and builds the confinement. Blocking (it opens every path of
/// the plan): call it off the async workers. `Ok(None)` when the entry turns the sandbox off or
/// the kernel has none; `notes` then say so when it matters, and name every path the entry
/// names that was left out.
pub fn prepare(
    (t, artifact, egress): (&StdioTransport, Option<&Path>, Option<&Egress>),
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
    // The temp directory starts empty at each launch; the data directory (and the runner's
    // cache in it) is kept.
    let _ = std::fs::remove_dir_all(&tmp);
    make_private(&data)?;
    make_private(&tmp)?;
    let cache = data.join(".cache");
    make_private(&cache)?;
    let set = |env: &mut Vec<(String, String)>, k: &str, v: &Path| {
        env.retain(|(key, _)| key != k);
        env.push((k.to_owned(), v.to_string_lossy().into_owned()));
    };
    for k in ["TMPDIR", "TMP", "TEMP"] {
        set(env, k, &tmp);
    }
    set(env, DATA_VAR, &data);
    // A package runner (an unpinned `npx`, `uvx`…) downloads into a cache of this server's own:
    // the person's shared caches are neither read nor written, so no server changes what
    // another, or the person's own shell, runs.
    for k in plan::RUNNER_CACHE_VARS {
        set(env, k, &cache);
    }
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
    entry_grants(&t.sandbox.write, home.as_deref(), notes);
    let named = places::named(&t.args, &plain, t.cwd.as_deref());
    let places_data = data.clone();
    let opened = places::open(&named, home.as_deref(), &roots.guarded);
    let left_out = opened.left_out.clone();
    let places = Places {
        home: home.clone(),
        guarded: roots.guarded.clone(),
        data,
        tmp,
        program: resolve(&program, env),
        artifact: artifact.map(Path::to_owned),
        opened,
    };
    let Some(mut plan) = plan::plan(&t.sandbox, &places) else {
        return Ok(None);
    };
    // Fenced: TCP only to its egress proxy, which its HTTP clients are told of.
    if let Some(e) = egress {
        plan.egress_port = Some(e.port);
        let proxy = format!("http://127.0.0.1:{}", e.port);
        for k in PROXY_VARS {
            env.retain(|(key, _)| key != k);
            env.push(((*k).to_owned(), proxy.clone()));
        }
        for k in ["NO_PROXY", "no_proxy"] {
            env.retain(|(key, _)| key != k);
        }
        // Node 22.21+ and 24.5+ read the variables only when told to.
        env.retain(|(key, _)| key != "NODE_USE_ENV_PROXY");
        env.push(("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned()));
    }
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
        refused: egress.map(|e| e.refused.clone()),
    };
    #[cfg(target_os = "linux")]
    {
        let cwd = confined_cwd(&places_data);
        Confinement::prepare(&confined.plan).map(|confinement| {
            Some(Prepared {
                confinement,
                cwd,
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

//! `gatehouse registry search|show` and `gatehouse add --registry`: the MCP Registry as the
//! catalog, its servers added pinned to their exact version, their secrets asked for (a hidden
//! prompt or stdin, never argv) and kept in the keychain.

use std::collections::BTreeMap;

use gatehouse::config::{self, Config};
use gatehouse::control::ControlClient;
use gatehouse::registry::entry::{self, Inputs};
use gatehouse::registry::model::{ServerDetail, ServerResponse};
use gatehouse::registry::pin;
use gatehouse::registry::Registry;
use serde_json::Value;

use crate::args::RegistryCmd;
use crate::manage::AddArgs;

/// The config file that counts: the running hub's, else the one given, else the platform's.
async fn config_path(
    client: &ControlClient,
    given: Option<&std::path::Path>,
) -> std::path::PathBuf {
    match client
        .request::<Option<std::path::PathBuf>>(&gatehouse::control::Request::ConfigPath)
        .await
    {
        Ok(Some(p)) => p,
        _ => given
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(config::default_config_path),
    }
}

/// The registry that config names (or `GATEHOUSE_REGISTRY_URL`, or the official one).
async fn registry(
    client: &ControlClient,
    given: Option<&std::path::Path>,
) -> Result<Registry, String> {
    let path = config_path(client, given).await;
    let configured = Config::load(&path).ok().and_then(|c| c.registry.url);
    Registry::new(configured.as_deref())
}

/// How a server can run: `npm`, `pypi`, `remote`…
fn transports(d: &ServerDetail) -> String {
    let mut t: Vec<String> = d.packages.iter().map(|p| p.registry_type.clone()).collect();
    if !d.remotes.is_empty() {
        t.push("remote".into());
    }
    t.join(", ")
}

pub async fn run(client: &ControlClient, cmd: RegistryCmd) -> Result<(), String> {
    let reg = registry(client, None).await?;
    match cmd {
        RegistryCmd::Search { text, all, json } => {
            let mut found: Vec<ServerResponse> = Vec::new();
            let mut cursor: Option<String> = None;
            // At most 20 pages (600 servers) even with --all: a registry that never stops
            // paging cannot keep the command running.
            for _ in 0..20 {
                let page = reg.search(&text, cursor.as_deref()).await?;
                found.extend(page.servers);
                cursor = page
                    .metadata
                    .and_then(|m| m.next_cursor)
                    .filter(|c| !c.is_empty());
                if !all || cursor.is_none() {
                    break;
                }
            }
            if json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&found).unwrap_or_default()
                );
                return Ok(());
            }
            if found.is_empty() {
                say!("nothing in the registry at {} matches {text:?}", reg.url());
            }
            for r in &found {
                let s = &r.server;
                say!("{}  {}  [{}]", s.name, s.version, transports(s));
                if !s.description.is_empty() {
                    say!("    {}", s.description);
                }
            }
            if cursor.is_some() && !all {
                say!("(more results: pass --all)");
            }
            Ok(())
        }
        RegistryCmd::Show {
            name,
            version,
            json,
        } => {
            let r = reg.get(&name, version.as_deref()).await?;
            if json {
                say!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
                return Ok(());
            }
            show(&r.server);
            Ok(())
        }
    }
}

fn show(s: &ServerDetail) {
    say!("{} {}", s.name, s.version);
    if let Some(t) = &s.title {
        say!("  {t}");
    }
    if !s.description.is_empty() {
        say!("  {}", s.description);
    }
    for p in &s.packages {
        say!(
            "  package: {} {} {}",
            p.registry_type,
            p.identifier,
            p.version.as_deref().unwrap_or("(no version)")
        );
        for v in &p.environment_variables {
            let mut what = Vec::new();
            if v.is_required {
                what.push("required");
            }
            if v.is_secret {
                what.push("secret");
            }
            say!(
                "    {}{}: {}",
                v.name,
                if what.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", what.join(", "))
                },
                v.description.as_deref().unwrap_or("")
            );
        }
    }
    for r in &s.remotes {
        say!("  remote: {} {}", r.kind, r.url);
    }
    let id = entry::id_for(&s.name);
    match entry::plan(
        s,
        &id,
        &Inputs::default(),
        gatehouse::registry::container_engine(),
    ) {
        Ok(p) => say!("  would run: {}", p.runs),
        Err(e) => say!("  {e}"),
    }
}

/// The secrets asked for, in order: a hidden prompt each on a terminal, else one line each on
/// stdin.
fn read_asked(asks: &[entry::Ask]) -> Result<BTreeMap<String, String>, String> {
    use std::io::{IsTerminal, Read};
    let mut out = BTreeMap::new();
    if asks.is_empty() {
        return Ok(out);
    }
    if std::io::stdin().is_terminal() {
        for a in asks {
            say!("{} — {}", a.var, a.description);
            let v = rpassword::prompt_password(format!(
                "Value for {}{} (not shown): ",
                a.var,
                if a.required { "" } else { ", Enter to skip" }
            ))
            .map_err(|e| e.to_string())?;
            if !v.is_empty() {
                out.insert(a.var.clone(), v);
            }
        }
    } else {
        // One line per secret: 64 KiB is far more than any of them.
        let mut s = String::new();
        std::io::stdin()
            .take(64 * 1024)
            .read_to_string(&mut s)
            .map_err(|e| e.to_string())?;
        for (a, line) in asks.iter().zip(s.lines()) {
            let line = line.trim_end_matches('\r');
            if !line.is_empty() {
                out.insert(a.var.clone(), line.to_owned());
            }
        }
    }
    Ok(out)
}

/// `gatehouse add [ID] --registry NAME[@VERSION]`.
pub async fn add(client: &ControlClient, a: AddArgs, spec: &str) -> Result<(), String> {
    let (name, version) = match spec.rsplit_once('@') {
        Some((n, v)) if !n.is_empty() && !v.is_empty() => (n, Some(v)),
        _ => (spec, None),
    };
    let reg = registry(client, a.config.as_deref()).await?;
    let found = reg.get(name, version).await?;
    let detail = found.server;
    let id = a.id.clone().unwrap_or_else(|| entry::id_for(&detail.name));
    gatehouse::ServerId::parse(&id)
        .map_err(|e| format!("{e}; pass an ID: gatehouse add ID --registry {spec}"))?;
    let mut inputs = Inputs::default();
    for (k, v) in crate::manage::pairs("--env", &a.env, false)? {
        inputs
            .env
            .insert(k, v.as_str().unwrap_or_default().to_owned());
    }
    for (k, v) in crate::manage::pairs("--secret-env", &a.secret_env, true)? {
        let s = v.get("secret").and_then(Value::as_str).unwrap_or_default();
        inputs.secrets.insert(k, s.to_owned());
    }
    let engine = gatehouse::registry::container_engine();
    let planned = entry::plan(&detail, &id, &inputs, engine)?;
    say!("{} {}: runs {}", detail.name, detail.version, planned.runs);
    say!(
        "pinned to {} (a newer release is never taken without you)",
        planned.pinned
    );
    // Secrets it needs that were not named: asked for now, kept in the keychain only.
    let given = read_asked(&planned.ask)?;
    let mut entry = planned.entry;
    let keychain = gatehouse::secrets::KeychainStore::start();
    for ask in &planned.ask {
        match given.get(&ask.var) {
            Some(value) => {
                let (k, n, v) = (keychain.clone(), ask.secret.clone(), value.clone());
                tokio::task::spawn_blocking(move || k.set(&n, &v))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| format!("cannot keep {} in the keychain: {e}", ask.var))?;
                say!("{} is kept in the keychain as secret {}", ask.var, ask.secret);
            }
            None if ask.required => {
                return Err(format!(
                    "{} needs {} ({}): type it at the prompt (or pipe it on stdin), or store it first with `gatehouse secrets set NAME` and pass --secret-env {}=NAME — nothing was added",
                    detail.name, ask.var, ask.description, ask.var
                ))
            }
            None => {
                // Optional and not given: the server starts without it.
                for key in ["env", "headers"] {
                    if let Some(m) = entry.get_mut(key).and_then(Value::as_object_mut) {
                        m.remove(&ask.var);
                    }
                }
            }
        }
    }
    if a.approval == "ask" {
        entry["requires_approval"] = Value::Bool(true);
    }
    crate::manage::save(client, id, entry, a.config).await
}

/// `gatehouse pin ID [--update]`.
pub async fn pin(
    client: &ControlClient,
    id: &str,
    update: bool,
    config: Option<std::path::PathBuf>,
) -> Result<(), String> {
    let path = config_path(client, config.as_deref()).await;
    let cfg = Config::load(&path).map_err(|e| e.to_string())?;
    let server = cfg
        .servers
        .iter()
        .find(|(k, _)| k.as_str() == id)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| format!("unknown server \"{id}\""))?;
    let mut entry = serde_json::to_value(&server).map_err(|e| e.to_string())?;
    let (command, args) = crate::manage::command_and_args(&entry);
    let Some(spec) = pin::spec(&command, &args) else {
        return Err(format!(
            "{id} runs no npx or uvx package: there is no version to pin"
        ));
    };
    let newest = pin::latest(spec.index, &spec.name).await?;
    let to = match (&spec.version, update) {
        (None, _) => newest.clone(),
        (Some(v), false) if *v == newest => {
            say!("{id} is pinned to {}, the newest version", spec.pinned(v));
            return Ok(());
        }
        (Some(v), false) => {
            say!("{id} is pinned to {}; update available: {newest} — `gatehouse pin {id} --update` takes it", spec.pinned(v));
            return Ok(());
        }
        (Some(v), true) if *v == newest => {
            say!("{id} is already at {newest}, the newest version");
            return Ok(());
        }
        (Some(_), true) => newest.clone(),
    };
    let from = spec.version.clone().unwrap_or_else(|| "unpinned".into());
    entry["args"][spec.at] = Value::String(spec.pinned(&to));
    crate::manage::apply(
        client,
        crate::manage::Edit::Replace {
            id: id.to_owned(),
            entry,
        },
        config,
    )
    .await?;
    say!("{id}: {} {from} → {to}", spec.name);
    if spec.version.is_some() {
        say!("at its next start, any tool whose definition changed asks again before it runs");
    }
    Ok(())
}

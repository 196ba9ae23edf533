//! `gatehouse registry search|show` and `gatehouse add --registry`: the MCP Registry as the
//! catalog, its servers added pinned to their exact version, their secrets asked for (a hidden
//! prompt or stdin, never argv) and kept in the keychain. Everything a registry says is text
//! from the internet: printed with hidden characters and escapes shown (`gatehouse::text`),
//! checked by its grammar before anything is written (`registry::check`), and the exact command
//! and every variable with its value shown before an entry is added.

use std::collections::BTreeMap;

use gatehouse::config::Config;
use gatehouse::control::ControlClient;
use gatehouse::registry::entry::{self, Inputs};
use gatehouse::registry::model::{ServerDetail, ServerResponse};
use gatehouse::registry::pin;
use gatehouse::registry::Registry;
use serde_json::Value;

use crate::args::RegistryCmd;
use crate::manage::{config_path, min_age_days, AddArgs};

/// A registry's text, for the terminal: hidden characters and escapes as code points.
fn r(text: &str) -> std::borrow::Cow<'_, str> {
    gatehouse::text::reveal(text)
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
    let mut t: Vec<String> = d
        .packages
        .iter()
        .map(|p| r(&p.registry_type).into_owned())
        .collect();
    if !d.remotes.is_empty() {
        t.push("remote".into());
    }
    t.join(", ")
}

/// What `registry show --json` prints: the registry's document, and what Gatehouse would run —
/// the exact command and every variable with its value (a secret as `(secret)`) — or why not.
#[derive(serde::Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    response: &'a ServerResponse,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    env: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<String>,
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
            for resp in &found {
                let s = &resp.server;
                say!("{}  {}  [{}]", r(&s.name), r(&s.version), transports(s));
                if !s.description.is_empty() {
                    say!("    {}", r(&s.description));
                }
                if let Some(m) = plan_of(s).ok().and_then(|p| missing(&p)) {
                    say!("    cannot run here yet: {m}");
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
            let found = reg.get(&name, version.as_deref()).await?;
            if json {
                let plan = plan_of(&found.server);
                let shown = Shown {
                    response: &found,
                    command: plan
                        .as_ref()
                        .ok()
                        .filter(|p| !p.command.is_empty())
                        .map(|p| p.command.clone()),
                    env: plan.as_ref().ok().map(|p| p.env.clone()),
                    url: plan
                        .as_ref()
                        .ok()
                        .filter(|p| p.command.is_empty())
                        .map(|p| p.pinned.clone()),
                    missing: plan.as_ref().ok().and_then(missing),
                    error: plan.err(),
                };
                say!(
                    "{}",
                    serde_json::to_string_pretty(&shown).unwrap_or_default()
                );
                return Ok(());
            }
            show(&found.server);
            Ok(())
        }
    }
}

/// The plan for a registry entry as it stands (nothing given).
fn plan_of(s: &ServerDetail) -> Result<entry::Planned, String> {
    entry::plan(
        s,
        &entry::id_for(&s.name),
        &Inputs::default(),
        gatehouse::registry::container_engine(),
    )
}

/// What to install before a plan can run here, if anything.
fn missing(p: &entry::Planned) -> Option<String> {
    p.command
        .first()
        .and_then(|c| gatehouse::registry::runner_missing(c))
}

/// The exact command, then every variable with its value.
fn say_plan(p: &entry::Planned) {
    if p.command.is_empty() {
        say!("  would connect to: {}", r(&p.runs));
    } else {
        say!("  would run: {}", r(&p.runs));
    }
    for (k, v) in &p.env {
        say!("    {} = {}", r(k), r(v));
    }
    if let Some(m) = missing(p) {
        say!("  cannot run here yet: {m}");
    }
}

fn show(s: &ServerDetail) {
    say!("{} {}", r(&s.name), r(&s.version));
    if let Some(t) = &s.title {
        say!("  {}", r(t));
    }
    if !s.description.is_empty() {
        say!("  {}", r(&s.description));
    }
    for p in &s.packages {
        say!(
            "  package: {} {} {}",
            r(&p.registry_type),
            r(&p.identifier),
            r(p.version.as_deref().unwrap_or("(no version)"))
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
                r(&v.name),
                if what.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", what.join(", "))
                },
                r(v.description.as_deref().unwrap_or(""))
            );
        }
    }
    for rem in &s.remotes {
        say!("  remote: {} {}", r(&rem.kind), r(&rem.url));
    }
    match plan_of(s) {
        Ok(p) => say_plan(&p),
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
    inputs.allow_env = a.allow_env.iter().cloned().collect();
    let engine = gatehouse::registry::container_engine();
    let planned = entry::plan(&detail, &id, &inputs, engine)?;
    say!("{} {}:", r(&detail.name), r(&detail.version));
    say_plan(&planned);
    if let Some(m) = missing(&planned) {
        return Err(format!("{m} — nothing was added"));
    }
    if let Some(url) = planned.entry.get("url").and_then(Value::as_str) {
        use gatehouse::supervisor::remote::{check_address, AddressError};
        match check_address(url, false).await {
            Ok(_) => {}
            Err(AddressError::Refused(e)) => return Err(format!("{e} — nothing was added")),
            // Checked again at every connect: a name that does not resolve now may later.
            Err(AddressError::Unresolved(e)) => {
                say!("note: {e}; where it leads is checked when Gatehouse connects")
            }
        }
    }
    say!(
        "pinned to {} (a newer release is never taken without you)",
        r(&planned.pinned)
    );
    let mut planned = planned;
    let min_age = min_age_days(client, a.config.as_deref()).await;
    match pin::record(&mut planned.entry, min_age).await {
        // The newest release, taken without being named, inside the cool-down: not taken.
        Ok(Some(note)) if version.is_none() => {
            return Err(format!(
                "{note}; it was not named, so it is not taken: name a version past the cool-down (`gatehouse registry show {name}` lists them: `--registry {name}@VERSION`), or name this one to take it anyway — nothing was added"
            ))
        }
        Ok(Some(note)) => say!("{note}"),
        Ok(None) => {}
        Err(e) => say!("warning: its artifact's integrity is not recorded: {e}"),
    }
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

//! A registry entry made into a Gatehouse server entry: which package (or remote) runs it, the
//! exact command with the exact version — so what runs is pinned —, its environment from what
//! the person gave, and the secrets to ask for. Everything the registry says is checked by its
//! grammar first (`check`): package names and exact versions by each ecosystem's rules, runner
//! options from an allow-list, variables that change how a runtime loads code or fetches
//! packages only when the person allows them by name, values that are literal text. Nothing here
//! asks or stores anything.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::check;
use super::model::{Argument, KeyValue, Package, ServerDetail};

/// What the person gave for the entry's variables.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// Plain values (`--env K=V`).
    pub env: BTreeMap<String, String>,
    /// Variables taken from a keychain secret (`--secret-env K=SECRET`).
    pub secrets: BTreeMap<String, String>,
    /// Variables the person allows by name although they change how a runtime loads code or
    /// where it fetches packages (`--allow-env NAME`).
    pub allow_env: std::collections::BTreeSet<String>,
}

/// A secret the entry needs that was not given: ask for it (never in argv) and keep it under
/// `secret`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The variable or header.
    pub var: String,
    /// The keychain secret its value goes to.
    pub secret: String,
    /// What it is for.
    pub description: String,
    /// Whether the server needs it.
    pub required: bool,
}

/// The planned entry.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The entry, in Gatehouse's file format.
    pub entry: Value,
    /// What it runs, for people (secret values never appear: they are references).
    pub runs: String,
    /// Secrets to ask for.
    pub ask: Vec<Ask>,
    /// `pkg@1.4.2`, `pkg==1.4.2`, `image@sha256:…`, or the URL.
    pub pinned: String,
    /// The exact command it runs (empty for a remote).
    pub command: Vec<String>,
    /// Every variable (or header) it sets, with its value — a secret as `(secret)`.
    pub env: BTreeMap<String, String>,
}

/// A Gatehouse id for a registry name: its last part, without `mcp-server-`-style wrapping
/// (`io.github.modelcontextprotocol/server-everything` → `everything`).
pub fn id_for(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    let mut id = crate::naming::normalise_id(last);
    for prefix in ["mcp-server-", "server-"] {
        if let Some(rest) = id.strip_prefix(prefix).filter(|r| !r.is_empty()) {
            id = rest.to_owned();
        }
    }
    for suffix in ["-mcp-server", "-mcp"] {
        if let Some(rest) = id.strip_suffix(suffix).filter(|r| !r.is_empty()) {
            id = rest.to_owned();
        }
    }
    id
}

/// A plain (not secret) variable a registry entry declares, for a form to ask for.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Field {
    /// Its name.
    pub var: String,
    /// What it is for.
    pub description: String,
    /// Whether the server needs it.
    pub required: bool,
    /// The value the registry suggests, if any.
    pub default: Option<String>,
}

/// What an entry's variables ask of the person: plain values to give (each package's and
/// remote's, once by name), and the variables that are refused unless allowed by name, with why.
pub fn needs(detail: &ServerDetail) -> (Vec<Field>, Vec<(String, String)>) {
    let mut fields: Vec<Field> = Vec::new();
    let mut risky: Vec<(String, String)> = Vec::new();
    let vars = detail
        .packages
        .iter()
        .flat_map(|p| {
            p.environment_variables
                .iter()
                .map(move |v| (v, Some(&p.identifier)))
        })
        .chain(
            detail
                .remotes
                .iter()
                .flat_map(|r| r.headers.iter().map(|v| (v, None))),
        );
    for (v, package) in vars {
        let refused = match package {
            Some(p) => check::foreign_env(&v.name, p),
            None => check::risky_env(&v.name).map(str::to_owned),
        };
        if let Some(why) = refused {
            if !risky.iter().any(|(n, _)| n == &v.name) {
                risky.push((v.name.clone(), why));
            }
        }
        if !v.is_secret && v.value.is_none() && !fields.iter().any(|f| f.var == v.name) {
            fields.push(Field {
                var: v.name.clone(),
                description: v.description.clone().unwrap_or_default(),
                required: v.is_required,
                default: v.default.clone(),
            });
        }
    }
    (fields, risky)
}

/// The keychain secret name a registry server's variable gets: `ID-VAR`, lower case.
pub fn secret_name(id: &str, var: &str) -> String {
    let raw = format!("{id}-{var}").to_ascii_lowercase().replace('_', "-");
    let clean: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .take(64)
        .collect();
    clean
}

fn arg_words(args: &[Argument], what: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for a in args {
        let value = a.value.clone().or_else(|| a.default.clone());
        if let Some(v) = &value {
            check::literal(&format!("its {what}"), v)?;
        }
        if let Some(n) = &a.name {
            let flag = n.starts_with('-')
                && n.len() <= 64
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !flag {
                return Err(format!(
                    "its {what} name a flag \"{}\" that is not one",
                    crate::text::reveal(n)
                ));
            }
        }
        match (a.kind.as_str(), value) {
            ("named", Some(v)) => {
                out.push(a.name.clone().unwrap_or_default());
                out.push(v);
            }
            ("named", None) if !a.is_required => {}
            ("named", None) => out.push(a.name.clone().unwrap_or_default()),
            ("positional", Some(v)) => out.push(v),
            ("positional", None) if !a.is_required => {}
            (_, _) => {
                let label = a
                    .value_hint
                    .clone()
                    .or_else(|| a.name.clone())
                    .unwrap_or_else(|| "an argument".into());
                return Err(format!(
                    "its {what} need {label} ({}), which the registry gives no value for; add the server by hand with `gatehouse add ID -- COMMAND`",
                    a.description.as_deref().unwrap_or("no description")
                ));
            }
        }
    }
    Ok(out)
}

/// Values and secret references for `vars` — a package's variables (`package`: its identifier,
/// whose own variables pass) or a remote's headers (`None`); secrets not given are asked for.
fn values(
    id: &str,
    (vars, package): (&[KeyValue], Option<&String>),
    inputs: &Inputs,
    ask: &mut Vec<Ask>,
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for v in vars {
        check::env_name(&v.name)?;
        let refused = match package {
            Some(p) => check::foreign_env(&v.name, p),
            None => check::risky_env(&v.name).map(str::to_owned),
        };
        if let Some(why) = refused {
            if !inputs.allow_env.contains(&v.name) {
                return Err(format!(
                    "it sets {}, which is refused unless you allow it by name: {why}. Look at what it is for ({}) and, if you accept it, allow it (--allow-env {}; in the app, tick it)",
                    v.name,
                    v.description.as_deref().unwrap_or("no description"),
                    v.name
                ));
            }
        }
        for given in [&v.value, &v.default].into_iter().flatten() {
            check::literal(&v.name, given)?;
        }
        if let Some(secret) = inputs.secrets.get(&v.name) {
            out.insert(v.name.clone(), json!({"secret": secret}));
        } else if let Some(plain) = inputs.env.get(&v.name) {
            if v.is_secret {
                return Err(format!(
                    "{} is a secret: give it with --secret-env {}=SECRET (a keychain secret), or leave it out to be asked — never on the command line",
                    v.name, v.name
                ));
            }
            out.insert(v.name.clone(), json!(plain));
        } else if let Some(fixed) = &v.value {
            out.insert(v.name.clone(), json!(fixed));
        } else if v.is_secret {
            let secret = secret_name(id, &v.name);
            out.insert(v.name.clone(), json!({"secret": secret}));
            ask.push(Ask {
                var: v.name.clone(),
                secret,
                description: v.description.clone().unwrap_or_default(),
                required: v.is_required,
            });
        } else if let Some(d) = &v.default {
            out.insert(v.name.clone(), json!(d));
        } else if v.is_required {
            return Err(format!(
                "{} is required ({}): pass --env {}=VALUE",
                v.name,
                v.description.as_deref().unwrap_or("no description"),
                v.name
            ));
        }
    }
    Ok(out)
}

/// Why a package was not planned: the person's input is wrong (stop there), or this package
/// cannot run here (try the next).
enum Refusal {
    Input(String),
    CannotRun(String),
}

fn local(id: &str, p: &Package, inputs: &Inputs, engine: Option<&str>) -> Result<Planned, Refusal> {
    let cannot = Refusal::CannotRun;
    if let Some(t) = p.transport.as_ref().filter(|t| t.kind != "stdio") {
        return Err(cannot(format!(
            "its {} package serves {} on a port of its own, which Gatehouse does not start yet",
            p.registry_type, t.kind
        )));
    }
    let version = p.version.clone().filter(|v| !v.is_empty() && v != "latest");
    let Some(version) = version else {
        return Err(cannot(
            "its package names no exact version, so it cannot be pinned".into(),
        ));
    };
    let mut ask = Vec::new();
    let env = values(
        id,
        (&p.environment_variables, Some(&p.identifier)),
        inputs,
        &mut ask,
    )
    .map_err(Refusal::Input)?;
    let runtime = arg_words(&p.runtime_arguments, "runtime arguments").map_err(cannot)?;
    let package = arg_words(&p.package_arguments, "arguments").map_err(cannot)?;
    let runner = match p.registry_type.as_str() {
        "npm" => "npx",
        "pypi" => "uvx",
        _ => engine.unwrap_or("docker"),
    };
    check::runtime_args(runner, &runtime).map_err(cannot)?;
    let (command, pinned, mut args) = match p.registry_type.as_str() {
        "npm" => {
            check::npm_name(&p.identifier).map_err(cannot)?;
            check::npm_version(&version).map_err(cannot)?;
            let pinned = format!("{}@{version}", p.identifier);
            let mut a = Vec::new();
            if !runtime.iter().any(|w| w == "-y" || w == "--yes") {
                a.push("-y".to_owned());
            }
            a.extend(runtime);
            a.push(pinned.clone());
            ("npx".to_owned(), pinned, a)
        }
        "pypi" => {
            check::pypi_name(&p.identifier).map_err(cannot)?;
            check::pypi_version(&version).map_err(cannot)?;
            let pinned = format!("{}=={version}", p.identifier);
            let mut a = runtime;
            a.push(pinned.clone());
            ("uvx".to_owned(), pinned, a)
        }
        "oci" => {
            let Some(engine) = engine else {
                return Err(cannot(format!(
                    "it runs as a container ({}): it needs a container engine — install Docker or Podman",
                    p.identifier
                )));
            };
            let pinned = check::oci_pinned(&p.identifier, &version).map_err(cannot)?;
            let mut a = vec!["run".to_owned(), "-i".to_owned(), "--rm".to_owned()];
            a.extend(runtime);
            // The container sees only the variables it is given by name.
            for k in env.keys() {
                a.push("-e".into());
                a.push(k.clone());
            }
            a.push(pinned.clone());
            (engine.to_owned(), pinned, a)
        }
        "mcpb" => {
            return Err(cannot("it is an MCPB bundle, which Gatehouse does not unpack yet: install it in a client that does, or use one of its packages".into()))
        }
        other => {
            return Err(cannot(format!(
                "its package is from {other}, which Gatehouse cannot run"
            )))
        }
    };
    args.extend(package);
    let mut entry = Map::new();
    entry.insert("command".into(), json!(command));
    entry.insert("args".into(), json!(args));
    if !env.is_empty() {
        entry.insert("env".into(), Value::Object(env));
    }
    let runs = crate::config::command_line(
        std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)),
    );
    let shown = shown_env(&entry);
    Ok(Planned {
        command: std::iter::once(command.clone())
            .chain(args.iter().cloned())
            .collect(),
        entry: Value::Object(entry),
        runs,
        ask,
        pinned,
        env: shown,
    })
}

/// Every variable (or header) an entry sets, with its value — a secret reference as
/// `(secret)`, its value never read.
fn shown_env(entry: &Map<String, Value>) -> BTreeMap<String, String> {
    ["env", "headers"]
        .iter()
        .filter_map(|k| entry.get(*k).and_then(Value::as_object))
        .flat_map(|m| m.iter())
        .map(|(k, v)| {
            let shown = match v {
                Value::String(s) => s.clone(),
                _ => "(secret)".to_owned(),
            };
            (k.clone(), shown)
        })
        .collect()
}

/// The entry for `detail`: its first package Gatehouse can run (npm, PyPI, then OCI where a
/// container engine is installed), else its first remote. `engine` is `docker` or `podman`
/// when one is on this machine. An error says why none can run.
pub fn plan(
    detail: &ServerDetail,
    id: &str,
    inputs: &Inputs,
    engine: Option<&str>,
) -> Result<Planned, String> {
    check::server_name(&detail.name)?;
    let mut why = Vec::new();
    let mut order: Vec<&Package> = detail.packages.iter().collect();
    let rank = |p: &Package| match p.registry_type.as_str() {
        "npm" => 0,
        "pypi" => 1,
        "oci" => 2,
        _ => 3,
    };
    order.sort_by_key(|p| rank(p));
    for p in order {
        match local(id, p, inputs, engine) {
            Ok(planned) => return Ok(planned),
            Err(Refusal::Input(e)) => return Err(e),
            Err(Refusal::CannotRun(e)) => why.push(e),
        }
    }
    if let Some(r) = detail.remotes.first() {
        if r.url.contains('{') {
            why.push(format!(
                "its remote URL {} needs values Gatehouse does not ask for yet",
                r.url
            ));
        } else {
            let mut ask = Vec::new();
            check::literal("its URL", &r.url)?;
            let headers = values(id, (&r.headers, None), inputs, &mut ask)?;
            let mut entry = Map::new();
            entry.insert("url".into(), json!(r.url));
            if !headers.is_empty() {
                entry.insert("headers".into(), Value::Object(headers));
            }
            let env = shown_env(&entry);
            return Ok(Planned {
                entry: Value::Object(entry),
                runs: r.url.clone(),
                ask,
                pinned: r.url.clone(),
                command: Vec::new(),
                env,
            });
        }
    }
    if why.is_empty() {
        why.push("it lists no package and no remote".into());
    }
    Err(format!(
        "{} cannot be added: {}",
        detail.name,
        why.join("; ")
    ))
}

#[cfg(test)]
#[path = "entry_tests.rs"]
mod tests;

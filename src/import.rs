//! Importing servers from AI clients' config files (Claude Desktop, Claude Code, Cursor:
//! `mcpServers`; VS Code: `servers`) and Gremia manifests (`mcp_requirements`) into a Gatehouse
//! config. Pure: reading files, keychain moves and printing are the caller's.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::config::{Config, ServerId};

pub mod claude_code;
mod formats;

pub use crate::credentials::looks_like_credential;
use crate::credentials::{credential_values, hide_credential_args, hide_credential_query};

/// One server found in a client file, mapped onto a Gatehouse entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The name in the source file.
    pub source_name: String,
    /// The Gatehouse id it gets (normalised, or renamed).
    pub id: String,
    /// The entry in the Gatehouse file format.
    pub entry: Value,
    /// Env (or header) names whose values look like credentials and are plain text.
    pub credentials: Vec<String>,
    /// Gremia's `tools_used`: tools the workflow expects the server to have.
    pub tools_used: Vec<String>,
    /// Where in its client it came from, for a client with scopes (Claude Code: `user`,
    /// `local DIR`, `project DIR`); empty otherwise.
    pub scope: String,
    /// The file it was read from.
    pub file: std::path::PathBuf,
    /// Why the client itself has not approved it (a project's `.mcp.json` server Claude Code
    /// was never told to run): listed, imported only when the person picks it.
    pub unapproved: Option<String>,
}

impl Candidate {
    /// Whether this is a remote entry with no credentials of its own (a bare `url`, as Claude
    /// Code's `--transport http`, Cursor and VS Code keep OAuth servers): an OAuth candidate,
    /// which lands in `needs_sign_in` when the server asks for a sign-in.
    pub fn oauth_candidate(&self) -> bool {
        let Some(_) = self.entry.get("url") else {
            return false;
        };
        let has_auth_header = self
            .entry
            .get("headers")
            .and_then(Value::as_object)
            .is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case("authorization")));
        !has_auth_header && self.entry.get("auth").is_none()
    }

    /// The command line (or URL) this entry runs, for the person to review — with the values
    /// of credential-bearing arguments hidden (`--header "Authorization: …"`, `--api-key X`,
    /// `--token=X`): a screen or a log is no place for them.
    pub fn command_line(&self) -> String {
        if let Some(url) = self.entry.get("url").and_then(Value::as_str) {
            return hide_credential_query(url);
        }
        let command = self.entry.get("command").and_then(Value::as_str);
        let args: Vec<&str> = self
            .entry
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| a.as_str().unwrap_or_default())
            .collect();
        let shown = hide_credential_args(&args);
        crate::config::command_line(command.into_iter().chain(shown.iter().map(String::as_str)))
    }
}

/// Reads a client file or Gremia manifest. Errors name the file, the position and the fix.
/// Claude Code's `~/.claude.json` brings its three scopes (user, local per project, and each
/// known project's `.mcp.json`), each server labelled with its scope.
pub fn read_source(path: &Path) -> Result<Vec<Candidate>, String> {
    let text = crate::client_file::read(path).map_err(|e| e.to_string())?;
    let root = parse_text(&text, path)?;
    let mut found = parse_root(&root, path)?;
    if let Some(root) = root.as_object().filter(|r| claude_code::is_claude_code(r)) {
        for (scope, file) in claude_code::project_files(root) {
            let text = crate::client_file::read(&file).map_err(|e| e.to_string())?;
            let mut project = parse_source(&text, &file)?;
            for c in &mut project {
                c.scope.clone_from(&scope);
            }
            found.extend(project);
        }
    }
    claude_code::mark_unapproved(&mut found);
    Ok(found)
}

/// Reads client-file or manifest text; `path` is only used in messages.
pub fn parse_source(text: &str, path: &Path) -> Result<Vec<Candidate>, String> {
    parse_root(&parse_text(text, path)?, path)
}

/// A client file's text as JSON: Codex's TOML read the way Codex reads it (into the shape of
/// the others), anything else as JSON; errors name the file, the position and the fix.
fn parse_text(text: &str, path: &Path) -> Result<Value, String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let read = match ext {
        "toml" => crate::clients::codex::read(text),
        "yaml" | "yml" => crate::clients::yaml::read(text),
        _ => {
            return crate::clients::jsonc::read_at(text).map_err(|(line, column, what)| {
                format!(
                    "{}:{line}:{column}: not valid JSON ({what}); fix the file in its client first — nothing was imported",
                    path.display()
                )
            })
        }
    };
    read.map_err(|e| {
        format!(
            "{}: {e}; fix the file in its client first — nothing was imported",
            path.display()
        )
    })
}

fn parse_root(root: &Value, path: &Path) -> Result<Vec<Candidate>, String> {
    let obj = root
        .as_object()
        .ok_or_else(|| format!("{}: expected a JSON object at the top", path.display()))?;
    if let Some(reqs) = obj.get("mcp_requirements") {
        return gremia(reqs, path);
    }
    if claude_code::is_claude_code(obj) {
        return claude_code::user_and_local(obj, path);
    }
    let Some((key, servers)) = formats::SERVER_KEYS
        .iter()
        .find_map(|(k, _)| obj.get(*k).map(|v| (*k, v)))
    else {
        let known: Vec<String> = formats::SERVER_KEYS
            .iter()
            .map(|(k, who)| format!("\"{k}\" ({who})"))
            .collect();
        return Err(format!(
            "{}: no server list found: looked for {} and \"mcp_requirements\" (Gremia)",
            path.display(),
            known.join(", ")
        ));
    };
    let servers = servers.as_object().ok_or_else(|| {
        format!(
            "{}: the server list must be an object of name → server",
            path.display()
        )
    })?;
    servers
        .iter()
        .filter_map(|(name, v)| {
            let v = if v.is_object() {
                formats::common(key, v)?
            } else {
                v.clone()
            };
            Some(client_entry(name, &v, path))
        })
        .collect()
}

fn client_entry(name: &str, v: &Value, path: &Path) -> Result<Candidate, String> {
    let o = v
        .as_object()
        .ok_or_else(|| format!("{}: server \"{name}\" is not an object", path.display()))?;
    let mut entry = Map::new();
    let mut credentials = Vec::new();
    let url = o
        .get("url")
        .or_else(|| o.get("serverUrl"))
        .or_else(|| o.get("httpUrl"))
        .and_then(Value::as_str);
    if let Some(url) = url {
        entry.insert("url".into(), Value::String(url.to_owned()));
        if let Some(h) = o.get("headers").and_then(Value::as_object) {
            let headers = string_map(h, name, "headers", path)?;
            credentials.extend(credential_values(&headers));
            entry.insert("headers".into(), to_value(headers));
        }
    } else {
        let command = o.get("command").and_then(Value::as_str).ok_or_else(|| {
            format!(
                "{}: server \"{name}\" has neither \"command\" nor \"url\"",
                path.display()
            )
        })?;
        entry.insert("command".into(), Value::String(command.to_owned()));
        if let Some(args) = o.get("args").and_then(Value::as_array) {
            let args: Option<Vec<Value>> = args
                .iter()
                .map(|a| a.as_str().map(|s| Value::String(s.to_owned())))
                .collect();
            let args = args.ok_or_else(|| {
                format!(
                    "{}: server \"{name}\": every arg must be a string",
                    path.display()
                )
            })?;
            if !args.is_empty() {
                entry.insert("args".into(), Value::Array(args));
            }
        }
        if let Some(env) = o.get("env").and_then(Value::as_object) {
            let env = string_map(env, name, "env", path)?;
            credentials.extend(credential_values(&env));
            if !env.is_empty() {
                entry.insert("env".into(), to_value(env));
            }
        }
        if let Some(cwd) = o.get("cwd").and_then(Value::as_str) {
            entry.insert("cwd".into(), Value::String(cwd.to_owned()));
        }
    }
    if o.get("disabled").and_then(Value::as_bool) == Some(true) {
        entry.insert("enabled".into(), Value::Bool(false));
    }
    Ok(Candidate {
        source_name: name.to_owned(),
        id: normalise_id(name),
        entry: Value::Object(entry),
        credentials,
        tools_used: Vec::new(),
        scope: String::new(),
        file: path.to_owned(),
        unapproved: None,
    })
}

fn gremia(reqs: &Value, path: &Path) -> Result<Vec<Candidate>, String> {
    let list = reqs
        .as_array()
        .ok_or_else(|| format!("{}: \"mcp_requirements\" must be a list", path.display()))?;
    list.iter()
        .enumerate()
        .map(|(i, r)| {
            let name = r
                .get("server_id")
                .or_else(|| r.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    format!(
                        "{}: mcp_requirements[{i}] has no \"server_id\"",
                        path.display()
                    )
                })?;
            let mut c = client_entry(name, r, path)?;
            // The display name stays with the entry (shown in status and the app).
            let display = r
                .get("name")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|n| !n.is_empty() && n.len() <= 100 && *n != name);
            if let (Some(n), Value::Object(e)) = (display, &mut c.entry) {
                e.insert("name".into(), Value::String(n.to_owned()));
            }
            c.tools_used = r
                .get("tools_used")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                // Gremia writes `server:tool`; Gatehouse wants the server's own name.
                .map(|t| t.rsplit(':').next().unwrap_or(t).to_owned())
                .collect();
            // ...and so do the tools it expects: checked against the server's list at every
            // start (a warning in status and its log when one is missing).
            if let (false, Value::Object(e)) = (c.tools_used.is_empty(), &mut c.entry) {
                e.insert("tools_used".into(), serde_json::json!(c.tools_used));
            }
            Ok(c)
        })
        .collect()
}

fn string_map(
    m: &Map<String, Value>,
    name: &str,
    what: &str,
    path: &Path,
) -> Result<BTreeMap<String, String>, String> {
    m.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            _ => Err(format!(
                "{}: server \"{name}\": {what} value \"{k}\" must be a string",
                path.display()
            )),
        })
        .collect()
}

fn to_value(m: BTreeMap<String, String>) -> Value {
    Value::Object(m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
}

pub use crate::naming::normalise_id;

/// What an import will do with each candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It will be added.
    Add,
    /// The id is taken (in the config or earlier in this import); the message says how to rename.
    Skip(String),
}

/// Applies `renames` (source name or id → new id), then decides for each candidate. An entry that
/// is Gatehouse itself (its own endpoint on `gateway_ports` or the config's port, `gatehouse
/// connect`, `gatehouse serve`) is never offered.
pub fn plan(
    config: &Config,
    mut candidates: Vec<Candidate>,
    renames: &BTreeMap<String, String>,
    gateway_ports: &[u16],
) -> Vec<(Candidate, Outcome)> {
    let mut ports = gateway_ports.to_vec();
    ports.push(config.gateway.listen.port());
    let mut taken: Vec<String> = config.servers.keys().map(|k| k.to_string()).collect();
    let mut out = Vec::new();
    for c in candidates.iter_mut() {
        // `NAME@SCOPE` names one scope's server (Claude Code: `x@user`, `x@local DIR`).
        let scoped = format!("{}@{}", c.source_name, c.scope);
        let new = (!c.scope.is_empty())
            .then(|| renames.get(&scoped))
            .flatten()
            .or_else(|| renames.get(&c.source_name))
            .or_else(|| renames.get(&c.id));
        if let Some(new) = new {
            c.id = new.clone();
        }
    }
    let scopes = scope_clashes(&candidates);
    for c in candidates {
        // Checked as the config would check it: an entry it would refuse is skipped with the
        // refusal and its fix, and never takes the rest of the import down with it.
        let parsed = crate::config::parse_entry(&c.entry);
        let itself = parsed
            .as_ref()
            .ok()
            .and_then(|s| crate::config::reaches_gatehouse(&s.transport, &ports));
        let outcome = if let Err(e) = parsed {
            Outcome::Skip(e.to_string())
        } else if let Some(why) = itself {
            Outcome::Skip(why)
        } else if let Some(why) = scopes.get(&(c.id.clone(), c.scope.clone())) {
            Outcome::Skip(why.clone())
        } else if let Err(e) = ServerId::parse(&c.id) {
            Outcome::Skip(format!("{e}; pass --rename {}=NEW-ID", c.source_name))
        } else if taken.contains(&c.id) {
            Outcome::Skip(format!(
                "a server \"{}\" already exists; pass --rename {}=NEW-ID to import it under another id",
                c.id, c.source_name
            ))
        } else {
            taken.push(c.id.clone());
            Outcome::Add
        };
        out.push((c, outcome));
    }
    out
}

/// The same id from two scopes of one client, by (id, scope): the same entry is imported once
/// (from the first scope it is in); different entries are a conflict the person resolves —
/// Gatehouse never picks one.
fn scope_clashes(candidates: &[Candidate]) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for (i, c) in candidates.iter().enumerate() {
        if c.scope.is_empty() {
            continue;
        }
        let same_id: Vec<&Candidate> = candidates
            .iter()
            .filter(|o| o.id == c.id && !o.scope.is_empty() && o.scope != c.scope)
            .collect();
        if same_id.is_empty() {
            continue;
        }
        let why = if same_id.iter().all(|o| o.entry == c.entry) {
            let first = candidates.iter().position(|o| o.id == c.id).unwrap_or(i);
            if first == i {
                continue;
            }
            format!(
                "the same server as in the {} scope, imported from there",
                candidates[first].scope
            )
        } else {
            let mut all: Vec<&str> = std::iter::once(c.scope.as_str())
                .chain(same_id.iter().map(|o| o.scope.as_str()))
                .collect();
            all.sort_unstable();
            all.dedup();
            format!(
                "\"{name}\" is defined differently in the {} scopes; Gatehouse does not pick one: import each you want under an id of its own with --rename '{name}@{}=NEW-ID'",
                all.join(" and "),
                c.scope,
                name = c.source_name
            )
        };
        out.insert((c.id.clone(), c.scope.clone()), why);
    }
    out
}

/// The secret name a moved credential gets: `ID-NAME` in the keychain's alphabet.
pub fn secret_name(id: &str, var: &str) -> String {
    let var: String = var
        .chars()
        .map(|c| match c {
            'A'..='Z' => c.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' | '.' | '-' => c,
            _ => '-',
        })
        .collect();
    let mut name = format!("{id}-{}", var.trim_matches('-'));
    name.truncate(64);
    name
}

/// Moves the credential-looking `vars` of `entry` (env or headers) into the keychain and puts
/// references in their place; `Bearer x` headers keep the scheme as the reference's prefix.
/// Blocking (keychain calls). Nothing is changed in `entry` if a value cannot be stored.
pub fn move_credentials(
    entry: &mut Value,
    id: &str,
    vars: &[String],
    keychain: &crate::secrets::KeychainStore,
) -> Result<Vec<(String, String)>, String> {
    let mut moved = Vec::new();
    let mut next = entry.clone();
    for var in vars {
        let Some(slot) = ["env", "headers"].into_iter().find(|k| {
            entry
                .get(*k)
                .and_then(|m| m.get(var))
                .is_some_and(Value::is_string)
        }) else {
            continue;
        };
        let value = entry[slot][var].as_str().unwrap_or_default().to_owned();
        let (prefix, secret) = match value.split_once(' ') {
            Some((scheme, rest)) if slot == "headers" && scheme.eq_ignore_ascii_case("bearer") => {
                (Some(format!("{scheme} ")), rest.to_owned())
            }
            _ => (None, value),
        };
        if secret.chars().count() < crate::secrets::MIN_SECRET_LEN {
            // Too short to keep out of logs: it stays in plain text and is reported as such.
            continue;
        }
        let name = secret_name(id, var);
        keychain.set(&name, &secret).map_err(|e| {
            format!(
                "{e}; nothing was imported (leave out --move-secrets to keep values in the config)"
            )
        })?;
        next[slot][var] = match prefix {
            Some(p) => serde_json::json!({ "secret": name, "prefix": p }),
            None => serde_json::json!({ "secret": name }),
        };
        moved.push((var.clone(), name));
    }
    *entry = next;
    Ok(moved)
}

/// A chosen candidate ready to be added: credentials already moved when asked.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The id it gets.
    pub id: String,
    /// The name in the source file.
    pub source_name: String,
    /// The entry in the Gatehouse file format (references in place of moved values).
    pub entry: Value,
    /// `(variable, secret name)` of each credential moved into the keychain.
    pub moved: Vec<(String, String)>,
    /// Credential-looking values left in plain text.
    pub plaintext: Vec<String>,
    /// Gremia's `tools_used`, to check once the server runs.
    pub tools_used: Vec<String>,
}

/// Prepares the chosen candidates: with a keychain, their credential-looking values go into it
/// (blocking); without, they are reported as plain text. Nothing is moved for any candidate if
/// one value cannot be stored.
pub fn prepare(
    chosen: Vec<Candidate>,
    keychain: Option<&crate::secrets::KeychainStore>,
) -> Result<Vec<Prepared>, String> {
    chosen
        .into_iter()
        .map(|c| {
            let mut entry = c.entry.clone();
            // Imported servers come by the dozen, most of them seldom called: each starts when
            // a call needs it (its tools learned once, listed meanwhile), unless it says.
            if let Some(o) = entry.as_object_mut() {
                o.entry("start")
                    .or_insert_with(|| Value::String("on_demand".into()));
            }
            let (moved, plaintext) = match keychain {
                Some(k) => (
                    move_credentials(&mut entry, &c.id, &c.credentials, k)?,
                    Vec::new(),
                ),
                None => (Vec::new(), c.credentials.clone()),
            };
            Ok(Prepared {
                id: c.id,
                source_name: c.source_name,
                entry,
                moved,
                plaintext,
                tools_used: c.tools_used,
            })
        })
        .collect()
}

/// Each prepared `npx`/`uvx` entry pinned as every way of adding pins it (past the cool-down,
/// the artifact's integrity recorded); a sentence per server that was pinned or could not be.
pub async fn pin_all(prepared: &mut [Prepared], min_age_days: u64) -> Vec<String> {
    let mut said = Vec::new();
    for p in prepared.iter_mut() {
        match crate::registry::pin::pin_new(&mut p.entry, min_age_days).await {
            Ok(Some(s)) => said.push(format!("{}: {}", p.id, s.replace("pin ID", &format!("pin {}", p.id)))),
            Ok(None) => {}
            Err(e) => said.push(format!(
                "{}: not pinned ({e}); it runs whatever version is newest until you `gatehouse pin {}`",
                p.id, p.id
            )),
        }
    }
    said
}

/// `config` with the prepared servers added (validated as a load would validate them). An id
/// that is taken by now is an error: nothing is ever overwritten.
pub fn apply(config: &Config, prepared: &[Prepared]) -> Result<Config, String> {
    let mut next = config.clone();
    for p in prepared {
        next = next.with_server(None, &p.id, &p.entry)?;
    }
    Ok(next)
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;

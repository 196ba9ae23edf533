//! Claude Code's three scopes. `claude mcp add` writes the *local* scope by default —
//! `projects["<dir>"].mcpServers` in `~/.claude.json` — `-s user` the top-level `mcpServers`
//! there, and `-s project` `<dir>/.mcp.json`. Each server found is labelled with its scope
//! (`user`, `local DIR`, `project DIR`) so the person sees where it came from.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{client_entry, Candidate};

/// Whether a client file is Claude Code's `~/.claude.json` (it keeps per-project state).
pub(super) fn is_claude_code(root: &Map<String, Value>) -> bool {
    root.get("projects").is_some_and(Value::is_object)
}

/// The user and local scopes of `~/.claude.json`.
pub(super) fn user_and_local(
    root: &Map<String, Value>,
    path: &Path,
) -> Result<Vec<Candidate>, String> {
    let mut out = Vec::new();
    if let Some(servers) = root.get("mcpServers") {
        out.extend(scoped(servers, "user", path)?);
    }
    for (dir, project) in root
        .get("projects")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(servers) = project.get("mcpServers") {
            out.extend(scoped(servers, &format!("local {dir}"), path)?);
        }
    }
    Ok(out)
}

/// The `.mcp.json` files of the project scope that exist: each project `~/.claude.json` knows,
/// and the current directory.
pub(super) fn project_files(root: &Map<String, Value>) -> Vec<(String, PathBuf)> {
    let mut dirs: Vec<PathBuf> = root
        .get("projects")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(dir, _)| PathBuf::from(dir))
        .filter(|d| d.is_absolute())
        .collect();
    if let Ok(cwd) = std::env::current_dir() {
        if !dirs.contains(&cwd) {
            dirs.push(cwd);
        }
    }
    dirs.into_iter()
        .map(|d| (format!("project {}", d.display()), d.join(".mcp.json")))
        .filter(|(_, f)| f.is_file())
        .collect()
}

/// The servers of one scope's `mcpServers` object, labelled.
fn scoped(servers: &Value, scope: &str, path: &Path) -> Result<Vec<Candidate>, String> {
    let servers = servers.as_object().ok_or_else(|| {
        format!(
            "{}: the {scope} scope's server list must be an object of name → server",
            path.display()
        )
    })?;
    servers
        .iter()
        .map(|(name, v)| {
            let mut c = client_entry(name, v, path)?;
            c.scope = scope.to_owned();
            Ok(c)
        })
        .collect()
}

/// What a candidate from a project's `.mcp.json` is marked with when Claude Code has not
/// approved it.
pub const NOT_APPROVED: &str = "not approved in Claude Code";

/// Claude Code's own answers about a project's `.mcp.json` servers, from what the person's
/// Claude Code wrote — `~/.claude.json`'s `projects[DIR]` and the user's `~/.claude/settings.json`
/// (`enabledMcpjsonServers`, `disabledMcpjsonServers`, `enableAllProjectMcpServers`). A project's
/// own `.claude/settings*.json` is not asked: it comes with the repository, as the `.mcp.json` does.
#[derive(Debug, Default)]
struct Approvals {
    all: bool,
    enabled: Vec<String>,
    disabled: Vec<String>,
}

impl Approvals {
    fn add(&mut self, o: &Map<String, Value>) {
        let names = |k: &str| -> Vec<String> {
            o.get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        self.all |= o.get("enableAllProjectMcpServers") == Some(&Value::Bool(true));
        self.enabled.extend(names("enabledMcpjsonServers"));
        self.disabled.extend(names("disabledMcpjsonServers"));
    }

    fn approves(&self, name: &str) -> bool {
        !self.disabled.iter().any(|d| d == name)
            && (self.all || self.enabled.iter().any(|e| e == name))
    }
}

/// Marks each candidate read from a project's `.mcp.json` that Claude Code has not approved
/// ([`NOT_APPROVED`]): it is listed, and imported only when the person picks it.
pub fn mark_unapproved(candidates: &mut [super::Candidate]) {
    let home = dirs::home_dir();
    let read = |p: Option<PathBuf>| -> Option<Map<String, Value>> {
        let text = crate::client_file::read(&p?).ok()?;
        crate::clients::jsonc::read_at(&text)
            .ok()?
            .as_object()
            .cloned()
    };
    let state = read(home.as_ref().map(|h| h.join(".claude.json")));
    let user = read(home.as_ref().map(|h| h.join(".claude/settings.json")));
    for c in candidates.iter_mut() {
        if c.file.file_name().and_then(|n| n.to_str()) != Some(".mcp.json") {
            continue;
        }
        let mut a = Approvals::default();
        if let Some(u) = &user {
            a.add(u);
        }
        let dir = c.file.parent().map(Path::to_owned).unwrap_or_default();
        let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        let project = state
            .as_ref()
            .and_then(|s| s.get("projects"))
            .and_then(Value::as_object)
            .and_then(|p| {
                p.iter()
                    .find(|(d, _)| {
                        let d = Path::new(d.as_str());
                        d == dir || std::fs::canonicalize(d).is_ok_and(|r| r == real)
                    })
                    .and_then(|(_, v)| v.as_object())
            });
        if let Some(p) = project {
            a.add(p);
        }
        if !a.approves(&c.source_name) {
            c.unapproved = Some(NOT_APPROVED.to_owned());
        }
    }
}

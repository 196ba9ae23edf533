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

//! Which files the watch reads: each of the 14 clients' user-level MCP file (and the older ones
//! they still read), Claude Code's user settings, and in each project Claude Code knows (at most
//! [`MAX_PROJECTS`], as `~/.claude.json` lists them) its `.mcp.json`, `.claude/settings.json`,
//! `.claude/settings.local.json`, `.vscode/tasks.json` and every client's project file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::classify::Role;
use crate::clients::{ClientKind, Format};

/// The most projects watched (the first ones `~/.claude.json` lists): a bound on the files read
/// every second, whatever a file says.
pub const MAX_PROJECTS: usize = 64;

/// One watched file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Where it is.
    pub path: PathBuf,
    /// The client that reads it.
    pub client: ClientKind,
    /// How it is read.
    pub role: Role,
}

fn servers_of(kind: ClientKind) -> Role {
    Role::Servers {
        format: kind.format(),
        key: kind.servers_key(),
    }
}

/// Every watched file for `home` and the `projects` Claude Code knows, each path once.
pub fn targets(home: &Path, projects: &[PathBuf]) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    let mut add = |path: PathBuf, client: ClientKind, role: Role| {
        if !out.iter().any(|t| t.path == path) {
            out.push(Target { path, client, role });
        }
    };
    add(
        home.join(".claude.json"),
        ClientKind::ClaudeCode,
        Role::ClaudeJson,
    );
    for kind in ClientKind::ALL {
        if let Some(path) = kind
            .config_path()
            .filter(|_| kind != ClientKind::ClaudeCode)
        {
            add(path, kind, servers_of(kind));
        }
        for older in kind.older_paths(None) {
            add(older, kind, old_vscode());
        }
    }
    add(
        home.join(".claude/settings.json"),
        ClientKind::ClaudeCode,
        Role::Settings,
    );
    for dir in projects.iter().take(MAX_PROJECTS) {
        add(
            dir.join(".mcp.json"),
            ClientKind::ClaudeCode,
            servers_of(ClientKind::ClaudeCode),
        );
        for name in [".claude/settings.json", ".claude/settings.local.json"] {
            add(dir.join(name), ClientKind::ClaudeCode, Role::Settings);
        }
        add(
            dir.join(".vscode/tasks.json"),
            ClientKind::Vscode,
            Role::Tasks,
        );
        for kind in ClientKind::ALL {
            if let Some(path) = kind.project_path(dir) {
                add(path, kind, servers_of(kind));
            }
            for older in kind.older_paths(Some(dir)) {
                add(older, kind, old_vscode());
            }
        }
    }
    out
}

/// VS Code's older `servers` format (`Code/User/mcp.json`, `.vscode/mcp.json`).
fn old_vscode() -> Role {
    Role::Servers {
        format: Format::Json,
        key: "servers",
    }
}

/// The projects `~/.claude.json` lists (absolute paths of directories that exist), in its order.
pub fn projects_of(claude_json: &Value) -> Vec<PathBuf> {
    claude_json
        .get("projects")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(dir, _)| PathBuf::from(dir))
        .filter(|d| d.is_absolute() && d.is_dir())
        .take(MAX_PROJECTS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each project brings its hooks, tasks and MCP files; a path two clients share is read once.
    #[test]
    fn every_projects_files_are_watched_once() {
        let home = tempfile::tempdir().unwrap();
        let proj = home.path().join("proj");
        std::fs::create_dir(&proj).unwrap();
        let root = serde_json::json!({"projects": {proj.to_str().unwrap(): {}, "relative": {}, "/gone/nowhere": {}}});
        let projects = projects_of(&root);
        assert_eq!(projects, std::slice::from_ref(&proj));
        let t = targets(home.path(), &projects);
        for want in [
            ".mcp.json",
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".vscode/tasks.json",
            ".vscode/mcp.json",
            ".cursor/mcp.json",
        ] {
            assert!(t.iter().any(|x| x.path == proj.join(want)), "{want}");
        }
        let mut paths: Vec<&PathBuf> = t.iter().map(|x| &x.path).collect();
        let n = paths.len();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), n, "a path watched twice");
        let tasks = t.iter().find(|x| x.path.ends_with(".vscode/tasks.json"));
        assert_eq!(tasks.map(|x| x.role), Some(Role::Tasks));
    }
}

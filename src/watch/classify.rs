//! What a change to a client's file does: the parts of each kind of file that make something run
//! (a hook, a task run when a folder opens, an MCP server entry, a command-running or
//! permission setting), compared before and after. Only what was added or changed there counts;
//! everything else a client saves (its counters, its window sizes, a removed entry) is its own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clients::Format;

/// What a change does, the worst first in [`Ord`]: a hook runs at every session, a task when a
/// folder opens, a server when a client starts; `other` is a setting that runs a command or
/// widens what a client may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A command-running or permission setting (`statusLine`, `apiKeyHelper`, `permissions`…).
    Other,
    /// An MCP server entry, or an approval that makes a project's servers run.
    Server,
    /// A VS Code task run when the folder opens (`runOptions.runOn: "folderOpen"`).
    Task,
    /// A hook (`hooks` in Claude Code's or Gemini CLI's settings).
    Hook,
}

/// How a watched file is read and what in it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A client's MCP file: its entries under `key`.
    Servers {
        /// The file's format.
        format: Format,
        /// Where its entries are (`mcpServers`, `servers`, `context_servers`…).
        key: &'static str,
    },
    /// Claude Code's `~/.claude.json`: its user entries and each project's entries and approvals.
    ClaudeJson,
    /// Claude Code's `settings.json` / `settings.local.json`.
    Settings,
    /// VS Code's `.vscode/tasks.json`.
    Tasks,
}

/// Keys of Claude Code's settings that run a command or widen what it may do.
const SETTINGS_OTHER: &[&str] = &[
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "statusLine",
    "permissions",
    "env",
    "forceLoginMethod",
];

/// Keys that make a project's MCP servers run without asking.
const APPROVALS: &[&str] = &["enableAllProjectMcpServers", "enabledMcpjsonServers"];

/// The file's text as JSON, read the way its client reads it; `None` when it does not read.
pub fn parse(role: Role, text: &str) -> Option<Value> {
    if text.trim().is_empty() {
        return Some(Value::Object(Default::default()));
    }
    match role {
        Role::Servers {
            format: Format::Toml,
            ..
        } => crate::clients::codex::read(text).ok(),
        Role::Servers {
            format: Format::Yaml,
            ..
        } => crate::clients::yaml::read(text).ok(),
        _ => crate::clients::jsonc::read(text).ok(),
    }
}

/// Every part of `root` that makes something run, by a label the person reads.
pub fn items(role: Role, root: &Value) -> BTreeMap<String, (ChangeKind, Value)> {
    let mut out = BTreeMap::new();
    // A hook runs wherever a client reads one (Claude Code's settings, Gemini CLI's settings).
    if let Some(hooks) = root.get("hooks").and_then(Value::as_object) {
        for (event, v) in hooks {
            out.insert(format!("hook {event}"), (ChangeKind::Hook, v.clone()));
        }
    }
    match role {
        Role::Servers { key, .. } => {
            // Codex's reader gives its servers in the common shape, under `mcpServers`.
            servers(
                root.get(key).or_else(|| root.get("mcpServers")),
                "",
                &mut out,
            );
        }
        Role::ClaudeJson => {
            servers(root.get("mcpServers"), "", &mut out);
            if let Some(projects) = root.get("projects").and_then(Value::as_object) {
                for (dir, p) in projects {
                    let at = format!(" in {dir}");
                    servers(p.get("mcpServers"), &at, &mut out);
                    for key in APPROVALS {
                        if let Some(v) = p.get(*key) {
                            out.insert(format!("{key}{at}"), (ChangeKind::Server, v.clone()));
                        }
                    }
                }
            }
        }
        Role::Settings => {
            for key in APPROVALS {
                if let Some(v) = root.get(*key) {
                    out.insert((*key).to_owned(), (ChangeKind::Server, v.clone()));
                }
            }
            for key in SETTINGS_OTHER {
                if let Some(v) = root.get(*key) {
                    out.insert((*key).to_owned(), (ChangeKind::Other, v.clone()));
                }
            }
        }
        Role::Tasks => {
            let tasks = root.get("tasks").and_then(Value::as_array);
            for (i, t) in tasks.into_iter().flatten().enumerate() {
                let run_on = t.pointer("/runOptions/runOn").and_then(Value::as_str);
                if run_on == Some("folderOpen") {
                    let label = t
                        .get("label")
                        .and_then(Value::as_str)
                        .map(|l| format!("\"{l}\""))
                        .unwrap_or_else(|| format!("number {}", i + 1));
                    out.insert(
                        format!("task {label} (runs when the folder opens)"),
                        (ChangeKind::Task, t.clone()),
                    );
                }
            }
        }
    }
    out
}

fn servers(v: Option<&Value>, at: &str, out: &mut BTreeMap<String, (ChangeKind, Value)>) {
    for (name, entry) in v.and_then(Value::as_object).into_iter().flatten() {
        out.insert(
            format!("server \"{name}\"{at}"),
            (ChangeKind::Server, entry.clone()),
        );
    }
}

/// What `after` added or changed in the parts that run, against `before` (`None`: the file did
/// not exist): the worst kind and the labels; `None` when nothing that runs changed.
pub fn judge(
    role: Role,
    before: Option<&Value>,
    after: &Value,
) -> Option<(ChangeKind, Vec<String>)> {
    let old = before.map(|b| items(role, b)).unwrap_or_default();
    let mut worst = None;
    let mut what = Vec::new();
    for (label, (kind, v)) in items(role, after) {
        if old.get(&label).is_some_and(|(_, was)| *was == v) {
            continue;
        }
        worst = worst.max(Some(kind));
        what.push(if old.contains_key(&label) {
            format!("{label} changed")
        } else {
            format!("{label} added")
        });
    }
    worst.map(|w| (w, what))
}

/// The longest diff kept for an alert, in bytes: the rest is counted, not shown.
pub const MAX_DIFF: usize = 16 * 1024;

/// A unified diff of `before` and `after` (two lines of context), cut at [`MAX_DIFF`].
pub fn diff(before: &str, after: &str) -> String {
    let text = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(2)
        .header("before", "now")
        .to_string();
    if text.len() <= MAX_DIFF {
        return text;
    }
    let mut cut = MAX_DIFF;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let kept = match text[..cut].rfind('\n') {
        Some(n) => n + 1,
        None => cut,
    };
    let more = text[kept..].lines().count();
    format!("{}… ({more} more lines of the diff)\n", &text[..kept])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SERVERS: Role = Role::Servers {
        format: Format::Json,
        key: "mcpServers",
    };

    /// A hook, a folder-open task and a server entry are each told apart; what a client changes
    /// on its own (a counter, a removed entry, the order of keys) is not a change that runs.
    #[test]
    fn what_runs_is_told_apart_from_what_a_client_saves() {
        let before =
            json!({"numStartups": 1, "mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}});
        let same = json!({"mcpServers": {"a": {"command": "x"}}, "numStartups": 9});
        assert_eq!(judge(SERVERS, Some(&before), &same), None);
        let added = json!({"mcpServers": {"a": {"command": "x"}, "evil": {"command": "curl"}}});
        assert_eq!(
            judge(SERVERS, Some(&before), &added),
            Some((ChangeKind::Server, vec!["server \"evil\" added".to_owned()]))
        );
        let changed = json!({"mcpServers": {"a": {"command": "sh"}}});
        assert_eq!(
            judge(SERVERS, Some(&before), &changed).map(|j| j.1),
            Some(vec!["server \"a\" changed".to_owned()])
        );
        let hook = json!({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "sh x"}]}]}, "env": {"A": "1"}});
        assert_eq!(
            judge(Role::Settings, Some(&json!({})), &hook).map(|j| j.0),
            Some(ChangeKind::Hook)
        );
        let tasks = json!({"tasks": [{"label": "build"}, {"label": "w", "runOptions": {"runOn": "folderOpen"}}]});
        assert_eq!(
            judge(Role::Tasks, None, &tasks),
            Some((
                ChangeKind::Task,
                vec!["task \"w\" (runs when the folder opens) added".to_owned()]
            ))
        );
        let plain_task = json!({"tasks": [{"label": "build", "command": "make"}]});
        assert_eq!(judge(Role::Tasks, None, &plain_task), None);
        let approval = json!({"projects": {"/p": {"enabledMcpjsonServers": ["x"]}}});
        assert_eq!(
            judge(Role::ClaudeJson, Some(&json!({})), &approval).map(|j| j.0),
            Some(ChangeKind::Server)
        );
    }

    /// A diff longer than the bound is cut at a line and says how much is left out.
    #[test]
    fn a_long_diff_is_cut_and_counted() {
        let after: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let d = diff("", &after);
        assert!(d.len() <= MAX_DIFF + 64, "{}", d.len());
        assert!(d.ends_with("more lines of the diff)\n"), "{d}");
        assert!(diff("a\n", "a\nb\n").contains("+b"));
    }
}

//! The AI clients people connect to Gatehouse (Claude Desktop, Claude Code, Cursor, VS Code): where
//! each keeps its MCP config on this OS, its file format, and the entry that points it at Gatehouse.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

/// The name Gatehouse's own entry gets in a client's config.
pub const ENTRY_NAME: &str = "gatehouse";

/// An AI client Gatehouse knows how to import from and connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientKind {
    /// Claude Desktop (stdio only: it gets the `gatehouse connect` bridge).
    ClaudeDesktop,
    /// Claude Code.
    ClaudeCode,
    /// Cursor.
    Cursor,
    /// VS Code.
    Vscode,
}

impl ClientKind {
    /// Every client, in the order they are shown.
    pub const ALL: [ClientKind; 4] = [
        ClientKind::ClaudeDesktop,
        ClientKind::ClaudeCode,
        ClientKind::Cursor,
        ClientKind::Vscode,
    ];

    /// The client with this command-line id.
    pub fn parse(s: &str) -> Result<ClientKind, String> {
        ClientKind::ALL
            .into_iter()
            .find(|k| k.id() == s)
            .ok_or_else(|| {
                format!(
                    "unknown client \"{s}\": use one of {}",
                    ClientKind::ALL.map(|k| k.id()).join(", ")
                )
            })
    }

    /// The id used on the command line: `claude-desktop`, `claude-code`, `cursor`, `vscode`.
    pub fn id(self) -> &'static str {
        match self {
            ClientKind::ClaudeDesktop => "claude-desktop",
            ClientKind::ClaudeCode => "claude-code",
            ClientKind::Cursor => "cursor",
            ClientKind::Vscode => "vscode",
        }
    }

    /// The client's name for people.
    pub fn label(self) -> &'static str {
        match self {
            ClientKind::ClaudeDesktop => "Claude Desktop",
            ClientKind::ClaudeCode => "Claude Code",
            ClientKind::Cursor => "Cursor",
            ClientKind::Vscode => "VS Code",
        }
    }

    /// The key under which the client lists its servers.
    pub fn servers_key(self) -> &'static str {
        match self {
            ClientKind::Vscode => "servers",
            _ => "mcpServers",
        }
    }

    /// The client's user-level MCP config file on this OS.
    pub fn config_path(self) -> Option<PathBuf> {
        let home = dirs::home_dir();
        let config = dirs::config_dir();
        match self {
            ClientKind::ClaudeDesktop => {
                config.map(|c| c.join("Claude").join("claude_desktop_config.json"))
            }
            ClientKind::ClaudeCode => home.map(|h| h.join(".claude.json")),
            ClientKind::Cursor => home.map(|h| h.join(".cursor").join("mcp.json")),
            ClientKind::Vscode => config.map(|c| c.join("Code").join("User").join("mcp.json")),
        }
    }

    /// Whether the client can talk Streamable HTTP with a bearer header from its config file.
    /// Claude Desktop's file only launches stdio servers: it gets the `gatehouse connect` bridge.
    pub fn speaks_http(self) -> bool {
        !matches!(self, ClientKind::ClaudeDesktop)
    }
}

/// The entry (the value under `gatehouse`) that connects `kind` to the gateway.
pub fn entry(kind: ClientKind, url: &str, token: &str, gatehouse_bin: &Path) -> Value {
    let auth = json!({ "Authorization": format!("Bearer {token}") });
    match kind {
        ClientKind::ClaudeDesktop => json!({
            "command": gatehouse_bin.to_string_lossy(),
            "args": ["connect"],
        }),
        ClientKind::ClaudeCode | ClientKind::Vscode => json!({
            "type": "http",
            "url": url,
            "headers": auth,
        }),
        ClientKind::Cursor => json!({ "url": url, "headers": auth }),
    }
}

/// A stdio client's entry made to connect as client profile `client` (`gatehouse connect
/// --client ID`); an HTTP client's entry already carries the profile's token.
pub fn for_profile(mut entry: Value, client: Option<&str>) -> Value {
    if let (Some(id), Some(args)) = (client, entry.get_mut("args").and_then(Value::as_array_mut)) {
        args.push(json!("--client"));
        args.push(json!(id));
    }
    entry
}

/// A whole config file for `kind` holding only Gatehouse's entry: the snippet to paste.
pub fn snippet(kind: ClientKind, url: &str, token: &str, gatehouse_bin: &Path) -> Value {
    let mut servers = serde_json::Map::new();
    servers.insert(
        ENTRY_NAME.to_owned(),
        entry(kind, url, token, gatehouse_bin),
    );
    let mut root = serde_json::Map::new();
    root.insert(kind.servers_key().to_owned(), Value::Object(servers));
    Value::Object(root)
}

/// The headless `gatehouse` binary a stdio client should launch: next to the running program if it
/// is there (installed side by side, or in a cargo target dir), else whatever `gatehouse` is on PATH.
pub fn gatehouse_bin() -> PathBuf {
    let name = if cfg!(windows) {
        "gatehouse.exe"
    } else {
        "gatehouse"
    };
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Merges Gatehouse's entry into a client's file, keeping everything else; `managed` entries (by
/// normalised name) are removed. The file is backed up first and written atomically; when the
/// entry holds the bearer token the file ends up 0600 (or stricter, if it already was).
pub fn write_entry(
    path: &Path,
    kind: ClientKind,
    entry: &Value,
    managed: &[String],
) -> Result<(Option<PathBuf>, Vec<String>), String> {
    let mut root = if path.exists() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if text.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str::<Value>(&text).map_err(|e| {
                format!(
                    "{}:{}:{}: not valid JSON; fix it first — nothing was written",
                    path.display(),
                    e.line(),
                    e.column()
                )
            })?
        }
    } else {
        json!({})
    };
    let obj = root.as_object_mut().ok_or_else(|| {
        format!(
            "{}: expected a JSON object at the top; nothing was written",
            path.display()
        )
    })?;
    let servers = obj
        .entry(kind.servers_key())
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| {
            format!(
                "{}: \"{}\" is not an object; nothing was written",
                path.display(),
                kind.servers_key()
            )
        })?;
    let mut removed = Vec::new();
    servers.retain(|name, _| {
        let drop = name != ENTRY_NAME && managed.contains(&crate::import::normalise_id(name));
        if drop {
            removed.push(name.clone());
        }
        !drop
    });
    servers.insert(ENTRY_NAME.to_owned(), entry.clone());
    let backup = crate::import::backup(path)
        .map_err(|e| format!("cannot back up {}: {e}", path.display()))?;
    if let Some(dir) = path.parent() {
        crate::private::create_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&root).unwrap_or_default() + "\n";
    crate::config::write_atomic(path, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if kind.speaks_http() {
        // The entry holds the gateway's bearer token: the file is the person's only.
        make_private(path).map_err(|e| format!("cannot make {} private: {e}", path.display()))?;
    }
    Ok((backup, removed))
}

/// 0600, unless the file is already closed to group and others (a stricter mode is kept).
fn make_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_use_each_clients_shape() {
        let bin = Path::new("/opt/gatehouse");
        let url = "http://127.0.0.1:7723/mcp";
        let cd = snippet(ClientKind::ClaudeDesktop, url, "t", bin);
        assert_eq!(cd["mcpServers"]["gatehouse"]["args"], json!(["connect"]));
        assert!(cd["mcpServers"]["gatehouse"].get("headers").is_none());
        let vs = snippet(ClientKind::Vscode, url, "t", bin);
        assert_eq!(vs["servers"]["gatehouse"]["type"], "http");
        assert_eq!(
            vs["servers"]["gatehouse"]["headers"]["Authorization"],
            "Bearer t"
        );
        let cu = snippet(ClientKind::Cursor, url, "t", bin);
        assert_eq!(cu["mcpServers"]["gatehouse"]["url"], url);
        assert_eq!(ClientKind::parse("vscode"), Ok(ClientKind::Vscode));
        assert!(ClientKind::parse("emacs")
            .unwrap_err()
            .contains("claude-code"));
    }
}

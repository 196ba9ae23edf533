//! The AI clients people connect to Gatehouse (Claude Desktop, Claude Code, Cursor, VS Code): where
//! each keeps its MCP config on this OS, its file format, and the entry that points it at Gatehouse.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

/// The name Gatehouse's own entry gets in a client's config.
pub const ENTRY_NAME: &str = "gatehouse";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientKind {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
}

impl ClientKind {
    pub const ALL: [ClientKind; 4] = [
        ClientKind::ClaudeDesktop,
        ClientKind::ClaudeCode,
        ClientKind::Cursor,
        ClientKind::Vscode,
    ];

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

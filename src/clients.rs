//! The AI clients people connect to Gatehouse (Claude Desktop, Claude Code, Cursor, VS Code,
//! Codex): where
//! each keeps its MCP config on this OS, its file format, and the entry that points it at Gatehouse.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

pub mod codex;

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
    /// Codex (TOML; stdio: it gets the `gatehouse connect` bridge, no token in its file).
    Codex,
}

impl ClientKind {
    /// Every client, in the order they are shown.
    pub const ALL: [ClientKind; 5] = [
        ClientKind::ClaudeDesktop,
        ClientKind::ClaudeCode,
        ClientKind::Cursor,
        ClientKind::Vscode,
        ClientKind::Codex,
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
            ClientKind::Codex => "codex",
        }
    }

    /// The client's name for people.
    pub fn label(self) -> &'static str {
        match self {
            ClientKind::ClaudeDesktop => "Claude Desktop",
            ClientKind::ClaudeCode => "Claude Code",
            ClientKind::Cursor => "Cursor",
            ClientKind::Vscode => "VS Code",
            ClientKind::Codex => "Codex",
        }
    }

    /// The key under which the client lists its servers.
    pub fn servers_key(self) -> &'static str {
        match self {
            ClientKind::Vscode => "servers",
            ClientKind::Codex => "mcp_servers",
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
            ClientKind::Codex => codex::config_path(),
        }
    }

    /// Whether the client can talk Streamable HTTP with a bearer header from its config file.
    /// Claude Desktop's file only launches stdio servers: it gets the `gatehouse connect` bridge.
    pub fn speaks_http(self) -> bool {
        // Codex takes a bearer token only from its environment or a header table: the bridge
        // (which asks the hub for the token) is what works without a token in its file.
        !matches!(self, ClientKind::ClaudeDesktop | ClientKind::Codex)
    }

    /// Whether the client's file is TOML (Codex) rather than JSON.
    pub fn is_toml(self) -> bool {
        matches!(self, ClientKind::Codex)
    }

    /// A client file's text as JSON (a TOML file read the way `codex` reads it).
    pub fn parse_file(self, text: &str) -> Result<Value, String> {
        if self.is_toml() {
            codex::read(text)
        } else {
            serde_json::from_str(text).map_err(|e| e.to_string())
        }
    }

    /// A snippet as the text to paste into the client's file.
    pub fn render(self, snippet: &Value) -> String {
        if self.is_toml() {
            let entry = snippet
                .get(self.servers_key())
                .and_then(|s| s.get(ENTRY_NAME))
                .cloned()
                .unwrap_or_default();
            codex::write("", ENTRY_NAME, &entry, &[])
                .map(|(t, _)| t)
                .unwrap_or_default()
        } else {
            serde_json::to_string_pretty(snippet).unwrap_or_default()
        }
    }
}

/// Whether a client's own file connects it to this Gatehouse.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Setup {
    /// The client's file is not there (the client may not be installed).
    NoFile,
    /// The file has no `gatehouse` entry.
    NotSetUp,
    /// The entry points somewhere else (another port, an old token).
    Elsewhere,
    /// The entry reaches this gateway, as `profile` (`default`: the gateway token).
    Configured {
        /// The client profile its token (or `--client`) names.
        profile: String,
    },
}

/// What the client's file at `path` says about reaching the gateway at `url`; `tokens` are
/// (profile, token) pairs, the gateway token as `default`. Reads at most 8 MiB, a regular file only.
pub fn setup(kind: ClientKind, path: &Path, url: &str, tokens: &[(String, String)]) -> Setup {
    let text = match crate::client_file::read(path) {
        Ok(t) => t,
        Err(crate::client_file::ReadError::Missing(_)) => return Setup::NoFile,
        Err(_) => return Setup::NotSetUp,
    };
    let Ok(v) = kind.parse_file(&text) else {
        return Setup::NotSetUp;
    };
    let Some(entry) = v.get(kind.servers_key()).and_then(|s| s.get(ENTRY_NAME)) else {
        return Setup::NotSetUp;
    };
    if kind.speaks_http() {
        let presented = entry
            .pointer("/headers/Authorization")
            .and_then(Value::as_str)
            .and_then(|a| a.strip_prefix("Bearer "));
        let profile = presented.and_then(|t| {
            tokens
                .iter()
                .find(|(_, tok)| tok == t)
                .map(|(p, _)| p.clone())
        });
        match (
            entry.get("url").and_then(Value::as_str) == Some(url),
            profile,
        ) {
            (true, Some(profile)) => Setup::Configured { profile },
            _ => Setup::Elsewhere,
        }
    } else {
        let args: Vec<&str> = entry
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !args.contains(&"connect") {
            return Setup::Elsewhere;
        }
        let profile = args
            .iter()
            .position(|a| *a == "--client")
            .and_then(|i| args.get(i + 1))
            .map_or("default".to_owned(), |p| (*p).to_owned());
        Setup::Configured { profile }
    }
}

/// The entry (the value under `gatehouse`) that connects `kind` to the gateway.
pub fn entry(kind: ClientKind, url: &str, token: &str, gatehouse_bin: &Path) -> Value {
    let auth = json!({ "Authorization": format!("Bearer {token}") });
    match kind {
        ClientKind::ClaudeDesktop | ClientKind::Codex => json!({
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
    if kind.is_toml() {
        return write_toml_entry(path, entry, managed);
    }
    let mut root = if path.exists() {
        let text = crate::client_file::read(path).map_err(|e| e.to_string())?;
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
        let drop = name != ENTRY_NAME && managed.contains(&crate::naming::normalise_id(name));
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

/// [`write_entry`] for a TOML file (Codex): edited in place, every other table, key and comment
/// kept; backed up first, written atomically.
fn write_toml_entry(
    path: &Path,
    entry: &Value,
    managed: &[String],
) -> Result<(Option<PathBuf>, Vec<String>), String> {
    let text = match crate::client_file::read(path) {
        Ok(t) => t,
        Err(crate::client_file::ReadError::Missing(_)) => String::new(),
        Err(e) => return Err(e.to_string()),
    };
    let (text, removed) = codex::write(&text, ENTRY_NAME, entry, managed)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let backup = crate::import::backup(path)
        .map_err(|e| format!("cannot back up {}: {e}", path.display()))?;
    if let Some(dir) = path.parent() {
        crate::private::create_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    crate::config::write_atomic(path, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
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

    /// A client's own file is read for whether it reaches this Gatehouse, and as which profile.
    #[test]
    fn a_clients_file_says_whether_it_reaches_this_gatehouse() {
        let dir = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:7723/mcp";
        let tokens = vec![
            ("default".to_owned(), "t-default".to_owned()),
            ("cursor".to_owned(), "t-cursor".to_owned()),
        ];
        let f = dir.path().join("mcp.json");
        assert_eq!(setup(ClientKind::Cursor, &f, url, &tokens), Setup::NoFile);
        std::fs::write(&f, r#"{"mcpServers": {"other": {"command": "x"}}}"#).unwrap();
        assert_eq!(setup(ClientKind::Cursor, &f, url, &tokens), Setup::NotSetUp);
        let write = |e: Value| {
            std::fs::write(&f, json!({"mcpServers": {"gatehouse": e}}).to_string()).unwrap()
        };
        write(entry(
            ClientKind::Cursor,
            url,
            "t-cursor",
            Path::new("gatehouse"),
        ));
        assert_eq!(
            setup(ClientKind::Cursor, &f, url, &tokens),
            Setup::Configured {
                profile: "cursor".into()
            }
        );
        write(entry(
            ClientKind::Cursor,
            url,
            "an-old-token",
            Path::new("gatehouse"),
        ));
        assert_eq!(
            setup(ClientKind::Cursor, &f, url, &tokens),
            Setup::Elsewhere
        );
        write(entry(
            ClientKind::Cursor,
            "http://127.0.0.1:1/mcp",
            "t-default",
            Path::new("g"),
        ));
        assert_eq!(
            setup(ClientKind::Cursor, &f, url, &tokens),
            Setup::Elsewhere
        );
        write(for_profile(
            entry(ClientKind::ClaudeDesktop, url, "", Path::new("gatehouse")),
            Some("desk"),
        ));
        assert_eq!(
            setup(ClientKind::ClaudeDesktop, &f, url, &tokens),
            Setup::Configured {
                profile: "desk".into()
            }
        );
    }
}

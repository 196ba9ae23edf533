//! The AI clients people connect to Gatehouse (`kinds.rs`: Claude Desktop, Claude Code, Cursor,
//! VS Code, Codex, Gemini CLI, Windsurf, Zed, opencode, Goose, Cline, Roo Code, GitHub Copilot
//! CLI, LM Studio): whether a client's file reaches this Gatehouse, the entry that points it here
//! and writing it into the client's own file with everything else kept.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub mod codex;
pub mod jsonc;
mod kinds;
#[cfg(test)]
mod kinds_tests;
pub mod yaml;

pub use kinds::{ClientKind, Format};

/// The name Gatehouse's own entry gets in a client's config.
pub const ENTRY_NAME: &str = "gatehouse";

/// Whether a client's own file connects it to this Gatehouse.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Setup {
    /// The client is here (its program or its settings directory) but has no config file yet.
    NoFile,
    /// Neither the client's program nor its settings directory is on this machine.
    NotInstalled,
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
        Err(crate::client_file::ReadError::Missing(_)) if kind.installed() => return Setup::NoFile,
        Err(crate::client_file::ReadError::Missing(_)) => return Setup::NotInstalled,
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
        let at = ["url", "httpUrl", "serverUrl"]
            .iter()
            .find_map(|k| entry.get(k).and_then(Value::as_str));
        match (at == Some(url), profile) {
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
    kind.entry(url, token, gatehouse_bin)
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
    let text = match crate::client_file::read(path) {
        Ok(t) => t,
        Err(crate::client_file::ReadError::Missing(_)) => String::new(),
        Err(e) => return Err(e.to_string()),
    };
    let edited = match kind.format() {
        Format::Toml => codex::write(&text, ENTRY_NAME, entry, managed),
        Format::Yaml => yaml::write(&text, kind.servers_key(), ENTRY_NAME, entry, managed),
        Format::Json => jsonc::write(&text, kind.servers_key(), ENTRY_NAME, entry, managed),
    };
    let (text, removed) = edited.map_err(|e| format!("{}: {e}", path.display()))?;
    let backup = crate::import::backup(path)
        .map_err(|e| format!("cannot back up {}: {e}", path.display()))?;
    if let Some(dir) = path.parent() {
        crate::private::create_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
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
        // No file: on this machine or not (which depends on the machine the test runs on).
        assert!(matches!(
            setup(ClientKind::Cursor, &f, url, &tokens),
            Setup::NoFile | Setup::NotInstalled
        ));
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

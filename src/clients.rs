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
pub mod managed;
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

/// A stdio client's entry made to reach a hub on a control socket of its own (`--control`,
/// `GATEHOUSE_CONTROL`): `--control PATH` first in its arguments, the form every client passes
/// through (Codex, for one, drops the environment a variable would travel in). The entry is
/// unchanged for the default socket and for an HTTP client (its URL is the hub's).
pub fn for_control(mut entry: Value, socket: &Path) -> Value {
    if socket == crate::control::locate::derived_socket_path() {
        return entry;
    }
    if let Some(args) = entry.get_mut("args").and_then(Value::as_array_mut) {
        if args.iter().any(|a| a == "connect") {
            args.splice(0..0, [json!("--control"), json!(socket.to_string_lossy())]);
        }
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
/// normalised name) are removed. The one way every writer (the CLI's `client-config --write`,
/// Connect's Write, Import's "Remove them from this file") edits a client's file
/// (`client_file::edit`): never over a save the client made meanwhile, its byte-order mark, line
/// ends, mode and owner kept; when the entry holds the bearer token the file ends up 0600 (or
/// stricter, if it already was). What was replaced is kept as a copy, with the credentials of
/// the removed entries (now in the keychain) scrubbed from it.
pub fn write_entry(
    path: &Path,
    kind: ClientKind,
    entry: &Value,
    managed: &[String],
) -> Result<Written, String> {
    write_entry_noting(path, kind, entry, managed, None)
}

/// [`write_entry`], telling `note` the bytes before they go in place (the hub's watch on the
/// clients' files: `HubHandle::write_client_entry`).
pub fn write_entry_noting(
    path: &Path,
    kind: ClientKind,
    entry: &Value,
    managed: &[String],
    note: Option<crate::client_file::edit::Note>,
) -> Result<Written, String> {
    if let Some(refused) = managed_refusal(kind, entry) {
        return Err(refused);
    }
    let edit = |text: &str| {
        let (out, removed) = match kind.format() {
            Format::Toml => codex::write(text, ENTRY_NAME, entry, managed),
            Format::Yaml => yaml::write(text, kind.servers_key(), ENTRY_NAME, entry, managed),
            Format::Json => jsonc::write(text, kind.servers_key(), ENTRY_NAME, entry, managed),
        }?;
        // The credentials of what is removed, found in the text edited: scrubbed from the copy.
        let scrub = if removed.is_empty() {
            Vec::new()
        } else {
            removed_credentials(kind, text, &removed)
        };
        Ok(crate::client_file::edit::Change {
            text: out,
            result: removed,
            scrub,
            exact: None,
        })
    };
    let opts = crate::client_file::edit::Options {
        // The entry holds the gateway's bearer token: the file is the person's only.
        private: kind.speaks_http(),
        // Claude Code locks its `~/.claude.json` for its own saves: taken the same way.
        lock: (kind == ClientKind::ClaudeCode).then(|| crate::client_file::lock::lock_dir_of(path)),
        note,
    };
    let (removed, done) = crate::client_file::edit::edit(path, &opts, edit)?;
    Ok(Written {
        scrubbed: done.scrubbed,
        backup: done.backup,
        removed,
    })
}

/// An entry Claude Code's managed settings would never load: said, not written (checked by
/// every writer, and by the CLI before it asks the hub to write — the managed settings it sees
/// are the machine's, as Claude Code started from there sees them).
pub fn managed_refusal(kind: ClientKind, entry: &Value) -> Option<String> {
    if kind != ClientKind::ClaudeCode {
        return None;
    }
    let url = entry.get("url").and_then(Value::as_str);
    let why = self::managed::blocks(&self::managed::managed_dir(), ENTRY_NAME, url)?;
    Some(format!(
        "Claude Code would not load Gatehouse's entry: {why}; nothing was written"
    ))
}

/// What [`write_entry`] did.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Written {
    /// The copy of the file as it was (none when it did not exist or nothing changed).
    pub backup: Option<PathBuf>,
    /// The entries removed, by their name in the file.
    pub removed: Vec<String>,
    /// Whether the removed entries' credentials were replaced in the copy by
    /// [`crate::client_file::backup::MOVED`].
    pub scrubbed: bool,
}

impl Written {
    /// Where the copy is, for the person: `None` when none was made.
    pub fn backup_line(&self) -> Option<String> {
        let b = self.backup.as_ref()?;
        let kept = crate::client_file::backup::KEEP;
        Some(if self.scrubbed {
            format!(
                "backup: {} (the removed entries' credentials replaced by \"{}\"; at most {kept} copies are kept)",
                b.display(),
                crate::client_file::backup::MOVED,
            )
        } else {
            format!("backup: {} (at most {kept} copies are kept)", b.display())
        })
    }
}

/// The credential-looking values (by their variable or header name, or a credential-bearing
/// argument) of the entries named `removed` (as the file names them) in a client's file.
fn removed_credentials(kind: ClientKind, text: &str, removed: &[String]) -> Vec<String> {
    let Ok(root) = kind.parse_file(text) else {
        return Vec::new();
    };
    // Codex's reader gives its servers in the common shape, under `mcpServers`.
    let Some(servers) = root
        .get(kind.servers_key())
        .or_else(|| root.get("mcpServers"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, entry) in servers {
        if removed.contains(name) {
            secret_values(entry, &mut out);
        }
    }
    out
}

fn secret_values(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match v {
                    Value::String(s) if crate::credentials::looks_like_credential(k) => {
                        out.push(s.clone());
                        // `Bearer xyz`: the token alone too.
                        if let Some((_, t)) = s.split_once(' ') {
                            out.push(t.to_owned());
                        }
                    }
                    other => secret_values(other, out),
                }
            }
        }
        Value::Array(a) => {
            let words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            let shown = crate::credentials::hide_credential_args(&words);
            for (w, s) in words.iter().zip(&shown) {
                if *w != s {
                    out.push((*w).to_owned());
                }
            }
            for x in a {
                secret_values(x, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry for a hub on a socket of its own carries it as `--control PATH` before
    /// `connect` (an argument every client passes through); the default socket and an HTTP
    /// entry are left as they are.
    #[test]
    fn an_entry_carries_a_control_socket_of_its_own() {
        let bin = Path::new("/opt/gatehouse");
        let own = Path::new("/srv/hub/control.sock");
        let codex = for_control(
            for_profile(entry(ClientKind::Codex, "", "", bin), Some("codex")),
            own,
        );
        assert_eq!(
            codex["args"],
            json!([
                "--control",
                "/srv/hub/control.sock",
                "connect",
                "--client",
                "codex"
            ])
        );
        let default = crate::control::locate::derived_socket_path();
        let plain = for_control(entry(ClientKind::Goose, "", "", bin), &default);
        assert_eq!(plain["args"], json!(["connect"]));
        let http = entry(ClientKind::Cursor, "http://127.0.0.1:7/mcp", "t", bin);
        assert_eq!(for_control(http.clone(), own), http);
    }

    #[test]
    fn snippets_use_each_clients_shape() {
        let bin = Path::new("/opt/gatehouse");
        let url = "http://127.0.0.1:7723/mcp";
        let cd = snippet(ClientKind::ClaudeDesktop, url, "t", bin);
        assert_eq!(cd["mcpServers"]["gatehouse"]["args"], json!(["connect"]));
        assert!(cd["mcpServers"]["gatehouse"].get("headers").is_none());
        // VS Code's portable format: `mcpServers`, as in its workspace `.mcp.json`.
        let vs = snippet(ClientKind::Vscode, url, "t", bin);
        assert_eq!(vs["mcpServers"]["gatehouse"]["type"], "http");
        assert_eq!(
            vs["mcpServers"]["gatehouse"]["headers"]["Authorization"],
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

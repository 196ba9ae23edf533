//! Every AI client Gatehouse reads and writes: its id, its name, where it keeps its servers on
//! this OS (user and project files), under which key, in which format, and the entry that
//! connects it — HTTP with a bearer header where the client takes one from its file, else the
//! `gatehouse connect` bridge (no token in the file).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

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
    /// Gemini CLI (`type: http`, as its own `gemini mcp add` writes).
    GeminiCli,
    /// Windsurf (`serverUrl`).
    Windsurf,
    /// Zed (`context_servers` in its settings, JSON with comments; the bridge).
    Zed,
    /// opencode (`mcp`, `type: remote`).
    Opencode,
    /// Goose (YAML `extensions`; the bridge).
    Goose,
    /// Cline (VS Code extension; the bridge).
    Cline,
    /// Roo Code (VS Code extension; the bridge).
    RooCode,
    /// GitHub Copilot CLI.
    CopilotCli,
    /// LM Studio (Cursor's notation).
    LmStudio,
}

/// What a client's file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON, comments allowed (JSONC): edited in place, comments kept.
    Json,
    /// TOML (Codex): edited in place with a format-preserving editor.
    Toml,
    /// YAML (Goose).
    Yaml,
}

impl ClientKind {
    /// Every client, in the order they are shown.
    pub const ALL: [ClientKind; 14] = [
        ClientKind::ClaudeDesktop,
        ClientKind::ClaudeCode,
        ClientKind::Cursor,
        ClientKind::Vscode,
        ClientKind::Codex,
        ClientKind::GeminiCli,
        ClientKind::Windsurf,
        ClientKind::Zed,
        ClientKind::Opencode,
        ClientKind::Goose,
        ClientKind::Cline,
        ClientKind::RooCode,
        ClientKind::CopilotCli,
        ClientKind::LmStudio,
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

    /// The id used on the command line (and the profile `client-config --write` makes).
    pub fn id(self) -> &'static str {
        match self {
            ClientKind::ClaudeDesktop => "claude-desktop",
            ClientKind::ClaudeCode => "claude-code",
            ClientKind::Cursor => "cursor",
            ClientKind::Vscode => "vscode",
            ClientKind::Codex => "codex",
            ClientKind::GeminiCli => "gemini",
            ClientKind::Windsurf => "windsurf",
            ClientKind::Zed => "zed",
            ClientKind::Opencode => "opencode",
            ClientKind::Goose => "goose",
            ClientKind::Cline => "cline",
            ClientKind::RooCode => "roo-code",
            ClientKind::CopilotCli => "copilot",
            ClientKind::LmStudio => "lm-studio",
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
            ClientKind::GeminiCli => "Gemini CLI",
            ClientKind::Windsurf => "Windsurf",
            ClientKind::Zed => "Zed",
            ClientKind::Opencode => "opencode",
            ClientKind::Goose => "Goose",
            ClientKind::Cline => "Cline",
            ClientKind::RooCode => "Roo Code",
            ClientKind::CopilotCli => "GitHub Copilot CLI",
            ClientKind::LmStudio => "LM Studio",
        }
    }

    /// The key under which the client lists its servers.
    pub fn servers_key(self) -> &'static str {
        match self {
            ClientKind::Codex => "mcp_servers",
            ClientKind::Zed => "context_servers",
            ClientKind::Opencode => "mcp",
            ClientKind::Goose => "extensions",
            _ => "mcpServers",
        }
    }

    /// The format of the client's file.
    pub fn format(self) -> Format {
        match self {
            ClientKind::Codex => Format::Toml,
            ClientKind::Goose => Format::Yaml,
            _ => Format::Json,
        }
    }

    /// The client's user-level MCP config file on this OS.
    pub fn config_path(self) -> Option<PathBuf> {
        let home = dirs::home_dir();
        let config = dirs::config_dir();
        let vscode_storage = |ext: &str, file: &str| {
            config.as_ref().map(|c| {
                c.join("Code/User/globalStorage")
                    .join(ext)
                    .join("settings")
                    .join(file)
            })
        };
        match self {
            ClientKind::ClaudeDesktop => {
                config.map(|c| c.join("Claude").join("claude_desktop_config.json"))
            }
            ClientKind::ClaudeCode => home.map(|h| h.join(".claude.json")),
            ClientKind::Cursor => home.map(|h| h.join(".cursor/mcp.json")),
            // VS Code's portable format (its MCP reference of 2026-11-25), shared with Copilot
            // CLI; `Code/User/mcp.json` is still read ([`ClientKind::older_paths`]).
            ClientKind::Vscode => home.map(|h| h.join(".copilot/mcp-config.json")),
            ClientKind::Codex => super::codex::config_path(),
            ClientKind::GeminiCli => home.map(|h| h.join(".gemini/settings.json")),
            ClientKind::Windsurf => home.map(|h| h.join(".codeium/windsurf/mcp_config.json")),
            ClientKind::Zed => config.map(|c| c.join("zed/settings.json")),
            ClientKind::Opencode => config.map(|c| c.join("opencode/opencode.json")),
            ClientKind::Goose => config.map(|c| c.join("goose/config.yaml")),
            ClientKind::Cline => {
                vscode_storage("saoudrizwan.claude-dev", "cline_mcp_settings.json")
            }
            ClientKind::RooCode => {
                vscode_storage("rooveterinaryinc.roo-cline", "mcp_settings.json")
            }
            ClientKind::CopilotCli => home.map(|h| h.join(".copilot/mcp-config.json")),
            ClientKind::LmStudio => home.map(|h| h.join(".lmstudio/mcp.json")),
        }
    }

    /// The client's project-level file in directory `dir`, where it has one (Claude Code's
    /// `.mcp.json` is read with its own scopes, `import/claude_code.rs`).
    pub fn project_path(self, dir: &Path) -> Option<PathBuf> {
        let rel = match self {
            ClientKind::Cursor => ".cursor/mcp.json",
            ClientKind::Vscode => ".mcp.json",
            ClientKind::GeminiCli => ".gemini/settings.json",
            ClientKind::Opencode => "opencode.json",
            ClientKind::RooCode => ".roo/mcp.json",
            _ => return None,
        };
        Some(dir.join(rel))
    }

    /// Which files the client reads now, where that changed lately (said by Connect and
    /// `client-config`).
    pub fn reads(self) -> Option<&'static str> {
        match self {
            ClientKind::Vscode => Some(
                "VS Code reads the portable format now (its MCP reference of 2026-11-25): ~/.copilot/mcp-config.json, shared with Copilot CLI, and a workspace's .mcp.json; Code/User/mcp.json and .vscode/mcp.json are its older format, which Import still reads",
            ),
            _ => None,
        }
    }

    /// Files the client used to read and may still (VS Code's `servers` format: the profile's
    /// `Code/User/mcp.json` and a workspace's `.vscode/mcp.json`, now "local compatibility"):
    /// imported from, never written.
    pub fn older_paths(self, dir: Option<&Path>) -> Vec<PathBuf> {
        match self {
            ClientKind::Vscode => dirs::config_dir()
                .map(|c| c.join("Code/User/mcp.json"))
                .into_iter()
                .chain(dir.map(|d| d.join(".vscode/mcp.json")))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// What the client calls the scope of its user-level file (`user`, or `global` where its
    /// documentation says so).
    pub fn user_scope(self) -> &'static str {
        match self {
            ClientKind::Cursor
            | ClientKind::Windsurf
            | ClientKind::Opencode
            | ClientKind::Cline
            | ClientKind::RooCode => "global",
            _ => "user",
        }
    }

    /// What the client calls the scope of its project-level file (VS Code: `workspace`).
    pub fn project_scope(self) -> &'static str {
        match self {
            ClientKind::Vscode => "workspace",
            _ => "project",
        }
    }

    /// Whether the client takes Streamable HTTP with a bearer header from its config file. The
    /// others get the `gatehouse connect` bridge: Claude Desktop's file launches stdio servers
    /// only; Codex takes a token only from its environment or a header table; Zed, Goose, Cline
    /// and Roo Code are given the one entry every version of them runs.
    pub fn speaks_http(self) -> bool {
        !matches!(
            self,
            ClientKind::ClaudeDesktop
                | ClientKind::Codex
                | ClientKind::Zed
                | ClientKind::Goose
                | ClientKind::Cline
                | ClientKind::RooCode
        )
    }

    /// Whether the client's file is TOML (Codex) rather than JSON.
    pub fn is_toml(self) -> bool {
        self.format() == Format::Toml
    }

    /// The entry that connects this client: over HTTP to `url` with `token`, or the bridge
    /// `gatehouse_bin connect`.
    pub fn entry(self, url: &str, token: &str, gatehouse_bin: &Path) -> Value {
        let auth = json!({ "Authorization": format!("Bearer {token}") });
        let bin = gatehouse_bin.to_string_lossy();
        match self {
            ClientKind::ClaudeCode | ClientKind::Vscode => {
                json!({"type": "http", "url": url, "headers": auth})
            }
            ClientKind::Cursor | ClientKind::LmStudio => json!({"url": url, "headers": auth}),
            ClientKind::GeminiCli => json!({"type": "http", "url": url, "headers": auth}),
            ClientKind::Windsurf => json!({"serverUrl": url, "headers": auth}),
            ClientKind::Opencode => {
                json!({"type": "remote", "url": url, "headers": auth, "enabled": true})
            }
            ClientKind::CopilotCli => {
                json!({"type": "http", "url": url, "headers": auth, "tools": ["*"]})
            }
            ClientKind::Goose => json!({
                "name": super::ENTRY_NAME, "type": "stdio", "cmd": bin, "args": ["connect"],
                "enabled": true, "timeout": 300
            }),
            ClientKind::Cline | ClientKind::RooCode => {
                json!({"command": bin, "args": ["connect"], "disabled": false})
            }
            ClientKind::ClaudeDesktop | ClientKind::Codex | ClientKind::Zed => {
                json!({"command": bin, "args": ["connect"]})
            }
        }
    }

    /// A client file's text as JSON (TOML and YAML read the way the client reads them).
    pub fn parse_file(self, text: &str) -> Result<Value, String> {
        match self.format() {
            Format::Toml => super::codex::read(text),
            Format::Yaml => super::yaml::read(text),
            Format::Json => super::jsonc::read(text),
        }
    }

    /// A snippet as the text to paste into the client's file.
    pub fn render(self, snippet: &Value) -> String {
        let entry = || {
            snippet
                .get(self.servers_key())
                .and_then(|s| s.get(super::ENTRY_NAME))
                .cloned()
                .unwrap_or_default()
        };
        match self.format() {
            Format::Toml => super::codex::write("", super::ENTRY_NAME, &entry(), &[])
                .map(|(t, _)| t)
                .unwrap_or_default(),
            Format::Yaml => serde_norway::to_string(snippet).unwrap_or_default(),
            Format::Json => serde_json::to_string_pretty(snippet).unwrap_or_default(),
        }
    }

    /// Whether the client is on this machine: its program on PATH, or its settings directory.
    pub fn installed(self) -> bool {
        let program = match self {
            ClientKind::ClaudeCode => "claude",
            ClientKind::Codex => "codex",
            ClientKind::GeminiCli => "gemini",
            ClientKind::Opencode => "opencode",
            ClientKind::Goose => "goose",
            ClientKind::CopilotCli => "copilot",
            ClientKind::Cursor => "cursor",
            ClientKind::Vscode => "code",
            ClientKind::Windsurf => "windsurf",
            ClientKind::Zed => "zed",
            ClientKind::LmStudio => "lms",
            _ => "",
        };
        let on_path = !program.is_empty()
            && std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()));
        // Claude Code's file sits in the home directory itself: its own directory tells.
        let dir = match self {
            ClientKind::ClaudeCode => dirs::home_dir().map(|h| h.join(".claude")),
            _ => self
                .config_path()
                .and_then(|p| p.parent().map(Path::to_path_buf)),
        };
        on_path || dir.is_some_and(|d| d.is_dir())
    }
}

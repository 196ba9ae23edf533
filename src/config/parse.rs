//! Reading a config: the loose shape each server entry is parsed into first, then validated so
//! errors can say what to do; secret references; and errors with file, line, column and a fix.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::{
    Config, EnvValue, OAuthSettings, RemoteAuth, RemoteTransport, ServerConfig, StdioTransport,
    ToolPolicy, Transport, DEFAULT_CALL_TIMEOUT_SECS, DEFAULT_STARTUP_TIMEOUT_SECS,
    MAX_CALL_TIMEOUT_SECS, MAX_STARTUP_TIMEOUT_SECS,
};

// ---- server entry: parsed loosely, then validated so errors can say what to do ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, EnvValue>>,
    cwd: Option<String>,
    url: Option<String>,
    headers: Option<BTreeMap<String, EnvValue>>,
    allow_insecure: Option<bool>,
    /// `"oauth"` or `"none"` (remote servers).
    auth: Option<String>,
    oauth: Option<RawOAuth>,
    enabled: Option<bool>,
    requires_approval: Option<bool>,
    #[serde(default)]
    tools: BTreeMap<String, ToolPolicy>,
    startup_timeout_secs: Option<u64>,
    call_timeout_secs: Option<u64>,
    /// Client-file spelling of `enabled: false` (Claude, Cursor, GAIA).
    disabled: Option<bool>,
    /// A display name.
    name: Option<String>,
    /// VS Code's transport field (`stdio`, `http`, `sse`); `transport` is GAIA's spelling.
    #[serde(rename = "type")]
    kind: Option<String>,
    transport: Option<String>,
    /// Tools the person expects (Gremia).
    tools_used: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOAuth {
    client_id: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
}

/// A remote entry's `"auth"` and `"oauth"`, checked together.
fn remote_auth(auth: Option<&str>, oauth: Option<RawOAuth>) -> Result<RemoteAuth, EntryError> {
    let settings = match oauth {
        Some(o) => {
            if o.client_id
                .as_deref()
                .is_some_and(|c| c.trim().is_empty() || c.len() > 1000)
            {
                return Err(at("oauth", "\"oauth\".\"client_id\" must be 1 to 1000 characters: the client id the authorization server gave you (or leave it out to register automatically)"));
            }
            if let Some(bad) = o.scopes.iter().find(|s| {
                s.is_empty()
                    || !s
                        .bytes()
                        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
            }) {
                return Err(at("oauth", format!("invalid scope \"{bad}\" in \"oauth\".\"scopes\": a scope is one word of printable ASCII (no spaces, quotes or backslashes)")));
            }
            Some(OAuthSettings {
                client_id: o.client_id,
                scopes: o.scopes,
            })
        }
        None => None,
    };
    match (auth, settings) {
        (None, None) => Ok(RemoteAuth::Auto),
        (None | Some("oauth"), s) => Ok(RemoteAuth::OAuth(s.unwrap_or_default())),
        (Some("none"), None) => Ok(RemoteAuth::None),
        (Some("none"), Some(_)) => Err(at("oauth", "\"oauth\" settings with \"auth\": \"none\": remove one of them")),
        (Some(other), _) => Err(at("auth", format!("unknown \"auth\" \"{other}\": use \"oauth\" (sign in with the server's authorization server) or \"none\" (only the configured headers); leave it out to sign in when the server asks"))),
    }
}

/// The transport a `type`/`transport` field names, checked against `command`/`url`.
fn check_kind(kind: &str, has_command: bool) -> Result<(), String> {
    let stdio = match kind.to_ascii_lowercase().as_str() {
        "stdio" => true,
        "http" | "sse" | "streamable-http" | "streamablehttp" | "streamable_http" => false,
        other => {
            return Err(format!(
                "unknown transport \"{other}\": use \"stdio\" with \"command\", or \"http\" / \"sse\" with \"url\" (or leave it out: Gatehouse tells them apart)"
            ))
        }
    };
    match (stdio, has_command) {
        (true, false) => Err(format!("the transport is \"{kind}\" but there is no \"command\": add the program to run, or set \"url\" and drop the transport")),
        (false, true) => Err(format!("the transport is \"{kind}\" but the server has a \"command\": remote servers need \"url\"")),
        _ => Ok(()),
    }
}

/// A refused server entry: what is wrong and, when it is about one field of the entry, which
/// (so a form can show the message next to that field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryError {
    /// The entry's key the message is about (`command`, `url`, `env`, `id`, …), when there is one.
    pub field: Option<&'static str>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// An error about one field.
pub(super) fn at(field: &'static str, message: impl Into<String>) -> EntryError {
    EntryError {
        field: Some(field),
        message: message.into(),
    }
}

/// One server entry in the file format, validated as a load would.
pub fn parse_entry(entry: &serde_json::Value) -> Result<ServerConfig, EntryError> {
    let raw = RawServer::deserialize(entry).map_err(|e| {
        let m = e.to_string();
        // serde's message has no path: the maps of references are tried alone to find the
        // field a bad reference is in.
        let bad = |key: &str| {
            entry
                .get(key)
                .is_some_and(|v| BTreeMap::<String, EnvValue>::deserialize(v).is_err())
        };
        let field = ["env", "headers"].into_iter().find(|k| bad(k));
        EntryError {
            field,
            message: match m.strip_prefix("unknown field ") {
                Some(rest) => format!("unknown setting {rest}"),
                None => m,
            },
        }
    })?;
    raw.validate()
}

impl<'de> Deserialize<'de> for ServerConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawServer::deserialize(d)?;
        raw.validate().map_err(|e| de::Error::custom(e.message))
    }
}

impl RawServer {
    fn validate(self) -> Result<ServerConfig, EntryError> {
        for kind in [&self.kind, &self.transport].into_iter().flatten() {
            check_kind(kind, self.command.is_some()).map_err(|m| at("kind", m))?;
        }
        let enabled = match (self.enabled, self.disabled) {
            (Some(e), Some(d)) if e == d => {
                return Err(at("enabled", "\"disabled\" and \"enabled\" disagree: keep one of them (\"enabled\": false stops the server)"))
            }
            (Some(e), _) => e,
            (None, Some(d)) => !d,
            (None, None) => true,
        };
        if self
            .name
            .as_deref()
            .is_some_and(|n| n.trim().is_empty() || n.len() > 100)
        {
            return Err(at(
                "name",
                "\"name\" must be 1 to 100 characters: it is the display name shown next to the id",
            ));
        }
        let transport = match (self.command, self.url) {
            (Some(_), Some(_)) => {
                return Err(at("url", "a server has both \"command\" and \"url\": keep \"command\" for a local (stdio) server or \"url\" for a remote one"))
            }
            (None, None) => {
                return Err(at("command", "a server needs \"command\" (a local stdio server, e.g. \"command\": \"npx\") or \"url\" (a remote server)"))
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(at("command", "\"command\" is empty: give the program to run, e.g. \"npx\""));
                }
                if self.headers.is_some() || self.allow_insecure.is_some() {
                    return Err(at("headers", "\"headers\" and \"allow_insecure\" apply to remote (\"url\") servers only: remove them from this stdio server"));
                }
                if self.auth.is_some() || self.oauth.is_some() {
                    return Err(at("auth", "\"auth\" and \"oauth\" apply to remote (\"url\") servers only: remove them from this stdio server"));
                }
                for key in self.env.iter().flat_map(|e| e.keys()) {
                    if key.is_empty() || key.contains('=') || key.contains('\0') {
                        return Err(at("env", format!("invalid env variable name \"{key}\": names cannot be empty or contain '='")));
                    }
                }
                Transport::Stdio(StdioTransport {
                    command,
                    args: self.args.unwrap_or_default(),
                    env: self.env.unwrap_or_default(),
                    cwd: self.cwd,
                })
            }
            (None, Some(url)) => {
                if self.args.is_some() || self.env.is_some() || self.cwd.is_some() {
                    return Err(at("args", "\"args\", \"env\" and \"cwd\" apply to stdio (\"command\") servers only: remove them from this remote server"));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(at("url", format!("invalid url \"{url}\": use an http:// or https:// address, e.g. \"https://example.com/mcp\"")));
                }
                let auth = remote_auth(self.auth.as_deref(), self.oauth)?;
                Transport::Remote(RemoteTransport {
                    url,
                    headers: self.headers.unwrap_or_default(),
                    allow_insecure: self.allow_insecure.unwrap_or(false),
                    auth,
                })
            }
        };
        let startup_timeout_secs = bounded(
            "startup_timeout_secs",
            self.startup_timeout_secs
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT_SECS),
            1,
            MAX_STARTUP_TIMEOUT_SECS,
        )
        .map_err(|m| at("startup_timeout_secs", m))?;
        let call_timeout_secs = bounded(
            "call_timeout_secs",
            self.call_timeout_secs.unwrap_or(DEFAULT_CALL_TIMEOUT_SECS),
            0,
            MAX_CALL_TIMEOUT_SECS,
        )
        .map_err(|m| at("call_timeout_secs", m))?;
        Ok(ServerConfig {
            transport,
            enabled,
            name: self.name,
            tools_used: self.tools_used.unwrap_or_default(),
            requires_approval: self.requires_approval,
            tools: self.tools,
            startup_timeout_secs,
            call_timeout_secs,
        })
    }
}

/// A number of seconds within `min..=max`, or the sentence saying which range (a huge value
/// would overflow a deadline later; it is refused here, with the fix).
pub(super) fn bounded(key: &str, value: u64, min: u64, max: u64) -> Result<u64, String> {
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    let zero = if min == 0 { " (0 means no limit)" } else { "" };
    Err(format!(
        "\"{key}\" is {value}: it must be between {min} and {max} seconds{zero}; use a number in that range"
    ))
}

impl<'de> Deserialize<'de> for EnvValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EnvValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, a secret reference like {\"secret\": \"github-token\"} or an environment reference like {\"env\": \"GITHUB_TOKEN\"}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EnvValue, E> {
                Ok(EnvValue::Plain(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EnvValue, A::Error> {
                let mut secret: Option<String> = None;
                let mut prefix: Option<String> = None;
                let mut env: Option<String> = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "secret" => secret = Some(map.next_value()?),
                        "prefix" => prefix = Some(map.next_value()?),
                        "env" => env = Some(map.next_value()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}` in a reference: use {{\"secret\": NAME, \"prefix\": TEXT}} or {{\"env\": VAR}}"
                            )))
                        }
                    }
                }
                if let Some(env) = env {
                    if secret.is_some() || prefix.is_some() {
                        return Err(de::Error::custom(
                            "a reference is either {\"secret\": NAME} or {\"env\": VAR}, not both",
                        ));
                    }
                    if env.is_empty() || env.contains('=') || env.contains('\0') {
                        return Err(de::Error::custom(format!(
                            "invalid environment variable name \"{env}\""
                        )));
                    }
                    return Ok(EnvValue::Env { env });
                }
                let secret = secret.ok_or_else(|| {
                    de::Error::custom("a secret reference needs \"secret\": the name of a keychain secret, e.g. {\"secret\": \"github-token\"}")
                })?;
                validate_secret_name(&secret).map_err(de::Error::custom)?;
                Ok(EnvValue::Secret { secret, prefix })
            }
        }
        d.deserialize_any(V)
    }
}

/// Secret names: `[a-zA-Z0-9._-]{1,64}` (the keychain account name).
pub fn validate_secret_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid secret name \"{name}\": names are 1 to 64 characters of a-z, A-Z, 0-9, '.', '_' and '-'"
        ))
    }
}

/// Why a config could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read config {path}: {source}\n  fix: {fix}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
        /// What to do.
        fix: String,
    },
    /// The file does not parse or does not validate.
    #[error("{path}:{line}:{column}: {message}\n  fix: {fix}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where (1-based).
        line: usize,
        /// Where (1-based).
        column: usize,
        /// What is wrong.
        message: String,
        /// What to do.
        fix: String,
    },
    /// The file cannot be written.
    #[error("cannot write config {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The current file does not parse: it is never overwritten.
    #[error("refusing to overwrite {path}: it does not parse ({reason}); fix or move it first")]
    RefuseOverwrite {
        /// The file.
        path: PathBuf,
        /// Why it does not parse.
        reason: String,
    },
}

impl Config {
    /// Reads and validates the config at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| {
            let fix = if source.kind() == std::io::ErrorKind::NotFound {
                "create it (see examples/gatehouse.json) or pass --config PATH".to_owned()
            } else {
                "check the file's permissions".to_owned()
            };
            ConfigError::Read {
                path: path.to_owned(),
                source,
                fix,
            }
        })?;
        Config::parse(&text, path)
    }

    /// Validates config text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut config: Config = serde_json::from_str(text).map_err(|e| {
            let message = e.to_string();
            // serde_json appends " at line L column C"; we print the position up front instead.
            let message = match message.rfind(" at line ") {
                Some(i) => message[..i].to_owned(),
                None => message,
            };
            let (message, fix) = match pasted_client_file(&message) {
                Some(key) => (
                    format!("this looks like an AI client's config (\"{key}\"), not Gatehouse's"),
                    "run `gatehouse import PATH` to bring its servers in (env values that look like secrets move to the keychain), or write them under \"servers\" (see examples/gatehouse.json)".to_owned(),
                ),
                None => {
                    let fix = fix_for(&message, e.classify());
                    (message, fix)
                }
            };
            ConfigError::Invalid {
                path: path.to_owned(),
                line: e.line(),
                column: e.column(),
                message,
                fix,
            }
        })?;
        // Gremia-style `server:tool` keys are accepted for a server's own tools.
        for (id, server) in config.servers.iter_mut() {
            let prefix = format!("{id}:");
            server.tools = std::mem::take(&mut server.tools)
                .into_iter()
                .map(|(k, v)| match k.strip_prefix(&prefix) {
                    Some(rest) => (rest.to_owned(), v),
                    None => (k, v),
                })
                .collect();
        }
        if let Err((message, fix)) = config.check_clients() {
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                line: 1,
                column: 1,
                message,
                fix,
            });
        }
        Ok(config)
    }

    /// Client profiles name servers that exist; `default` is the gateway token's own profile.
    pub(super) fn check_clients(&self) -> Result<(), (String, String)> {
        for (id, profile) in &self.clients {
            if id.as_str() == "default" {
                return Err((
                    "\"clients\" has a profile named \"default\", which is the gateway token's own (every server)".into(),
                    "give the profile another name".into(),
                ));
            }
            for server in profile.servers.iter().flatten() {
                if !self.servers.contains_key(server) {
                    return Err((
                        format!("client \"{id}\" lists server \"{server}\", which is not in \"servers\""),
                        "fix the name, or add the server first".into(),
                    ));
                }
            }
            for key in profile.tools.keys() {
                let known = key.split_once("__").is_some_and(|(server, tool)| {
                    !tool.is_empty() && self.servers.keys().any(|s| s.as_str() == server)
                });
                if !known {
                    return Err((
                        format!("client \"{id}\" has a tool setting \"{key}\" that names no configured server"),
                        "use the exposed name (SERVER__TOOL) or SERVER__* for all of a server's tools".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The client-file key an unknown top-level field is, if it is one (`mcpServers`, `mcp`).
fn pasted_client_file(message: &str) -> Option<&'static str> {
    let field = message.strip_prefix("unknown field `")?.split('`').next()?;
    ["mcpServers", "mcp", "context_servers", "mcp_requirements"]
        .into_iter()
        .find(|k| *k == field)
}

fn fix_for(message: &str, class: serde_json::error::Category) -> String {
    use serde_json::error::Category;
    match class {
        Category::Syntax | Category::Eof => {
            "fix the JSON syntax at that position (a missing comma, quote or brace is the usual cause)"
                .into()
        }
        Category::Io => "check the file can be read".into(),
        Category::Data => {
            if let Some(rest) = message.strip_prefix("unknown field `") {
                let field = rest.split('`').next().unwrap_or("");
                let expected: Vec<&str> = rest
                    .split("expected ")
                    .nth(1)
                    .map(|e| e.split('`').skip(1).step_by(2).collect())
                    .unwrap_or_default();
                match closest(field, &expected) {
                    Some(best) => format!("did you mean \"{best}\"? rename or remove \"{field}\""),
                    None => format!("remove \"{field}\"; allowed here: {}", expected.join(", ")),
                }
            } else if message.starts_with("invalid type") {
                "use the type named above (strings in quotes, numbers and true/false without)"
                    .into()
            } else if message.starts_with("missing field") {
                "add the missing field".into()
            } else if let Some(i) = message.find(": ") {
                // Our own messages say what to do after the colon; repeat the actionable part.
                message[i + 2..].to_owned()
            } else {
                "see examples/gatehouse.json for the expected shape".into()
            }
        }
    }
}

/// The allowed name nearest to `word` (edit distance ≤ 3), for "did you mean" hints.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (levenshtein(word, c), *c))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerId;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("gh.json"))
    }

    fn invalid(text: &str) -> (usize, usize, String, String) {
        match parse(text) {
            Err(ConfigError::Invalid {
                line,
                column,
                message,
                fix,
                ..
            }) => (line, column, message, fix),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn parses_the_design_example() {
        let c = parse(
            r#"{
  "servers": {
    "fs": {
      "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"],
      "env": { "LOG_LEVEL": "info", "GITHUB_TOKEN": { "secret": "github-token" } },
      "cwd": "/home/me", "enabled": true,
      "tools": { "write_file": { "requires_approval": true }, "fs:move_file": { "enabled": false } }
    },
    "docs": { "url": "http://127.0.0.1:9000/mcp",
              "headers": { "Authorization": { "secret": "docs-token", "prefix": "Bearer " } } }
  },
  "approval": { "default": "ask-unless-read-only", "timeout_secs": 45 },
  "gateway": { "listen": "127.0.0.1:7723" }
}"#,
        )
        .unwrap();
        let fs = &c.servers[&ServerId::parse("fs").unwrap()];
        assert_eq!(fs.secret_refs(), vec!["github-token"]);
        assert_eq!(fs.tools["move_file"].enabled, Some(false));
        assert!(matches!(fs.transport, Transport::Stdio(_)));
        let docs = &c.servers[&ServerId::parse("docs").unwrap()];
        assert!(matches!(docs.transport, Transport::Remote(_)));
        assert_eq!(docs.startup_timeout_secs, 60);
        // Round trip through the file format.
        assert_eq!(parse(&c.to_json()).unwrap(), c);
    }

    #[test]
    fn unknown_key_names_position_and_suggests() {
        let (line, col, msg, fix) = invalid("{\"servers\": {\n  \"a\": {\"comand\": \"x\"}}}");
        assert_eq!(line, 2);
        assert!(col > 5, "{col}");
        assert!(msg.contains("unknown field `comand`"), "{msg}");
        assert!(fix.contains("did you mean \"command\""), "{fix}");
    }

    #[test]
    fn bad_id_missing_command_wrong_type() {
        let (line, _, msg, _) =
            invalid("{\"servers\": {\n\n \"My_Server\": {\"command\": \"x\"}}}");
        assert_eq!(line, 3);
        assert!(msg.contains("invalid server id \"My_Server\""), "{msg}");
        assert!(msg.contains("my-server"), "{msg}");

        let (_, _, msg, fix) = invalid("{\"servers\": {\"a\": {\"args\": []}}}");
        assert!(msg.contains("needs \"command\""), "{msg}");
        assert!(!fix.is_empty());

        let (_, _, msg, fix) = invalid("{\"servers\": {\"a\": {\"command\": 5}}}");
        assert!(msg.contains("invalid type"), "{msg}");
        assert!(fix.contains("type"), "{fix}");

        let (_, _, msg, _) =
            invalid("{\"servers\": {\"a\": {\"command\": \"x\", \"url\": \"http://h\"}}}");
        assert!(msg.contains("both"), "{msg}");
    }

    #[test]
    fn every_duration_is_bounded_with_a_clear_error() {
        for (text, key) in [
            (
                r#"{"servers": {"a": {"command": "x", "startup_timeout_secs": 18446744073709551615}}}"#,
                "startup_timeout_secs",
            ),
            (
                r#"{"servers": {"a": {"command": "x", "startup_timeout_secs": 0}}}"#,
                "startup_timeout_secs",
            ),
            (
                r#"{"servers": {"a": {"command": "x", "call_timeout_secs": 18446744073709551615}}}"#,
                "call_timeout_secs",
            ),
            (
                r#"{"approval": {"timeout_secs": 18446744073709551615}}"#,
                "timeout_secs",
            ),
            (r#"{"approval": {"timeout_secs": 0}}"#, "timeout_secs"),
        ] {
            let (_, _, msg, fix) = invalid(text);
            assert!(
                msg.contains(key) && msg.contains("must be between"),
                "{msg}"
            );
            assert!(fix.contains("range"), "{fix}");
        }
        let ok = parse(r#"{"servers": {"a": {"command": "x", "call_timeout_secs": 0}}, "approval": {"timeout_secs": 3600}}"#).unwrap();
        assert_eq!(ok.servers.values().next().unwrap().call_timeout_secs, 0);
    }

    #[test]
    fn an_entry_that_is_gatehouse_itself_is_recognised() {
        use crate::config::reaches_gatehouse;
        let t = |entry: &str| {
            let c = parse(&format!("{{\"servers\": {{\"a\": {entry}}}}}")).unwrap();
            c.servers.into_values().next().unwrap().transport
        };
        for itself in [
            r#"{"url": "http://127.0.0.1:7723/mcp"}"#,
            r#"{"url": "http://localhost:7723/anything"}"#,
            r#"{"url": "http://[::1]:7723/mcp"}"#,
            r#"{"command": "gatehouse", "args": ["connect"]}"#,
            r#"{"command": "/usr/bin/gatehouse", "args": ["--control", "/x", "connect"]}"#,
            r#"{"command": "gatehouse", "args": ["serve", "--stdio", "--config", "g.json"]}"#,
            r#"{"command": "C:\\bin\\gatehouse.exe", "args": ["connect"]}"#,
        ] {
            assert!(reaches_gatehouse(&t(itself), &[7723]).is_some(), "{itself}");
        }
        for other in [
            r#"{"url": "http://127.0.0.1:7724/mcp"}"#,
            r#"{"url": "https://example.com:7723/mcp"}"#,
            r#"{"command": "gatehouse", "args": ["status"]}"#,
            r#"{"command": "npx", "args": ["-y", "server-connect"]}"#,
        ] {
            assert!(reaches_gatehouse(&t(other), &[7723]).is_none(), "{other}");
        }
    }

    #[test]
    fn syntax_error_has_fix() {
        let (line, _, _, fix) = invalid("{\"servers\": {\n \"a\": {\"command\": \"x\"\n}");
        assert!(line >= 2);
        assert!(fix.contains("JSON syntax"));
    }

    #[test]
    fn non_loopback_listen_refused() {
        let (_, _, msg, _) = invalid("{\"gateway\": {\"listen\": \"0.0.0.0:7723\"}}");
        assert!(msg.contains("not a loopback"), "{msg}");
        assert!(parse("{\"gateway\": {\"listen\": \"[::1]:1\"}}").is_ok());
    }

    #[test]
    fn bad_secret_reference() {
        let (_, _, msg, _) = invalid(
            "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"T\": {\"secrt\": \"x\"}}}}}",
        );
        assert!(
            msg.contains("in a reference") && msg.contains("{\"env\": VAR}"),
            "{msg}"
        );
        let (_, _, msg, _) = invalid(
            "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"T\": {\"secret\": \"a b\"}}}}}",
        );
        assert!(msg.contains("invalid secret name"), "{msg}");
    }

    /// Client-file spellings are accepted where their meaning is unambiguous: `disabled`,
    /// `type`/`transport` agreeing with command/url, `name`, `tools_used`, `{"env": VAR}`.
    #[test]
    fn pasted_entries_are_accepted_where_unambiguous() {
        let c = Config::parse(
            r#"{"servers": {"a": {"command": "x", "type": "stdio", "disabled": true, "name": "My A", "tools_used": ["t"], "env": {"K": {"env": "HOME"}}},
                             "b": {"url": "https://e.com/mcp", "transport": "streamable-http"}}}"#,
            Path::new("t"),
        )
        .unwrap();
        let a = c.servers.values().next().unwrap();
        assert!(!a.enabled);
        assert_eq!(a.name.as_deref(), Some("My A"));
        assert_eq!(a.tools_used, vec!["t".to_owned()]);
        match &a.transport {
            Transport::Stdio(t) => {
                assert_eq!(t.env["K"], EnvValue::Env { env: "HOME".into() })
            }
            other => panic!("{other:?}"),
        }
        // Written back, it reads the same.
        assert_eq!(Config::parse(&c.to_json(), Path::new("t")).unwrap(), c);
    }

    /// What would be a guess is refused with the fix: a transport that disagrees with the entry,
    /// `disabled` and `enabled` disagreeing, and a client's whole file (`mcpServers`).
    #[test]
    fn pasted_files_and_contradictions_are_refused_with_the_fix() {
        let (_, _, msg, _) = invalid(r#"{"servers": {"a": {"command": "x", "type": "http"}}}"#);
        assert!(msg.contains("remote servers need \"url\""), "{msg}");
        let (_, _, msg, _) =
            invalid(r#"{"servers": {"a": {"url": "https://e.com", "type": "stdio"}}}"#);
        assert!(msg.contains("no \"command\""), "{msg}");
        let (_, _, msg, _) = invalid(r#"{"servers": {"a": {"command": "x", "type": "pigeon"}}}"#);
        assert!(msg.contains("unknown transport"), "{msg}");
        let (_, _, msg, _) =
            invalid(r#"{"servers": {"a": {"command": "x", "disabled": true, "enabled": true}}}"#);
        assert!(msg.contains("disagree"), "{msg}");
        let (_, _, msg, fix) = invalid(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
        assert!(msg.contains("AI client's config"), "{msg}");
        assert!(fix.contains("gatehouse import"), "{fix}");
        let (_, _, msg, _) = invalid(
            r#"{"servers": {"a": {"command": "x", "env": {"K": {"env": "V", "secret": "s"}}}}}"#,
        );
        assert!(msg.contains("not both"), "{msg}");
    }

    #[test]
    fn levenshtein_basics() {
        assert_eq!(levenshtein("comand", "command"), 1);
        assert_eq!(closest("xyzzy", &["command", "args"]), None);
    }
}

//! The user's configuration: the JSON model of DESIGN §2, its validation (errors carry file, line,
//! column and the fix) and atomic, backed-up writes.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Default handshake timeout (`initialize` + full `tools/list`).
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 60;
/// Default address of the gateway endpoint.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7723";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub servers: BTreeMap<ServerId, ServerConfig>,
    #[serde(default)]
    pub approval: ApprovalConfig,
    #[serde(default)]
    pub gateway: GatewayConfig,
}

/// A server id: `[a-z0-9-]{1,32}`. It is the first half of every exposed tool name, so it can never
/// contain `__`-style separators or characters a client would reject.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ServerId(String);

impl ServerId {
    pub fn parse(s: &str) -> Result<Self, String> {
        let ok = !s.is_empty()
            && s.len() <= 32
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(ServerId(s.to_owned()))
        } else {
            let suggestion: String = s
                .chars()
                .map(|c| match c {
                    'A'..='Z' => c.to_ascii_lowercase(),
                    'a'..='z' | '0'..='9' | '-' => c,
                    _ => '-',
                })
                .take(32)
                .collect();
            let suggestion = suggestion.trim_matches('-');
            let hint = if suggestion.is_empty() {
                String::new()
            } else {
                format!(" (for example \"{suggestion}\")")
            };
            Err(format!(
                "invalid server id \"{s}\": ids are 1 to 32 characters of a-z, 0-9 and '-'; rename it{hint}"
            ))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ServerId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ServerId::parse(&s).map_err(de::Error::custom)
    }
}

/// One configured server: how to reach it plus its policies.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub transport: Transport,
    pub enabled: bool,
    /// Server-wide approval flag for all its tools (a per-tool flag wins).
    pub requires_approval: Option<bool>,
    /// Per-tool policy, keyed by the server's own tool name.
    pub tools: BTreeMap<String, ToolPolicy>,
    pub startup_timeout_secs: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio(StdioTransport),
    Remote(RemoteTransport),
}

#[derive(Debug, Clone, PartialEq)]
pub struct StdioTransport {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, EnvValue>,
    pub cwd: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTransport {
    pub url: String,
    pub headers: BTreeMap<String, EnvValue>,
    pub allow_insecure: bool,
}

impl ServerConfig {
    /// The parts whose change requires a new process / connection.
    pub fn launch_eq(&self, other: &ServerConfig) -> bool {
        self.transport == other.transport && self.startup_timeout_secs == other.startup_timeout_secs
    }

    /// Names of the secrets this server needs at spawn/connect time.
    pub fn secret_refs(&self) -> Vec<&str> {
        let values = match &self.transport {
            Transport::Stdio(s) => s.env.values().collect::<Vec<_>>(),
            Transport::Remote(r) => r.headers.values().collect(),
        };
        values
            .into_iter()
            .filter_map(|v| match v {
                EnvValue::Secret { secret, .. } => Some(secret.as_str()),
                EnvValue::Plain(_) => None,
            })
            .collect()
    }
}

/// An env or header value: a plain string or a reference to a keychain secret.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvValue {
    Plain(String),
    Secret {
        secret: String,
        prefix: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_approval: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalDefault {
    #[default]
    AskUnlessReadOnly,
    FlaggedOnly,
    Always,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    #[serde(default)]
    pub default: ApprovalDefault,
    #[serde(default = "default_approval_timeout")]
    pub timeout_secs: u64,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            default: ApprovalDefault::default(),
            timeout_secs: default_approval_timeout(),
        }
    }
}

fn default_approval_timeout() -> u64 {
    45
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    #[serde(default = "default_listen", deserialize_with = "de_loopback_addr")]
    pub listen: SocketAddr,
    /// Browser origins allowed to call the gateway (e.g. "http://localhost:6274"); requests
    /// with any other `Origin` header, `null` included, are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: default_listen(),
            allowed_origins: Vec::new(),
        }
    }
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7723))
}

/// Parses a gateway address and refuses anything that is not loopback: the gateway holds the
/// user's tools and must never be reachable from the network.
pub fn parse_loopback_addr(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s.parse().map_err(|_| {
        format!("invalid listen address \"{s}\": use IP:PORT, for example \"{DEFAULT_LISTEN}\"")
    })?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "listen address \"{s}\" is not a loopback address: the gateway only binds 127.0.0.1 or [::1], for example \"{DEFAULT_LISTEN}\""
        ));
    }
    Ok(addr)
}

fn de_loopback_addr<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let s = String::deserialize(d)?;
    parse_loopback_addr(&s).map_err(de::Error::custom)
}

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
    #[serde(default = "yes")]
    enabled: bool,
    requires_approval: Option<bool>,
    #[serde(default)]
    tools: BTreeMap<String, ToolPolicy>,
    startup_timeout_secs: Option<u64>,
}

fn yes() -> bool {
    true
}

impl<'de> Deserialize<'de> for ServerConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawServer::deserialize(d)?;
        raw.validate().map_err(de::Error::custom)
    }
}

impl RawServer {
    fn validate(self) -> Result<ServerConfig, String> {
        let transport = match (self.command, self.url) {
            (Some(_), Some(_)) => {
                return Err("a server has both \"command\" and \"url\": keep \"command\" for a local (stdio) server or \"url\" for a remote one".into())
            }
            (None, None) => {
                return Err("a server needs \"command\" (a local stdio server, e.g. \"command\": \"npx\") or \"url\" (a remote server)".into())
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err("\"command\" is empty: give the program to run, e.g. \"npx\"".into());
                }
                if self.headers.is_some() || self.allow_insecure.is_some() {
                    return Err("\"headers\" and \"allow_insecure\" apply to remote (\"url\") servers only: remove them from this stdio server".into());
                }
                for key in self.env.iter().flat_map(|e| e.keys()) {
                    if key.is_empty() || key.contains('=') || key.contains('\0') {
                        return Err(format!("invalid env variable name \"{key}\": names cannot be empty or contain '='"));
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
                    return Err("\"args\", \"env\" and \"cwd\" apply to stdio (\"command\") servers only: remove them from this remote server".into());
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("invalid url \"{url}\": use an http:// or https:// address, e.g. \"https://example.com/mcp\""));
                }
                Transport::Remote(RemoteTransport {
                    url,
                    headers: self.headers.unwrap_or_default(),
                    allow_insecure: self.allow_insecure.unwrap_or(false),
                })
            }
        };
        if self.startup_timeout_secs == Some(0) {
            return Err("\"startup_timeout_secs\" must be at least 1".into());
        }
        Ok(ServerConfig {
            transport,
            enabled: self.enabled,
            requires_approval: self.requires_approval,
            tools: self.tools,
            startup_timeout_secs: self
                .startup_timeout_secs
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT_SECS),
        })
    }
}

impl<'de> Deserialize<'de> for EnvValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EnvValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a secret reference like {\"secret\": \"github-token\"}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EnvValue, E> {
                Ok(EnvValue::Plain(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EnvValue, A::Error> {
                let mut secret: Option<String> = None;
                let mut prefix: Option<String> = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "secret" => secret = Some(map.next_value()?),
                        "prefix" => prefix = Some(map.next_value()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}` in a secret reference: only \"secret\" and \"prefix\" are allowed"
                            )))
                        }
                    }
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

// ---- serialisation back to the file format (used by atomic saves) ----

impl Serialize for EnvValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            EnvValue::Plain(v) => s.serialize_str(v),
            EnvValue::Secret { secret, prefix } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("secret", secret)?;
                if let Some(p) = prefix {
                    m.serialize_entry("prefix", p)?;
                }
                m.end()
            }
        }
    }
}

impl Serialize for ServerConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        match &self.transport {
            Transport::Stdio(t) => {
                m.serialize_entry("command", &t.command)?;
                if !t.args.is_empty() {
                    m.serialize_entry("args", &t.args)?;
                }
                if !t.env.is_empty() {
                    m.serialize_entry("env", &t.env)?;
                }
                if let Some(cwd) = &t.cwd {
                    m.serialize_entry("cwd", cwd)?;
                }
            }
            Transport::Remote(r) => {
                m.serialize_entry("url", &r.url)?;
                if !r.headers.is_empty() {
                    m.serialize_entry("headers", &r.headers)?;
                }
                if r.allow_insecure {
                    m.serialize_entry("allow_insecure", &true)?;
                }
            }
        }
        if !self.enabled {
            m.serialize_entry("enabled", &false)?;
        }
        if let Some(r) = self.requires_approval {
            m.serialize_entry("requires_approval", &r)?;
        }
        if !self.tools.is_empty() {
            m.serialize_entry("tools", &self.tools)?;
        }
        if self.startup_timeout_secs != DEFAULT_STARTUP_TIMEOUT_SECS {
            m.serialize_entry("startup_timeout_secs", &self.startup_timeout_secs)?;
        }
        m.end()
    }
}

// ---- loading and saving ----

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}\n  fix: {fix}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
        fix: String,
    },
    #[error("{path}:{line}:{column}: {message}\n  fix: {fix}")]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
        fix: String,
    },
    #[error("cannot write config {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("refusing to overwrite {path}: it does not parse ({reason}); fix or move it first")]
    RefuseOverwrite { path: PathBuf, reason: String },
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
            let fix = fix_for(&message, e.classify());
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
        Ok(config)
    }

    /// The config as pretty JSON, in the file format.
    pub fn to_json(&self) -> String {
        // Serialising plain data into a String cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Saves atomically. The current file, if it parses, is kept as `PATH.bak`; a current file that
    /// does not parse is never overwritten (the user may be mid-edit).
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(current) => {
                if let Err(e) = Config::parse(&current, path) {
                    return Err(ConfigError::RefuseOverwrite {
                        path: path.to_owned(),
                        reason: e.to_string(),
                    });
                }
                write_atomic(&backup_path(path), current.as_bytes()).map_err(|source| {
                    ConfigError::Write {
                        path: backup_path(path),
                        source,
                    }
                })?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(ConfigError::Write {
                    path: path.to_owned(),
                    source,
                })
            }
        }
        write_atomic(path, self.to_json().as_bytes()).map_err(|source| ConfigError::Write {
            path: path.to_owned(),
            source,
        })
    }
}

impl Config {
    /// This config with one server entry added or replaced. `entry` is the entry in the file format
    /// and is validated as a load would; `original` is the id being edited (a rename when it differs).
    pub fn with_server(
        &self,
        original: Option<&str>,
        id: &str,
        entry: &serde_json::Value,
    ) -> Result<Config, String> {
        let new_id = ServerId::parse(id)?;
        let server = ServerConfig::deserialize(entry).map_err(|e| {
            let m = e.to_string();
            match m.strip_prefix("unknown field ") {
                Some(rest) => format!("unknown setting {rest}"),
                None => m,
            }
        })?;
        for name in server.secret_refs() {
            validate_secret_name(name)?;
        }
        let mut next = self.clone();
        if let Some(orig) = original {
            let orig_id = ServerId::parse(orig)?;
            if next.servers.remove(&orig_id).is_none() {
                return Err(format!(
                    "there is no server \"{orig}\" any more; reload and try again"
                ));
            }
        }
        if original != Some(id) && next.servers.contains_key(&new_id) {
            return Err(format!(
                "a server \"{id}\" already exists: pick another id or edit that one"
            ));
        }
        next.servers.insert(new_id, server);
        Ok(next)
    }

    /// This config without server `id`.
    pub fn without_server(&self, id: &str) -> Result<Config, String> {
        let mut next = self.clone();
        let key = ServerId::parse(id)?;
        if next.servers.remove(&key).is_none() {
            return Err(format!("there is no server \"{id}\""));
        }
        Ok(next)
    }
}

/// `gatehouse.json` → `gatehouse.json.bak`.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".bak");
    PathBuf::from(s)
}

/// Keeps `text` (a config that just loaded fine) as the last good copy, if it differs.
pub fn keep_last_good(path: &Path, text: &str) -> std::io::Result<()> {
    let bak = backup_path(path);
    if std::fs::read_to_string(&bak).ok().as_deref() == Some(text) {
        return Ok(());
    }
    write_atomic(&bak, text.as_bytes())
}

/// Writes `bytes` to `path` atomically: temp file in the same dir → fsync → rename → fsync dir.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        fastrand::u32(..)
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        #[cfg(unix)]
        if let Ok(meta) = std::fs::metadata(path) {
            // Keep the permissions of the file we replace (a 0600 config stays 0600).
            f.set_permissions(meta.permissions())?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        #[cfg(unix)]
        std::fs::File::open(&dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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
fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
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

/// A command and its arguments as one shell-quoted line, for people to review (never executed).
pub fn command_line<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    parts
        .into_iter()
        .map(|p| {
            let plain = !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,~".contains(&b));
            if plain {
                p.to_owned()
            } else {
                format!("'{}'", p.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Expands a leading `~/` to the user's home directory (commands, args and cwd in configs).
pub fn expand_tilde(s: &str) -> String {
    match (s.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest).to_string_lossy().into_owned(),
        _ => s.to_owned(),
    }
}

/// The platform's default config file, e.g. `~/.config/gatehouse/gatehouse.json`.
pub fn default_config_path() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("gatehouse")
        .join("gatehouse.json")
}

/// The platform's default data dir, e.g. `~/.local/share/gatehouse`.
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("gatehouse")
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(msg.contains("secret reference"), "{msg}");
        let (_, _, msg, _) = invalid(
            "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"T\": {\"secret\": \"a b\"}}}}}",
        );
        assert!(msg.contains("invalid secret name"), "{msg}");
    }

    #[test]
    fn save_keeps_backup_and_refuses_to_clobber_broken_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gatehouse.json");
        let first = parse("{\"servers\": {\"a\": {\"command\": \"x\"}}}").unwrap();
        first.save(&path).unwrap();
        assert!(!backup_path(&path).exists());
        let mut second = first.clone();
        second.servers.clear();
        second.save(&path).unwrap();
        assert_eq!(Config::load(&backup_path(&path)).unwrap(), first);
        assert_eq!(Config::load(&path).unwrap(), second);

        std::fs::write(&path, "{ broken").unwrap();
        let err = first.save(&path).unwrap_err();
        assert!(matches!(err, ConfigError::RefuseOverwrite { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ broken");
        // No temp files left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn levenshtein_basics() {
        assert_eq!(levenshtein("comand", "command"), 1);
        assert_eq!(closest("xyzzy", &["command", "args"]), None);
    }
}

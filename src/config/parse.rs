//! Reading a config: the loose shape each server entry is parsed into first, then validated so
//! errors can say what to do; secret references; and errors with file, line, column and a fix.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::refusal::{self, at, ConfigError, EntryError};
use super::{
    Config, EnvValue, OAuthSettings, RemoteAuth, RemoteTransport, ServerConfig, StdioTransport,
    ToolPolicy, Transport, DEFAULT_CALL_TIMEOUT_SECS, DEFAULT_STARTUP_TIMEOUT_SECS,
    MAX_CALL_TIMEOUT_SECS, MAX_STARTUP_TIMEOUT_SECS,
};

// ---- server entry: parsed loosely, then validated so errors can say what to do ----

/// Every setting a server entry may have (what [`RawServer`] reads).
pub(super) const ENTRY_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "allow_insecure",
    "allow_private",
    "pin",
    "auth",
    "oauth",
    "enabled",
    "requires_approval",
    "tools",
    "startup_timeout_secs",
    "call_timeout_secs",
    "validate_arguments",
    "disabled",
    "name",
    "type",
    "transport",
    "tools_used",
    "sandbox",
    "network",
    "start",
    "idle_stop_secs",
    "unmasked_secrets",
    "spotlight",
];

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
    /// A remote server on a private address.
    allow_private: Option<bool>,
    /// The version a runner's package is pinned to, and its artifact's integrity.
    pin: Option<super::Pin>,
    /// `"oauth"` or `"none"` (remote servers).
    auth: Option<String>,
    oauth: Option<RawOAuth>,
    enabled: Option<bool>,
    requires_approval: Option<bool>,
    #[serde(default)]
    tools: BTreeMap<String, ToolPolicy>,
    startup_timeout_secs: Option<u64>,
    call_timeout_secs: Option<u64>,
    /// Check each call's arguments against the tool's inputSchema.
    validate_arguments: Option<bool>,
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
    /// How a stdio server is confined.
    sandbox: Option<crate::sandbox::SandboxPolicy>,
    /// What a confined server may reach (the same as `sandbox.network`).
    network: Option<crate::sandbox::network::Network>,
    /// `"at_launch"` or `"on_demand"`.
    start: Option<super::StartMode>,
    idle_stop_secs: Option<u64>,
    unmasked_secrets: Option<Vec<String>>,
    spotlight: Option<bool>,
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
                return Err(at("oauth", "\"oauth\".\"client_id\" must be 1 to 1000 characters", "give the client id the authorization server gave you, or leave it out to register automatically"));
            }
            if let Some(bad) = o.scopes.iter().find(|s| {
                s.is_empty()
                    || !s
                        .bytes()
                        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
            }) {
                return Err(at("oauth", format!("invalid scope \"{bad}\" in \"oauth\".\"scopes\""), "write each scope as one word of printable ASCII (no spaces, quotes or backslashes)"));
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
        (Some("none"), Some(_)) => Err(at("oauth", "the entry has \"oauth\" settings and \"auth\": \"none\"", "remove one of them")),
        (Some(other), _) => Err(at("auth", format!("unknown \"auth\" \"{other}\""), "use \"oauth\" (sign in with the server's authorization server) or \"none\" (only the configured headers), or leave it out to sign in when the server asks")),
    }
}

/// The transport a `type`/`transport` field names, checked against `command`/`url`.
fn check_kind(kind: &str, has_command: bool) -> Result<(), (String, String)> {
    let stdio = match kind.to_ascii_lowercase().as_str() {
        "stdio" => true,
        "http" | "sse" | "streamable-http" | "streamablehttp" | "streamable_http" => false,
        other => {
            return Err((
                format!("unknown transport \"{other}\""),
                "use \"stdio\" with \"command\", or \"http\" / \"sse\" with \"url\" (or leave it out: Gatehouse tells them apart)".into(),
            ))
        }
    };
    match (stdio, has_command) {
        (true, false) => Err((
            format!("the transport is \"{kind}\" but there is no \"command\""),
            "add the program to run, or set \"url\" and drop the transport".into(),
        )),
        (false, true) => Err((
            format!("the transport is \"{kind}\" but the server has a \"command\""),
            "remote servers need \"url\": set it and remove \"command\", or drop the transport"
                .into(),
        )),
        _ => Ok(()),
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
        let mut field = ["env", "headers"].into_iter().find(|k| bad(k));
        // A value of the wrong type: the setting it is in, and its right form.
        let typed = refusal::mistyped((entry, ENTRY_KEYS), &m, |one| {
            RawServer::deserialize(one).err()
        });
        if let Some((key, _)) = &typed {
            field = field.or(Some(key));
        }
        // serde's own text ("unknown field `x`, expected one of …"), or one of ours.
        let (message, fix) = match refusal::split(&m) {
            Some((p, f)) => (p.to_owned(), f.to_owned()),
            None if typed.is_some() => {
                let (key, fix) = typed.unwrap_or_default();
                (format!("\"{key}\": {m}"), fix)
            }
            None => {
                let fix = refusal::fix_for(&m, e.classify());
                let message = match m.strip_prefix("unknown field ") {
                    // The fix names the nearest setting; the whole list is not repeated.
                    Some(rest) => format!(
                        "unknown setting {}",
                        rest.split(", expected").next().unwrap_or(rest)
                    ),
                    None => m,
                };
                (message, fix)
            }
        };
        EntryError {
            field,
            message,
            fix,
        }
    })?;
    raw.validate()
}

impl<'de> Deserialize<'de> for ServerConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawServer::deserialize(d)?;
        raw.validate().map_err(|e| de::Error::custom(e.joined()))
    }
}

impl RawServer {
    fn validate(mut self) -> Result<ServerConfig, EntryError> {
        for kind in [&self.kind, &self.transport].into_iter().flatten() {
            check_kind(kind, self.command.is_some()).map_err(|(p, f)| at("kind", p, f))?;
        }
        let enabled = match (self.enabled, self.disabled) {
            (Some(e), Some(d)) if e == d => {
                return Err(at(
                    "enabled",
                    "\"disabled\" and \"enabled\" disagree",
                    "keep one of them (\"enabled\": false stops the server)",
                ))
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
                "\"name\" must be 1 to 100 characters",
                "give a short display name (it is shown next to the id), or leave it out",
            ));
        }
        let transport = match (self.command.take(), self.url.take()) {
            (Some(_), Some(_)) => {
                return Err(at("url", "a server has both \"command\" and \"url\"", "keep \"command\" for a local (stdio) server or \"url\" for a remote one"))
            }
            (None, None) => {
                return Err(at("command", "the server has neither \"command\" nor \"url\"", "add \"command\" with the program to run for a local (stdio) server, or \"url\" with the address of a remote one"))
            }
            (Some(command), None) => self.stdio(command)?,
            (None, Some(url)) => self.remote(url)?,
        };
        let startup_timeout_secs = bounded(
            "startup_timeout_secs",
            self.startup_timeout_secs
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT_SECS),
            1,
            MAX_STARTUP_TIMEOUT_SECS,
        )
        .map_err(|(p, f)| at("startup_timeout_secs", p, f))?;
        let call_timeout_secs = bounded(
            "call_timeout_secs",
            self.call_timeout_secs.unwrap_or(DEFAULT_CALL_TIMEOUT_SECS),
            0,
            MAX_CALL_TIMEOUT_SECS,
        )
        .map_err(|(p, f)| at("call_timeout_secs", p, f))?;
        let idle_stop_secs = bounded(
            "idle_stop_secs",
            self.idle_stop_secs.unwrap_or(super::DEFAULT_IDLE_STOP_SECS),
            1,
            super::MAX_IDLE_STOP_SECS,
        )
        .map_err(|(p, f)| at("idle_stop_secs", p, f))?;
        let unmasked_secrets = self.unmasked_secrets.unwrap_or_default();
        for name in &unmasked_secrets {
            super::values::secret_name_refusal(name)
                .map_err(|(p, f)| at("unmasked_secrets", p, f))?;
        }
        Ok(ServerConfig {
            transport,
            enabled,
            name: self.name,
            tools_used: self.tools_used.unwrap_or_default(),
            requires_approval: self.requires_approval,
            tools: self.tools,
            startup_timeout_secs,
            call_timeout_secs,
            validate_arguments: self.validate_arguments.unwrap_or(false),
            start: self.start,
            effective_start: self.start.unwrap_or_default(),
            idle_stop_secs,
            unmasked_secrets,
            spotlight: self.spotlight.unwrap_or(false),
        })
    }

    /// A local (stdio) server's transport: what only a remote one may have refused.
    fn stdio(&mut self, command: String) -> Result<Transport, EntryError> {
        if command.trim().is_empty() {
            return Err(at(
                "command",
                "\"command\" is empty",
                "give the program to run, for example npx",
            ));
        }
        if self.headers.is_some() || self.allow_insecure.is_some() || self.allow_private.is_some() {
            return Err(at("headers", "\"headers\", \"allow_insecure\" and \"allow_private\" apply to remote (\"url\") servers only", "remove them from this stdio server"));
        }
        if let Some(p) = &self.pin {
            let ok = crate::registry::check::npm_version(&p.version).is_ok()
                || crate::registry::check::pypi_version(&p.version).is_ok();
            if !ok {
                return Err(at(
                    "pin",
                    format!(
                        "\"pin\" names {:?}, which is not an exact version",
                        p.version
                    ),
                    "pin it again with `gatehouse pin ID`",
                ));
            }
        }
        if self.auth.is_some() || self.oauth.is_some() {
            return Err(at(
                "auth",
                "\"auth\" and \"oauth\" apply to remote (\"url\") servers only",
                "remove them from this stdio server",
            ));
        }
        let mut sandbox = self.sandbox.take().unwrap_or_default();
        if let Some(n) = self.network.take() {
            use crate::sandbox::network::Network;
            if sandbox.network_set && sandbox.network != n {
                return Err(at(
                    "network",
                    "\"network\" is given on the entry and in its \"sandbox\", differently",
                    "keep one of them",
                ));
            }
            if !sandbox.confines() && n != Network::All {
                return Err(at(
                    "network",
                    "\"network\" fences a confined server's network, and this entry's sandbox is \"off\"",
                    "remove \"network\", or let the sandbox confine it",
                ));
            }
            sandbox.network = n;
            sandbox.network_set = true;
        }
        let mut env = self.env.take().unwrap_or_default();
        super::values::check_env(&mut env)?;
        Ok(Transport::Stdio(StdioTransport {
            command,
            args: self.args.take().unwrap_or_default(),
            env,
            cwd: self.cwd.take(),
            sandbox,
            pin: self.pin.take(),
        }))
    }

    /// A remote server's transport: what only a local one may have refused, the address checked.
    fn remote(&mut self, url: String) -> Result<Transport, EntryError> {
        if self.sandbox.is_some() {
            return Err(at("sandbox", "\"sandbox\" applies to local (\"command\") servers only: a remote server runs elsewhere", "remove it from this remote server"));
        }
        if self.network.is_some() {
            return Err(at("network", "\"network\" applies to local (\"command\") servers only: a remote server runs elsewhere", "remove it from this remote server"));
        }
        if self.pin.is_some() {
            return Err(at(
                "pin",
                "\"pin\" applies to local (\"command\") servers that run a package",
                "remove it from this remote server",
            ));
        }
        if self.args.is_some() || self.env.is_some() || self.cwd.is_some() {
            return Err(at(
                "args",
                "\"args\", \"env\" and \"cwd\" apply to stdio (\"command\") servers only",
                "remove them from this remote server",
            ));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(at(
                "url",
                format!("invalid url \"{url}\""),
                "use an http:// or https:// address, for example https://example.com/mcp",
            ));
        }
        let auth = remote_auth(self.auth.as_deref(), self.oauth.take())?;
        let mut headers = self.headers.take().unwrap_or_default();
        super::values::check_headers(&mut headers)?;
        Ok(Transport::Remote(RemoteTransport {
            url,
            headers,
            allow_insecure: self.allow_insecure.unwrap_or(false),
            allow_private: self.allow_private.unwrap_or(false),
            auth,
        }))
    }
}

/// A number of seconds within `min..=max`, or what is wrong and the fix (a huge value would
/// overflow a deadline later; it is refused here).
pub(super) fn bounded(key: &str, value: u64, min: u64, max: u64) -> Result<u64, (String, String)> {
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    let zero = if min == 0 { " (0 means no limit)" } else { "" };
    Err((
        format!("\"{key}\" is {value}: it must be between {min} and {max} seconds{zero}"),
        format!("set \"{key}\" to a number in that range"),
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
                            return Err(de::Error::custom(refusal::joined(
                                &format!("unknown field `{other}` in a reference"),
                                "write {\"secret\": NAME, \"prefix\": TEXT} or {\"env\": VAR}",
                            )))
                        }
                    }
                }
                if let Some(env) = env {
                    if secret.is_some() || prefix.is_some() {
                        return Err(de::Error::custom(refusal::joined(
                            "a reference has both \"env\" and \"secret\"",
                            "keep one: {\"secret\": NAME} (the keychain) or {\"env\": VAR} (Gatehouse's environment), not both",
                        )));
                    }
                    if env.is_empty() || env.contains('=') || env.contains('\0') {
                        return Err(de::Error::custom(refusal::joined(
                            &format!("invalid environment variable name \"{env}\""),
                            "name a variable of Gatehouse's environment, without '=' or NUL",
                        )));
                    }
                    return Ok(EnvValue::Env { env });
                }
                let secret = secret.ok_or_else(|| {
                    de::Error::custom(refusal::joined(
                        "a secret reference has no \"secret\"",
                        "name the keychain secret, for example {\"secret\": \"github-token\"}",
                    ))
                })?;
                if let Err((p, f)) = super::values::secret_name_refusal(&secret) {
                    return Err(de::Error::custom(refusal::joined(&p, &f)));
                }
                Ok(EnvValue::Secret { secret, prefix })
            }
        }
        d.deserialize_any(V)
    }
}

/// Secret names: `[a-zA-Z0-9._-]{1,64}` (the keychain account name).
pub fn validate_secret_name(name: &str) -> Result<(), String> {
    super::values::secret_name_refusal(name).map_err(|(p, f)| refusal::sentence(&p, &f))
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
            let (message, fix) = match (refusal::client_file_key(text), refusal::split(&message)) {
                // A refusal of ours says it best (both server lists at once…).
                (_, Some((p, f))) => (p.to_owned(), f.to_owned()),
                (Some(key), None) => (
                    format!("this is an AI client's own config (it has \"{key}\"), not Gatehouse's"),
                    format!(
                        "run `gatehouse import {}` to bring its servers in (placeholders become references, secrets can move to the keychain), or write them under \"servers\" (see examples/gatehouse.json)",
                        crate::config::command_line([path.to_string_lossy().as_ref()])
                    ),
                ),
                (None, None) => {
                    let fix = refusal::fix_for(&message, e.classify());
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
        for (key, entry) in config.invalid.iter_mut() {
            entry.line = refusal::line_of(text, key);
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
                if !self.has_entry(server.as_str()) {
                    return Err((
                        format!("client \"{id}\" lists server \"{server}\", which is not in \"servers\""),
                        "fix the name, or add the server first".into(),
                    ));
                }
            }
            for key in profile.tools.keys() {
                let known = key
                    .split_once("__")
                    .is_some_and(|(server, tool)| !tool.is_empty() && self.has_entry(server));
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

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;

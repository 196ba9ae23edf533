//! A config read entry by entry: the file's top level is read strictly (not JSON, an unknown
//! top-level key or a broken section refuses the whole file), each server entry on its own — one
//! that cannot be read becomes an [`InvalidEntry`] (its text kept as written, its problem and
//! fix), and the others are read as if it were not there. Servers may be listed under
//! `"mcpServers"`, the key every AI client uses, with a client's own spellings (`serverUrl`,
//! `httpUrl`, `disabled`, and the client-only settings a client's snippet carries) read as
//! Gatehouse's.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::refusal::{self, EntryError};
use super::{
    ApprovalConfig, ClientProfile, Config, Defaults, GatewayConfig, RegistryConfig, ServerId,
};

/// A server entry that could not be read: kept as written (saved back unchanged, edited in the
/// app's form), shown as a row of its own in state `invalid`.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidEntry {
    /// The entry as the file has it.
    pub raw: Value,
    /// What is wrong and the fix.
    pub error: EntryError,
    /// The line its key is on in the file (0 when not known).
    pub line: usize,
}

impl InvalidEntry {
    /// The problem and its fix, as `last_error` says them.
    pub fn reason(&self) -> String {
        let at = if self.line > 0 {
            format!(" (line {})", self.line)
        } else {
            String::new()
        };
        format!(
            "this entry cannot be read{at}: {}; the other servers run without it",
            self.error
        )
    }
}

/// The file's top level as it is read first.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default)]
    servers: Option<Map<String, Value>>,
    #[serde(default, rename = "mcpServers")]
    mcp_servers: Option<Map<String, Value>>,
    #[serde(default)]
    approval: ApprovalConfig,
    #[serde(default)]
    gateway: GatewayConfig,
    #[serde(default)]
    clients: BTreeMap<ServerId, ClientProfile>,
    #[serde(default)]
    registry: RegistryConfig,
    #[serde(default)]
    defaults: Defaults,
}

/// Settings AI clients keep in their entries that mean nothing to Gatehouse (Gemini CLI's
/// `timeout` and `trust`, Cline's `alwaysAllow`, Copilot CLI's `tools` list, VS Code's
/// `dev`…): dropped from an entry under `"mcpServers"`, never from one under `"servers"`.
const CLIENT_ONLY: &[&str] = &[
    "timeout",
    "trust",
    "alwaysAllow",
    "autoApprove",
    "description",
    "includeTools",
    "excludeTools",
    "dev",
    "envFile",
    "networkTimeout",
];

/// An entry written the way AI clients write it, in Gatehouse's spelling: `serverUrl`
/// (Windsurf) and `httpUrl` (Gemini CLI) are its `url`, Copilot CLI's `"tools": ["*"]` and the
/// other client-only settings ([`CLIENT_ONLY`]) are dropped; everything else is read as it is
/// (so a mistake is still named).
pub fn client_spelling(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    let mut out = Map::new();
    for (k, x) in o {
        match k.as_str() {
            "serverUrl" | "httpUrl" if !o.contains_key("url") => {
                out.insert("url".into(), x.clone());
            }
            "tools" if x.is_array() => {}
            k if CLIENT_ONLY.contains(&k) => {}
            _ => {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(out)
}

impl TryFrom<RawConfig> for Config {
    type Error = String;

    fn try_from(raw: RawConfig) -> Result<Config, String> {
        let (entries, spelled) = match (raw.servers, raw.mcp_servers) {
            (Some(_), Some(_)) => {
                return Err(refusal::joined(
                    "the config has both \"servers\" and \"mcpServers\"",
                    "keep one list: move the entries of \"mcpServers\" into \"servers\" (or the other way round)",
                ))
            }
            (Some(s), None) => (s, false),
            (None, Some(s)) => (s, true),
            (None, None) => (Map::new(), false),
        };
        let mut config = Config {
            approval: raw.approval,
            gateway: raw.gateway,
            clients: raw.clients,
            registry: raw.registry,
            defaults: raw.defaults,
            ..Config::default()
        };
        for (key, value) in entries {
            let value = if spelled {
                client_spelling(&value)
            } else {
                value
            };
            match read_entry(&key, &value) {
                Ok((id, server)) => {
                    config.servers.insert(id, server);
                }
                Err(error) => {
                    config.invalid.insert(
                        key,
                        InvalidEntry {
                            raw: value,
                            error,
                            line: 0,
                        },
                    );
                }
            }
        }
        config.settle();
        Ok(config)
    }
}

/// One entry: its id checked, the entry read as a load reads it, Gremia-style `server:tool`
/// keys made the server's own tool names.
fn read_entry(key: &str, value: &Value) -> Result<(ServerId, super::ServerConfig), EntryError> {
    let id = ServerId::check(key).map_err(|(p, f)| refusal::at("id", p, f))?;
    let mut server = super::parse_entry(value)?;
    let prefix = format!("{id}:");
    server.tools = std::mem::take(&mut server.tools)
        .into_iter()
        .map(|(k, v)| match k.strip_prefix(&prefix) {
            Some(rest) => (rest.to_owned(), v),
            None => (k, v),
        })
        .collect();
    Ok((id, server))
}

/// An entry that cannot be read, made ready for a form to edit: a setting Gatehouse does not
/// know is renamed to the one it most likely meant (`comand` → `command`) when that one is not
/// there, else dropped; each change said, for the person to check before saving.
pub fn repair_entry(raw: &Value) -> (Value, Vec<String>) {
    let Some(o) = raw.as_object() else {
        return (
            Value::Object(Map::new()),
            vec!["the entry was not an object".into()],
        );
    };
    let mut out = Map::new();
    let mut said = Vec::new();
    for (k, v) in o {
        if super::parse::ENTRY_KEYS.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in o {
        if super::parse::ENTRY_KEYS.contains(&k.as_str()) {
            continue;
        }
        match super::closest(k, super::parse::ENTRY_KEYS).filter(|c| !out.contains_key(*c)) {
            Some(c) => {
                said.push(format!("\"{k}\" read as \"{c}\""));
                out.insert(c.to_owned(), v.clone());
            }
            None => said.push(format!("\"{k}\" left out (Gatehouse has no such setting)")),
        }
    }
    (Value::Object(out), said)
}

impl Config {
    /// Every server's start and network as the config decides them: its own `"start"`, else
    /// `defaults`, else at launch; its own `"network"`, else `defaults` (confined servers),
    /// else everything. Called whenever servers or defaults change.
    pub fn settle(&mut self) {
        let default = self.defaults.start.unwrap_or_default();
        let network = self.defaults.network.as_ref();
        for s in self.servers.values_mut() {
            s.effective_start = s.start.unwrap_or(default);
            if let super::Transport::Stdio(t) = &mut s.transport {
                t.sandbox.settle_network(network);
            }
        }
    }

    /// Makes a readable entry one that cannot be used (state `invalid`), with what is wrong and
    /// the fix: for what only the hub can see (a rule that names an argument its tool lacks).
    pub fn refuse_entry(&mut self, id: &ServerId, error: EntryError) {
        if let Some(server) = self.servers.remove(id) {
            let raw = serde_json::to_value(&server).unwrap_or_default();
            let line = 0;
            self.invalid
                .insert(id.to_string(), InvalidEntry { raw, error, line });
        }
    }

    /// Whether `id` names a server entry, readable or not.
    pub fn has_entry(&self, id: &str) -> bool {
        self.invalid.contains_key(id) || self.servers.keys().any(|k| k.as_str() == id)
    }
}

//! Writing a config: the file format back out, atomic saves that keep the last good copy, and
//! edits of one server entry (validated as a load would validate them).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use super::parse::parse_entry;
use super::refusal::{at, EntryError};
use super::{
    Config, ConfigError, EnvValue, ServerConfig, ServerId, Transport, DEFAULT_CALL_TIMEOUT_SECS,
    DEFAULT_STARTUP_TIMEOUT_SECS,
};

// ---- serialisation back to the file format (used by atomic saves) ----

impl Serialize for EnvValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            EnvValue::Plain(v) => s.serialize_str(v),
            EnvValue::Env { env } => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("env", env)?;
                m.end()
            }
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
                if !t.sandbox.as_written_is_default() {
                    m.serialize_entry("sandbox", &t.sandbox)?;
                }
                if let Some(p) = &t.pin {
                    m.serialize_entry("pin", p)?;
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
                if r.allow_private {
                    m.serialize_entry("allow_private", &true)?;
                }
                match &r.auth {
                    crate::config::RemoteAuth::Auto => {}
                    crate::config::RemoteAuth::None => m.serialize_entry("auth", "none")?,
                    crate::config::RemoteAuth::OAuth(o) => {
                        m.serialize_entry("auth", "oauth")?;
                        if o.client_id.is_some() || !o.scopes.is_empty() {
                            let mut obj = serde_json::Map::new();
                            if let Some(c) = &o.client_id {
                                obj.insert("client_id".into(), c.clone().into());
                            }
                            if !o.scopes.is_empty() {
                                obj.insert("scopes".into(), o.scopes.clone().into());
                            }
                            m.serialize_entry("oauth", &obj)?;
                        }
                    }
                }
            }
        }
        if let Some(n) = &self.name {
            m.serialize_entry("name", n)?;
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
        if self.call_timeout_secs != DEFAULT_CALL_TIMEOUT_SECS {
            m.serialize_entry("call_timeout_secs", &self.call_timeout_secs)?;
        }
        if !self.tools_used.is_empty() {
            m.serialize_entry("tools_used", &self.tools_used)?;
        }
        if self.validate_arguments {
            m.serialize_entry("validate_arguments", &true)?;
        }
        if let Some(start) = self.start {
            m.serialize_entry("start", &start)?;
        }
        if self.idle_stop_secs != super::DEFAULT_IDLE_STOP_SECS {
            m.serialize_entry("idle_stop_secs", &self.idle_stop_secs)?;
        }
        if !self.unmasked_secrets.is_empty() {
            m.serialize_entry("unmasked_secrets", &self.unmasked_secrets)?;
        }
        if self.spotlight {
            m.serialize_entry("spotlight", &true)?;
        }
        m.end()
    }
}

/// The file format: every server under `"servers"` — the readable ones as they are now, the
/// invalid ones exactly as they were written — then the sections that say something.
impl Serialize for Config {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let mut servers: BTreeMap<&str, serde_json::Value> = BTreeMap::new();
        for (id, server) in &self.servers {
            servers.insert(
                id.as_str(),
                serde_json::to_value(server).map_err(S::Error::custom)?,
            );
        }
        for (key, entry) in &self.invalid {
            servers.insert(key.as_str(), entry.raw.clone());
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("servers", &servers)?;
        m.serialize_entry("approval", &self.approval)?;
        m.serialize_entry("gateway", &self.gateway)?;
        if !self.clients.is_empty() {
            m.serialize_entry("clients", &self.clients)?;
        }
        if !self.registry.is_default() {
            m.serialize_entry("registry", &self.registry)?;
        }
        if !self.defaults.is_default() {
            m.serialize_entry("defaults", &self.defaults)?;
        }
        m.end()
    }
}

impl Config {
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
        let server = self
            .check_server(original, id, entry)
            .map_err(|e| e.to_string())?;
        let new_id = ServerId::parse(id)?;
        let mut next = self.clone();
        if let Some(orig) = original {
            // An invalid entry edited in the form becomes a readable one.
            next.invalid.remove(orig);
            if let Ok(orig) = ServerId::parse(orig) {
                next.servers.remove(&orig);
                if orig.as_str() != id {
                    next.rename_in_clients(orig.as_str(), Some(&new_id));
                }
            }
        }
        next.servers.insert(new_id, server);
        next.settle();
        Ok(next)
    }

    /// Everything [`Config::with_server`] would refuse, each error with the entry's field it is
    /// about (`id`, `command`, `url`, `env`, `headers`, …) so a form can show it there.
    pub fn check_server(
        &self,
        original: Option<&str>,
        id: &str,
        entry: &serde_json::Value,
    ) -> Result<ServerConfig, EntryError> {
        let new_id = ServerId::check(id).map_err(|(p, f)| at("id", p, f))?;
        let server = parse_entry(entry)?;
        let refs_field = match server.transport {
            Transport::Stdio(_) => "env",
            Transport::Remote(_) => "headers",
        };
        for name in server.secret_refs() {
            super::values::secret_name_refusal(name).map_err(|(p, f)| at(refs_field, p, f))?;
        }
        let ports = [self.gateway.listen.port()];
        if let Some(why) = super::reaches_gatehouse(&server.transport, &ports) {
            let field = match server.transport {
                Transport::Stdio(_) => "command",
                Transport::Remote(_) => "url",
            };
            return Err(at(
                field,
                why.split("; connect clients").next().unwrap_or(&why),
                "remove this entry and connect your clients to Gatehouse instead (`gatehouse client-config NAME`)",
            ));
        }
        if let Some(orig) = original.filter(|o| !self.invalid.contains_key(*o)) {
            let orig_id = ServerId::check(orig).map_err(|(p, f)| at("id", p, f))?;
            if !self.servers.contains_key(&orig_id) {
                return Err(EntryError {
                    field: None,
                    message: format!("there is no server \"{orig}\" any more"),
                    fix: "reload and try again".into(),
                });
            }
        }
        if original != Some(id) && self.has_entry(new_id.as_str()) {
            return Err(at(
                "id",
                format!("a server \"{id}\" already exists"),
                "pick another id, or edit that one",
            ));
        }
        Ok(server)
    }

    /// This config with client profile `id` added or replaced (validated as a load would).
    pub fn with_client(&self, id: &str, profile: super::ClientProfile) -> Result<Config, String> {
        let key = ServerId::parse(id).map_err(|e| e.replace("server id", "client id"))?;
        let mut next = self.clone();
        next.clients.insert(key, profile);
        next.check_clients().map_err(|(m, f)| format!("{m}; {f}"))?;
        Ok(next)
    }

    /// This config without client profile `id`.
    pub fn without_client(&self, id: &str) -> Result<Config, String> {
        let mut next = self.clone();
        let key = ServerId::parse(id)?;
        if next.clients.remove(&key).is_none() {
            return Err(format!("there is no client profile \"{id}\""));
        }
        Ok(next)
    }

    /// This config with other approval settings (the timeout bounded like a load bounds it).
    pub fn with_approval(
        &self,
        default: super::ApprovalDefault,
        timeout_secs: u64,
    ) -> Result<Config, String> {
        let timeout_secs = super::parse::bounded(
            "approval.timeout_secs",
            timeout_secs,
            1,
            super::MAX_APPROVAL_TIMEOUT_SECS,
        )
        .map_err(|(p, f)| super::refusal::sentence(&p, &f))?;
        let mut next = self.clone();
        next.approval.default = default;
        next.approval.timeout_secs = timeout_secs;
        Ok(next)
    }

    /// This config with another gateway address (loopback only; used from the next start).
    pub fn with_listen(&self, listen: &str) -> Result<Config, String> {
        let addr = super::parse_loopback_addr(listen)?;
        let mut next = self.clone();
        next.gateway.listen = addr;
        Ok(next)
    }

    /// This config with server `id`'s `enabled` set.
    pub fn with_enabled(&self, id: &str, enabled: bool) -> Result<Config, String> {
        let mut next = self.clone();
        let key = ServerId::parse(id)?;
        match next.servers.get_mut(&key) {
            Some(s) => s.enabled = enabled,
            None if self.invalid.contains_key(id) => {
                return Err(format!(
                    "server \"{id}\" cannot be read, so it cannot be started or stopped: fix its entry first (`gatehouse status {id}` says what is wrong)"
                ))
            }
            None => return Err(self.unknown_server(id)),
        }
        Ok(next)
    }

    /// "There is no server X", naming the servers there are.
    pub fn unknown_server(&self, id: &str) -> String {
        let mut known: Vec<&str> = self.servers.keys().map(ServerId::as_str).collect();
        known.extend(self.invalid.keys().map(String::as_str));
        known.sort_unstable();
        let known = if known.is_empty() {
            "(none configured)".to_owned()
        } else {
            known.join(", ")
        };
        format!("unknown server \"{id}\"; known servers: {known}")
    }

    /// This config without server `id`.
    pub fn without_server(&self, id: &str) -> Result<Config, String> {
        let mut next = self.clone();
        if next.invalid.remove(id).is_some() {
            next.rename_in_clients(id, None);
            return Ok(next);
        }
        let key = ServerId::parse(id)?;
        if next.servers.remove(&key).is_none() {
            return Err(self.unknown_server(id));
        }
        next.rename_in_clients(id, None);
        Ok(next)
    }

    /// Client profiles follow a server that is renamed (`to`) or removed (`None`): their server
    /// lists and tool keys never name a server that is gone.
    fn rename_in_clients(&mut self, from: &str, to: Option<&ServerId>) {
        let prefix = format!("{from}__");
        for profile in self.clients.values_mut() {
            if let Some(list) = profile.servers.as_mut() {
                let had = list.iter().any(|s| s.as_str() == from);
                list.retain(|s| s.as_str() != from);
                if let (true, Some(to)) = (had, to) {
                    list.push(to.clone());
                }
            }
            profile.tools = std::mem::take(&mut profile.tools)
                .into_iter()
                .filter_map(|(k, v)| match k.strip_prefix(&prefix) {
                    Some(rest) => to.map(|t| (format!("{t}__{rest}"), v)),
                    None => Some((k, v)),
                })
                .collect();
        }
    }
}

/// The file a path names once symlinks are followed (the path itself when it is none, or when
/// the link dangles: writing then creates the target's name as a file).
pub fn resolve_link(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
        }
        _ => path.to_owned(),
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
/// A symlink is written through (its target is replaced, the link stays). The file keeps the
/// permissions of the one it replaces; a new file is private (0600).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let path = &resolve_link(path);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    crate::private::create_dir(&dir)?;
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
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        let mut f = open.open(&tmp)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("gh.json"))
    }

    #[test]
    fn a_refused_entry_names_the_field_it_is_about() {
        use serde_json::json;
        let config = parse("{\"servers\": {\"a\": {\"command\": \"x\"}}}").unwrap();
        let field = |id: &str, entry: serde_json::Value| {
            config
                .check_server(None, id, &entry)
                .err()
                .map(|e| (e.field, e.message))
        };
        let cases = [
            ("Bad Id", json!({"command": "x"}), "id"),
            ("a", json!({"command": "x"}), "id"),
            ("b", json!({"command": "  "}), "command"),
            ("b", json!({"url": "ftp://x"}), "url"),
            ("b", json!({"url": ""}), "url"),
            ("b", json!({"command": "x", "env": {"A=B": "v"}}), "env"),
            (
                "b",
                json!({"command": "x", "env": {"T": {"secret": "bad name"}}}),
                "env",
            ),
            ("b", json!({"url": "https://x", "args": ["y"]}), "args"),
            ("b", json!({"command": "x", "headers": {}}), "headers"),
            (
                "b",
                json!({"command": "gatehouse", "args": ["connect"]}),
                "command",
            ),
            (
                "b",
                json!({"command": "x", "enabled": true, "disabled": true}),
                "enabled",
            ),
            (
                "b",
                json!({"command": "x", "call_timeout_secs": 100_000}),
                "call_timeout_secs",
            ),
        ];
        for (id, entry, want) in cases {
            let got = field(id, entry.clone());
            assert_eq!(
                got.as_ref().map(|g| g.0),
                Some(Some(want)),
                "{id} {entry}: {got:?}"
            );
        }
        // Not about one field: said without one.
        let unknown = field("b", json!({"command": "x", "colour": "red"})).unwrap();
        assert_eq!(unknown.0, None);
        assert!(unknown.1.contains("unknown setting"), "{}", unknown.1);
        // What passes the check is what with_server saves.
        assert!(field("b", json!({"command": "x"})).is_none());
        let edited = config
            .with_server(Some("a"), "c", &json!({"command": "y"}))
            .unwrap();
        assert_eq!(edited.servers.len(), 1);
        assert!(config
            .with_server(Some("gone"), "c", &json!({"command": "y"}))
            .unwrap_err()
            .contains("no server \"gone\""));
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

    /// Settings edits keep their bounds: a timeout out of range and a gateway address that is
    /// not loopback are refused with the reason, and nothing else of the config changes.
    #[test]
    fn settings_edits_are_bounded() {
        let c = Config::default();
        let next = c
            .with_approval(super::super::ApprovalDefault::Always, 90)
            .unwrap();
        assert_eq!(next.approval.timeout_secs, 90);
        assert_eq!(next.approval.default, super::super::ApprovalDefault::Always);
        assert_eq!(next.servers, c.servers);
        assert!(c
            .with_approval(super::super::ApprovalDefault::Always, 0)
            .unwrap_err()
            .contains("between 1 and"));
        assert!(c
            .with_approval(super::super::ApprovalDefault::Always, u64::MAX)
            .is_err());
        assert_eq!(
            c.with_listen("127.0.0.1:9000")
                .unwrap()
                .gateway
                .listen
                .port(),
            9000
        );
        assert!(c.with_listen("0.0.0.0:9000").is_err());
    }
}

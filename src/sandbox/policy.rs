//! What a stdio entry asks of its sandbox (`"sandbox"` in the entry): a level and the paths and
//! network it adds. Plain data, read and written with the config; nothing here touches the OS.

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::network::Network;

/// At most this many paths in `read` or in `write`.
pub const MAX_PATHS: usize = 64;

/// How tightly a server is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Level {
    /// Reads everywhere but the credential stores and Gatehouse's own files; writes only to its
    /// places; no local sockets.
    #[default]
    Default,
    /// As `Default`, but reads only the system, its own package and the paths given.
    Strict,
    /// Not confined at all (as before sandboxes existed).
    Off,
}

impl Level {
    /// The level's name, as the config, `status --json` and the UI spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Default => "default",
            Level::Strict => "strict",
            Level::Off => "off",
        }
    }

    fn parse(s: &str) -> Result<Level, String> {
        match s {
            "default" => Ok(Level::Default),
            "strict" => Ok(Level::Strict),
            "off" => Ok(Level::Off),
            other => Err(format!(
                "unknown sandbox \"{other}\" — use \"default\", \"strict\" or \"off\", or an object with \"read\", \"write\" and \"network\""
            )),
        }
    }
}

/// A stdio entry's sandbox: `"default"` unless the entry says otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The level.
    pub level: Level,
    /// Paths it may read besides what its level allows (`~/` is the home directory).
    pub read: Vec<String>,
    /// Paths it may read and write besides its own places.
    pub write: Vec<String>,
    /// What it may reach on the network: everything unless the entry says otherwise
    /// ([`Network`]).
    pub network: Network,
    /// `"require": "network"`: refuse to start when the kernel cannot fence its network.
    pub require_network: bool,
    /// The entry itself says what its network is (else `network` is `defaults.network`'s, or
    /// everything; only what the entry says is written back).
    pub network_set: bool,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            level: Level::Default,
            read: Vec::new(),
            write: Vec::new(),
            network: Network::All,
            require_network: false,
            network_set: false,
        }
    }
}

impl SandboxPolicy {
    /// Whether the entry says nothing of its sandbox (what a default from `"defaults"` put in
    /// it aside): nothing to write back.
    pub fn as_written_is_default(&self) -> bool {
        self.level == Level::Default
            && self.read.is_empty()
            && self.write.is_empty()
            && !self.network_set
            && !self.require_network
    }

    /// Takes `default` (`"defaults": {"network": …}`) unless the entry says its own, or runs
    /// unconfined (then it has everything).
    pub fn settle_network(&mut self, default: Option<&Network>) {
        if !self.network_set {
            self.network = match default {
                Some(d) if self.confines() => d.clone(),
                _ => Network::All,
            };
        }
    }

    /// Whether the entry is confined at all.
    pub fn confines(&self) -> bool {
        self.level != Level::Off
    }

    /// A policy of just this level.
    pub fn of(level: Level) -> SandboxPolicy {
        SandboxPolicy {
            level,
            ..SandboxPolicy::default()
        }
    }

    /// The policy as a short phrase: `default`, `strict, no network, +2 paths`, `off`.
    pub fn summary(&self) -> String {
        let mut s = self.level.as_str().to_owned();
        if self.level != Level::Off {
            match &self.network {
                Network::Off => s.push_str(", no network"),
                Network::Allow(list) => s.push_str(&format!(
                    ", network: {} destination{}",
                    list.len(),
                    if list.len() == 1 { "" } else { "s" }
                )),
                Network::All => {}
            }
            let extra = self.read.len() + self.write.len();
            if extra > 0 {
                s.push_str(&format!(
                    ", +{extra} path{}",
                    if extra == 1 { "" } else { "s" }
                ));
            }
        }
        s
    }
}

/// The loose object form, checked by [`SandboxPolicy::deserialize`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObject {
    policy: Option<String>,
    #[serde(default)]
    read: Vec<String>,
    #[serde(default)]
    write: Vec<String>,
    /// Read as [`Network`] once the object is known (its own message on a bad entry).
    network: Option<serde_json::Value>,
    require: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Word(String),
    Object(RawObject),
}

fn check_paths(key: &str, paths: &[String]) -> Result<(), String> {
    if paths.len() > MAX_PATHS {
        return Err(format!(
            "sandbox \"{key}\" lists {} paths; at most {MAX_PATHS} — name a parent directory instead",
            paths.len()
        ));
    }
    for p in paths {
        let absolute = p.starts_with('/') || p.starts_with("~/") || p == "~";
        if !absolute || p.contains('\0') || p.len() > 4096 {
            return Err(format!(
                "sandbox \"{key}\" has \"{p}\", which is not an absolute path — write it from / or ~/"
            ));
        }
    }
    Ok(())
}

impl<'de> Deserialize<'de> for SandboxPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Raw::deserialize(d).map_err(|_| {
            de::Error::custom(
                "\"sandbox\" must be \"default\", \"strict\", \"off\" or an object with \"policy\", \"read\", \"write\" and \"network\"",
            )
        })?;
        let policy = match raw {
            Raw::Word(w) => SandboxPolicy::of(Level::parse(&w).map_err(de::Error::custom)?),
            Raw::Object(o) => {
                let level = match o.policy.as_deref() {
                    Some(w) => Level::parse(w).map_err(de::Error::custom)?,
                    None => Level::Default,
                };
                let network = o
                    .network
                    .map(serde_json::from_value::<Network>)
                    .transpose()
                    .map_err(|e| de::Error::custom(format!("sandbox: {e}")))?;
                check_paths("read", &o.read).map_err(de::Error::custom)?;
                check_paths("write", &o.write).map_err(de::Error::custom)?;
                if level == Level::Off
                    && (!o.read.is_empty()
                        || !o.write.is_empty()
                        || network.as_ref().is_some_and(|n| *n != Network::All)
                        || o.require.is_some())
                {
                    return Err(de::Error::custom(
                        "sandbox \"off\" confines nothing, so \"read\", \"write\" and \"network\" mean nothing there — remove them, or choose \"default\" or \"strict\"",
                    ));
                }
                let require_network = match o.require.as_deref() {
                    None => false,
                    Some("network") => true,
                    Some(other) => {
                        return Err(de::Error::custom(format!(
                            "sandbox \"require\": \"{}\" is unknown — the one requirement is \"network\" (refuse to start when the kernel cannot fence the network)",
                            crate::text::reveal(other)
                        )))
                    }
                };
                SandboxPolicy {
                    level,
                    read: o.read,
                    write: o.write,
                    network_set: network.is_some(),
                    network: network.unwrap_or_default(),
                    require_network,
                }
            }
        };
        Ok(policy)
    }
}

impl Serialize for SandboxPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.as_written_is_default() {
            return s.serialize_str("default");
        }
        if self.read.is_empty()
            && self.write.is_empty()
            && !self.network_set
            && !self.require_network
        {
            return s.serialize_str(self.level.as_str());
        }
        let mut m = s.serialize_map(None)?;
        if self.level != Level::Default {
            m.serialize_entry("policy", self.level.as_str())?;
        }
        if !self.read.is_empty() {
            m.serialize_entry("read", &self.read)?;
        }
        if !self.write.is_empty() {
            m.serialize_entry("write", &self.write)?;
        }
        if self.network_set {
            m.serialize_entry("network", &self.network)?;
        }
        if self.require_network {
            m.serialize_entry("require", "network")?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: serde_json::Value) -> Result<SandboxPolicy, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    /// Every spelling the README documents reads back to what it wrote; nonsense is refused
    /// with what to write instead.
    #[test]
    fn sandbox_settings_round_trip_and_refuse_nonsense() {
        for v in [
            serde_json::json!("strict"),
            serde_json::json!("off"),
            serde_json::json!({"write": ["~/notes"], "network": false}),
            serde_json::json!({"network": {"allow": ["api.github.com:443", "*.googleapis.com:443"]}, "require": "network"}),
            serde_json::json!({"policy": "strict", "read": ["/srv/docs"]}),
        ] {
            let p = parse(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&p).unwrap(), v);
        }
        assert_eq!(
            parse(serde_json::json!("default")).unwrap(),
            SandboxPolicy::default()
        );
        assert_eq!(
            parse(serde_json::json!({"network": false}))
                .unwrap()
                .network,
            Network::Off
        );
        let bad = parse(serde_json::json!({"network": {"allow": ["github.com"]}})).unwrap_err();
        assert!(bad.contains("has no port"), "{bad}");
        assert!(parse(serde_json::json!({"require": "everything"})).is_err());
        for (bad, says) in [
            (serde_json::json!("lax"), "unknown sandbox \"lax\""),
            (
                serde_json::json!({"write": ["notes"]}),
                "not an absolute path",
            ),
            (
                serde_json::json!({"policy": "off", "write": ["/x"]}),
                "confines nothing",
            ),
            (serde_json::json!({"net": false}), "must be"),
            (serde_json::json!(true), "must be"),
        ] {
            let e = parse(bad.clone()).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let many: Vec<String> = (0..65).map(|i| format!("/p{i}")).collect();
        assert!(parse(serde_json::json!({ "read": many }))
            .unwrap_err()
            .contains("at most 64"));
    }
}

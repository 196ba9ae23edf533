//! What a stdio entry asks of its sandbox (`"sandbox"` in the entry): a level and the paths and
//! network it adds. Plain data, read and written with the config; nothing here touches the OS.

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

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
    /// Outbound and inbound network (TCP/UDP over IPv4/IPv6). On unless the entry turns it off.
    pub network: bool,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            level: Level::Default,
            read: Vec::new(),
            write: Vec::new(),
            network: true,
        }
    }
}

impl SandboxPolicy {
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
            if !self.network {
                s.push_str(", no network");
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
    network: Option<bool>,
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
                check_paths("read", &o.read).map_err(de::Error::custom)?;
                check_paths("write", &o.write).map_err(de::Error::custom)?;
                if level == Level::Off
                    && (!o.read.is_empty() || !o.write.is_empty() || o.network == Some(false))
                {
                    return Err(de::Error::custom(
                        "sandbox \"off\" confines nothing, so \"read\", \"write\" and \"network\" mean nothing there — remove them, or choose \"default\" or \"strict\"",
                    ));
                }
                SandboxPolicy {
                    level,
                    read: o.read,
                    write: o.write,
                    network: o.network.unwrap_or(true),
                }
            }
        };
        Ok(policy)
    }
}

impl Serialize for SandboxPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.read.is_empty() && self.write.is_empty() && self.network {
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
        if !self.network {
            m.serialize_entry("network", &false)?;
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
            serde_json::json!({"policy": "strict", "read": ["/srv/docs"]}),
        ] {
            let p = parse(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&p).unwrap(), v);
        }
        assert_eq!(
            parse(serde_json::json!("default")).unwrap(),
            SandboxPolicy::default()
        );
        assert!(
            !parse(serde_json::json!({"network": false}))
                .unwrap()
                .network
        );
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

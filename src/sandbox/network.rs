//! What a confined server may reach on the network (`"network"` on its entry or in its
//! `"sandbox"`): nothing (`false`), everything (`true`, the default), or only the destinations
//! of an allow list (`{"allow": ["api.github.com:443", "*.googleapis.com:443"]}`), reached through
//! Gatehouse's egress proxy (`crate::egress`). Plain data and the matching of destinations, plus
//! the table of what was refused (written by the proxy, read by `status` and by `blame`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

/// At most this many entries in an allow list.
pub const MAX_ALLOW: usize = 256;

/// Refused destinations one server's table keeps at most (past it, the one refused longest ago
/// gives way).
pub const MAX_REFUSED: usize = 64;

/// One allowed destination: a host (or every name under a domain) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dest {
    /// Lowercase, without a final dot; an IPv6 address without brackets.
    pub host: String,
    /// `*.DOMAIN`: every name under `host` (not `host` itself).
    pub wildcard: bool,
    /// The port.
    pub port: u16,
}

impl Dest {
    /// Reads `HOST:PORT`, `*.DOMAIN:PORT` or `[IPV6]:PORT`.
    pub fn parse(s: &str) -> Result<Dest, String> {
        let bad = |why: &str| {
            Err(format!(
                "network allow entry \"{}\" {why} — write HOST:PORT or *.DOMAIN:PORT, e.g. \"api.github.com:443\"",
                crate::text::reveal(s)
            ))
        };
        let Some((host, port)) = s.rsplit_once(':') else {
            return bad("has no port");
        };
        let Ok(port) = port.parse::<u16>() else {
            return bad("has no valid port");
        };
        if port == 0 {
            return bad("has port 0");
        }
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let (wildcard, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, host),
        };
        let valid = !name.is_empty()
            && name.len() <= 253
            && (name.parse::<std::net::IpAddr>().is_ok()
                || name.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                }));
        if !valid || (wildcard && name.parse::<std::net::IpAddr>().is_ok()) {
            return bad("is not a host name or address");
        }
        Ok(Dest {
            host: name,
            wildcard,
            port,
        })
    }

    /// Whether `host` (lowercase, no final dot) at `port` is this destination.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        port == self.port
            && match self.wildcard {
                false => host == self.host,
                true => host
                    .strip_suffix(self.host.as_str())
                    .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            }
    }
}

impl std::fmt::Display for Dest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.wildcard {
            true => write!(f, "*.{host}:{}", self.port),
            false => write!(f, "{host}:{}", self.port),
        }
    }
}

/// What a confined server may reach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// Every address (no fence): today's behaviour, the default.
    #[default]
    All,
    /// No IP socket at all.
    Off,
    /// Only these destinations, through the egress proxy.
    Allow(Vec<Dest>),
}

impl Network {
    /// Whether any IP socket may be opened.
    pub fn on(&self) -> bool {
        *self != Network::Off
    }

    /// The allow list, when fenced.
    pub fn allow(&self) -> Option<&[Dest]> {
        match self {
            Network::Allow(list) => Some(list),
            _ => None,
        }
    }

    /// Whether `host:port` is allowed (everything when not fenced; nothing when off).
    pub fn allows(&self, host: &str, port: u16) -> bool {
        match self {
            Network::All => true,
            Network::Off => false,
            Network::Allow(list) => list.iter().any(|d| d.matches(host, port)),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAllow {
    allow: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Flag(bool),
    List(RawAllow),
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Raw::deserialize(d).map_err(|_| {
            de::Error::custom(
                "\"network\" must be true, false or {\"allow\": [\"HOST:PORT\", \"*.DOMAIN:PORT\", …]}",
            )
        })?;
        match raw {
            Raw::Flag(true) => Ok(Network::All),
            Raw::Flag(false) => Ok(Network::Off),
            Raw::List(a) => {
                if a.allow.len() > MAX_ALLOW {
                    return Err(de::Error::custom(format!(
                        "\"network\": {{\"allow\": [...]}} lists {} destinations; at most {MAX_ALLOW}",
                        a.allow.len()
                    )));
                }
                let list = a
                    .allow
                    .iter()
                    .map(|s| Dest::parse(s))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(de::Error::custom)?;
                Ok(Network::Allow(list))
            }
        }
    }
}

impl Serialize for Network {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::All => s.serialize_bool(true),
            Network::Off => s.serialize_bool(false),
            Network::Allow(list) => {
                let allow: Vec<String> = list.iter().map(Dest::to_string).collect();
                serde_json::json!({ "allow": allow }).serialize(s)
            }
        }
    }
}

/// One refused destination, as `status --json` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedDest {
    /// The host as the server named it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// How many times.
    pub count: u64,
    /// The last time (ms since the epoch).
    pub last_ms: u64,
    /// Why, in a sentence.
    #[serde(default)]
    pub why: String,
}

/// What a server's egress proxy refused, since its launch.
#[derive(Debug, Default)]
pub struct Refused {
    /// (host, port) → the row. Guards one insert or read.
    rows: Mutex<BTreeMap<(String, u16), RefusedDest>>,
}

impl Refused {
    /// Records a refusal of `host:port`.
    pub fn record(&self, host: &str, port: u16, why: &str) {
        let mut rows = crate::sync::lock(&self.rows);
        let now = crate::logs::now_ms();
        let key = (crate::text::cut(host, 253), port);
        if !rows.contains_key(&key) && rows.len() >= MAX_REFUSED {
            let oldest = rows
                .iter()
                .min_by_key(|(_, r)| r.last_ms)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                rows.remove(&k);
            }
        }
        let row = rows.entry(key.clone()).or_insert_with(|| RefusedDest {
            host: key.0.clone(),
            port,
            count: 0,
            last_ms: now,
            why: String::new(),
        });
        row.count += 1;
        row.last_ms = now;
        row.why = why.to_owned();
    }

    /// Every refused destination, the latest first.
    pub fn rows(&self) -> Vec<RefusedDest> {
        let mut rows: Vec<RefusedDest> = crate::sync::lock(&self.rows).values().cloned().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.last_ms));
        rows
    }

    /// The destinations refused at or after `since_ms`, the latest first.
    pub fn since(&self, since_ms: u64) -> Vec<RefusedDest> {
        let mut rows = self.rows();
        rows.retain(|r| r.last_ms >= since_ms);
        rows
    }
}

/// What `status --json` says of a fenced server's network: `sandbox.network`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkReport {
    /// The allow list, as written.
    pub allow: Vec<String>,
    /// What was refused since its launch.
    pub refused: Vec<RefusedDest>,
    /// Whether the kernel fences direct connections (Landlock ABI 4+); when not, a server that
    /// ignores the proxy variables reaches the network directly.
    #[serde(default)]
    pub fenced: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_match_exactly_or_under_a_domain_and_never_by_accident() {
        let d = Dest::parse("API.GitHub.com.:443").unwrap();
        assert!(d.matches("api.github.com", 443));
        assert!(!d.matches("api.github.com", 80));
        assert!(!d.matches("evilapi.github.com", 443));
        let w = Dest::parse("*.googleapis.com:443").unwrap();
        assert!(w.matches("storage.googleapis.com", 443));
        assert!(w.matches("a.b.googleapis.com", 443));
        assert!(!w.matches("googleapis.com", 443));
        assert!(!w.matches("evilgoogleapis.com", 443));
        assert!(Dest::parse("[::1]:8080").unwrap().matches("::1", 8080));
        for bad in [
            "github.com",
            "github.com:0",
            "github.com:99999",
            "*.1.2.3.4:80",
            "a b:80",
            ":80",
            "x/y:80",
        ] {
            assert!(Dest::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(w.to_string(), "*.googleapis.com:443");
    }

    #[test]
    fn the_three_forms_read_and_write_back() {
        let n: Network =
            serde_json::from_value(serde_json::json!({"allow": ["a.test:80"]})).unwrap();
        assert!(n.allows("a.test", 80) && !n.allows("b.test", 80));
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            serde_json::json!({"allow": ["a.test:80"]})
        );
        assert_eq!(
            serde_json::from_value::<Network>(serde_json::json!(false)).unwrap(),
            Network::Off
        );
        assert_eq!(
            serde_json::from_value::<Network>(serde_json::json!(true)).unwrap(),
            Network::All
        );
        assert!(serde_json::from_value::<Network>(serde_json::json!({"allow": ["nope"]})).is_err());
        assert!(serde_json::from_value::<Network>(serde_json::json!({"deny": []})).is_err());
    }

    #[test]
    fn the_refused_table_counts_and_stays_bounded() {
        let r = Refused::default();
        r.record("evil.test", 443, "not allowed");
        r.record("evil.test", 443, "not allowed");
        assert_eq!(r.rows()[0].count, 2);
        for i in 0..(MAX_REFUSED + 10) {
            r.record(&format!("h{i}.test"), 80, "x");
        }
        assert_eq!(r.rows().len(), MAX_REFUSED);
    }
}

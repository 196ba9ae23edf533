//! Rate limits (`"rate_limit"`, off unless written): a token bucket per client profile (all its
//! calls) and per profile and tool. Buckets are keyed by profile, so one client's burst never
//! spends another profile's budget; a call takes a token from every bucket that applies or from
//! none. A refused call is answered at once with the limit and when to try again — never held
//! for the person.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::config::{ClientProfile, Config, RateLimit, ServerId};
use crate::sync::lock;

/// The most buckets kept. Their keys come from the config (profiles × limited tools), so this
/// is only reached by a config with that many limits; full buckets are dropped first (a full
/// bucket and no bucket are the same).
pub const MAX_BUCKETS: usize = 10_000;

/// Whose calls a bucket counts: a profile's (`tool: None`) or one of its tools'.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    profile: String,
    tool: Option<String>,
}

struct Bucket {
    limit: RateLimit,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn refilled(&mut self, now: Instant) -> f64 {
        let per_sec = f64::from(self.limit.per_minute) / 60.0;
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_sec).min(f64::from(self.limit.capacity()));
        self.at = now;
        self.tokens
    }
}

/// One limit that applies to a call, with who it is for (for the refusal's text).
pub(super) struct Applies {
    key: Key,
    limit: RateLimit,
    what: String,
}

/// The limits that apply to one call of `tool` on `server` (canonical name `exposed`) by
/// client profile `profile` (`None`: the default profile): the profile's own (else the
/// gateway's), and the tool's — the profile's setting for it, else the server's.
pub(super) fn applying(
    config: &Config,
    profile: Option<(&str, &ClientProfile)>,
    server: &ServerId,
    tool: &str,
    exposed: &str,
) -> Vec<Applies> {
    let id = profile.map_or(crate::profiles::DEFAULT_PROFILE, |(id, _)| id);
    let mut out = Vec::new();
    let whole = profile
        .and_then(|(_, p)| p.rate_limit)
        .or(config.gateway.rate_limit);
    if let Some(limit) = whole {
        out.push(Applies {
            key: Key {
                profile: id.to_owned(),
                tool: None,
            },
            limit,
            what: format!("client profile {id} is limited to {}", limit.describe()),
        });
    }
    let own = profile.and_then(|(_, p)| p.tool_policy(server.as_str(), exposed)?.rate_limit);
    let servers = || config.servers.get(server)?.tools.get(tool)?.rate_limit;
    if let Some(limit) = own.or_else(servers) {
        out.push(Applies {
            key: Key {
                profile: id.to_owned(),
                tool: Some(exposed.to_owned()),
            },
            limit,
            what: format!(
                "{exposed} is limited to {} for client profile {id}",
                limit.describe()
            ),
        });
    }
    out
}

/// Every profile's buckets.
#[derive(Default)]
pub(super) struct RateLimits {
    buckets: Mutex<HashMap<Key, Bucket>>,
}

impl RateLimits {
    /// Takes a token from every bucket in `limits`, or from none: `Err` says which limit the
    /// call is over and when a token will be there.
    pub(super) fn take(&self, limits: &[Applies], now: Instant) -> Result<(), String> {
        if limits.is_empty() {
            return Ok(());
        }
        let mut buckets = lock(&self.buckets);
        if buckets.len() + limits.len() > MAX_BUCKETS {
            buckets.retain(|_, b| b.refilled(now) < f64::from(b.limit.capacity()));
        }
        for a in limits {
            let b = buckets.entry(a.key.clone()).or_insert(Bucket {
                limit: a.limit,
                tokens: f64::from(a.limit.capacity()),
                at: now,
            });
            if b.limit != a.limit {
                // The person changed the limit: it starts full.
                *b = Bucket {
                    limit: a.limit,
                    tokens: f64::from(a.limit.capacity()),
                    at: now,
                };
            }
            let tokens = b.refilled(now);
            if tokens < 1.0 {
                let per_sec = f64::from(a.limit.per_minute) / 60.0;
                let wait = ((1.0 - tokens) / per_sec).ceil().max(1.0) as u64;
                return Err(format!(
                    "Rate limit reached: {}; try again in {wait} s.",
                    a.what
                ));
            }
        }
        for a in limits {
            if let Some(b) = buckets.get_mut(&a.key) {
                b.tokens -= 1.0;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn fs() -> ServerId {
        serde_json::from_str("\"fs\"").unwrap()
    }

    fn config(text: &str) -> Config {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_profiles_burst_spends_its_own_budget_never_anothers() {
        let c = config(
            r#"{"servers": {"fs": {"command": "x", "tools": {"write": {"rate_limit": {"per_minute": 6, "burst": 2}}}}},
                "clients": {"cursor": {}, "claude": {"rate_limit": {"per_minute": 60, "burst": 1}}}}"#,
        );
        let cursor = c
            .clients
            .iter()
            .find(|(k, _)| k.as_str() == "cursor")
            .unwrap()
            .1;
        let claude = c
            .clients
            .iter()
            .find(|(k, _)| k.as_str() == "claude")
            .unwrap()
            .1;
        let limits = RateLimits::default();
        let t0 = Instant::now();
        let write =
            |p: Option<(&str, &ClientProfile)>| applying(&c, p, &fs(), "write", "fs__write");
        // The tool's limit, counted for each profile apart: cursor's two, then refused…
        assert!(limits.take(&write(Some(("cursor", cursor))), t0).is_ok());
        assert!(limits.take(&write(Some(("cursor", cursor))), t0).is_ok());
        let e = limits
            .take(&write(Some(("cursor", cursor))), t0)
            .unwrap_err();
        assert_eq!(
            e,
            "Rate limit reached: fs__write is limited to 6 calls a minute (2 at once) for client profile cursor; try again in 10 s."
        );
        // …while the default profile still has all of its own.
        assert!(limits.take(&write(None), t0).is_ok());
        assert!(limits.take(&write(None), t0).is_ok());
        // A token a tenth of a minute later.
        assert!(limits
            .take(
                &write(Some(("cursor", cursor))),
                t0 + Duration::from_secs(10)
            )
            .is_ok());
        // claude: its profile's limit (1 at once) refuses the second call, and that refusal
        // took nothing from the tool's bucket.
        let t1 = t0 + Duration::from_secs(20);
        assert!(limits.take(&write(Some(("claude", claude))), t1).is_ok());
        let e = limits
            .take(&write(Some(("claude", claude))), t1)
            .unwrap_err();
        assert!(e.contains("client profile claude is limited to 60 calls a minute (1 at once); try again in 1 s"), "{e}");
        let t2 = t1 + Duration::from_secs(1);
        assert!(limits.take(&write(Some(("claude", claude))), t2).is_ok());
        // Another tool has no limit of its own.
        assert!(applying(&c, Some(("cursor", cursor)), &fs(), "read", "fs__read").is_empty());
    }

    #[test]
    fn the_gateways_limit_counts_each_profile_apart_and_a_profiles_own_setting_wins() {
        let c = config(
            r#"{"servers": {"fs": {"command": "x"}},
                "gateway": {"rate_limit": {"per_minute": 1}},
                "clients": {"a": {"tools": {"fs__read": {"rate_limit": {"per_minute": 2}}}}, "b": {}}}"#,
        );
        let a = c.clients.iter().find(|(k, _)| k.as_str() == "a").unwrap().1;
        let b = c.clients.iter().find(|(k, _)| k.as_str() == "b").unwrap().1;
        let limits = RateLimits::default();
        let t = Instant::now();
        let read = |p| applying(&c, p, &fs(), "read", "fs__read");
        assert_eq!(read(Some(("a", a))).len(), 2);
        assert!(limits.take(&read(Some(("a", a))), t).is_ok());
        assert!(limits.take(&read(Some(("a", a))), t).is_err());
        assert!(limits.take(&read(Some(("b", b))), t).is_ok());
        assert!(limits.take(&read(None), t).is_ok());
        let e = limits.take(&read(None), t).unwrap_err();
        assert!(
            e.contains("client profile default is limited to 1 call a minute; try again in 60 s"),
            "{e}"
        );
    }
}

//! `"rate_limit"`: how many calls a client profile may make in a minute, with a burst — on a
//! profile (`clients.ID.rate_limit`, or `gateway.rate_limit` for every profile without one of its
//! own, the default profile included), on a tool (`servers.ID.tools.NAME.rate_limit`, counted for
//! each profile apart) or on one profile's tool (`clients.ID.tools.SERVER__NAME.rate_limit`).
//! Off unless written.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::refusal;

/// The most calls a minute (or in a burst) a limit may name.
pub const MAX_RATE: u32 = 100_000;

/// A token bucket: `per_minute` calls a minute, at most `burst` of them at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    /// Calls a minute, refilled evenly (one every `60 / per_minute` seconds).
    pub per_minute: u32,
    /// Calls that may be made at once after a quiet spell; unset: `per_minute`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

impl RateLimit {
    /// The bucket's size.
    pub fn capacity(&self) -> u32 {
        self.burst.unwrap_or(self.per_minute)
    }

    /// The limit in people's words: "10 calls a minute (3 at once)".
    pub fn describe(&self) -> String {
        let calls = if self.per_minute == 1 {
            "call"
        } else {
            "calls"
        };
        match self.burst {
            Some(b) => format!("{} {calls} a minute ({b} at once)", self.per_minute),
            None => format!("{} {calls} a minute", self.per_minute),
        }
    }
}

impl<'de> Deserialize<'de> for RateLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            per_minute: u64,
            #[serde(default)]
            burst: Option<u64>,
        }
        let raw = Raw::deserialize(d)?;
        let within = |key: &str, v: u64| {
            if (1..=u64::from(MAX_RATE)).contains(&v) {
                Ok(v as u32)
            } else {
                Err(de::Error::custom(refusal::joined(
                    &format!("\"rate_limit\" {key} is {v}"),
                    &format!("give a number of calls from 1 to {MAX_RATE}, or leave \"rate_limit\" out for no limit"),
                )))
            }
        };
        Ok(RateLimit {
            per_minute: within("per_minute", raw.per_minute)?,
            burst: raw.burst.map(|b| within("burst", b)).transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_reads_its_two_numbers_and_refuses_zero_or_too_many() {
        let l: RateLimit = serde_json::from_str(r#"{"per_minute": 10, "burst": 3}"#).unwrap();
        assert_eq!((l.per_minute, l.capacity()), (10, 3));
        assert_eq!(l.describe(), "10 calls a minute (3 at once)");
        let l: RateLimit = serde_json::from_str(r#"{"per_minute": 1}"#).unwrap();
        assert_eq!(
            (l.capacity(), l.describe().as_str()),
            (1, "1 call a minute")
        );
        for bad in [
            r#"{"per_minute": 0}"#,
            r#"{"per_minute": 5, "burst": 0}"#,
            r#"{"per_minute": 100001}"#,
            r#"{"burst": 5}"#,
            r#"{"per_minute": 5, "per_hour": 1}"#,
        ] {
            assert!(serde_json::from_str::<RateLimit>(bad).is_err(), "{bad}");
        }
        let e = serde_json::from_str::<RateLimit>(r#"{"per_minute": 0}"#).unwrap_err();
        assert!(refusal::readable(&e.to_string()).contains("from 1 to 100000"));
    }
}

//! What a pin keeps of a definition besides its hash: a snapshot, bounded, for the diff a person
//! sees when the definition changes. A definition within [`MAX_SNAPSHOT_BYTES`] is kept whole;
//! a larger one keeps each top-level member within [`MAX_MEMBER_BYTES`] and, of each longer one,
//! its SHA-256 and size (`{"$sha256": …, "$bytes": …}`) — so a change is still named by member,
//! and the old text shown where it is short. A new definition is compared in the same form.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A definition this long or shorter is kept whole.
pub const MAX_SNAPSHOT_BYTES: usize = 16 * 1024;
/// A top-level member of a longer definition this long or shorter is kept as it is.
pub const MAX_MEMBER_BYTES: usize = 8 * 1024;

/// The snapshot of a definition's (masked, compact) text.
pub fn of_text(text: &str) -> Box<RawValue> {
    if text.len() <= MAX_SNAPSHOT_BYTES {
        if let Ok(raw) = RawValue::from_string(text.to_owned()) {
            return raw;
        }
    }
    let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    to_raw(&reduce(&value, text.len()))
}

/// The snapshot of a parsed definition (the form [`of_text`] gives), as a value.
pub fn of_value(value: &Value) -> Value {
    let text = value.to_string();
    if text.len() <= MAX_SNAPSHOT_BYTES {
        return value.clone();
    }
    reduce(value, text.len())
}

fn reduce(value: &Value, len: usize) -> Value {
    let digest = |v: &Value, n: usize| {
        let mut m = Map::new();
        m.insert(
            "$sha256".into(),
            Value::String(crate::supervisor::status::definition_hash(&v.to_string())),
        );
        m.insert("$bytes".into(), Value::from(n));
        Value::Object(m)
    };
    let Some(members) = value.as_object() else {
        return digest(value, len);
    };
    let kept: Map<String, Value> = members
        .iter()
        .map(|(k, v)| {
            let n = v.to_string().len();
            let v = if n <= MAX_MEMBER_BYTES {
                v.clone()
            } else {
                digest(v, n)
            };
            (k.clone(), v)
        })
        .collect();
    let kept = Value::Object(kept);
    if kept.to_string().len() <= MAX_SNAPSHOT_BYTES {
        kept
    } else {
        // Many members, each short: the whole definition's digest.
        digest(value, len)
    }
}

fn to_raw(v: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_definition_keeps_short_members_and_digests_of_long_ones_within_the_bound() {
        let short = r#"{"name":"echo","description":"says it back"}"#;
        assert_eq!(of_text(short).get(), short);
        let long = serde_json::json!({
            "name": "echo",
            "description": "x".repeat(1 << 20),
            "inputSchema": {"type": "object"}
        });
        let text = long.to_string();
        let snap: Value = serde_json::from_str(of_text(&text).get()).unwrap();
        assert!(snap.to_string().len() <= MAX_SNAPSHOT_BYTES);
        assert_eq!(snap["name"], "echo");
        assert_eq!(snap["inputSchema"], serde_json::json!({"type": "object"}));
        assert_eq!(snap["description"]["$bytes"], (1 << 20) + 2);
        // The parsed form reduces the same way, and a change of the long member shows.
        assert_eq!(of_value(&long), snap);
        let mut changed = long.clone();
        changed["description"] = Value::String("y".repeat(1 << 20));
        assert_ne!(of_value(&changed)["description"], snap["description"]);
        assert_eq!(of_value(&changed)["name"], snap["name"]);
        // Thousands of short members: one digest of the whole.
        let wide: Map<String, Value> = (0..5000)
            .map(|i| (format!("k{i}"), Value::from(i)))
            .collect();
        let wide = Value::Object(wide);
        let snap = of_value(&wide);
        assert!(
            snap.get("$sha256").is_some() && snap.to_string().len() < 200,
            "{snap}"
        );
    }
}

//! JSON read so that a key given twice is an error, never a guess. Parsers disagree on
//! `{"name":"a","name":"b"}` (serde's maps keep the last, some servers the first), so whatever
//! Gatehouse checks — the routing headers against a request's members, the `Mcp-Param-*`
//! headers and `validate_arguments` against its arguments — is read this way: what was checked
//! is what the server can only read one way.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The top-level members of the object `text`, in order, keys decoded (escapes resolved), values
/// raw. Duplicates are kept, for the caller to judge.
pub fn members(text: &str) -> Result<Vec<(String, &RawValue)>, String> {
    serde_json::from_str::<Members>(text)
        .map(|m| m.0)
        .map_err(|e| e.to_string())
}

/// `text` as a value, refusing any object (at any depth) that gives a key twice.
pub fn value(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Strict>(text)
        .map(|s| s.0)
        .map_err(|e| e.to_string())
}

struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let Strict(v) = map.next_value()?;
            if out.contains_key(&k) {
                return Err(de::Error::custom(format_args!(
                    "the key \"{k}\" is given twice"
                )));
            }
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_an_error_at_any_depth_and_escapes_are_the_same_key() {
        assert!(value(r#"{"a":{"b":[{"c":1,"d":2}]}}"#).is_ok());
        for twice in [
            r#"{"a":1,"a":2}"#,
            r#"{"x":{"region":"eu","region":"us"}}"#,
            r#"[{"k":1,"\u006b":2}]"#,
        ] {
            let e = value(twice).unwrap_err();
            assert!(e.contains("is given twice"), "{twice}: {e}");
        }
        let m = members(r#"{"na\u006de":"a","name":"b","arguments":{"x":1}}"#).unwrap();
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["name", "name", "arguments"]);
        assert!(members("[1]").is_err());
    }
}

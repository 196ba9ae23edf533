//! Argument rules on a tool (`"rules"` under a server's tool or a client profile's tool): each
//! allows or denies the call when every argument it names matches. Read here by their own grammar
//! (an unknown matcher, a relative path, a bad glob or an empty rule is refused with the fix);
//! matched in `approval::rules`.
//!
//! ```json
//! "rules": [
//!   {"allow": {"path": {"under": "~/notes"}}},
//!   {"deny": {"path": {"under": "~/notes/private"}}},
//!   {"allow": {"mode": {"one_of": ["read", "list"]}, "limit": {"min": 1, "max": 50}}, "even_if_flagged": true}
//! ]
//! ```

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// Rules on one tool, at most.
pub const MAX_RULES: usize = 64;

/// Whether a matching rule lets the call run or refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Runs without asking (unless a flag asks and the rule is not `even_if_flagged`).
    Allow,
    /// Refused, the rule named.
    Deny,
}

impl Effect {
    /// `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Deny => "deny",
        }
    }
}

/// One rule: its effect when every named argument matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Allow or deny.
    pub effect: Effect,
    /// Argument name → what its value must be.
    pub when: BTreeMap<String, Matcher>,
    /// An allow that applies even where `requires_approval: true` asks (off: the flag wins).
    pub even_if_flagged: bool,
}

/// What one argument's value must be.
#[derive(Debug, Clone, PartialEq)]
pub enum Matcher {
    /// A path inside this directory (or the directory itself): `~` is the home directory; the
    /// argument is resolved (`..`, symlinks, `~`, Unicode form) before it is compared.
    Under(String),
    /// Exactly this value (numbers by value: `1` equals `1.0`).
    Equals(Value),
    /// One of these values.
    OneOf(Vec<Value>),
    /// A string matching this glob (`*` never crosses `/`).
    Glob(String),
    /// A number within `min..=max` (either may be absent).
    Range {
        /// The smallest allowed.
        min: Option<Number>,
        /// The largest allowed.
        max: Option<Number>,
    },
}

impl Matcher {
    /// The matcher as the config spells it (`under`, `equals`, `one_of`, `glob`, `min/max`).
    pub fn kind(&self) -> &'static str {
        match self {
            Matcher::Under(_) => "under",
            Matcher::Equals(_) => "equals",
            Matcher::OneOf(_) => "one_of",
            Matcher::Glob(_) => "glob",
            Matcher::Range { .. } => "min/max",
        }
    }

    /// The matcher as one short phrase (`is under ~/notes`, `is one of ["a","b"]`), every text
    /// in it shown with hidden characters as code points (`text::reveal`): it quotes a config,
    /// or a call's arguments when a rule is offered from one.
    pub fn describe(&self) -> String {
        use crate::text::reveal;
        let said = match self {
            Matcher::Under(p) => format!("is under {p}"),
            Matcher::Equals(v) => format!("equals {v}"),
            Matcher::OneOf(v) => format!("is one of {}", Value::Array(v.clone())),
            Matcher::Glob(g) => format!("matches {g}"),
            Matcher::Range { min, max } => match (min, max) {
                (Some(a), Some(b)) => format!("is from {a} to {b}"),
                (Some(a), None) => format!("is at least {a}"),
                (None, Some(b)) => format!("is at most {b}"),
                (None, None) => "is any number".into(),
            },
        };
        reveal(&said).into_owned()
    }

    fn to_value(&self) -> Value {
        let one = |k: &str, v: Value| Value::Object(Map::from_iter([(k.to_owned(), v)]));
        match self {
            Matcher::Under(p) => one("under", Value::String(p.clone())),
            Matcher::Equals(v) => one("equals", v.clone()),
            Matcher::OneOf(v) => one("one_of", Value::Array(v.clone())),
            Matcher::Glob(g) => one("glob", Value::String(g.clone())),
            Matcher::Range { min, max } => {
                let mut m = Map::new();
                if let Some(a) = min {
                    m.insert("min".into(), Value::Number(a.clone()));
                }
                if let Some(b) = max {
                    m.insert("max".into(), Value::Number(b.clone()));
                }
                Value::Object(m)
            }
        }
    }
}

impl Rule {
    /// The rule as one line: `allow when path is under ~/notes and mode is one of ["r"]`.
    pub fn describe(&self) -> String {
        let when: Vec<String> = self
            .when
            .iter()
            .map(|(arg, m)| format!("{} {}", crate::text::reveal(arg), m.describe()))
            .collect();
        format!("{} when {}", self.effect.as_str(), when.join(" and "))
    }

    /// Reads one rule from its JSON, or says what is wrong and how to write it.
    pub fn read(v: &Value) -> Result<Rule, String> {
        let Some(o) = v.as_object() else {
            return Err(
                "a rule is an object such as {\"allow\": {\"path\": {\"under\": \"~/notes\"}}}"
                    .into(),
            );
        };
        let mut effect = None;
        let mut even_if_flagged = false;
        for (k, x) in o {
            match k.as_str() {
                "allow" | "deny" => {
                    if effect.is_some() {
                        return Err("a rule has one of \"allow\" or \"deny\", not both".into());
                    }
                    let e = if k == "allow" {
                        Effect::Allow
                    } else {
                        Effect::Deny
                    };
                    effect = Some((e, x));
                }
                "even_if_flagged" => {
                    even_if_flagged = x.as_bool().ok_or("\"even_if_flagged\" is true or false")?;
                }
                other => {
                    return Err(format!(
                        "a rule has no setting \"{}\" (it has \"allow\" or \"deny\", and \"even_if_flagged\")",
                        crate::text::reveal(other)
                    ))
                }
            }
        }
        let Some((effect, when)) = effect else {
            return Err("a rule says \"allow\" or \"deny\"".into());
        };
        let Some(when) = when.as_object() else {
            return Err(format!(
                "\"{}\" takes an object of argument names, such as {{\"path\": {{\"under\": \"~/notes\"}}}}",
                effect.as_str()
            ));
        };
        if when.is_empty() {
            return Err(format!(
                "a rule names at least one argument (to {} every call, set \"requires_approval\" or \"enabled\" instead)",
                effect.as_str()
            ));
        }
        let mut out = BTreeMap::new();
        for (arg, m) in when {
            let m = read_matcher(m)
                .map_err(|e| format!("argument \"{}\": {e}", crate::text::reveal(arg)))?;
            out.insert(arg.clone(), m);
        }
        if even_if_flagged && effect == Effect::Deny {
            return Err("\"even_if_flagged\" is for allow rules (a deny always wins)".into());
        }
        Ok(Rule {
            effect,
            when: out,
            even_if_flagged,
        })
    }
}

fn read_matcher(v: &Value) -> Result<Matcher, String> {
    const HOW: &str = "a matcher is one of {\"under\": PATH}, {\"equals\": V}, {\"one_of\": [V, …]}, {\"glob\": \"*.md\"} or {\"min\": N, \"max\": M}";
    let Some(o) = v.as_object() else {
        return Err(HOW.into());
    };
    let keys: Vec<&str> = o.keys().map(String::as_str).collect();
    match keys.as_slice() {
        ["under"] => {
            let p = o["under"].as_str().ok_or("\"under\" takes a path")?;
            let ok = p == "~" || p.starts_with("~/") || p.starts_with('/');
            if !ok || p.contains('\0') {
                return Err(format!(
                    "\"under\" takes an absolute path or one under ~ (\"{}\" is neither)",
                    crate::text::reveal(p)
                ));
            }
            Ok(Matcher::Under(p.to_owned()))
        }
        ["equals"] => Ok(Matcher::Equals(o["equals"].clone())),
        ["one_of"] => match &o["one_of"] {
            Value::Array(a) if !a.is_empty() => Ok(Matcher::OneOf(a.clone())),
            _ => Err("\"one_of\" takes a list of one value or more".into()),
        },
        ["glob"] => {
            let g = o["glob"]
                .as_str()
                .ok_or("\"glob\" takes a pattern such as \"*.md\"")?;
            globset::GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    format!(
                        "the glob \"{}\" cannot be read: {e}",
                        crate::text::reveal(g)
                    )
                })?;
            Ok(Matcher::Glob(g.to_owned()))
        }
        ks if !ks.is_empty() && ks.iter().all(|k| *k == "min" || *k == "max") => {
            let num = |k: &str| -> Result<Option<Number>, String> {
                match o.get(k) {
                    None => Ok(None),
                    Some(Value::Number(n)) => Ok(Some(n.clone())),
                    Some(_) => Err(format!("\"{k}\" takes a number")),
                }
            };
            let (min, max) = (num("min")?, num("max")?);
            if let (Some(a), Some(b)) = (&min, &max) {
                if a.as_f64().unwrap_or(0.0) > b.as_f64().unwrap_or(0.0) {
                    return Err(format!(
                        "\"min\" ({a}) is above \"max\" ({b}): nothing would match"
                    ));
                }
            }
            Ok(Matcher::Range { min, max })
        }
        _ => Err(HOW.into()),
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        let when: Map<String, Value> = self
            .when
            .iter()
            .map(|(k, v)| (k.clone(), v.to_value()))
            .collect();
        m.serialize_entry(self.effect.as_str(), &when)?;
        if self.even_if_flagged {
            m.serialize_entry("even_if_flagged", &true)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Rule::read(&v).map_err(|e| {
            de::Error::custom(super::refusal::joined(
                &format!("a rule cannot be read: {e}"),
                "write each rule as {\"allow\": {ARGUMENT: MATCHER}} or {\"deny\": {…}}; see README, \"Argument rules\"",
            ))
        })
    }
}

/// Reads a tool's `"rules"` list (bounded by [`MAX_RULES`]).
pub fn de_rules<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Rule>, D::Error> {
    let rules = Vec::<Rule>::deserialize(d)?;
    if rules.len() > MAX_RULES {
        return Err(de::Error::custom(super::refusal::joined(
            &format!("a tool has {} rules", rules.len()),
            &format!("keep at most {MAX_RULES} rules on one tool"),
        )));
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every matcher reads and writes back as written; each mistake is refused with its fix.
    /// What a rule says is shown, never rendered: a hidden character in an argument's name or a
    /// value appears as its code point.
    #[test]
    fn a_rule_in_words_shows_hidden_characters() {
        let r = Rule::read(&json!({"deny": {"pa\u{202E}th": {"under": "/a\u{200B}b"}}})).unwrap();
        let said = r.describe();
        assert!(
            said.contains("pa⟨U+202E⟩th") && said.contains("/a⟨U+200B⟩b"),
            "{said}"
        );
        assert!(!said.chars().any(crate::text::is_hidden), "{said:?}");
    }

    #[test]
    fn rules_read_by_their_grammar_and_round_trip() {
        let v = json!({"allow": {"path": {"under": "~/notes"}, "n": {"min": 1, "max": 2.5},
            "m": {"one_of": ["a", 1]}, "g": {"glob": "*.md"}, "e": {"equals": {"x": [1]}}},
            "even_if_flagged": true});
        let r = Rule::read(&v).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
        for (bad, says) in [
            (json!({"allow": {}}), "at least one argument"),
            (json!({"allow": {"p": {"under": "notes"}}}), "absolute path"),
            (json!({"allow": {"p": {"glob": "a["}}}), "cannot be read"),
            (json!({"allow": {"p": {"min": 3, "max": 1}}}), "above"),
            (
                json!({"allow": {"p": {"under": "/a", "glob": "*"}}}),
                "a matcher is one of",
            ),
            (
                json!({"permit": {"p": {"equals": 1}}}),
                "no setting \"permit\"",
            ),
            (
                json!({"allow": {"p": {"equals": 1}}, "deny": {"p": {"equals": 1}}}),
                "not both",
            ),
            (
                json!({"deny": {"p": {"equals": 1}}, "even_if_flagged": true}),
                "for allow rules",
            ),
            (json!({"allow": {"p": {"one_of": []}}}), "one value or more"),
        ] {
            let e = Rule::read(&bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

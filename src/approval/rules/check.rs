//! A tool's rules checked against its definition (`inputSchema`) before they are trusted: a rule
//! naming an argument the tool does not have, or comparing an argument of the wrong type (a path
//! rule on a number), can never match and is refused; a value of another type than the schema
//! says is a warning. A schema Gatehouse cannot read (none, or a long definition's reduced
//! snapshot) is not held against the rule.

use serde_json::Value;

use crate::config::rules::{Matcher, Rule};

/// What is wrong with one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The rule cannot match as written: refused when the config is loaded.
    pub refuse: bool,
    /// The rule's index in its list.
    pub rule: usize,
    /// What is wrong.
    pub text: String,
    /// What to do.
    pub fix: String,
}

/// The problems of `rules` on `tool` against its `definition` (as the server lists it).
pub fn check(tool: &str, rules: &[Rule], definition: &Value) -> Vec<Problem> {
    let Some(props) = definition
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let tool = crate::text::reveal(tool);
    // A server's own words (its argument names) and the config's values are shown, never
    // rendered: hidden characters as code points.
    let mut names: Vec<String> = props
        .keys()
        .map(|k| crate::text::reveal(k).into_owned())
        .collect();
    names.sort_unstable();
    let mut out = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        for (arg, m) in &rule.when {
            let shown = crate::text::reveal(arg);
            let Some(prop) = props.get(arg) else {
                out.push(Problem {
                    refuse: true,
                    rule: i,
                    text: format!(
                        "rules[{i}] names the argument \"{shown}\", which {tool}'s inputSchema does not have"
                    ),
                    fix: format!(
                        "name one of its arguments ({}) or remove the rule",
                        names.join(", ")
                    ),
                });
                continue;
            };
            let types = types_of(prop);
            if types.is_empty() {
                continue;
            }
            let has = |t: &str| types.iter().any(|x| x == t);
            let wrong = match m {
                Matcher::Under(_) | Matcher::Glob(_) if !has("string") => Some("text"),
                Matcher::Range { .. } if !has("number") && !has("integer") => Some("a number"),
                _ => None,
            };
            if let Some(needs) = wrong {
                out.push(Problem {
                    refuse: true,
                    rule: i,
                    text: format!(
                        "rules[{i}]: \"{}\" compares {needs}, and {tool}'s argument \"{shown}\" is {}",
                        m.kind(),
                        types.join(" or ")
                    ),
                    fix: format!("use a matcher for {} (equals, one_of)", types.join(" or ")),
                });
                continue;
            }
            let values: Vec<&Value> = match m {
                Matcher::Equals(v) => vec![v],
                Matcher::OneOf(vs) => vs.iter().collect(),
                _ => Vec::new(),
            };
            for v in values {
                let t = type_of(v);
                let shown_v = crate::text::reveal(&v.to_string()).into_owned();
                let fits = has(t) || (t == "integer" && has("number"));
                if !fits {
                    out.push(Problem {
                        refuse: false,
                        rule: i,
                        text: format!(
                            "rules[{i}]: the value {shown_v} of \"{shown}\" is {t}, and {tool} takes {}: it never matches what a client following the schema sends",
                            types.join(" or ")
                        ),
                        fix: "write the value as the schema's type".into(),
                    });
                }
            }
        }
    }
    out
}

/// The allow rules' folders a confined server cannot read (`reads`: its sandbox's plan): a
/// call such a rule lets through would fail inside the server. Warnings, with the setting that
/// opens the folder.
pub fn unreachable(
    server: &str,
    rules: &[Rule],
    reads: impl Fn(&std::path::Path) -> bool,
    home: Option<&std::path::Path>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        if rule.effect != crate::config::rules::Effect::Allow {
            continue;
        }
        for m in rule.when.values() {
            let Matcher::Under(dir) = m else { continue };
            let path = match dir.strip_prefix("~") {
                Some(rest) => match home {
                    Some(h) => h.join(rest.trim_start_matches('/')),
                    None => continue,
                },
                None => std::path::PathBuf::from(dir),
            };
            let real = std::fs::canonicalize(&path).unwrap_or(path);
            if !reads(&real) {
                out.push(Problem {
                    refuse: false,
                    rule: i,
                    text: format!(
                        "rules[{i}] allows calls under {}, and the sandbox keeps \"{server}\" out of it: such a call would fail inside the server",
                        crate::text::reveal(dir)
                    ),
                    fix: format!(
                        "open it to the server with \"sandbox\": {{\"write\": [\"{}\"]}} (or \"read\"), or narrow the rule",
                        crate::text::reveal(dir)
                    ),
                });
            }
        }
    }
    out
}

fn types_of(prop: &Value) -> Vec<String> {
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An unknown argument and a matcher of the wrong type are refused with the fix naming the
    /// tool's arguments; a value of another type warns; an unreadable schema holds nothing.
    #[test]
    fn rules_are_checked_against_the_input_schema() {
        let def = json!({"name": "write_file", "inputSchema": {"type": "object", "properties": {
            "path": {"type": "string"}, "size": {"type": "integer"}, "mode": {"type": "string"}}}});
        let rules: Vec<Rule> = [
            json!({"allow": {"pth": {"under": "/tmp"}}}),
            json!({"allow": {"size": {"glob": "*"}}}),
            json!({"allow": {"mode": {"one_of": ["r", 1]}}}),
            json!({"allow": {"path": {"under": "/tmp"}, "size": {"max": 10}}}),
        ]
        .iter()
        .map(|v| Rule::read(v).unwrap())
        .collect();
        let p = check("write_file", &rules, &def);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(
            p[0].refuse && p[0].text.contains("\"pth\"") && p[0].fix.contains("mode, path, size"),
            "{p:?}"
        );
        assert!(
            p[1].refuse && p[1].rule == 1 && p[1].text.contains("glob"),
            "{p:?}"
        );
        assert!(!p[2].refuse && p[2].rule == 2, "{p:?}");
        assert!(check("w", &rules, &json!({"inputSchema": {"$sha256": "x"}})).is_empty());
        // A folder the server's sandbox does not open is a warning (the rule is kept).
        let far = unreachable("fs", &rules[3..], |p| p.starts_with("/srv"), None);
        assert_eq!(far.len(), 1, "{far:?}");
        assert!(
            !far[0].refuse && far[0].text.contains("keeps \"fs\" out"),
            "{far:?}"
        );
        assert!(unreachable("fs", &rules[3..], |_| true, None).is_empty());
    }
}

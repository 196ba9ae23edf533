//! How a config is refused: what is wrong and what to do, always as two composed sentences —
//! never a fix cut out of the message. `EntryError` is one server entry's refusal (with the field,
//! for a form); `ConfigError` a whole file's (with file, line and column). A refusal raised
//! inside serde travels as `problem SEP fix` and is split again here.

use std::fmt;
use std::path::PathBuf;

/// Between a refusal's problem and its fix while it travels through serde's error text.
const SEP: char = '\u{1f}';

/// A refusal's text for serde (`de::Error::custom`): split again by [`split`].
pub(super) fn joined(problem: &str, fix: &str) -> String {
    format!("{problem}{SEP}{fix}")
}

/// A refusal's text for people: the problem, then what to do — with any text it quotes from the
/// file (a key, a value) shown as code points where hidden ([`crate::text::reveal`]).
pub(super) fn sentence(problem: &str, fix: &str) -> String {
    crate::text::reveal(&format!("{problem}: {fix}")).into_owned()
}

/// `(problem, fix)` of a text made by [`joined`]; `None` for any other text.
pub(super) fn split(text: &str) -> Option<(&str, &str)> {
    text.split_once(SEP)
}

/// Any text as people read it: a joined refusal becomes its sentence.
pub fn readable(text: &str) -> String {
    match split(text) {
        Some((p, f)) => {
            // serde appends " at line L column C" after the fix.
            let f = f.rfind(" at line ").map_or(f, |i| &f[..i]);
            sentence(p, f)
        }
        None => crate::text::reveal(text).into_owned(),
    }
}

/// A refused server entry: what is wrong, what to do and, when it is about one field of the
/// entry, which (so a form can show the message next to that field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryError {
    /// The entry's key the message is about (`command`, `url`, `env`, `id`, …), when there is one.
    pub field: Option<&'static str>,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub fix: String,
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&sentence(&self.message, &self.fix))
    }
}

impl EntryError {
    /// The refusal as serde's error text (split again when the file is reported).
    pub(super) fn joined(&self) -> String {
        joined(&self.message, &self.fix)
    }
}

/// A refusal about one field.
pub(super) fn at(
    field: &'static str,
    problem: impl Into<String>,
    fix: impl Into<String>,
) -> EntryError {
    EntryError {
        field: Some(field),
        message: problem.into(),
        fix: fix.into(),
    }
}

/// Why a config could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read config {path}: {source}\n  fix: {fix}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
        /// What to do.
        fix: String,
    },
    /// The file does not parse or does not validate.
    #[error("{path}:{line}:{column}: {message}\n  fix: {fix}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where (1-based).
        line: usize,
        /// Where (1-based).
        column: usize,
        /// What is wrong.
        message: String,
        /// What to do.
        fix: String,
    },
    /// The file cannot be written.
    #[error("cannot write config {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The current file does not parse: it is never overwritten.
    #[error("refusing to overwrite {path}: it does not parse ({reason}); fix or move it first")]
    RefuseOverwrite {
        /// The file.
        path: PathBuf,
        /// Why it does not parse.
        reason: String,
    },
}

/// The key that shows `text` is an AI client's own file, not Gatehouse's: `mcpServers` (Claude,
/// Cursor, Gemini CLI…), VS Code's `inputs` next to `servers`, Zed's `context_servers`,
/// opencode's `mcp`, Codex's `mcp_servers`. Read from the whole document, whatever key serde
/// stopped at first.
pub(super) fn client_file_key(text: &str) -> Option<&'static str> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let o = v.as_object()?;
    [
        "mcpServers",
        "inputs",
        "context_servers",
        "mcp",
        "mcp_servers",
        "mcp_requirements",
    ]
    .into_iter()
    .find(|k| o.contains_key(*k))
}

/// The composed fix for a serde message (its position already cut off).
pub(super) fn fix_for(message: &str, class: serde_json::error::Category) -> String {
    use serde_json::error::Category;
    match class {
        Category::Syntax | Category::Eof => {
            "fix the JSON syntax at that position (a missing comma, quote or brace is the usual cause)"
                .into()
        }
        Category::Io => "check the file can be read".into(),
        Category::Data => {
            if let Some(rest) = message.strip_prefix("unknown field `") {
                let field = rest.split('`').next().unwrap_or("");
                let expected: Vec<&str> = rest
                    .split("expected ")
                    .nth(1)
                    .map(|e| e.split('`').skip(1).step_by(2).collect())
                    .unwrap_or_default();
                match closest(field, &expected) {
                    Some(best) => format!("did you mean \"{best}\"? rename or remove \"{field}\""),
                    None if expected.is_empty() => format!("remove \"{field}\""),
                    None => format!("remove \"{field}\"; allowed here: {}", expected.join(", ")),
                }
            } else if message.starts_with("invalid type") {
                "use the type named above (strings in quotes, numbers and true/false without)"
                    .into()
            } else if let Some(field) = message
                .strip_prefix("missing field `")
                .and_then(|r| r.split('`').next())
            {
                format!("add \"{field}\"")
            } else if let Some(rest) = message.strip_prefix("unknown variant `") {
                // `approval.default`, `start`, `sandbox`…: the allowed values, the nearest first.
                let given = rest.split('`').next().unwrap_or("");
                let allowed: Vec<&str> = rest
                    .split("expected ")
                    .nth(1)
                    .map(|e| e.split('`').skip(1).step_by(2).collect())
                    .unwrap_or_default();
                let quoted: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
                match closest(given, &allowed) {
                    Some(best) => format!("change \"{given}\" to \"{best}\" (allowed: {})", quoted.join(", ")),
                    None => format!("change \"{given}\" to one of {}", quoted.join(", ")),
                }
            } else if message.starts_with("invalid value: integer `-") {
                "change it to a whole number of 0 or more (no minus sign)".into()
            } else if message.starts_with("invalid value: floating point") {
                "change it to a whole number (no decimal point)".into()
            } else if message.starts_with("invalid length") {
                "give the number of items the message above names".into()
            } else {
                "change the value at that position to the type the message above names".into()
            }
        }
    }
}

/// For a value of the wrong type in a server entry (`"args": "not-a-list"`): the setting it is in
/// — each of the entry's settings read alone by `read_alone`, the one refused the same way — and
/// the fix in the setting's own form (a string given for a list shown split into one).
pub(super) fn mistyped(
    (entry, keys): (&serde_json::Value, &[&'static str]),
    message: &str,
    read_alone: impl Fn(serde_json::Value) -> Option<serde_json::Error>,
) -> Option<(&'static str, String)> {
    let kind = ["invalid type", "invalid value", "invalid length"]
        .into_iter()
        .find(|k| message.starts_with(k))?;
    let o = entry.as_object()?;
    let (key, value) = o.iter().find(|(k, v)| {
        let mut one = serde_json::Map::new();
        one.insert((*k).clone(), (*v).clone());
        read_alone(serde_json::Value::Object(one)).is_some_and(|e| e.to_string().starts_with(kind))
    })?;
    let key: &'static str = keys.iter().copied().find(|k| *k == key)?;
    Some((key, right_form(key, value)))
}

/// What setting `key` takes, written out as the entry would hold it.
fn right_form(key: &str, given: &serde_json::Value) -> String {
    let q = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
    match key {
        "args" | "tools_used" | "unmasked_secrets" => match given.as_str() {
            Some(text) => {
                let words: Vec<String> = text.split_whitespace().map(q).collect();
                format!("\"{key}\" is a list of strings, one a word: \"{key}\": [{}]", words.join(", "))
            }
            None => format!("\"{key}\" is a list of strings: \"{key}\": [\"--flag\", \"value\"]"),
        },
        "env" | "headers" => format!(
            "\"{key}\" is an object of names and values: \"{key}\": {{\"NAME\": \"value\"}} (or {{\"secret\": \"NAME\"}} for a value kept in the keychain)"
        ),
        "tools" => "\"tools\" is an object of tool names: \"tools\": {\"TOOL\": {\"requires_approval\": true}}".into(),
        "allow_insecure" | "allow_private" | "enabled" | "requires_approval" | "validate_arguments" | "disabled" | "spotlight" => {
            format!("\"{key}\" is true or false, without quotes: \"{key}\": true")
        }
        "startup_timeout_secs" | "call_timeout_secs" | "idle_stop_secs" => {
            format!("\"{key}\" is a whole number of seconds, without quotes: \"{key}\": 30")
        }
        "sandbox" => "\"sandbox\" is \"default\", \"strict\", \"off\", or an object: \"sandbox\": {\"write\": [\"~/notes\"], \"network\": false}".into(),
        "pin" => "\"pin\" is an object: \"pin\": {\"version\": \"1.4.2\", \"integrity\": \"sha512-…\"}".into(),
        "auth" | "oauth" => format!("\"{key}\" is an object (see the README's sign-in section)"),
        _ => format!("\"{key}\" is text in quotes: \"{key}\": \"…\""),
    }
}

/// The allowed name nearest to `word` (edit distance ≤ 3), for "did you mean" hints.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (levenshtein(word, c), *c))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

pub(super) fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The line of `text` on which server `key` is listed: the first `"key":` after the list's own
/// key (`"servers"` or `"mcpServers"`), or 0.
pub(super) fn line_of(text: &str, key: &str) -> usize {
    let Ok(quoted) = serde_json::to_string(key) else {
        return 0;
    };
    let start = ["\"servers\"", "\"mcpServers\""]
        .iter()
        .filter_map(|k| text.find(k))
        .min()
        .unwrap_or(0);
    let mut from = start;
    while let Some(i) = text[from..].find(&quoted) {
        let at = from + i;
        let after = text[at + quoted.len()..].trim_start();
        if after.starts_with(':') {
            return text[..at].matches('\n').count() + 1;
        }
        from = at + quoted.len();
    }
    0
}

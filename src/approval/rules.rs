//! Argument rules matched against one call's arguments (the rules' grammar is in
//! `config::rules`). A rule matches when every argument it names matches; among the rules of the
//! server's tool and of the client profile's tool, a matching deny wins over any matching allow.
//!
//! `under` compares where the path really leads: `~` and `~/` are the home directory (`~user`
//! never matches), the argument is resolved as the kernel would (symlinks and `..` in its
//! existing part; `..` in a part that does not exist yet makes it unresolvable), and a directory
//! is recognised by its device and inode as well as its name (a case-insensitive mount). An
//! allow is strict: an argument that cannot be resolved, or that reaches the directory only by
//! another Unicode spelling or case, does not match. A deny is loose: it also matches when the
//! path's text, `..` taken lexically, in NFC and lower case, falls under the directory's.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use crate::config::rules::{Effect, Matcher, Rule};

mod check;
pub use check::{check, unreachable, Problem};

/// Which rule decided, as the config names it (`servers.fs.tools.write_file.rules[1]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    /// Allow or deny.
    pub effect: Effect,
    /// The rule's place in the config.
    pub name: String,
    /// An allow that applies even where a flag asks.
    pub even_if_flagged: bool,
    /// The rule in words.
    pub text: String,
    /// A deny rule that can no longer match the tool's definition as the server lists it now
    /// (an argument it names is gone, or changed type): why. The call is then held for the
    /// person with this reason, never run as if the rule were not there.
    pub stale: Option<String>,
}

/// One list of rules and where it is in the config (`servers.fs.tools.write_file`).
pub struct Source<'a> {
    /// The path of its tool in the config.
    pub at: String,
    /// Its rules, in order.
    pub rules: &'a [Rule],
}

/// The ruling of `sources` over `arguments` (the call's `arguments` object): the first matching
/// deny, else the first matching allow, else none.
pub fn decide(sources: &[Source<'_>], arguments: &Value, home: Option<&Path>) -> Option<Ruling> {
    let mut allow = None;
    for src in sources {
        for (i, rule) in src.rules.iter().enumerate() {
            if !matches(rule, arguments, home) {
                continue;
            }
            let ruling = || Ruling {
                effect: rule.effect,
                name: format!("{}.rules[{i}]", src.at),
                even_if_flagged: rule.even_if_flagged,
                text: rule.describe(),
                stale: None,
            };
            match rule.effect {
                Effect::Deny => return Some(ruling()),
                Effect::Allow if allow.is_none() => allow = Some(ruling()),
                Effect::Allow => {}
            }
        }
    }
    allow
}

/// The ruling over one call to `server`'s `tool` (its `definition` as the server lists it, raw
/// JSON) with `arguments` (the call's one reading,
/// [`crate::arguments::read`]; `None`: it has none): the rules of the server's tool, then those
/// of the calling profile's (`profile`: its id and entry). A deny rule that can no longer match
/// the tool as listed now, when no deny matched, makes a stale ruling (the call is held, never
/// waved on). Nothing is looked at when neither has rules.
pub fn for_call(
    config: &crate::config::Config,
    (server, tool, definition): (&str, &str, &str),
    profile: Option<(&str, &crate::config::ClientProfile)>,
    arguments: Option<&Value>,
) -> Option<Ruling> {
    let sources = sources(config, server, tool, profile);
    if sources.is_empty() {
        return None;
    }
    let none = Value::Object(serde_json::Map::new());
    let ruling = decide(
        &sources,
        arguments.unwrap_or(&none),
        dirs::home_dir().as_deref(),
    );
    if ruling.as_ref().is_some_and(|r| r.effect == Effect::Deny) {
        return ruling;
    }
    stale_deny(&sources, tool, definition).or(ruling)
}

/// The rules that apply to a call of `server`'s `tool` through `profile`, each list with where
/// it is in the config.
pub fn sources<'a>(
    config: &'a crate::config::Config,
    server: &str,
    tool: &str,
    profile: Option<(&str, &'a crate::config::ClientProfile)>,
) -> Vec<Source<'a>> {
    let mut sources = Vec::new();
    if let Some(t) = config
        .servers
        .get(server)
        .and_then(|c| c.tools.get(tool))
        .filter(|t| !t.rules.is_empty())
    {
        sources.push(Source {
            at: format!("servers.{server}.tools.{tool}"),
            rules: &t.rules,
        });
    }
    // A profile without per-tool settings has no rules: nothing is named or allocated for it.
    if let Some((id, p)) = profile.filter(|(_, p)| p.tools.values().any(|t| !t.rules.is_empty())) {
        let exposed = crate::naming::exposed_name(server, tool);
        let key = if p.tools.contains_key(&exposed) {
            exposed.clone()
        } else {
            format!("{server}__*")
        };
        if let Some(t) = p
            .tool_policy(server, &exposed)
            .filter(|t| !t.rules.is_empty())
        {
            sources.push(Source {
                at: format!("clients.{id}.tools.{key}"),
                rules: &t.rules,
            });
        }
    }
    sources
}

/// The first deny rule of `sources` that can never match `tool` as `definition` (its raw JSON)
/// describes it: a ruling that holds the call, with why.
fn stale_deny(sources: &[Source<'_>], tool: &str, definition: &str) -> Option<Ruling> {
    if !sources
        .iter()
        .any(|s| s.rules.iter().any(|r| r.effect == Effect::Deny))
    {
        return None;
    }
    let def: Value = serde_json::from_str(definition).ok()?;
    sources.iter().find_map(|src| {
        check(tool, src.rules, &def)
            .into_iter()
            .find(|p| {
                p.refuse
                    && src
                        .rules
                        .get(p.rule)
                        .is_some_and(|r| r.effect == Effect::Deny)
            })
            .and_then(|p| {
                let rule = src.rules.get(p.rule)?;
                Some(Ruling {
                    effect: Effect::Deny,
                    name: format!("{}.rules[{}]", src.at, p.rule),
                    even_if_flagged: false,
                    text: rule.describe(),
                    stale: Some(format!("{}.{}: {}", src.at, p.text, p.fix)),
                })
            })
    })
}

/// A rule to offer from a held call, prefilled from what it shows: its first path argument (in
/// name order) allowed under that path's folder — `{"allow": {"path": {"under": "/home/u/notes"}}}`
/// for `/home/u/notes/a.md`. None when no argument is an absolute path (or `~/…`), or when the
/// folder would be `/` or the home directory itself (too wide to offer in one click).
pub fn suggest(arguments: &str) -> Option<Rule> {
    let args: serde_json::Map<String, Value> = serde_json::from_str(arguments).ok()?;
    let mut names: Vec<&String> = args.keys().collect();
    names.sort();
    names.into_iter().find_map(|name| {
        let p = args.get(name)?.as_str()?;
        if !(p.starts_with('/') || p.starts_with("~/")) || p.contains("/..") || p.contains('\0') {
            return None;
        }
        let folder = if p.ends_with('/') {
            p.trim_end_matches('/').to_owned()
        } else {
            Path::new(p).parent()?.to_string_lossy().into_owned()
        };
        let home = dirs::home_dir();
        let too_wide = folder.is_empty()
            || folder == "/"
            || folder == "~"
            || home.as_deref().is_some_and(|h| Path::new(&folder) == h);
        if too_wide {
            return None;
        }
        let when = std::collections::BTreeMap::from([(name.clone(), Matcher::Under(folder))]);
        Some(Rule {
            effect: Effect::Allow,
            when,
            even_if_flagged: false,
        })
    })
}

/// Whether every argument `rule` names matches.
pub fn matches(rule: &Rule, arguments: &Value, home: Option<&Path>) -> bool {
    let strict = rule.effect == Effect::Allow;
    rule.when.iter().all(|(name, m)| {
        arguments
            .get(name)
            .is_some_and(|v| matcher_matches(m, v, home, strict))
    })
}

fn matcher_matches(m: &Matcher, v: &Value, home: Option<&Path>, strict: bool) -> bool {
    if strict {
        return matched(m, v, home, true);
    }
    // A deny also matches what a lax server may make of the argument (FastMCP turns "95" into
    // 95 and `true` into 1; "true" may become true, then 1): whatever spelling the server reads
    // as the denied value is denied.
    lax_readings(v)
        .iter()
        .flat_map(lax_readings)
        .any(|c| matched(m, &c, home, false))
}

fn matched(m: &Matcher, v: &Value, home: Option<&Path>, strict: bool) -> bool {
    match m {
        Matcher::Equals(x) => same(x, v),
        Matcher::OneOf(xs) => xs.iter().any(|x| same(x, v)),
        Matcher::Glob(g) => v.as_str().is_some_and(|s| {
            globset::GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .is_ok_and(|g| g.compile_matcher().is_match(s))
        }),
        Matcher::Range { min, max } => v.as_f64().is_some_and(|n| {
            min.as_ref().and_then(|a| a.as_f64()).is_none_or(|a| n >= a)
                && max.as_ref().and_then(|b| b.as_f64()).is_none_or(|b| n <= b)
        }),
        Matcher::Under(dir) => v
            .as_str()
            .is_some_and(|p| under_strict(dir, p, home) || (!strict && under_loose(dir, p, home))),
    }
}

/// `v` and what a lax server may read it as: a string holding a number or a boolean word as
/// that number or boolean, a boolean as 1 or 0 (and its word), a number as its text (and 1 or
/// 0 as a boolean), a one-element array as its element.
pub fn lax_readings(v: &Value) -> Vec<Value> {
    let mut out = vec![v.clone()];
    match v {
        Value::String(s) => {
            let t = s.trim();
            if let Some(n) = t
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .and_then(number)
            {
                out.push(n);
            }
            match t.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "t" | "y" | "1" => out.push(Value::Bool(true)),
                "false" | "no" | "off" | "f" | "n" | "0" => out.push(Value::Bool(false)),
                _ => {}
            }
        }
        Value::Bool(b) => {
            out.push(Value::from(u8::from(*b)));
            out.push(Value::String(b.to_string()));
        }
        Value::Number(n) => {
            out.push(Value::String(n.to_string()));
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x == 1.0 {
                out.push(Value::Bool(true));
            } else if x == 0.0 {
                out.push(Value::Bool(false));
            }
        }
        Value::Array(items) if items.len() == 1 && !matches!(items[0], Value::Array(_)) => {
            out.extend(lax_readings(&items[0]));
        }
        _ => {}
    }
    out
}

/// A finite number as JSON would hold it: an integral one as an integer.
fn number(n: f64) -> Option<Value> {
    if n.fract() == 0.0 && n.abs() <= crate::arguments::MAX_SAFE_INTEGER as f64 {
        return Some(Value::from(n as i64));
    }
    serde_json::Number::from_f64(n).map(Value::Number)
}

/// JSON equality with numbers compared by value (`1` equals `1.0` and `1e0`).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// The longest path an `under` matcher resolves (the kernel's `PATH_MAX`): a longer argument
/// names nothing a server could open, and resolving it part by part would cost a call's worth of
/// work per byte a client sends.
pub const MAX_PATH_BYTES: usize = 4096;

/// `~` and `~/…` made absolute; any other `~…` (another user's home) and relative paths:
/// `None`. Paths over [`MAX_PATH_BYTES`] too when `bounded` (the strict test resolves each part
/// through the kernel; the loose one reads text only, so a deny matches however long a path is
/// padded — with `/./` or `//` — to slip past the bound).
fn expand(p: &str, home: Option<&Path>, bounded: bool) -> Option<PathBuf> {
    if p.contains('\0') || (bounded && p.len() > MAX_PATH_BYTES) {
        return None;
    }
    if p == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = p.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    let path = PathBuf::from(p);
    path.is_absolute().then_some(path)
}

/// Where a path leads: its longest existing part resolved by the kernel (symlinks, `..`), and
/// the rest as written. `None` when the rest holds `..` (it cannot be known where it leads).
fn resolve(path: &Path) -> Option<(PathBuf, Vec<std::ffi::OsString>)> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            rest.reverse();
            return Some((real, rest));
        }
        match existing.components().next_back()? {
            Component::Normal(c) => rest.push(c.to_owned()),
            Component::CurDir => {}
            _ => return None,
        }
        if !existing.pop() {
            return None;
        }
    }
}

/// The strict test: the argument resolves, and it is the directory or inside it — by name, or
/// because one of its existing ancestors is the same directory (device and inode).
fn under_strict(dir: &str, arg: &str, home: Option<&Path>) -> bool {
    let (Some(dir), Some(arg)) = (expand(dir, home, true), expand(arg, home, true)) else {
        return false;
    };
    let (Some((dreal, drest)), Some((areal, arest))) = (resolve(&dir), resolve(&arg)) else {
        return false;
    };
    let full = |real: &Path, rest: &[std::ffi::OsString]| {
        let mut p = real.to_path_buf();
        p.extend(rest);
        p
    };
    if full(&areal, &arest).starts_with(full(&dreal, &drest)) {
        return true;
    }
    if !drest.is_empty() {
        return false;
    }
    let Some(id) = file_id(&dreal) else {
        return false;
    };
    areal.ancestors().any(|a| file_id(a) == Some(id))
}

#[cfg(unix)]
fn file_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &Path) -> Option<(u64, u64)> {
    None
}

/// The loose test (deny rules): the path's text, `..` and `.` taken lexically, in NFC and lower
/// case, starts with the directory's in the same form.
fn under_loose(dir: &str, arg: &str, home: Option<&Path>) -> bool {
    let (Some(dir), Some(arg)) = (expand(dir, home, false), expand(arg, home, false)) else {
        return false;
    };
    let (d, a) = (lexical(&dir), lexical(&arg));
    a.len() >= d.len() && a.iter().zip(&d).all(|(x, y)| x == y)
}

fn lexical(p: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => {
                let s: String = s.to_string_lossy().nfc().collect();
                out.push(s.to_lowercase().trim_end_matches(['.', ' ']).to_owned());
            }
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;

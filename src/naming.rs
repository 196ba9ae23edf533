//! Tool names: the canonical `server__tool` (always `^[a-zA-Z0-9_-]{1,64}$`) that grants, pins,
//! per-tool keys and the activity log know a tool by, and what fits a client's budget
//! ([`budget_for`], [`fitted`]); which of them a client profile sees is `gateway::names`.
//!
//! Server ids are `[a-z0-9-]` (no `_`), so the first `__` always splits an exposed name back into
//! server and tool. A tool name that is valid, fits, and does not end like a shortened name is
//! exposed as is. Anything else (odd characters, too long, or looking like a shortened name) gets
//! a sanitised prefix plus `_h` and 10 hex digits of the FNV-1a 64-bit hash of the
//! original `server` + NUL + `tool`: two different originals can only meet through a 40-bit hash
//! collision, which the router detects and reports instead of routing wrongly.

/// The longest exposed name clients accept.
pub const MAX_NAME: usize = 64;
const HASH_HEX: usize = 10;
/// `_h` + hex digits.
const SUFFIX_LEN: usize = 2 + HASH_HEX;

/// The name's budget for a client Gatehouse cannot place: what fits Claude Code and Codex, whose
/// `mcp__gatehouse__` prefix is the longest of the clients people use.
pub const DEFAULT_BUDGET: usize = 48;

/// The entry name Gatehouse writes into every client's config.
const ENTRY: &str = "gatehouse";

/// How long a name exposed to a client profile may be: 64 minus the prefix the client of that
/// name puts in front of a tool of the `gatehouse` entry (CLIENTS.md); [`DEFAULT_BUDGET`] for a
/// profile named after no known client, and for the gateway token's own (`None`).
pub fn budget_for(profile: Option<&str>) -> usize {
    let prefix = match profile.unwrap_or("") {
        // `mcp__gatehouse__tool`
        "claude-code" | "codex" => 5 + ENTRY.len() + 2,
        // `mcp_gatehouse_tool`
        "gemini" | "gemini-cli" | "vscode" | "vs-code" | "copilot" => 4 + ENTRY.len() + 1,
        // Server and tool together at most 60.
        "cursor" => 4 + ENTRY.len(),
        // `gatehouse__tool` / `gatehouse_tool`
        "goose" => ENTRY.len() + 2,
        "opencode" | "zed" | "windsurf" => ENTRY.len() + 1,
        _ => return DEFAULT_BUDGET,
    };
    MAX_NAME - prefix
}

/// `server__tool` shortened to at most `budget` characters the way [`exposed_name`] shortens to
/// 64: a sanitised prefix plus `_h` and 10 hex digits of the original's hash.
pub fn fitted(server: &str, tool: &str, budget: usize) -> String {
    let canonical = exposed_name(server, tool);
    let budget = budget.clamp(SUFFIX_LEN + 1, MAX_NAME);
    if canonical.len() <= budget {
        return canonical;
    }
    let hash = fnv1a64(server.as_bytes(), tool.as_bytes());
    let hex = format!("{hash:016x}");
    let mut name: String = canonical
        .chars()
        .take(budget - SUFFIX_LEN)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(budget - SUFFIX_LEN);
    name.push_str("_h");
    name.push_str(&hex[..HASH_HEX]);
    name
}

/// Whether a server's own tool name can be shown to a client as it is: valid, within `budget`,
/// and not looking like a shortened name.
pub fn own_fits(tool: &str, budget: usize) -> bool {
    tool.len() <= budget && is_valid(tool) && !looks_shortened(tool)
}

/// The name a server's tool is exposed under (see the module docs).
pub fn exposed_name(server: &str, tool: &str) -> String {
    let plain = format!("{server}__{tool}");
    if plain.len() <= MAX_NAME && is_valid(&plain) && !looks_shortened(&plain) {
        return plain;
    }
    let hash = fnv1a64(server.as_bytes(), tool.as_bytes());
    let hex = format!("{hash:016x}");
    let suffix = format!("_h{}", &hex[..HASH_HEX]);
    let mut name = format!("{server}__");
    for c in tool.chars() {
        if name.len() + SUFFIX_LEN >= MAX_NAME {
            break;
        }
        name.push(if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '_'
        });
    }
    name.truncate(MAX_NAME - SUFFIX_LEN);
    name.push_str(&suffix);
    name
}

/// Splits an exposed name into the server id part and the rest (`None` if there is no `__`).
pub fn split_server(exposed: &str) -> Option<(&str, &str)> {
    exposed.split_once("__")
}

/// A client's server name as a Gatehouse id: lower case, `[a-z0-9-]`, at most 32 characters.
pub fn normalise_id(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| match c {
            'A'..='Z' => c.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' | '-' => c,
            _ => '-',
        })
        .collect();
    while id.contains("--") {
        id = id.replace("--", "-");
    }
    let id = id.trim_matches('-');
    let id: String = id.chars().take(32).collect();
    if id.is_empty() {
        "server".to_owned()
    } else {
        id.trim_end_matches('-').to_owned()
    }
}

/// Whether a name fits `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn looks_shortened(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= SUFFIX_LEN
        && &b[b.len() - SUFFIX_LEN..b.len() - HASH_HEX] == b"_h"
        && b[b.len() - HASH_HEX..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

fn fnv1a64(a: &[u8], b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &byte in a.iter().chain(std::iter::once(&0u8)).chain(b) {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass_through() {
        assert_eq!(exposed_name("fs", "write_file"), "fs__write_file");
        assert_eq!(
            exposed_name("time", "get-current_time"),
            "time__get-current_time"
        );
    }

    #[test]
    fn odd_and_long_names_are_shortened_deterministically() {
        for (s, t) in [
            ("fs", "write.file"),
            ("fs", "ツール"),
            (
                "a-very-long-server-id-of-32-char",
                "and_an_even_longer_tool_name_that_goes_on_and_on",
            ),
            ("fs", ""),
        ] {
            let n = exposed_name(s, t);
            assert!(is_valid(&n), "{n}");
            assert!(n.len() <= MAX_NAME);
            assert_eq!(n, exposed_name(s, t));
            assert_eq!(split_server(&n).unwrap().0, s);
        }
        assert_ne!(exposed_name("fs", "a.b"), exposed_name("fs", "a/b"));
    }

    #[test]
    fn a_tool_named_like_a_shortened_name_is_itself_shortened() {
        let shortened = exposed_name("fs", "a.b");
        let tool = split_server(&shortened).unwrap().1.to_owned();
        assert_ne!(exposed_name("fs", &tool), shortened);
    }

    /// Every fitted name is valid and within its budget, and two originals never share one.
    #[test]
    fn fitted_names_fit_the_budget_and_stay_distinct() {
        let gh = "add_pull_request_review_comment_to_pending_review";
        assert_eq!(budget_for(Some("claude-code")), 48);
        assert_eq!(budget_for(Some("gemini")), 50);
        assert_eq!(budget_for(None), DEFAULT_BUDGET);
        assert_eq!(fitted("fs", "read", 48), "fs__read");
        for budget in [30, 48, 50, 51, 64] {
            let mut seen = std::collections::HashSet::new();
            for tool in [
                gh,
                "add_pull_request_review_comment_to_pending_reviews",
                "x.y",
            ] {
                let n = fitted("github", tool, budget);
                assert!(is_valid(&n) && n.len() <= budget, "{n}");
                assert!(seen.insert(n.clone()), "{n} twice");
            }
        }
        assert!(own_fits(gh, 49) && !own_fits(gh, 48) && !own_fits("a.b", 48));
    }

    #[test]
    fn distinct_originals_stay_distinct() {
        let mut seen = std::collections::HashMap::new();
        for s in ["a", "b", "ab", "a-b"] {
            for i in 0..2000 {
                let t = if i % 2 == 0 {
                    format!("t{i}")
                } else {
                    format!("t.{i}")
                };
                let n = exposed_name(s, &t);
                assert!(
                    seen.insert(n.clone(), (s, t.clone())).is_none(),
                    "collision on {n}"
                );
            }
        }
    }
}

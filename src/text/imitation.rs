//! Whether a name a client gave itself (`clientInfo.name`) imitates another client's: the same
//! skeleton (Unicode TR39's confusable skeleton, after the hidden characters are taken out) as a
//! known client's name or another connected client's, without being that name. The token's
//! client profile says who is asking; the self-given name is only what the client says, and a
//! look-alike is flagged where a person reads it.

use unicode_security::confusable_detection::skeleton;

/// Names the AI clients Gatehouse knows call themselves (`clientInfo.name`, as seen or
/// documented) or are called by people: a name that looks like one of these without being one
/// of them is flagged.
pub const KNOWN_CLIENTS: &[&str] = &[
    "Claude Code",
    "claude-code",
    "Claude Desktop",
    "claude-ai",
    "Cursor",
    "cursor-vscode",
    "VS Code",
    "Visual Studio Code",
    "Codex",
    "codex-mcp-client",
    "Gemini CLI",
    "gemini-cli-mcp-client",
    "Windsurf",
    "Zed",
    "opencode",
    "Goose",
    "Cline",
    "Roo Code",
    "GitHub Copilot CLI",
    "LM Studio",
    "mcp-remote",
    "inspector-cli",
    "Gatehouse",
];

/// The name `name` imitates, if any: a known client's name (first) or one of `others` (the other
/// clients connected now) whose key it shares while not being exactly that name — or any
/// name it equals once its hidden characters are taken out. A connected client is only
/// imitated by a name first seen after its own ([`note`]): the genuine client is never flagged
/// because an imitation connected later.
pub fn imitates<'a>(name: &str, others: impl IntoIterator<Item = &'a str>) -> Option<String> {
    if KNOWN_CLIENTS.contains(&name) {
        return None;
    }
    let mine = key(name);
    if mine.is_empty() {
        return None;
    }
    let known = KNOWN_CLIENTS
        .iter()
        .copied()
        .filter(|other| *other != name)
        .find(|other| key(other) == mine);
    if let Some(k) = known {
        return Some(k.to_owned());
    }
    let me = rank(name);
    others
        .into_iter()
        .filter(|other| *other != name && rank(other) < me)
        .find(|other| key(other) == mine)
        .map(str::to_owned)
}

/// A client's self-given name as every surface shows it (hidden characters revealed), with the
/// one mark of a borrowed name: `Clаude Code ⚠ imitates “Claude Code”`.
pub fn marked(name: &str, imitates: Option<&str>) -> String {
    let shown = super::reveal(name);
    match imitates {
        Some(like) => format!("{shown} ⚠ imitates “{}”", super::reveal(like)),
        None => shown.into_owned(),
    }
}

/// The most names whose first sighting is remembered; a name past it counts as seen last.
const MAX_NAMES: usize = 4096;

/// The order in which names were first seen, for this process's life.
static FIRST_SEEN: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, u64>>> =
    std::sync::LazyLock::new(Default::default);

/// Records that a client calling itself `name` connected (its first sighting keeps its place).
pub fn note(name: &str) {
    let mut seen = crate::sync::lock(&FIRST_SEEN);
    if seen.len() < MAX_NAMES && !seen.contains_key(name) {
        let next = seen.len() as u64;
        seen.insert(name.to_owned(), next);
    }
}

fn rank(name: &str) -> u64 {
    crate::sync::lock(&FIRST_SEEN)
        .get(name)
        .copied()
        .unwrap_or(u64::MAX)
}

/// What two names are compared by: the name without its hidden characters, a trailing
/// parenthesised part (`Claude Code (official)`) and a trailing version (`Cursor 1.2`,
/// `claude-code/2.1`), then its TR39 skeleton, case-folded, and with every space and
/// punctuation mark taken out — so `claude code`, `Claude-Code`, `Curs0r` and `Cl\u{0430}ude
/// Code` all read as the name they borrow.
fn key(name: &str) -> String {
    let visible: String = name.chars().filter(|c| !super::is_hidden(*c)).collect();
    let bare = strip_suffixes(visible.trim());
    let folded: String = skeleton(bare).collect::<String>().to_lowercase();
    skeleton(&folded)
        .collect::<String>()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// `name` without trailing parenthesised parts and version numbers.
fn strip_suffixes(name: &str) -> &str {
    let mut s = name.trim_end();
    loop {
        let before = s;
        if s.ends_with(')') {
            if let Some(open) = s.rfind('(') {
                s = s[..open].trim_end();
            }
        }
        // A version: digits and dots (an optional `v`) after a space, `/`, `@`, `-` or `_`.
        let tail = s.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        if tail.len() < s.len() && s[tail.len()..].starts_with(|c: char| c.is_ascii_digit()) {
            let tail = tail.strip_suffix(['v', 'V']).unwrap_or(tail);
            if let Some(cut) = tail.strip_suffix([' ', '/', '@', '-', '_']) {
                if !cut.trim_end().is_empty() {
                    s = cut.trim_end();
                }
            }
        }
        if s == before {
            return s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A look-alike of a known client's name is flagged with the name it imitates; the real
    /// names, unrelated names and names that only differ in case are not.
    #[test]
    fn a_look_alike_of_a_known_client_is_flagged() {
        // Cyrillic С and а in "Claude Code".
        assert_eq!(
            imitates("\u{0421}l\u{0430}ude Code", []).as_deref(),
            Some("Claude Code")
        );
        // Hidden characters inside the real name.
        assert_eq!(
            imitates("Claude\u{200B} Code", []).as_deref(),
            Some("Claude Code")
        );
        assert_eq!(
            imitates("Claude Code\u{202E}", []).as_deref(),
            Some("Claude Code")
        );
        // Digit one for a lower-case L.
        assert_eq!(imitates("c1aude-code", []).as_deref(), Some("Claude Code"));
        assert_eq!(imitates("Claude Code", []), None);
        assert_eq!(imitates("claude-code", []), None);
        assert_eq!(imitates("my-agent", []), None);
        assert_eq!(imitates("\u{200B}", []), None);
    }

    /// A name is also compared with the other clients connected before it; the genuine
    /// client is never flagged because a look-alike connected after it.
    #[test]
    fn a_look_alike_of_a_connected_client_is_flagged_and_never_the_genuine_one() {
        note("acme-agent");
        note("acme-\u{0430}gent");
        assert_eq!(
            imitates("acme-\u{0430}gent", ["acme-agent", "other"]).as_deref(),
            Some("acme-agent")
        );
        assert_eq!(imitates("acme-agent", ["acme-agent"]), None);
        assert_eq!(imitates("acme-agent", ["acme-\u{0430}gent"]), None);
    }

    /// Case, spacing, punctuation, a digit for a letter and a trailing parenthesised part or
    /// version do not make a borrowed name another one.
    #[test]
    fn look_alikes_escape_by_neither_case_nor_spacing_nor_suffixes() {
        for (name, known) in [
            ("claude code", "Claude Code"),
            ("Claude-Code", "Claude Code"),
            ("CLAUDE  CODE", "Claude Code"),
            ("Claude Code (official)", "Claude Code"),
            ("Claude Code 2.1.3", "Claude Code"),
            ("claude-code/2.1", "Claude Code"),
            ("Curs0r", "Cursor"),
            ("Cursor v1.2", "Cursor"),
            ("Curs\u{043E}r", "Cursor"),
        ] {
            assert_eq!(
                imitates(name, []).as_deref().map(key),
                Some(key(known)),
                "{name}"
            );
        }
        assert_eq!(imitates("Claude", []), None);
        assert_eq!(imitates("my-agent 2", []), None);
        assert_eq!(imitates("Codexterity", []), None);
    }
}

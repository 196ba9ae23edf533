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
/// clients connected now) whose skeleton it shares while not being exactly that name — or any
/// name it equals once its hidden characters are taken out.
pub fn imitates<'a>(name: &str, others: impl IntoIterator<Item = &'a str>) -> Option<String> {
    if KNOWN_CLIENTS.contains(&name) {
        return None;
    }
    let mine = key(name);
    if mine.is_empty() {
        return None;
    }
    KNOWN_CLIENTS
        .iter()
        .copied()
        .chain(others)
        .filter(|other| *other != name)
        .find(|other| key(other) == mine)
        .map(str::to_owned)
}

/// What two names are compared by: the skeleton of the name without its hidden characters.
fn key(name: &str) -> String {
    let visible: String = name.chars().filter(|c| !super::is_hidden(*c)).collect();
    skeleton(visible.trim()).collect()
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
        assert_eq!(imitates("c1aude-code", []).as_deref(), Some("claude-code"));
        assert_eq!(imitates("Claude Code", []), None);
        assert_eq!(imitates("claude-code", []), None);
        assert_eq!(imitates("my-agent", []), None);
        assert_eq!(imitates("\u{200B}", []), None);
    }

    /// A name is also compared with the other clients connected now.
    #[test]
    fn a_look_alike_of_a_connected_client_is_flagged() {
        assert_eq!(
            imitates("acme-\u{0430}gent", ["acme-agent", "other"]).as_deref(),
            Some("acme-agent")
        );
        assert_eq!(imitates("acme-agent", ["acme-agent"]), None);
    }
}

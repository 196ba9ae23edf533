//! Text a client, a server, a registry or a client's file hands Gatehouse, made safe to show: kept
//! bounded ([`cut`]), and with every character a person cannot see for what it is shown as its
//! code point (`⟨U+202E⟩`) instead of being interpreted ([`reveal`]). Every surface where a
//! person reads such text to decide (the approval modal, the native prompt, notifications, the
//! CLI, the webview's views through [`hidden_ranges`]) goes through this one module, so none can
//! forget a character class. Every bound is in ARCHITECTURE's table.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::OnceLock;

use unicode_general_category::{get_general_category, GeneralCategory};

pub mod imitation;

/// `s` cut to at most `max` characters (and `…`).
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// Whether `c` is hidden: it does not show as itself, or changes how the text around it shows —
/// controls (C0, DEL, C1), format characters (bidi embeddings, overrides and isolates, zero-width
/// characters, the BOM, tag characters), line and paragraph separators, private-use, unassigned
/// and noncharacter code points, and the other default-ignorable ones (variation selectors,
/// fillers that render blank). Line feeds and tabs are hidden too: where text may span lines,
/// [`reveal_lines`] keeps them.
pub fn is_hidden(c: char) -> bool {
    use GeneralCategory as G;
    matches!(
        get_general_category(c),
        G::Control
            | G::Format
            | G::Unassigned
            | G::PrivateUse
            | G::Surrogate
            | G::LineSeparator
            | G::ParagraphSeparator
    ) || default_ignorable(c)
        || blank_letter(c)
}

/// Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties) beyond the format and
/// unassigned characters: combining joiners, Mongolian and standard variation selectors, the
/// rest of the tag block.
fn default_ignorable(c: char) -> bool {
    matches!(c as u32,
        0x034F | 0x17B4..=0x17B5 | 0x180B..=0x180F | 0xFE00..=0xFE0F | 0xE0000..=0xE0FFF)
}

/// Letters and symbols that render as nothing at all, used for names that look empty or for
/// blanks inside a word (Hangul fillers, the blank Braille pattern).
fn blank_letter(c: char) -> bool {
    matches!(c as u32, 0x115F | 0x1160 | 0x3164 | 0xFFA0 | 0x2800)
}

/// Variation selectors 15 and 16 choose text or emoji presentation of the character before them
/// (`❤️` is U+2764 U+FE0F): shown as they are right after a visible character, revealed
/// anywhere else (a run of selectors can carry hidden data).
fn presentation_selector(c: char) -> bool {
    matches!(c, '\u{FE0E}' | '\u{FE0F}')
}

/// How a hidden character is shown: `⟨U+202E⟩` (upper-case hex, at least four digits).
pub fn code_point(c: char) -> String {
    format!("⟨U+{:04X}⟩", c as u32)
}

/// `s` as a person should see it on one line: every hidden character (line feeds and tabs
/// included) shown as `⟨U+XXXX⟩`. Borrowed when nothing was hidden.
pub fn reveal(s: &str) -> Cow<'_, str> {
    reveal_with(s, false)
}

/// `s` as a person should see it where text may span lines: line feeds and tabs kept, every other
/// hidden character (a carriage return too) shown as `⟨U+XXXX⟩`.
pub fn reveal_lines(s: &str) -> Cow<'_, str> {
    reveal_with(s, true)
}

/// `s` for a model to read as data (a spotlighted tool result): line feeds and tabs kept, every
/// character [`reveal_lines`] would show as a code point taken out. Borrowed when none was there.
pub fn strip_lines(s: &str) -> Cow<'_, str> {
    match reveal_with(s, true) {
        Cow::Borrowed(b) => Cow::Borrowed(b),
        Cow::Owned(_) => {
            let mut prev = None;
            let kept: String = s
                .chars()
                .filter(|&c| {
                    let keep = !is_hidden(c)
                        || c == '\n'
                        || c == '\t'
                        || (presentation_selector(c) && prev.is_some_and(|p| !is_hidden(p)));
                    if keep {
                        prev = Some(c);
                    }
                    keep
                })
                .collect();
            Cow::Owned(kept)
        }
    }
}

fn reveal_with(s: &str, lines: bool) -> Cow<'_, str> {
    let kept = |c: char, prev: Option<char>| {
        (lines && (c == '\n' || c == '\t'))
            || (presentation_selector(c) && prev.is_some_and(|p| !is_hidden(p)))
    };
    let mut prev = None;
    let first = s.char_indices().find(|&(_, c)| {
        let hide = is_hidden(c) && !kept(c, prev);
        prev = Some(c);
        hide
    });
    let Some((at, _)) = first else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(&s[..at]);
    let mut prev = s[..at].chars().next_back();
    for c in s[at..].chars() {
        if is_hidden(c) && !kept(c, prev) {
            let _ = write!(out, "⟨U+{:04X}⟩", c as u32);
            // A revealed character is no base for a selector after it.
            prev = Some('\u{0}');
        } else {
            out.push(c);
            prev = Some(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `s` holds a character [`reveal`] would show as a code point.
pub fn has_hidden(s: &str) -> bool {
    matches!(reveal(s), Cow::Owned(_))
}

/// Whether `s` holds a character [`reveal_lines`] would show as a code point (line feeds and
/// tabs are not hidden in multi-line text).
pub fn has_hidden_in_lines(s: &str) -> bool {
    matches!(reveal_lines(s), Cow::Owned(_))
}

/// Whether a JSON text (a call's arguments) holds a hidden character in any key (line breaks
/// count there) or string value (where line feeds and tabs are ordinary), escaped (`\u202e`) or
/// not. Text that is not JSON is looked at as it is.
pub fn json_has_hidden(raw: &str) -> bool {
    fn walk(v: &serde_json::Value) -> bool {
        match v {
            serde_json::Value::String(s) => has_hidden_in_lines(s),
            serde_json::Value::Array(a) => a.iter().any(walk),
            serde_json::Value::Object(o) => o.iter().any(|(k, v)| has_hidden(k) || walk(v)),
            _ => false,
        }
    }
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) => walk(&v),
        Err(_) => has_hidden_in_lines(raw),
    }
}

/// A JSON text (a call's arguments) pretty-printed for a person, with hidden characters
/// revealed — those JSON escapes too (`\u0007`, `\r`, `\b` read `⟨U+0007⟩` as an unescaped one
/// would); a string's line feeds and tabs stay escaped as `\n` and `\t` (the JSON is one value
/// per line).
pub fn json_for_person(raw: &str) -> String {
    let pretty = serde_json::from_str::<serde_json::Value>(raw)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| raw.to_owned());
    reveal_lines(&json_escapes_revealed(&pretty)).into_owned()
}

/// A JSON text with every escape of a hidden character but `\n` and `\t` (`\u0007`, `\r`,
/// `\b`) written as `⟨U+XXXX⟩`, as [`reveal`] writes the character itself; other escapes kept.
pub fn json_escapes_revealed(json: &str) -> Cow<'_, str> {
    if !json.contains('\\') {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let esc = &rest[at..];
        let hidden = match esc.as_bytes().get(1) {
            Some(b'b') => Some(('\u{8}', 2)),
            Some(b'f') => Some(('\u{c}', 2)),
            Some(b'r') => Some(('\r', 2)),
            Some(b'u') => esc
                .get(2..6)
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32)
                .filter(|c| is_hidden(*c) && *c != '\n' && *c != '\t')
                .map(|c| (c, 6)),
            _ => None,
        };
        match hidden {
            Some((c, len)) => {
                out.push_str(&code_point(c));
                rest = &esc[len..];
            }
            None => {
                // Another escape (`\"`, `\\`, `\n`…) is kept whole, so its second character is
                // never read as the start of one.
                let len = esc.chars().take(2).map(char::len_utf8).sum::<usize>();
                out.push_str(&esc[..len]);
                rest = &esc[len..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Every hidden code point as inclusive ranges `[first, last]`, for a front end that cannot
/// call [`is_hidden`] (the webview gets this table once and reveals with it). Variation
/// selectors 15 and 16 are in it; the front end keeps them after a visible character, as
/// [`reveal`] does.
pub fn hidden_ranges() -> &'static [(u32, u32)] {
    static RANGES: OnceLock<Vec<(u32, u32)>> = OnceLock::new();
    RANGES.get_or_init(|| {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for cp in 0..=0x10FFFFu32 {
            let Some(c) = char::from_u32(cp) else {
                continue; // surrogates: never in a Rust (or well-formed JS) string
            };
            if !is_hidden(c) {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.1 + 1 == cp => last.1 = cp,
                _ => out.push((cp, cp)),
            }
        }
        out
    })
}

/// What a record of a call says about the text in it, for a front end to flag (the record's own
/// text stays as it was written).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Flags {
    /// The tool's name, the arguments or the client's name hold a hidden character.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden_characters: bool,
    /// The known client whose name the client's imitates ([`imitation::imitates`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imitates: Option<String>,
}

impl Flags {
    /// The flags of a call by `client` to `tool` with `arguments` (JSON text).
    pub fn of(client: Option<&str>, tool: &str, arguments: &str) -> Flags {
        Flags {
            hidden_characters: has_hidden(tool)
                || client.is_some_and(has_hidden)
                || json_has_hidden(arguments),
            imitates: client.and_then(|c| imitation::imitates(c, [])),
        }
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;

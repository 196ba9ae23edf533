use super::*;

/// Cut at a character, never inside one; short text untouched.
#[test]
fn text_is_cut_at_a_character() {
    let cut_text = cut(&"é".repeat(300), 256);
    assert_eq!(cut_text.chars().count(), 257);
    assert!(cut_text.ends_with('…'));
    assert_eq!(cut("fs", 256), "fs");
}

/// Every kind of hidden character is shown as its code point, never interpreted: bidi
/// embeddings, overrides and isolates, zero-width characters, the BOM, tag characters, C0 and
/// C1 controls, line separators, private-use and unassigned code points.
#[test]
fn every_hidden_character_is_shown_as_its_code_point() {
    let cases = [
        ('\u{202E}', "⟨U+202E⟩"),
        ('\u{202A}', "⟨U+202A⟩"),
        ('\u{2066}', "⟨U+2066⟩"),
        ('\u{2067}', "⟨U+2067⟩"),
        ('\u{2068}', "⟨U+2068⟩"),
        ('\u{2069}', "⟨U+2069⟩"),
        ('\u{200B}', "⟨U+200B⟩"),
        ('\u{200C}', "⟨U+200C⟩"),
        ('\u{200D}', "⟨U+200D⟩"),
        ('\u{200E}', "⟨U+200E⟩"),
        ('\u{FEFF}', "⟨U+FEFF⟩"),
        ('\u{E0041}', "⟨U+E0041⟩"),
        ('\u{E007F}', "⟨U+E007F⟩"),
        ('\u{0000}', "⟨U+0000⟩"),
        ('\u{001B}', "⟨U+001B⟩"),
        ('\u{007F}', "⟨U+007F⟩"),
        ('\u{0085}', "⟨U+0085⟩"),
        ('\u{009B}', "⟨U+009B⟩"),
        ('\u{2028}', "⟨U+2028⟩"),
        ('\u{E000}', "⟨U+E000⟩"),
        ('\u{10FFFD}', "⟨U+10FFFD⟩"),
        ('\u{0378}', "⟨U+0378⟩"), // unassigned
        ('\u{FFFF}', "⟨U+FFFF⟩"), // noncharacter
        ('\u{00AD}', "⟨U+00AD⟩"),
        ('\u{3164}', "⟨U+3164⟩"),
        ('\u{FE00}', "⟨U+FE00⟩"),
        ('\n', "⟨U+000A⟩"),
        ('\r', "⟨U+000D⟩"),
    ];
    for (c, shown) in cases {
        let s = format!("run.{c}hs.txt");
        let revealed = reveal(&s);
        assert_eq!(revealed, format!("run.{shown}hs.txt"), "{:04X}", c as u32);
        assert!(has_hidden(&s), "{:04X}", c as u32);
        assert!(
            hidden_ranges()
                .iter()
                .any(|&(a, b)| (a..=b).contains(&(c as u32))),
            "{:04X} missing from the table the webview gets",
            c as u32
        );
    }
}

/// Ordinary text of any script is left as it is (borrowed, not copied), and an emoji's
/// presentation selector after it stays; a run of selectors does not.
#[test]
fn ordinary_text_is_left_alone() {
    for s in [
        "notes/todo.md",
        "Grüße, 日本語, עברית, العربية",
        "a\u{00A0}b",
        "❤\u{FE0F} ok",
    ] {
        assert!(matches!(reveal(s), Cow::Borrowed(_)), "{s}");
        assert!(!has_hidden(s), "{s}");
    }
    assert_eq!(reveal("\u{FE0F}x"), "⟨U+FE0F⟩x");
    assert_eq!(reveal("a\u{FE0F}\u{FE0F}"), "a\u{FE0F}⟨U+FE0F⟩");
}

/// Where text may span lines, line feeds and tabs stay; a carriage return does not.
#[test]
fn multi_line_text_keeps_its_line_breaks() {
    assert_eq!(reveal_lines("a\n\tb\r\nc"), "a\n\tb⟨U+000D⟩\nc");
    assert!(!has_hidden_in_lines("line one\nline two"));
    assert!(has_hidden("line one\nline two"));
}

/// A call's arguments are flagged whether the hidden character is raw or escaped, in a key or a
/// value; line breaks in a value are ordinary, in a key they are not.
#[test]
fn arguments_are_flagged_escaped_or_not() {
    assert!(json_has_hidden("{\"path\":\"a\u{202E}hs.txt\"}"));
    assert!(json_has_hidden(r#"{"path":"a\u202ehs.txt"}"#));
    assert!(json_has_hidden(r#"{"pa\u200bth":"x"}"#));
    assert!(json_has_hidden(r#"{"a":["x","\u0007"]}"#));
    assert!(!json_has_hidden(r#"{"text":"one\ntwo\tthree"}"#));
    assert!(json_has_hidden(r#"{"k\ney":"v"}"#));
    assert!(!json_has_hidden(r#"{"n":1,"b":true}"#));
    let shown = json_for_person(r#"{"path":"a\u202ehs.txt"}"#);
    assert!(shown.contains("a⟨U+202E⟩hs.txt"), "{shown}");
    // A control character JSON escapes reads as every other hidden one does; a line feed and
    // a tab stay `\n` and `\t`; an escaped backslash before a `u` is no escape of a character.
    let shown = json_for_person(r#"{"a":"bell\u0007 cr\r nl\n tab\t","b":"\\u0007"}"#);
    assert!(
        shown.contains("bell⟨U+0007⟩ cr⟨U+000D⟩ nl\\n tab\\t"),
        "{shown}"
    );
    assert!(shown.contains(r#""\\u0007""#), "{shown}");
}

/// The webview's table: sorted, disjoint ranges, with nothing visible in it.
#[test]
fn the_table_matches_the_function() {
    let ranges = hidden_ranges();
    assert!(ranges.windows(2).all(|w| w[0].1 + 1 < w[1].0));
    for &(a, b) in ranges {
        for cp in [a, b, a + (b - a) / 2] {
            let c = char::from_u32(cp).unwrap();
            assert!(is_hidden(c), "{cp:04X}");
        }
    }
    assert!(!ranges.iter().any(|&(a, b)| (a..=b).contains(&('a' as u32))));
}

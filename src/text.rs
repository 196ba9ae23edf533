//! Text a client or a server hands Gatehouse, kept bounded: cut at a character boundary, with
//! `…` where it was cut. Every such bound is in ARCHITECTURE's table.

/// `s` cut to at most `max` characters (and `…`).
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cut at a character, never inside one; short text untouched.
    #[test]
    fn text_is_cut_at_a_character() {
        let cut_text = cut(&"é".repeat(300), 256);
        assert_eq!(cut_text.chars().count(), 257);
        assert!(cut_text.ends_with('…'));
        assert_eq!(cut("fs", 256), "fs");
    }
}

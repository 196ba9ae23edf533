//! The forms a secret value may take in what a server prints: raw; as JSON writes it (minimal
//! escapes, `\/`, every character `\u`-escaped in either case, Go's `\u003c` for `<>&`,
//! Python's `ensure_ascii`); percent-encoded (every reserved byte, or Python's `quote()` keeping
//! `/`, and `+` for a space); hex; base64 at each alignment. And, because a JSON string may mix
//! escapes any way it likes (`\u0067hp_` then plain), every JSON string literal of a line that
//! uses a `\u` or `\/` escape is decoded and looked at as the text it stands for.

use std::fmt::Write as _;
use std::ops::Range;

/// The forms of `value` to look for.
pub(super) fn forms(value: &str) -> Vec<String> {
    let escaped = crate::jsonrpc::json_string(value);
    let json = escaped[1..escaped.len() - 1].to_owned();
    let mut out = vec![
        value.to_owned(),
        json.replace('/', "\\/"),
        go_html(&json),
        ensure_ascii(&json, false),
        ensure_ascii(&json, true),
        all_escaped(value, false),
        all_escaped(value, true),
        percent_encode(value, false, ""),
        percent_encode(value, true, ""),
        percent_encode(value, true, "/"),
        percent_encode(value, false, "/"),
        percent_encode(value, false, "/").replace("%20", "+"),
        hex(value, false),
        hex(value, true),
        json,
    ];
    for url_safe in [false, true] {
        for shift in 0..3 {
            out.push(base64_core(value.as_bytes(), shift, url_safe));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// JSON as Go writes it: `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`.
fn go_html(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// JSON as Python's `json.dumps` writes it by default: every non-ASCII character `\u`-escaped
/// (astral ones as a surrogate pair), in lower or upper case hex.
fn ensure_ascii(json: &str, upper: bool) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            push_units(&mut out, c, upper);
        }
    }
    out
}

/// Every character `\u`-escaped.
fn all_escaped(value: &str, upper: bool) -> String {
    let mut out = String::with_capacity(value.len() * 6);
    for c in value.chars() {
        push_units(&mut out, c, upper);
    }
    out
}

fn push_units(out: &mut String, c: char, upper: bool) {
    let mut units = [0u16; 2];
    for u in c.encode_utf16(&mut units) {
        let _ = if upper {
            write!(out, "\\u{u:04X}")
        } else {
            write!(out, "\\u{u:04x}")
        };
    }
}

/// Percent-encoding: unreserved bytes and those in `safe` kept, every other byte `%XX`.
pub(super) fn percent_encode(s: &str, lower: bool, safe: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || safe.as_bytes().contains(&b) {
                (b as char).to_string()
            } else if lower {
                format!("%{b:02x}")
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn hex(s: &str, upper: bool) -> String {
    s.bytes()
        .map(|b| {
            if upper {
                format!("{b:02X}")
            } else {
                format!("{b:02x}")
            }
        })
        .collect()
}

/// The base64 characters that depend only on `data` when it starts `shift` bytes into a longer
/// encoded text (so it is found inside `base64("user:" + value)` too).
fn base64_core(data: &[u8], shift: usize, url_safe: bool) -> String {
    const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let alphabet = if url_safe { URL } else { STD };
    let mut bytes = vec![0u8; shift];
    bytes.extend_from_slice(data);
    let total_bits = bytes.len() * 8;
    let mut chars = Vec::with_capacity(total_bits / 6 + 1);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            chars.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize]);
        }
    }
    // Skip the characters that carry bits of the shift bytes; stop before one that carries bits
    // beyond the data.
    let skip = (shift * 8).div_ceil(6);
    let end = total_bits / 6;
    String::from_utf8_lossy(&chars[skip.min(end)..end]).into_owned()
}

/// The JSON string literals of `text` that use a `\u` or `\/` escape, each with its place
/// (quotes included) and the text it stands for. Text that is not JSON yields what it can: a
/// literal that does not decode is left out.
pub(super) fn escaped_literals(text: &str) -> Vec<(Range<usize>, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    if memchr::memmem::find(b, b"\\u").is_none() && memchr::memmem::find(b, b"\\/").is_none() {
        return out;
    }
    let mut i = 0;
    while let Some(open) = memchr::memchr(b'"', &b[i..]).map(|at| i + at) {
        let mut j = open + 1;
        let mut escapes = false;
        let close = loop {
            match b.get(j) {
                Some(b'\\') => {
                    if matches!(b.get(j + 1), Some(b'u' | b'/')) {
                        escapes = true;
                    }
                    j += 2;
                }
                Some(b'"') => break Some(j),
                Some(_) => j += 1,
                None => break None,
            }
        };
        let Some(close) = close else { break };
        if escapes {
            if let Ok(decoded) = serde_json::from_str::<String>(&text[open..=close]) {
                out.push((open..close + 1, decoded));
            }
        }
        i = close + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each way a server's language writes a value is among its forms.
    #[test]
    fn a_value_has_the_forms_servers_write_it_in() {
        let f = forms("tok/en<&é>");
        for want in [
            "tok/en<&é>",
            "tok\\/en<&é>",
            "tok/en\\u003c\\u0026é\\u003e",
            "tok/en<&\\u00e9>",
            "tok/en<&\\u00E9>",
            "tok%2Fen%3C%26%C3%A9%3E",
            "tok/en%3C%26%C3%A9%3E",
            "746f6b2f656e3c26c3a93e",
            "746F6B2F656E3C26C3A93E",
        ] {
            assert!(f.iter().any(|x| x == want), "{want} missing from {f:?}");
        }
        assert!(forms("ab").contains(&"\\u0061\\u0062".to_owned()));
        assert!(forms("ab").contains(&"\\u0061\\u0062".to_uppercase().replace("\\U", "\\u")));
        assert!(forms("a b+").contains(&"a+b%2B".to_owned()));
    }

    /// A literal with escapes of any mix is decoded; one without is left alone.
    #[test]
    fn literals_with_escapes_are_decoded_in_place() {
        let line = r#"{"a":"plain","b":"\u0067hp_x","c":"x\/y","d":"\\u0041"}"#;
        let found = escaped_literals(line);
        let texts: Vec<&str> = found.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(texts, ["ghp_x", "x/y"]);
        assert_eq!(&line[found[0].0.clone()], r#""\u0067hp_x""#);
        assert!(escaped_literals(r#"{"a":"no escapes\n"}"#).is_empty());
    }
}

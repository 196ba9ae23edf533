//! Reading a few members of a raw JSON object's top level without parsing the rest: the other
//! members are stepped over (strings with a SIMD search for their end, containers by depth). A
//! 10 MiB tool result is read for its `isError` or `resultType` in one pass and never decoded.

use std::ops::Range;

/// The raw values of `keys` at the top level of the object `b`, each as a byte range of `b`
/// (`None` for a key that is not there). `None` overall when the scan cannot decide without a
/// real parser: not an object, a key spelled with escapes, a wanted key twice, malformed text.
/// Callers fall back to serde then, so the two can never disagree on what a value is.
pub fn top_level<const N: usize>(b: &[u8], keys: [&[u8]; N]) -> Option<[Option<Range<usize>>; N]> {
    let ws = |mut i: usize| {
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        i
    };
    // The index just past the string opening at `i` (`b[i] == '"'`).
    let string_end = |i: usize| -> Option<usize> {
        let mut j = i + 1;
        loop {
            j += memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
            match b[j] {
                b'\\' => j += 2,
                _ => return Some(j + 1),
            }
        }
    };
    let mut found: [Option<Range<usize>>; N] = std::array::from_fn(|_| None);
    let mut i = ws(0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(i + 1);
    if b.get(i) == Some(&b'}') {
        return (ws(i + 1) == b.len()).then_some(found);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let end = string_end(i)?;
        let key = b.get(i + 1..end - 1)?;
        if key.contains(&b'\\') {
            return None; // spelled with escapes: serde decides
        }
        i = ws(end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(i + 1);
        let wanted = keys.iter().position(|k| *k == key);
        let start = i;
        // Step over the value: strings whole, containers by depth, scalars to the next `,`/`}`.
        let mut depth = 0usize;
        loop {
            match *b.get(i)? {
                b'"' => i = string_end(i)?,
                b'{' | b'[' => {
                    depth += 1;
                    i += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    i += 1;
                }
                b',' | b'}' if depth == 0 => break,
                c if c.is_ascii_whitespace() && depth == 0 => break,
                _ => i += 1,
            }
        }
        if let Some(k) = wanted {
            if found[k].is_some() {
                return None; // twice: serde refuses the duplicate, so it decides
            }
            found[k] = Some(start..i);
        }
        i = ws(i);
        match b.get(i)? {
            b',' => i = ws(i + 1),
            b'}' => return (ws(i + 1) == b.len()).then_some(found),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values<'a, const N: usize>(raw: &'a str, keys: [&[u8]; N]) -> Option<[Option<&'a str>; N]> {
        let found = top_level(raw.as_bytes(), keys)?;
        Some(found.map(|r| r.map(|r| &raw[r])))
    }

    #[test]
    fn members_are_found_only_at_the_top_level() {
        assert_eq!(
            values(
                r#"{"a":{"resultType":"x"},"resultType":"complete","b":[1]}"#,
                [b"resultType", b"_meta"]
            ),
            Some([Some("\"complete\""), None])
        );
        assert_eq!(
            values(
                r#" { "_meta" : {"k":[1,"}"]} , "n" : -1.5e3 } "#,
                [b"_meta", b"n"]
            ),
            Some([Some("{\"k\":[1,\"}\"]}"), Some("-1.5e3")])
        );
        assert_eq!(values("{}", [b"a"]), Some([None]));
        // Undecidable: serde decides.
        for raw in [
            r#"{"a":1,"a":2}"#,
            r#"{"\u0061":1}"#,
            "[]",
            r#"{"a":tru"#,
            "",
            r#"{"a":1} x"#,
        ] {
            assert_eq!(values(raw, [b"a"]), None, "{raw}");
        }
    }
}

//! Reading a few members of a raw JSON object's top level without parsing the rest: the other
//! members are stepped over (strings with a SIMD search for their end, containers by depth). A
//! 10 MiB tool result is read for its `isError` or `resultType` in one pass and never decoded.
//!
//! What the scan checks is the structure: every string closed, brackets matched by kind, at most
//! [`MAX_DEPTH`] deep, scalars that are `true`, `false`, `null` or number-shaped, nothing after
//! the object. So a value it cuts out can never end early or run into what follows it — put
//! into another message, it stays one value. What it does not check is the inside of strings
//! (escapes, control characters) and the digits of a number: those bytes pass through as sent.

use std::ops::Range;

/// Containers nested deeper than this are left to serde (which refuses past 128 as well).
pub const MAX_DEPTH: u32 = 128;

/// Ranges of the wanted members' raw values, in the order of the keys asked for.
pub type Found<const N: usize> = [Option<Range<usize>>; N];

/// The raw values of `keys` at the top level of the object `b`, each as a byte range of `b`
/// (`None` for a key that is not there). `None` overall when the scan cannot decide without a
/// real parser: not an object, a key spelled with escapes, a wanted key twice, malformed text.
/// Callers fall back to serde then, so the two can never disagree on what a value is.
pub fn top_level<const N: usize>(b: &[u8], keys: [&[u8]; N]) -> Option<Found<N>> {
    let (end, found, _) = object::<N, 0>(b, ws(b, 0), keys, None)?;
    (ws(b, end) == b.len()).then_some(found)
}

/// [`top_level`], and in the same pass, when the value of `keys[nested]` is an object, the
/// values of `inner` at its own top level (ranges of `b` as well; `None` when that value is no
/// object). A 10 MiB result is stepped over once for both its envelope and its own flags.
pub fn top_level_and_inner<const N: usize, const M: usize>(
    b: &[u8],
    keys: [&[u8]; N],
    nested: usize,
    inner: [&[u8]; M],
) -> Option<(Found<N>, Option<Found<M>>)> {
    let (end, found, inner) = object(b, ws(b, 0), keys, Some((nested, inner)))?;
    (ws(b, end) == b.len()).then_some((found, inner))
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// The object at `i`: the index just past it, its wanted members, and those of the one member
/// whose object value is read one level down.
fn object<const N: usize, const M: usize>(
    b: &[u8],
    mut i: usize,
    keys: [&[u8]; N],
    nested: Option<(usize, [&[u8]; M])>,
) -> Option<(usize, Found<N>, Option<Found<M>>)> {
    let mut found: Found<N> = std::array::from_fn(|_| None);
    let mut inner_found = None;
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some((i + 1, found, inner_found));
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let end = string_end(b, i)?;
        let key = b.get(i + 1..end - 1)?;
        if key.contains(&b'\\') {
            return None; // spelled with escapes: serde decides
        }
        i = ws(b, end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        let wanted = keys.iter().position(|k| *k == key);
        let start = i;
        i = match nested {
            Some((n, inner)) if wanted == Some(n) && b.get(i) == Some(&b'{') => {
                let (end, got, _) = object::<M, 0>(b, i, inner, None)?;
                inner_found = Some(got);
                end
            }
            _ => value_end(b, i)?,
        };
        if let Some(k) = wanted {
            if found[k].is_some() {
                return None; // twice: serde refuses the duplicate, so it decides
            }
            found[k] = Some(start..i);
        }
        i = ws(b, i);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some((i + 1, found, inner_found)),
            _ => return None,
        }
    }
}

/// The index just past the string opening at `i` (`b[i] == '"'`).
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        match b[j] {
            b'\\' => j += 2,
            _ => return Some(j + 1),
        }
    }
}

/// The index just past the value starting at `i`: strings whole, containers with their brackets
/// matched by kind (one bit a level: set for an object), scalars checked for their shape.
fn value_end(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0u32;
    let mut objects = 0u128;
    loop {
        match *b.get(i)? {
            b'"' => i = string_end(b, i)?,
            c @ (b'{' | b'[') => {
                if depth == MAX_DEPTH {
                    return None;
                }
                objects = (objects << 1) | u128::from(c == b'{');
                depth += 1;
                i += 1;
            }
            c @ (b'}' | b']') => {
                if depth == 0 || (objects & 1 == 1) != (c == b'}') {
                    return None;
                }
                objects >>= 1;
                depth -= 1;
                i += 1;
            }
            b',' | b':' if depth > 0 => i += 1,
            c if c.is_ascii_whitespace() && depth > 0 => i += 1,
            _ => {
                let len = b[i..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))
                    .unwrap_or(b.len() - i);
                let token = &b[i..i + len];
                let number = matches!(token.first(), Some(b'-' | b'0'..=b'9'));
                if !(number || matches!(token, b"true" | b"false" | b"null")) {
                    return None;
                }
                i += len;
            }
        }
        if depth == 0 {
            return Some(i);
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
            // Brackets of the wrong kind, a bare word, an empty value: the structure is checked.
            r#"{"a":[1}}"#,
            r#"{"a":{"b":1]}"#,
            r#"{"a":nope}"#,
            r#"{"a":}"#,
            r#"{"a":[1]]}"#,
            r#"{"a":"x"y}"#,
        ] {
            assert_eq!(values(raw, [b"a"]), None, "{raw}");
        }
    }

    #[test]
    fn nesting_past_the_bound_is_left_to_serde() {
        let deep = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        let ok = deep(MAX_DEPTH as usize);
        assert!(values(&ok, [b"a"]).is_some_and(|[v]| v.is_some()));
        assert_eq!(values(&deep(MAX_DEPTH as usize + 1), [b"a"]), None);
        // Matching by kind holds at every depth the bit stack keeps.
        let mixed = format!("{{\"a\":{}1{}}}", "[{\"k\":".repeat(64), "}]".repeat(64));
        assert!(values(&mixed, [b"a"]).is_some_and(|[v]| v.is_some()));
        let crossed = format!("{{\"a\":{}1{}]}}", "[{\"k\":".repeat(64), "}]".repeat(63));
        assert_eq!(values(&crossed, [b"a"]), None);
    }
}

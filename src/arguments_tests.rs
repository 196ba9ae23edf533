use serde_json::json;

use super::*;

fn ok(text: &str) -> Value {
    match read(Some(text)) {
        Ok(Some(v)) => v,
        other => panic!("{text}: {other:?}"),
    }
}

fn refused(text: &str) -> Unreadable {
    match read(Some(text)) {
        Err(u) => u,
        Ok(v) => panic!("{text} was read as {v:?}"),
    }
}

/// What every parser reads the same way is read as serde reads it: the one value.
#[test]
fn i_json_is_read_as_every_parser_reads_it() {
    for text in [
        r#"{}"#,
        r#"{"path":"/tmp/a","n":1,"f":1.5,"neg":-3,"e":1e3,"big":9007199254740991}"#,
        r#"{"nested":{"a":[1,{"b":null}],"t":true,"f":false}}"#,
        r#"{"esc":"\u0041\n\t\"\\\/","pair":"\ud83d\ude00","nfd":"e\u0301"}"#,
        " \n{ \"a\" : [ ] , \"b\" : { } }\t",
        r#"{"min":-9007199254740991,"small":1e-300,"x":0.1}"#,
    ] {
        let want: Value = serde_json::from_str(text).unwrap();
        assert_eq!(ok(text), want, "{text}");
    }
    assert_eq!(read(None), Ok(None));
    assert_eq!(read(Some("null")), Ok(None));
    assert_eq!(ok(r#"{"a":"\u0041"}"#), json!({"a": "A"}));
    // -0 is the integer 0, as Python reads it (serde reads -0.0; every rule compares them equal).
    assert_eq!(ok(r#"{"zero":-0}"#), json!({"zero": 0}));
}

/// A key given twice — at the top, nested, or spelled with an escape — is refused with the path
/// of the object that gives it: a server keeping the first would act on a value nobody judged.
#[test]
fn a_key_given_twice_is_refused_at_any_depth_and_in_any_spelling() {
    for (text, path) in [
        (r#"{"path":"/etc/evil","path":"/tmp/a"}"#, "arguments"),
        (r#"{"a":{"b":1,"b":2}}"#, "arguments.a"),
        (r#"{"a":[{"k":1,"\u006b":2}]}"#, "arguments.a[0]"),
        (r#"{"path":"/x","pa\u0074h":"/y"}"#, "arguments"),
    ] {
        let u = refused(text);
        assert_eq!(u.path, path, "{text}");
        assert!(u.why.contains("more than once"), "{text}: {u}");
    }
}

/// Numbers a double cannot hold as written are refused, naming where: an integer past 2^53
/// (a grant for one id would cover its neighbour), a number too large for a double.
#[test]
fn numbers_servers_read_differently_are_refused_with_their_path() {
    for (text, path, says) in [
        (
            r#"{"pad":1e400}"#,
            "arguments.pad",
            "too large for a double",
        ),
        (r#"{"pad":-1E+999}"#, "arguments.pad", "too large"),
        (r#"{"id":9007199254740993}"#, "arguments.id", "past 2^53"),
        (r#"{"id":1234567890123456789}"#, "arguments.id", "past 2^53"),
        (
            r#"{"id":18446744073709551617}"#,
            "arguments.id",
            "past 2^53",
        ),
        (
            r#"{"a":[1,-9007199254740992]}"#,
            "arguments.a[1]",
            "past 2^53",
        ),
        (r#"{"x":01}"#, "arguments.x", "not a JSON number"),
        (r#"{"x":1.}"#, "arguments.x", "not a JSON number"),
        (r#"{"x":NaN}"#, "arguments.x", "not JSON"),
    ] {
        let u = refused(text);
        assert_eq!(u.path, path, "{text}");
        assert!(u.why.contains(says), "{text}: {u}");
    }
}

/// A lone surrogate is no character: refused, as is a raw control character or a bad escape.
#[test]
fn strings_that_are_no_text_are_refused() {
    for (text, path, says) in [
        (r#"{"s":"\ud800"}"#, "arguments.s", "lone surrogate"),
        (r#"{"s":"\udc00x"}"#, "arguments.s", "lone surrogate"),
        (r#"{"s":"\ud800\u0041"}"#, "arguments.s", "lone surrogate"),
        (
            r#"{"s":["ok","\uD83D"]}"#,
            "arguments.s[1]",
            "lone surrogate",
        ),
        (
            "{\"s\":\"a\u{1}b\"}",
            "arguments.s",
            "raw control character",
        ),
        (
            r#"{"s":"\x41"}"#,
            "arguments.s",
            "escape JSON does not have",
        ),
        (r#"{"s":"\u00g1"}"#, "arguments.s", "four hex digits"),
        (r#"{"\ud800":1}"#, "arguments", "lone surrogate"),
    ] {
        let u = refused(text);
        assert_eq!(u.path, path, "{text}");
        assert!(u.why.contains(says), "{text}: {u}");
    }
}

/// Arguments are an object of named values; anything else, trailing text, or a nesting past
/// the bound is refused.
#[test]
fn arguments_are_one_object_within_the_depth_bound() {
    for text in [
        r#"[1]"#,
        r#""x""#,
        "3",
        r#"{"a":1} {"#,
        r#"{"a":1"#,
        r#"{"a" 1}"#,
    ] {
        let u = refused(text);
        assert!(u.path.starts_with("arguments"), "{text}: {u}");
    }
    let deep = format!(
        "{{\"a\":{}1{}}}",
        "[".repeat(MAX_DEPTH),
        "]".repeat(MAX_DEPTH)
    );
    assert!(refused(&deep).why.contains("deeper than"));
    let fits = format!(
        "{{\"a\":{}1{}}}",
        "[".repeat(MAX_DEPTH - 1),
        "]".repeat(MAX_DEPTH - 1)
    );
    ok(&fits);
}

/// A key that is no plain name is shown quoted in the path, its hidden characters revealed.
#[test]
fn a_path_names_odd_keys_quoted_and_revealed() {
    let u = refused(r#"{"a b":{"\u202e":1e999}}"#);
    assert_eq!(u.path, "arguments[\"a b\"][\"⟨U+202E⟩\"]");
}

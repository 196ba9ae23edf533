//! JSON-RPC 2.0 as plain serde data: a borrowed envelope that reads only `id`/`method` and keeps
//! `params`/`result`/`error` as raw JSON (the forwarding path never re-encodes them), one family
//! of line builders, the bounded newline codec with its batched writer, and the SSE framing the
//! HTTP transports share.

mod codec;
mod error;
mod reply;
pub mod scan;
pub mod sse;
pub mod strict;

use serde::Deserialize;
use serde_json::value::RawValue;

pub use codec::{excerpt, write_lines, Line, LineReader, MAX_LINE_BYTES};
pub use error::ErrorCode;
pub use reply::{
    error_line, error_object, error_object_line, error_object_with_data, json_string,
    notification_line, request_line, request_line_text, request_line_with_id, result_line, NULL_ID,
};

/// Sets one top-level member of a raw JSON object to `raw_value`; the other members keep their
/// bytes (member order becomes sorted, which JSON does not give meaning to).
pub fn set_member(raw_object: &str, key: &str, raw_value: &str) -> Option<String> {
    let mut map: std::collections::BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(raw_object).ok()?;
    map.insert(
        key.to_owned(),
        RawValue::from_string(raw_value.to_owned()).ok()?,
    );
    serde_json::to_string(&map).ok()
}

/// `text` with the bytes in `range` replaced by `with` (a value swapped in place; the rest keeps
/// its bytes), made in one allocation of its exact size, no formatting machinery on the way.
/// `range` is one the scanner found in this same `text` (on its JSON delimiters, so on char
/// boundaries), as every caller's is.
pub fn splice(text: &str, range: std::ops::Range<usize>, with: &str) -> String {
    let (head, tail) = (&text[..range.start], &text[range.end..]);
    let mut out = String::with_capacity(head.len() + with.len() + tail.len());
    out.push_str(head);
    out.push_str(with);
    out.push_str(tail);
    out
}

/// Removes one top-level member of a raw JSON object; returns the object without it and the
/// member's raw value (`None` when it was not there). Other members keep their bytes.
pub fn take_member(raw_object: &str, key: &str) -> Option<(String, Box<RawValue>)> {
    let mut map: std::collections::BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(raw_object).ok()?;
    let value = map.remove(key)?;
    Some((serde_json::to_string(&map).ok()?, value))
}

/// One JSON value's text, owned. A server's result is kept inside the line it came in (no copy
/// of a 10 MiB result to cut it out); anything else is a copy of a value serde read.
#[derive(Debug, Clone)]
pub struct RawJson {
    text: String,
    range: std::ops::Range<usize>,
    /// [`RESULT_MEMBERS`] as the scan found them, relative to the value.
    members: Option<scan::Found<3>>,
}

/// The members of an MCP result the forwarding path reads (`isError`, `resultType`, `_meta`):
/// found by the same pass that finds the result in a server's line.
pub const RESULT_MEMBERS: [&[u8]; 3] = [b"isError", b"resultType", b"_meta"];

/// A result response read by the scan alone ([`result_response`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// Our request's id.
    pub id: u64,
    /// Where the result is in the line.
    pub result: std::ops::Range<usize>,
    /// Where its [`RESULT_MEMBERS`] are in the line (`None`: the result is no object).
    pub members: Option<scan::Found<3>>,
}

impl RawJson {
    /// A value serde has read (so it is valid JSON).
    pub fn from_raw(raw: &RawValue) -> Self {
        let text = raw.get().to_owned();
        let range = 0..text.len();
        Self {
            text,
            range,
            members: None,
        }
    }

    /// The result [`result_response`] found in `line`: its structure checked by the scan, the
    /// whole line checked to be UTF-8 here. The line comes back when it is not.
    pub fn in_line(line: Vec<u8>, scanned: Scanned) -> Result<Self, Vec<u8>> {
        let range = scanned.result;
        let members = scanned
            .members
            .map(|found| found.map(|r| r.map(|r| r.start - range.start..r.end - range.start)));
        if simdutf8::basic::from_utf8(&line).is_err() {
            return Err(line);
        }
        // SAFETY: `line` was checked to be UTF-8 just above (simdutf8 accepts exactly what
        // `str::from_utf8` accepts), and it is not changed in between.
        let text = unsafe { String::from_utf8_unchecked(line) };
        if text.get(range.clone()).is_none() {
            return Err(text.into_bytes());
        }
        Ok(Self {
            text,
            range,
            members,
        })
    }

    /// Its [`RESULT_MEMBERS`] (ranges of [`RawJson::get`]), when the scan read them.
    pub fn members(&self) -> Option<&scan::Found<3>> {
        self.members.as_ref()
    }

    /// The value's text.
    pub fn get(&self) -> &str {
        self.text.get(self.range.clone()).unwrap_or_default()
    }

    /// The response `{"jsonrpc":"2.0","id":ID,"result":VALUE}` (with its `\n`) carrying this
    /// value. Built inside the line the value came in when our head fits where the server's
    /// was — spaces, JSON's whitespace between tokens, fill the rest — so a 10 MiB result is not
    /// copied again; a copy otherwise. The value's own bytes are never changed.
    pub fn into_result_line(self, id: &str) -> Vec<u8> {
        const RESULT: &[u8] = b",\"result\":";
        let head = reply::HEAD.len() + id.len() + RESULT.len();
        let (start, end) = (self.range.start, self.range.end);
        if start < head || end > self.text.len() {
            return result_line(id, self.get());
        }
        let mut line = self.text.into_bytes();
        line.truncate(end);
        line.extend_from_slice(b"}\n");
        let mut at = 0;
        for part in [reply::HEAD, id.as_bytes(), RESULT] {
            line[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        line[at..start].fill(b' ');
        line
    }

    /// The whole line the value came in (for a note about it).
    pub fn line(&self) -> &str {
        &self.text
    }
}

/// A response with a `result` to one of our requests (whose ids are numbers), read by the
/// top-level scan alone: the id, and the result's byte range in `line`. The result is never
/// decoded, only stepped over ([`scan`] says what that checks). `None` for anything else — a
/// request, a notification, an error, another kind of id, text the scan cannot decide — which
/// the envelope parser reads.
pub fn result_response(line: &[u8]) -> Option<Scanned> {
    let ([id, result, error, method], members) = scan::top_level_and_inner(
        line,
        [b"id", b"result", b"error", b"method"],
        1,
        RESULT_MEMBERS,
    )?;
    if error.is_some() || method.is_some() {
        return None;
    }
    let id = std::str::from_utf8(line.get(id?)?).ok()?.parse().ok()?;
    Some(Scanned {
        id,
        result: result?,
        members,
    })
}

/// One message, borrowed from its line. Only the envelope is parsed.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    /// The request or response id, raw (a number, a string or `null`).
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    /// The method of a request or notification.
    #[serde(borrow, default)]
    pub method: Option<std::borrow::Cow<'a, str>>,
    /// Params, raw.
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    /// A response's result, raw.
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    /// A response's error object, raw.
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

/// What a message is, by the members it has.
#[derive(Debug)]
pub enum Kind<'a> {
    /// `id` and `method`.
    Request {
        /// The raw id.
        id: &'a RawValue,
        /// The method.
        method: &'a str,
    },
    /// `method` without `id`.
    Notification {
        /// The method.
        method: &'a str,
    },
    /// `id` with `result` or `error`.
    Response {
        /// The raw id.
        id: &'a RawValue,
    },
}

impl<'a> Envelope<'a> {
    /// Parses the envelope of one message; params/result/error stay borrowed and raw.
    pub fn parse(line: &'a [u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(line)
    }

    /// The message's kind, or `None` for something that is no JSON-RPC message.
    pub fn kind(&'a self) -> Option<Kind<'a>> {
        match (&self.method, self.id) {
            (Some(m), Some(id)) => Some(Kind::Request { id, method: m }),
            (Some(m), None) => Some(Kind::Notification { method: m }),
            (None, Some(id)) if self.result.is_some() || self.error.is_some() => {
                Some(Kind::Response { id })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_splice_swaps_its_range_and_keeps_every_other_byte() {
        let text = r#"{"a": 1,  "_meta":{"x":2} , "b":[3]}"#;
        let start = text.find(r#"{"x""#).unwrap();
        let spliced = splice(text, start..start + 7, r#"{"y":"é"}"#);
        assert_eq!(spliced, r#"{"a": 1,  "_meta":{"y":"é"} , "b":[3]}"#);
        assert_eq!(splice("[1]", 1..2, ""), "[]");
        assert_eq!(splice("[]", 1..1, "2"), "[2]");
    }

    #[test]
    fn envelope_kinds() {
        let e = Envelope::parse(br#"{"jsonrpc":"2.0","id":7,"result":{"x":1}}"#).unwrap();
        assert!(matches!(e.kind(), Some(Kind::Response { id }) if id.get() == "7"));
        let e = Envelope::parse(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#).unwrap();
        assert!(matches!(
            e.kind(),
            Some(Kind::Notification {
                method: "notifications/x"
            })
        ));
        let e = Envelope::parse(br#"{"jsonrpc":"2.0","id":"a","method":"roots/list"}"#).unwrap();
        assert!(matches!(
            e.kind(),
            Some(Kind::Request {
                method: "roots/list",
                ..
            })
        ));
        let e = Envelope::parse(br#"{"jsonrpc":"2.0","id":1}"#).unwrap();
        assert!(e.kind().is_none());
    }

    #[test]
    fn a_result_response_is_read_by_the_scan_and_anything_else_is_not() {
        let line =
            br#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"a\"b}"}]}}"#;
        let scanned = result_response(line).unwrap();
        assert_eq!(scanned.id, 42);
        // The result's own flags, found in the same pass.
        let [is_error, kind, meta] = scanned.members.clone().unwrap();
        assert_eq!((is_error, kind, meta), (None, None, None));
        assert_eq!(
            &line[scanned.result],
            br#"{"content":[{"type":"text","text":"a\"b}"}]}"#
        );
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
        ] {
            assert_eq!(result_response(other), None, "{}", excerpt(other));
        }
        // Not UTF-8: the line comes back for the envelope parser to refuse.
        let bad = b"{\"id\":1,\"result\":\"\xff\"}".to_vec();
        let scanned = result_response(&bad).unwrap();
        assert!(matches!(RawJson::in_line(bad.clone(), scanned), Err(back) if back == bad));
    }

    /// Seeded random results, whole and damaged: whatever the scan hands over agrees with serde
    /// on valid JSON, and put into another envelope it can never change that envelope's id —
    /// a result stays one value.
    #[test]
    #[allow(clippy::too_many_lines)] // a test: its random JSON generator is part of its story
    fn the_scan_agrees_with_serde_and_a_result_cannot_leave_its_envelope() {
        fn value(rng: &mut fastrand::Rng, depth: u32, out: &mut String) {
            let ws = |rng: &mut fastrand::Rng, out: &mut String| {
                if rng.u8(..8) == 0 {
                    out.push_str([" ", "\t", "  "][rng.usize(..3)]);
                }
            };
            match if depth > 4 { rng.u8(..4) } else { rng.u8(..6) } {
                0 => out.push_str(["true", "false", "null"][rng.usize(..3)]),
                1 => out.push_str(["0", "-1.5e3", "12345678901234567890", "0.25"][rng.usize(..4)]),
                2 | 3 => {
                    out.push('"');
                    for _ in 0..rng.usize(..6) {
                        out.push_str(
                            ["a", "\\\"", "\\\\", "}", "]", ",", "é", "\\u00e9", ":"]
                                [rng.usize(..9)],
                        );
                    }
                    out.push('"');
                }
                4 => {
                    out.push('[');
                    for i in 0..rng.usize(..4) {
                        if i > 0 {
                            out.push(',');
                        }
                        ws(rng, out);
                        value(rng, depth + 1, out);
                    }
                    out.push(']');
                }
                _ => {
                    out.push('{');
                    // Keys once each (a wanted key twice is left to serde, by design).
                    let mut keys = ["\"isError\"", "\"k\"", "\"id\"", "\"_meta\""];
                    rng.shuffle(&mut keys);
                    for (i, key) in keys.iter().take(rng.usize(..4)).enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(key);
                        out.push(':');
                        ws(rng, out);
                        value(rng, depth + 1, out);
                    }
                    out.push('}');
                }
            }
        }
        let mut rng = fastrand::Rng::with_seed(18);
        let (mut fast, mut valid) = (0, 0);
        for _ in 0..20_000 {
            let mut result = String::new();
            value(&mut rng, 0, &mut result);
            let mut line =
                format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{result}}}").into_bytes();
            // Half are damaged: a byte dropped, doubled or replaced by a structural one.
            if rng.bool() {
                let at = rng.usize(..line.len());
                match rng.u8(..3) {
                    0 => {
                        line.remove(at);
                    }
                    1 => line.insert(at, line[at]),
                    _ => line[at] = b"{}[]\",:\\ 1"[rng.usize(..10)],
                }
            }
            let serde = Envelope::parse(&line).ok().and_then(|e| {
                match (e.kind(), e.result, e.error, &e.method) {
                    (Some(Kind::Response { id }), Some(r), None, None) => {
                        Some((id.get().parse::<u64>().ok()?, r.get().to_owned()))
                    }
                    _ => None,
                }
            });
            let scanned = result_response(&line);
            // A key spelled with an escape (the envelope's or the result's own) is what the
            // scan leaves to serde.
            let escaped_key = line[..line.len().min(34)].contains(&b'\\')
                || serde.as_ref().is_some_and(|(_, r)| {
                    r.starts_with('{')
                        && serde_json::from_str::<std::collections::BTreeMap<&str, &RawValue>>(r)
                            .is_err()
                });
            if let Some((id, r)) = serde.as_ref().filter(|_| !escaped_key) {
                valid += 1;
                let got = scanned.clone().unwrap_or_else(|| {
                    panic!(
                        "valid JSON the scan gave up on: {}",
                        String::from_utf8_lossy(&line)
                    )
                });
                assert_eq!((got.id, &line[got.result.clone()]), (*id, r.as_bytes()));
                // The result's own members agree with serde's reading of them.
                if let Some([flag, _, meta]) = got.members {
                    let v: serde_json::Value = serde_json::from_str(r).unwrap();
                    let flag = flag
                        .and_then(|f| serde_json::from_slice::<serde_json::Value>(&line[f]).ok());
                    assert_eq!(flag.as_ref(), v.get("isError"));
                    assert_eq!(meta.is_some(), v.get("_meta").is_some());
                }
            }
            if let Some(Scanned { result: range, .. }) = scanned {
                fast += 1;
                let raw = String::from_utf8_lossy(&line[range]);
                let ours = format!("{{\"jsonrpc\":\"2.0\",\"id\":\"client-1\",\"result\":{raw}}}");
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&ours) {
                    assert_eq!(v["id"], "client-1", "{ours}");
                    assert_eq!(v.as_object().map(|o| o.len()), Some(3), "{ours}");
                }
            }
        }
        assert!(valid > 5_000 && fast > valid, "valid {valid}, fast {fast}");
    }

    #[test]
    fn a_result_goes_out_in_its_own_line_with_its_bytes_unchanged() {
        let server = br#"{"jsonrpc":"2.0","id":123456,"result":{"text":"\u00e9 \"x\"","n":1.50}}"#;
        let want = r#"{"text":"\u00e9 \"x\"","n":1.50}"#;
        for id in ["7", "\"ab\"", "0", "\"a-much-longer-client-id-than-fits\""] {
            let raw = RawJson::in_line(server.to_vec(), result_response(server).unwrap()).unwrap();
            let line = raw.into_result_line(id);
            assert!(line.ends_with(b"}\n"));
            let env = Envelope::parse(&line[..line.len() - 1]).unwrap();
            assert_eq!(env.id.unwrap().get(), id);
            assert_eq!(env.result.unwrap().get(), want, "the value's bytes");
            assert!(env.error.is_none() && env.method.is_none());
        }
        // Built in place when it fits: the line's buffer is the server's (as the line reader
        // hands it over, with room for the newline it cut off).
        let scanned = result_response(server).unwrap();
        let mut read = server.to_vec();
        read.push(b'\n');
        read.pop();
        let raw = RawJson::in_line(read, scanned).unwrap();
        let at = raw.line().as_ptr();
        let out = raw.into_result_line("7");
        assert_eq!(out.as_ptr(), at);
    }

    #[test]
    fn raw_fields_are_byte_exact() {
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"n":12345678901234567890123,"f":0.123456789,"u":{"k":[]}}}"#;
        let e = Envelope::parse(line).unwrap();
        assert_eq!(
            e.result.unwrap().get(),
            r#"{"n":12345678901234567890123,"f":0.123456789,"u":{"k":[]}}"#
        );
    }
}

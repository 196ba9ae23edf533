//! JSON-RPC 2.0 as plain serde data: a borrowed envelope that reads only `id`/`method` and keeps
//! `params`/`result`/`error` as raw JSON (the forwarding path never re-encodes them), one family
//! of line builders, the bounded newline codec with its batched writer, and the SSE framing the
//! HTTP transports share.

mod codec;
mod error;
mod reply;
pub mod scan;
pub mod sse;

use serde::Deserialize;
use serde_json::value::RawValue;

pub use codec::{excerpt, read_line, write_lines, Line, MAX_LINE_BYTES};
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

/// Removes one top-level member of a raw JSON object; returns the object without it and the
/// member's raw value (`None` when it was not there). Other members keep their bytes.
pub fn take_member(raw_object: &str, key: &str) -> Option<(String, Box<RawValue>)> {
    let mut map: std::collections::BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(raw_object).ok()?;
    let value = map.remove(key)?;
    Some((serde_json::to_string(&map).ok()?, value))
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
    fn raw_fields_are_byte_exact() {
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"n":12345678901234567890123,"f":0.123456789,"u":{"k":[]}}}"#;
        let e = Envelope::parse(line).unwrap();
        assert_eq!(
            e.result.unwrap().get(),
            r#"{"n":12345678901234567890123,"f":0.123456789,"u":{"k":[]}}"#
        );
    }
}

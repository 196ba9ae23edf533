//! One message from a client, read once where it crosses the transport boundary: its JSON-RPC
//! envelope (id, method, params kept raw), what kind of message it is, and — for a message with
//! a method — the 2026-07-28 envelope in `params._meta`. The transports (`http.rs`, `stdio.rs`)
//! make it and decide what they must from it (batches, parse errors, the era, the lifecycle);
//! the gateway takes it as it is and never parses the message again.

use serde_json::value::RawValue;

use crate::jsonrpc::{self, Envelope, ErrorCode, Kind, NULL_ID};
use crate::protocol::{self, EnvelopeError};

/// A client's message, read.
#[derive(Debug)]
pub struct Incoming<'a> {
    env: Envelope<'a>,
    /// `params._meta`'s 2026-07-28 envelope (`Ok(None)` for a legacy message or one without a
    /// method): read once, here.
    meta: Result<Option<protocol::Envelope>, EnvelopeError>,
}

/// Why a message is refused before anything is done with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A JSON-RPC batch (the protocol has none since 2025-06-18).
    Batch,
    /// Not JSON, or not a JSON object.
    Parse(String),
}

impl Refusal {
    /// The error code the refusal is answered with.
    pub fn code(&self) -> ErrorCode {
        match self {
            Refusal::Batch => ErrorCode::InvalidRequest,
            Refusal::Parse(_) => ErrorCode::ParseError,
        }
    }

    /// The JSON-RPC error (no id: none could be read) for this refusal; `one` says how the
    /// transport takes one message ("at a time", "per request").
    pub fn line(&self, one: &str) -> Vec<u8> {
        match self {
            Refusal::Batch => jsonrpc::error_line(
                NULL_ID,
                ErrorCode::InvalidRequest,
                &format!("JSON-RPC batches are not supported: send one message {one}"),
            ),
            Refusal::Parse(e) => {
                jsonrpc::error_line(NULL_ID, ErrorCode::ParseError, &format!("Parse error: {e}"))
            }
        }
    }
}

impl<'a> Incoming<'a> {
    /// Reads one message (surrounding whitespace allowed).
    pub fn parse(message: &'a [u8]) -> Result<Incoming<'a>, Refusal> {
        let message = trim(message);
        if message.first() == Some(&b'[') {
            return Err(Refusal::Batch);
        }
        let env = Envelope::parse(message).map_err(|e| Refusal::Parse(e.to_string()))?;
        let meta = match env.method {
            Some(_) => protocol::read_envelope(env.params),
            None => Ok(None),
        };
        Ok(Incoming { env, meta })
    }

    /// What the message is, or `None` for an object that is no JSON-RPC message.
    pub fn kind(&self) -> Option<Kind<'_>> {
        self.env.kind()
    }

    /// The raw id, if any.
    pub fn id(&self) -> Option<&'a RawValue> {
        self.env.id
    }

    /// The raw id as the error replies take it (`null` when there is none).
    pub fn reply_id(&self) -> &'a str {
        self.env.id.map_or(NULL_ID, RawValue::get)
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        self.env.method.as_deref()
    }

    /// Whether this is a request (an id and a method).
    pub fn is_request(&self) -> bool {
        self.env.id.is_some() && self.env.method.is_some()
    }

    /// The params, raw.
    pub fn params(&self) -> Option<&'a RawValue> {
        self.env.params
    }

    /// The whole JSON-RPC envelope (a response's result or error).
    pub fn envelope(&self) -> &Envelope<'a> {
        &self.env
    }

    /// The 2026-07-28 envelope as read: `Ok(Some(_))` for a modern message, `Ok(None)` for a
    /// legacy one, `Err` for a malformed or unsupported one.
    pub fn modern(&self) -> Result<Option<&protocol::Envelope>, &EnvelopeError> {
        self.meta.as_ref().map(Option::as_ref)
    }

    /// Whether the message carries a 2026-07-28 envelope (a well-formed one or not).
    pub fn claims_modern(&self) -> bool {
        !matches!(self.meta, Ok(None))
    }
}

self_cell::self_cell!(
    /// A client's message that owns its bytes: what a transport hands to a task of its own.
    pub struct OwnedIncoming {
        owner: Vec<u8>,
        #[covariant]
        dependent: Incoming,
    }
);

impl OwnedIncoming {
    /// Reads one message, keeping its bytes.
    pub fn read(message: Vec<u8>) -> Result<OwnedIncoming, Refusal> {
        OwnedIncoming::try_new(message, |m| Incoming::parse(m))
    }

    /// The message, read.
    pub fn get(&self) -> &Incoming<'_> {
        self.borrow_dependent()
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_keeps_inner_bytes() {
        assert_eq!(trim(b"  {\"a\": 1}\r\n"), b"{\"a\": 1}");
        assert_eq!(trim(b"   "), b"");
    }

    #[test]
    fn a_message_is_read_once_with_its_kind_and_era() {
        let m = Incoming::parse(br#" {"jsonrpc":"2.0","id":7,"method":"tools/list"} "#).unwrap();
        assert!(matches!(
            m.kind(),
            Some(Kind::Request {
                method: "tools/list",
                ..
            })
        ));
        assert_eq!(m.reply_id(), "7");
        assert!(!m.claims_modern());
        let modern = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{"{}":"2026-07-28","{}":{{}}}}}}}}"#,
            protocol::PROTOCOL_VERSION_KEY,
            protocol::CLIENT_CAPABILITIES_KEY
        );
        let m = Incoming::parse(modern.as_bytes()).unwrap();
        assert_eq!(m.modern().unwrap().unwrap().version, "2026-07-28");
        let broken = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{"{}":"2026-07-28"}}}}}}"#,
            protocol::PROTOCOL_VERSION_KEY
        );
        let m = Incoming::parse(broken.as_bytes()).unwrap();
        assert!(m.modern().is_err());
        assert!(m.claims_modern());
        // A response's params are never read for an envelope.
        let m = Incoming::parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap();
        assert!(matches!(m.kind(), Some(Kind::Response { .. })));
    }

    #[test]
    fn batches_and_garbage_are_refused_before_anything_else() {
        assert_eq!(
            Incoming::parse(b" [{}]").unwrap_err(),
            Refusal::Batch,
            "a batch"
        );
        let e = Incoming::parse(b"{\"id\": 1,").unwrap_err();
        assert!(matches!(e, Refusal::Parse(_)), "{e:?}");
        let line: serde_json::Value = serde_json::from_slice(&e.line("at a time")).unwrap();
        assert_eq!(line["error"]["code"], -32700);
        assert!(line["id"].is_null());
    }

    #[test]
    fn an_owned_message_reads_like_a_borrowed_one() {
        let m = OwnedIncoming::read(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
        )
        .unwrap();
        assert!(matches!(
            m.get().kind(),
            Some(Kind::Notification {
                method: "notifications/initialized"
            })
        ));
        assert!(OwnedIncoming::read(b"[]".to_vec()).is_err());
    }
}

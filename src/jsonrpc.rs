//! JSON-RPC 2.0 as plain serde data: a borrowed envelope that reads only `id`/`method` and keeps
//! `params`/`result`/`error` as raw JSON (the forwarding path never re-encodes them), and a
//! newline codec with a size bound.

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Lines longer than this are dropped (DESIGN §3).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// One message, borrowed from its line. Only the envelope is parsed.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

#[derive(Debug)]
pub enum Kind<'a> {
    Request { id: &'a RawValue, method: &'a str },
    Notification { method: &'a str },
    Response { id: &'a RawValue },
}

impl<'a> Envelope<'a> {
    pub fn parse(line: &'a [u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(line)
    }

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

/// Builds a request line (with trailing newline). `params` is raw JSON and goes in untouched.
pub fn request_line(id: u64, method: &str, params: Option<&RawValue>) -> Vec<u8> {
    let method = json_string(method);
    let mut out = Vec::with_capacity(64 + method.len() + params.map_or(0, |p| p.get().len()));
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"method\":");
    out.extend_from_slice(method.as_bytes());
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.extend_from_slice(b"}\n");
    out
}

/// Builds a notification line (with trailing newline).
pub fn notification_line(method: &str, params: Option<&RawValue>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    out.extend_from_slice(json_string(method).as_bytes());
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.extend_from_slice(b"}\n");
    out
}

/// A success response line for a request id taken raw from the peer.
pub fn result_line(id: &RawValue, result: &str) -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}}}\n",
        id.get(),
        result
    )
    .into_bytes()
}

/// An error response line.
pub fn error_line(id: &RawValue, code: i64, message: &str) -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":{},\"message\":{}}}}}\n",
        id.get(),
        code,
        json_string(message)
    )
    .into_bytes()
}

pub fn json_string(s: &str) -> String {
    // Serialising a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// What the bounded line reader produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its `\n` (and without a trailing `\r`).
    Data(Vec<u8>),
    /// A line over the limit was skipped; its full length in bytes.
    TooLong(usize),
    Eof,
}

/// Reads one `\n`-terminated line of at most `max` bytes. Longer lines are consumed and reported
/// as `TooLong` without ever buffering more than `max` bytes, so a 20 MiB line costs no 20 MiB.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut skipped: Option<usize> = None;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            // EOF: a final unterminated line still counts.
            return Ok(match skipped {
                Some(n) => Line::TooLong(n),
                None if buf.is_empty() => Line::Eof,
                None => Line::Data(std::mem::take(buf)),
            });
        }
        let (part, found) = match memchr(chunk) {
            Some(i) => (&chunk[..i], Some(i)),
            None => (chunk, None),
        };
        match skipped.as_mut() {
            Some(n) => *n += part.len(),
            None if buf.len() + part.len() > max => {
                skipped = Some(buf.len() + part.len());
                buf.clear();
            }
            None => buf.extend_from_slice(part),
        }
        let consumed = found.map_or(part.len(), |i| i + 1);
        r.consume(consumed);
        if found.is_some() {
            if let Some(n) = skipped {
                return Ok(Line::TooLong(n));
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Line::Data(std::mem::take(buf)));
        }
    }
}

fn memchr(hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == b'\n')
}

/// A short, printable excerpt of a line for log messages.
pub fn excerpt(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(&line[..line.len().min(200)]);
    if line.len() > 200 {
        format!("{s}… ({} bytes)", line.len())
    } else {
        s.into_owned()
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

    #[test]
    fn request_line_keeps_params_raw() {
        let p = RawValue::from_string(r#"{"a":0.10000000000000001}"#.into()).unwrap();
        let l = request_line(3, "tools/call", Some(&p));
        assert_eq!(
            std::str::from_utf8(&l).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"a\":0.10000000000000001}}\n"
        );
    }

    #[tokio::test]
    async fn bounded_reader_skips_long_lines_and_keeps_going() {
        let mut data = b"short\r\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 100));
        data.extend(b"\nafter\nlast");
        let mut r = tokio::io::BufReader::with_capacity(16, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_line(&mut r, &mut buf, 50).await.unwrap(),
            Line::Data(b"short".to_vec())
        );
        assert_eq!(
            read_line(&mut r, &mut buf, 50).await.unwrap(),
            Line::TooLong(100)
        );
        assert_eq!(
            read_line(&mut r, &mut buf, 50).await.unwrap(),
            Line::Data(b"after".to_vec())
        );
        assert_eq!(
            read_line(&mut r, &mut buf, 50).await.unwrap(),
            Line::Data(b"last".to_vec())
        );
        assert_eq!(read_line(&mut r, &mut buf, 50).await.unwrap(), Line::Eof);
    }
}

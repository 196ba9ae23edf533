//! Server-sent events, the way MCP's HTTP transports use them: one JSON-RPC message per event's
//! `data`. [`frame`] writes an event; [`SseReader`] reads events from any byte stream (a
//! reqwest body) with a bound on one event's size.

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

/// One JSON-RPC message as an SSE event (`event: message`). A trailing `\n` of the line is
/// dropped: the blank line ends the event. A message with line breaks in it (JSON allows CR and
/// LF between tokens: a remote server's pretty-printed body, a stray CR from a stdio server)
/// gets one `data:` field per line, as SSE requires — written as one field, every break would
/// have ended the field early and the client would have read a truncated message. The client
/// joins the fields with `\n`, which is whitespace to JSON as CR was.
pub fn frame(line: &[u8]) -> Bytes {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let mut out = Vec::with_capacity(line.len() + 24);
    out.extend_from_slice(b"event: message\n");
    let mut rest = line;
    loop {
        out.extend_from_slice(b"data: ");
        match memchr::memchr2(b'\n', b'\r', rest) {
            Some(i) => {
                out.extend_from_slice(&rest[..i]);
                out.push(b'\n');
                // CRLF is one break.
                let skip = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                rest = &rest[i + skip..];
            }
            None => {
                out.extend_from_slice(rest);
                out.extend_from_slice(b"\n\n");
                return Bytes::from(out);
            }
        }
    }
}

/// One event: its type (`""` when the stream gave none) and its data lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field.
    pub event: String,
    /// The `data:` fields, joined.
    pub data: Vec<u8>,
}

/// Why reading events stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// The body failed (connection lost…).
    #[error("{0}")]
    Body(String),
    /// One event grew past the bound.
    #[error("the server sent an event of over {limit} bytes (the limit); the stream was dropped")]
    TooLarge {
        /// The bound in bytes.
        limit: usize,
    },
}

/// Reads SSE events from a stream of byte chunks. Never holds more than `max` bytes of one event.
pub struct SseReader<S> {
    body: S,
    /// Bytes received and not yet consumed; lines start at `start`.
    buf: Vec<u8>,
    start: usize,
    /// How far past `start` is known to hold no `\n` (so a long line is scanned once).
    scanned: usize,
    event: String,
    data: Vec<u8>,
    has_data: bool,
    max: usize,
}

impl<S, E> SseReader<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    /// A reader over `body`; one event may hold at most `max` bytes.
    pub fn new(body: S, max: usize) -> Self {
        SseReader {
            body,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            event: String::new(),
            data: Vec::new(),
            has_data: false,
            max,
        }
    }

    /// The next event; `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<Result<SseEvent, SseError>> {
        loop {
            while let Some(rel) = self.buf[self.start + self.scanned..]
                .iter()
                .position(|b| *b == b'\n')
            {
                let end = self.start + self.scanned + rel;
                let mut line = &self.buf[self.start..end];
                if line.last() == Some(&b'\r') {
                    line = &line[..line.len() - 1];
                }
                let done = field(line, &mut self.event, &mut self.data, &mut self.has_data);
                self.start = end + 1;
                self.scanned = 0;
                if self.data.len() > self.max {
                    return Some(Err(SseError::TooLarge { limit: self.max }));
                }
                if done {
                    let event = SseEvent {
                        event: std::mem::take(&mut self.event),
                        data: std::mem::take(&mut self.data),
                    };
                    self.has_data = false;
                    return Some(Ok(event));
                }
            }
            self.scanned = self.buf.len() - self.start;
            if self.data.len() + self.scanned > self.max {
                return Some(Err(SseError::TooLarge { limit: self.max }));
            }
            // Keep only the unconsumed tail before reading more.
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
                Some(Err(e)) => return Some(Err(SseError::Body(e.to_string()))),
                None => return None,
            }
        }
    }
}

/// Takes one line; returns true when it ends an event that carries something.
fn field(line: &[u8], event: &mut String, data: &mut Vec<u8>, has_data: &mut bool) -> bool {
    if line.is_empty() {
        return *has_data || !event.is_empty();
    }
    if let Some(v) = line.strip_prefix(b"data:") {
        if *has_data {
            data.push(b'\n');
        }
        data.extend_from_slice(v.strip_prefix(b" ").unwrap_or(v));
        *has_data = true;
    } else if let Some(v) = line.strip_prefix(b"event:") {
        *event = String::from_utf8_lossy(v).trim().to_owned();
    }
    // `id:`, `retry:` and comments carry nothing MCP needs.
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(
        chunks: &[&[u8]],
        max: usize,
    ) -> SseReader<impl Stream<Item = Result<Bytes, String>> + Unpin> {
        let items: Vec<Result<Bytes, String>> = chunks
            .iter()
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        SseReader::new(futures_util::stream::iter(items), max)
    }

    #[tokio::test]
    async fn events_across_chunks_comments_and_crlf() {
        let mut r = reader(
            &[
                b"event: endpoint\nda",
                b"ta: /x?s=1\n\n: keep-alive\n\n",
                b"data: {\"a\":1}\r\n",
                b"data: 2\r\n\r\n",
            ],
            1024,
        );
        let e = r.next().await.unwrap().unwrap();
        assert_eq!(
            (e.event.as_str(), e.data.as_slice()),
            ("endpoint", &b"/x?s=1"[..])
        );
        let e = r.next().await.unwrap().unwrap();
        assert_eq!(e.data, b"{\"a\":1}\n2");
        assert!(r.next().await.is_none());
    }

    #[tokio::test]
    async fn an_event_over_the_bound_is_refused_without_buffering_it() {
        let line = vec![b'x'; 600];
        let mut chunks: Vec<&[u8]> = vec![b"data: "];
        chunks.extend(std::iter::repeat_n(&line[..], 10));
        let mut r = reader(&chunks, 1000);
        assert_eq!(
            r.next().await.unwrap(),
            Err(SseError::TooLarge { limit: 1000 })
        );
        // Many short data lines add up the same way.
        let many: Vec<&[u8]> = std::iter::repeat_n(&b"data: 0123456789\n"[..], 200).collect();
        let mut r = reader(&many, 1000);
        assert!(matches!(
            r.next().await,
            Some(Err(SseError::TooLarge { .. }))
        ));
    }

    #[test]
    fn frames_one_message_per_event() {
        assert_eq!(
            &frame(b"{\"a\":1}\n")[..],
            b"event: message\ndata: {\"a\":1}\n\n"
        );
    }

    #[tokio::test]
    async fn a_message_with_line_breaks_reaches_the_reader_whole() {
        // Pretty-printed with LF, CRLF and a lone CR between tokens: valid JSON, and each break
        // would have ended a single data field early.
        let msg =
            b"{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1,\r  \"result\": {\"text\": \"a\\nb\"}\n}";
        let framed = frame(msg);
        assert_eq!(framed.iter().filter(|&&b| b == b'\r').count(), 0);
        let mut r = reader(&[&framed[..]], 1 << 20);
        let event = r.next().await.expect("an event").expect("read");
        let got: serde_json::Value = serde_json::from_slice(&event.data).expect("whole JSON");
        let want: serde_json::Value = serde_json::from_slice(msg).expect("json");
        assert_eq!(got, want);
        assert!(r.next().await.is_none(), "one event, nothing after it");
    }
}

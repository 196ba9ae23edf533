//! The newline codec every stdio-shaped connection uses: a reader that never buffers more than
//! its bound, and one writer task that batches whatever is queued before a flush.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Lines longer than this are dropped without being buffered (a server's stdout, a client's
/// stdin, an SSE event of a remote server).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What the bounded line reader produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its `\n` (and without a trailing `\r`).
    Data(Vec<u8>),
    /// A line over the limit was skipped; its full length in bytes.
    TooLong(usize),
    /// The input ended.
    Eof,
}

/// How much a read asks for at least: the buffer a connection keeps between lines.
const READ_SIZE: usize = 8 * 1024;

/// A line at least this long that starts the buffer is handed over with the buffer's allocation
/// instead of being copied out (only what was read past its end is copied).
const HAND_OVER: usize = 64 * 1024;

/// Reads `\n`-terminated lines of at most `max` bytes from a byte stream. Longer lines are
/// consumed and reported as `TooLong` without ever buffering more than `max` bytes (plus one
/// read), so a 20 MiB line costs no 20 MiB. A long line is read straight into the buffer that
/// becomes the line — no second copy, and reads as large as the pipe holds. Cancel-safe: a line
/// read in part stays in the reader for the next call.
pub struct LineReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
    /// Where the next line starts in `buf`.
    start: usize,
    /// How far `buf` has been searched for a line end.
    searched: usize,
    /// The length of a line over `max`, as far as it has gone.
    skipped: Option<usize>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of lines of at most `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            max,
            buf: Vec::new(),
            start: 0,
            searched: 0,
            skipped: None,
        }
    }

    /// The next line, without its `\n` (and without a trailing `\r`).
    pub async fn next(&mut self) -> std::io::Result<Line> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.searched..]) {
                let end = self.searched + i;
                self.searched = end + 1;
                if let Some(n) = self.skipped.take() {
                    self.start = end + 1;
                    return Ok(Line::TooLong(n + end));
                }
                if end - self.start > self.max {
                    let n = end - self.start;
                    self.start = end + 1;
                    return Ok(Line::TooLong(n));
                }
                return Ok(Line::Data(self.take_line(end)));
            }
            self.searched = self.buf.len();
            if let Some(n) = self.skipped.as_mut() {
                *n += self.buf.len();
                self.buf.clear();
                self.searched = 0;
            } else if self.buf.len() - self.start > self.max {
                self.skipped = Some(self.buf.len() - self.start);
                // The long line's buffer goes; the skip reads into a small one.
                self.buf = Vec::new();
                self.start = 0;
                self.searched = 0;
            }
            if self.start > 0 {
                // Only the part of a line read so far moves (at most one read's worth).
                self.buf.drain(..self.start);
                self.searched -= self.start;
                self.start = 0;
            }
            if self.buf.capacity() - self.buf.len() < READ_SIZE {
                // Doubling, but never past the bound and one read.
                let room = self
                    .buf
                    .len()
                    .max(READ_SIZE)
                    .min(self.max.saturating_sub(self.buf.len()) + READ_SIZE);
                self.buf.reserve_exact(room);
            }
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                // EOF: a final unterminated line still counts.
                let rest = self.buf.len() - self.start;
                return Ok(match self.skipped.take() {
                    Some(n) => Line::TooLong(n + rest),
                    None if rest == 0 => Line::Eof,
                    None => Line::Data(self.take_line(self.buf.len())),
                });
            }
        }
    }

    /// The line `start..end` out of the buffer; whatever follows `end` (its `\n` excluded) stays.
    fn take_line(&mut self, end: usize) -> Vec<u8> {
        let mut line_end = end;
        if line_end > self.start && self.buf[line_end - 1] == b'\r' {
            line_end -= 1;
        }
        let next = (end + 1).min(self.buf.len());
        let line = if self.start == 0 && line_end >= HAND_OVER {
            let rest = self.buf.split_off(next);
            let mut line = std::mem::replace(&mut self.buf, rest);
            line.truncate(line_end);
            self.start = 0;
            self.searched = 0;
            line
        } else {
            let line = self.buf[self.start..line_end].to_vec();
            self.start = next;
            line
        };
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            self.searched = 0;
        }
        line
    }
}

/// Makes a message one line (its final `\n` kept): CR and LF inside it become spaces. JSON
/// allows them only between tokens (raw in a string they are invalid), where a space means the
/// same; kept, they would split the message for a newline-delimited peer. They come from
/// pretty-printed bodies of HTTP clients and remote servers, carried as raw JSON.
pub fn flatten(line: &mut [u8]) {
    let body = match line.split_last_mut() {
        Some((b'\n', body)) => body,
        _ => line,
    };
    let mut at = 0;
    while let Some(i) = memchr::memchr2(b'\n', b'\r', &body[at..]) {
        body[at + i] = b' ';
        at += i + 1;
    }
}

/// Writes queued lines (each already ending in `\n`, made one line by [`flatten`]) until the
/// queue closes, a write fails or `stop` is cancelled. Whatever is already queued goes out before
/// one flush. The writer is shut down at the end: for a child's stdin that is what "close stdin"
/// means.
pub async fn write_lines<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    stop: CancellationToken,
) {
    // Waited on once for the whole loop, not registered again for every line.
    let stopped = stop.cancelled();
    tokio::pin!(stopped);
    loop {
        let mut line = tokio::select! {
            _ = &mut stopped => break,
            line = rx.recv() => match line { Some(l) => l, None => break },
        };
        flatten(&mut line);
        if w.write_all(&line).await.is_err() {
            break;
        }
        let mut failed = false;
        while let Ok(mut more) = rx.try_recv() {
            flatten(&mut more);
            if w.write_all(&more).await.is_err() {
                failed = true;
                break;
            }
        }
        if failed || w.flush().await.is_err() {
            break;
        }
    }
    let _ = w.shutdown().await;
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

    /// Feeds `data` through a pipe `chunk` bytes wide, so reads come in pieces.
    fn piped(data: Vec<u8>, chunk: usize) -> tokio::io::DuplexStream {
        let (mut ours, theirs) = tokio::io::duplex(chunk);
        tokio::spawn(async move {
            let _ = ours.write_all(&data).await;
        });
        theirs
    }

    #[tokio::test]
    async fn bounded_reader_skips_long_lines_and_keeps_going() {
        let mut data = b"short\r\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 100));
        data.extend(b"\nafter\nlast");
        for chunk in [3, 16, 1 << 16] {
            let mut r = LineReader::new(piped(data.clone(), chunk), 50);
            assert_eq!(r.next().await.unwrap(), Line::Data(b"short".to_vec()));
            assert_eq!(r.next().await.unwrap(), Line::TooLong(100), "chunk {chunk}");
            assert_eq!(r.next().await.unwrap(), Line::Data(b"after".to_vec()));
            assert_eq!(r.next().await.unwrap(), Line::Data(b"last".to_vec()));
            assert_eq!(r.next().await.unwrap(), Line::Eof);
        }
    }

    #[tokio::test]
    async fn a_long_line_is_handed_over_whole_and_what_follows_it_stays() {
        let long: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut data = b"one\n".to_vec();
        data.extend(&long);
        data.extend(b"\r\ntwo\n");
        data.extend(&long);
        data.extend(b"\nthree");
        for chunk in [4096, 65536] {
            let mut r = LineReader::new(piped(data.clone(), chunk), 1 << 20);
            assert_eq!(r.next().await.unwrap(), Line::Data(b"one".to_vec()));
            assert!(matches!(r.next().await.unwrap(), Line::Data(l) if l == long));
            assert_eq!(r.next().await.unwrap(), Line::Data(b"two".to_vec()));
            assert!(matches!(r.next().await.unwrap(), Line::Data(l) if l == long));
            assert_eq!(r.next().await.unwrap(), Line::Data(b"three".to_vec()));
            assert_eq!(r.next().await.unwrap(), Line::Eof);
            // The buffer kept between lines is small again.
            assert!(r.buf.capacity() <= 2 * HAND_OVER, "{}", r.buf.capacity());
        }
    }

    #[tokio::test]
    async fn a_line_read_in_part_survives_a_cancelled_read() {
        let (mut w, theirs) = tokio::io::duplex(64);
        let mut r = LineReader::new(theirs, 1 << 10);
        w.write_all(b"{\"half\":").await.unwrap();
        let cut = tokio::time::timeout(std::time::Duration::from_millis(50), r.next()).await;
        assert!(cut.is_err(), "no line yet");
        w.write_all(b"1}\n").await.unwrap();
        assert_eq!(
            r.next().await.unwrap(),
            Line::Data(b"{\"half\":1}".to_vec())
        );
    }

    #[tokio::test]
    async fn writer_sends_every_queued_line_in_order_and_shuts_down() {
        let (ours, mut theirs) = tokio::io::duplex(1 << 16);
        let (tx, rx) = mpsc::channel(16);
        let task = tokio::spawn(write_lines(ours, rx, CancellationToken::new()));
        for i in 0..10 {
            tx.send(format!("{i}\n").into_bytes()).await.unwrap();
        }
        drop(tx);
        task.await.unwrap();
        let mut got = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut theirs, &mut got)
            .await
            .unwrap();
        assert_eq!(got, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n");
    }

    #[tokio::test]
    async fn a_pretty_printed_message_goes_out_as_one_line_meaning_the_same() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (tx, rx) = mpsc::channel(16);
        let task = tokio::spawn(write_lines(ours, rx, CancellationToken::new()));
        let pretty =
            "{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 7,\r  \"params\": {\"text\": \"a\\nb\"}\n}";
        tx.send(format!("{pretty}\n").into_bytes()).await.unwrap();
        tx.send(b"{\"id\":8}\n".to_vec()).await.unwrap();
        drop(tx);
        task.await.unwrap();
        // Read back as a newline-delimited peer does: two lines, the first the same JSON.
        let mut r = LineReader::new(theirs, 1 << 20);
        let Line::Data(first) = r.next().await.unwrap() else {
            panic!("no first line");
        };
        let got: serde_json::Value = serde_json::from_slice(&first).unwrap();
        let want: serde_json::Value = serde_json::from_str(pretty).unwrap();
        assert_eq!(got, want);
        assert!(matches!(r.next().await.unwrap(), Line::Data(l) if l == b"{\"id\":8}"));
        assert!(matches!(r.next().await.unwrap(), Line::Eof));
    }
}

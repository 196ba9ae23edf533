//! The newline codec every stdio-shaped connection uses: a reader that never buffers more than
//! its bound, and one writer task that batches whatever is queued before a flush.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
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
        let (part, found) = match memchr::memchr(b'\n', chunk) {
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
    loop {
        let mut line = tokio::select! {
            _ = stop.cancelled() => break,
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
        let mut r = tokio::io::BufReader::new(theirs);
        let mut buf = Vec::new();
        let Line::Data(first) = read_line(&mut r, &mut buf, 1 << 20).await.unwrap() else {
            panic!("no first line");
        };
        let got: serde_json::Value = serde_json::from_slice(&first).unwrap();
        let want: serde_json::Value = serde_json::from_str(pretty).unwrap();
        assert_eq!(got, want);
        assert!(
            matches!(read_line(&mut r, &mut buf, 1 << 20).await.unwrap(), Line::Data(l) if l == b"{\"id\":8}")
        );
        assert!(matches!(
            read_line(&mut r, &mut buf, 1 << 20).await.unwrap(),
            Line::Eof
        ));
    }
}

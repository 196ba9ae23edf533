//! The bounded line codec: whatever a peer writes, every line handed on is at most the bound
//! and holds no newline; every input byte is accounted for (in a line, a skipped line or a
//! separator); the reader always reaches the end.
#![no_main]

use std::pin::Pin;
use std::task::{Context, Poll};

use gatehouse::jsonrpc::{Line, LineReader};
use libfuzzer_sys::fuzz_target;

const MAX: usize = 64;

/// Hands the input over at most 7 bytes a read, so lines cross reads.
struct Trickle<'a>(&'a [u8]);

impl tokio::io::AsyncRead for Trickle<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.0.len().min(7).min(buf.remaining());
        buf.put_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Poll::Ready(Ok(()))
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    rt.block_on(async {
        let mut r = LineReader::new(Trickle(data), MAX);
        let mut seen = 0usize;
        for _ in 0..=data.len() + 1 {
            match r.next().await {
                Ok(Line::Data(l)) => {
                    assert!(l.len() <= MAX, "a line over the bound was handed on");
                    assert!(!l.contains(&b'\n'));
                    seen += l.len();
                }
                Ok(Line::TooLong(n)) => {
                    assert!(n > MAX);
                    seen += n;
                }
                Ok(Line::Eof) | Err(_) => {
                    assert!(seen <= data.len());
                    return;
                }
            }
        }
        panic!("the reader never reached the end");
    });
});

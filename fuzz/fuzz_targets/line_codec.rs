//! The bounded line codec: whatever a peer writes, every line handed on is at most the bound
//! and holds no newline; every input byte is accounted for (in a line, a skipped line or a
//! separator); the reader always reaches the end.
#![no_main]

use gatehouse::jsonrpc::{read_line, Line};
use libfuzzer_sys::fuzz_target;

const MAX: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    rt.block_on(async {
        // A small read buffer, so lines cross reads.
        let mut r = tokio::io::BufReader::with_capacity(7, data);
        let mut buf = Vec::new();
        let mut seen = 0usize;
        for _ in 0..=data.len() + 1 {
            match read_line(&mut r, &mut buf, MAX).await {
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

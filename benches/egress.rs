//! The network fence's cost (prints figures; asserts nothing). `cargo bench --bench egress`.
//!
//! One HTTP request on a fresh connection, as a fenced server's client makes it, to a local
//! stand-in host: straight to it, and through the server's egress proxy (`gatehouse::egress`:
//! the head read and judged, the destination checked, a second connection made, the bytes
//! relayed). Both on loopback, so the difference is the proxy's own latency; p50 and p90 of 2,000
//! requests each, after 200 to warm up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse::egress::{start, Fence};
use gatehouse::sandbox::network::Dest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RUNS: usize = 2_000;

async fn stand_in() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let mut got = 0;
                while !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
                    )
                    .await;
            });
        }
    });
    port
}

async fn request(to: u16, line: &str) {
    let mut s = TcpStream::connect(("127.0.0.1", to)).await.unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(line.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    assert!(out.ends_with(b"hello"), "{}", String::from_utf8_lossy(&out));
}

async fn measure(what: &str, to: u16, line: &str) -> Duration {
    for _ in 0..RUNS / 10 {
        request(to, line).await;
    }
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        request(to, line).await;
        times.push(t.elapsed());
    }
    times.sort();
    let (p50, p90) = (times[RUNS / 2], times[RUNS * 9 / 10]);
    println!(
        "{what:<28} p50 {:>7.1} µs   p90 {:>7.1} µs",
        p50.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6
    );
    p50
}

#[tokio::main]
async fn main() {
    let port = stand_in().await;
    let fence = Fence {
        server: "bench".into(),
        allow: vec![Dest::parse(&format!("127.0.0.1:{port}")).unwrap()],
        hub_ports: Vec::new(),
        log: Arc::new(|_| {}),
        redactions: Arc::default(),
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let (egress, run) = start(fence, stop.clone()).await.unwrap();
    tokio::spawn(run);
    println!("one HTTP request on a fresh connection, {RUNS} runs:");
    let direct = measure(
        "direct",
        port,
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    let proxied = measure(
        "through the egress proxy",
        egress.port,
        &format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    println!(
        "the proxy adds {:.1} µs at p50",
        (proxied.as_secs_f64() - direct.as_secs_f64()) * 1e6
    );
    stop.cancel();
}

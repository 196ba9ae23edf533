//! A bounded load run: 24 clients of one profile go about their work while 8 hostile clients of
//! another (each attack of the fairness issue, varied) try to take it from them, for 60 s
//! (`GATEHOUSE_LOAD_SECS`). It reports the legitimate calls made and failed, the hub's peak
//! resident memory and open descriptors, and holds the promise: not one legitimate call fails,
//! and memory and descriptors stay within their bounds. `GATEHOUSE_LOAD_ONLY=2,4` runs only those
//! attacks (to find which one hurts).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::*;

/// Resident memory (KiB) and open descriptors of a process.
fn usage(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    (rss, fds)
}

/// A 2026-07-28 request's body: `method` with `params`, as client `name`.
fn modern(method: &str, params: serde_json::Value, name: &str) -> String {
    let mut p = params;
    p["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}
    });
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": p}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hostile_profile_fails_no_call_of_another_and_the_hub_stays_bounded() {
    let secs: u64 = std::env::var("GATEHOUSE_LOAD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {"fx": fixture(&["--conformance"])},
        "clients": {
            "good": {},
            "bad": {"tools": {"fx__echo": {"rate_limit": {"per_minute": 60, "burst": 5}}}}
        },
        "approval": {"default": "flagged-only"}
    });
    let s = serve_limited(d, &cfg.to_string(), &["fx"], 1024).await;
    let pid = s.child.id();
    let url = s.info.url.clone();
    let addr = s.addr();
    let good = token_of(d, "good").await;
    let bad = token_of(d, "bad").await;
    let until = Instant::now() + Duration::from_secs(secs);
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, failed, hostile) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let mut tasks = tokio::task::JoinSet::new();
    let mut legit = tokio::task::JoinSet::new();
    let only = std::env::var("GATEHOUSE_LOAD_ONLY").unwrap_or_default();
    let on = |n: u32| only.is_empty() || only.split(',').any(|x| x == n.to_string());

    // 24 legitimate clients: a call, its answer checked, a short pause (a client whose
    // connection is refused or broken fails its task: counted as a failed call).
    for c in 0..24u64 {
        let (url, token) = (url.clone(), good.clone());
        let (calls, failed) = (calls.clone(), failed.clone());
        legit.spawn(async move {
            let m = Mcp::open(&url, &token).await;
            let mut i = 0u64;
            while Instant::now() < until {
                i += 1;
                let text = format!("c{c}-{i}");
                let v = m.call(i, "fx__echo", json!({"text": text})).await;
                calls.fetch_add(1, Ordering::Relaxed);
                if v["result"]["content"][0]["text"] != json!(text) {
                    failed.fetch_add(1, Ordering::Relaxed);
                    eprintln!("legitimate call failed: {v}");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }

    let http = gatehouse::http_client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let post = {
        let url = url.clone();
        move |token: &str, method: &str, body: String| {
            http.post(&url)
                .bearer_auth(token)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method)
                .body(body)
        }
    };
    // 1: a session per request, each under a new 256 KiB name.
    if on(1) {
        let (post, bad, hostile) = (post.clone(), bad.clone(), hostile.clone());
        tasks.spawn(async move {
            let mut i = 0u64;
            while Instant::now() < until {
                i += 1;
                let name = format!("{i}{}", "n".repeat(256 << 10));
                let _ = post(&bad, "ping", modern("ping", json!({}), &name))
                    .send()
                    .await;
                hostile.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    // 2: sockets without a token, held and reopened.
    if on(2) {
        let (addr, hostile) = (addr.clone(), hostile.clone());
        tasks.spawn(async move {
            while Instant::now() < until {
                let mut held = Vec::new();
                for _ in 0..200 {
                    if let Ok(c) = tokio::net::TcpStream::connect(&addr).await {
                        held.push(c);
                    }
                }
                hostile.fetch_add(held.len() as u64, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        });
    }
    // 3: listen streams, as many as it is let open, with subscriptions, held to the end.
    if on(3) {
        let (post, bad, hostile, stop) = (post.clone(), bad.clone(), hostile.clone(), stop.clone());
        tasks.spawn(async move {
            let mut open = Vec::new();
            let mut i = 0u64;
            while Instant::now() < until && open.len() < 400 {
                i += 1;
                let p = json!({"notifications": {"toolsListChanged": true,
                    "resourceSubscriptions": ["test://watched-resource"]}});
                let body = modern("subscriptions/listen", p, &format!("l{}", i % 40));
                if let Ok(r) = post(&bad, "subscriptions/listen", body).send().await {
                    open.push(r);
                }
                hostile.fetch_add(1, Ordering::Relaxed);
            }
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            drop(open);
        });
    }
    // 4: slow calls in parallel, holding connections.
    for _ in 0..(if on(4) { 2 } else { 0 }) {
        let (post, bad, hostile) = (post.clone(), bad.clone(), hostile.clone());
        tasks.spawn(async move {
            let mut set = tokio::task::JoinSet::new();
            while Instant::now() < until {
                while set.len() < 150 {
                    let body = modern(
                        "tools/call",
                        json!({"name": "fx__sleep", "arguments": {"ms": 3000}}),
                        "sleeper",
                    );
                    let req = post(&bad, "tools/call", body).header("mcp-name", "fx__sleep");
                    set.spawn(async move {
                        let _ = req.send().await.map(|r| r.bytes());
                    });
                    hostile.fetch_add(1, Ordering::Relaxed);
                }
                set.join_next().await;
            }
            set.abort_all();
        });
    }
    // 5: smuggling — a tool named twice in one request; and a burst over its rate limit.
    if on(5) {
        let (post, bad, hostile) = (post.clone(), bad.clone(), hostile.clone());
        tasks.spawn(async move {
            while Instant::now() < until {
                let smuggled = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"a"},"name":"fx__sleep","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"smuggler","version":"1"}}}}"#;
                let r = post(&bad, "tools/call", smuggled.into())
                    .header("mcp-name", "fx__echo")
                    .send()
                    .await;
                if let Ok(r) = r {
                    // Refused: for the key given twice (400), or first for the profile's
                    // share of connections (429).
                    assert!([400, 429].contains(&r.status().as_u16()), "{}", r.status());
                }
                let body = modern(
                    "tools/call",
                    json!({"name": "fx__echo", "arguments": {"text": "burst"}}),
                    "burster",
                );
                let _ = post(&bad, "tools/call", body).header("mcp-name", "fx__echo").send().await;
                hostile.fetch_add(2, Ordering::Relaxed);
            }
        });
    }
    // 6: its own connections held with its token, as many as it is let.
    if on(6) {
        let (addr, bad, hostile, stop) = (addr.clone(), bad.clone(), hostile.clone(), stop.clone());
        tasks.spawn(async move {
            let body = modern("ping", json!({}), "holder");
            let req = format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {bad}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: ping\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let mut held = Vec::new();
            while Instant::now() < until && held.len() < 300 {
                let Ok(mut c) = tokio::net::TcpStream::connect(&addr).await else { continue };
                if c.write_all(req.as_bytes()).await.is_ok() {
                    let mut head = [0u8; 32];
                    let _ = tokio::time::timeout(Duration::from_secs(2), c.read(&mut head)).await;
                    held.push(c);
                }
                hostile.fetch_add(1, Ordering::Relaxed);
            }
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            drop(held);
        });
    }

    // The hub, sampled twice a second.
    let (mut peak_rss, mut peak_fds) = (0u64, 0u64);
    while Instant::now() < until {
        let (rss, fds) = usage(pid);
        peak_rss = peak_rss.max(rss);
        peak_fds = peak_fds.max(fds);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    while let Some(done) = legit.join_next().await {
        if done.is_err() {
            failed.fetch_add(1, Ordering::Relaxed);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = tokio::time::timeout(Duration::from_secs(40), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
    let (calls, failed) = (
        calls.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
    );
    println!(
        "load run, {secs} s: {calls} legitimate calls by 24 clients, {failed} failed; {} hostile requests and sockets by 8; hub peak RSS {} MiB, peak open descriptors {peak_fds}",
        hostile.load(Ordering::Relaxed),
        peak_rss / 1024
    );
    if failed > 0 {
        // What the hub said of its connections, to tell a refused newcomer from an ended one.
        let log = std::fs::read_to_string(&s.log).unwrap_or_default();
        for line in log.lines().filter(|l| l.contains("connection")).take(20) {
            eprintln!("hub: {line}");
        }
    }
    assert_eq!(failed, 0, "no legitimate call failed");
    assert!(
        calls >= 24 * secs,
        "the legitimate clients were served ({calls} calls)"
    );
    assert!(peak_rss < 256 * 1024, "peak RSS {} MiB", peak_rss / 1024);
    assert!(peak_fds < 1024, "peak descriptors {peak_fds}");
}

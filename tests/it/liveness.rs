//! A lost remote never looks alive: a remote server killed while nothing is asked of it shows
//! `restarting` with the reason within 10 s — the Python SDK's 2026-07-28 server (no session,
//! no ping: checked with its discovery request) and the TypeScript SDK's 2025 one (its session
//! pinged) — and
//! `running` again once it is back.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

/// The TypeScript SDK 1.32 over Streamable HTTP with sessions: 2025-era only.
fn legacy_server(port: u16) -> Reaped {
    let child = Command::new("node")
        .arg(clients_script("legacy_http_server.mjs"))
        .arg(peers_dir().join("clients"))
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_port(port, "the 2025 HTTP server");
    Reaped(child)
}

async fn until(s: &Served, id: &str, within: Duration, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let st = status_of(s, id);
        if ok(&st) {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "{id} not as expected within {within:?}: {st}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One remote of each era, both idle; each killed in turn: `restarting` with "connection" in
/// `last_error` within 10 s, the other untouched; then back, `running` again.
#[tokio::test]
#[ignore = "needs the Python SDK: run `make test`"]
async fn a_lost_remote_of_either_era_is_seen_within_seconds() {
    let (mp, lp) = (crate::support::free_port(), crate::support::free_port());
    let mut modern = modern_server(mp);
    let mut legacy = legacy_server(lp);
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {
        "new": {"url": format!("http://127.0.0.1:{mp}/mcp")},
        "old": {"url": format!("http://127.0.0.1:{lp}/mcp")}
    }});
    let s = serve(dir.path(), &cfg.to_string(), &["new", "old"]).await;
    assert_eq!(status_of(&s, "new")["era"], "modern");
    assert_eq!(status_of(&s, "old")["era"], "legacy");
    // Healthy and idle for a while: nothing restarts.
    tokio::time::sleep(Duration::from_secs(8)).await;
    for id in ["new", "old"] {
        let st = status_of(&s, id);
        assert_eq!(
            (st["state"].clone(), st["restarts"].clone()),
            (json!("running"), json!(0)),
            "{st}"
        );
    }
    for (id, other, child, port) in [
        ("new", "old", &mut modern, mp),
        ("old", "new", &mut legacy, lp),
    ] {
        let _ = child.kill();
        let _ = child.wait();
        let killed = Instant::now();
        let st = until(&s, id, Duration::from_secs(10), |st| {
            st["state"] != "running"
        })
        .await;
        let seen = killed.elapsed();
        eprintln!("{id}: {} after {seen:?}", st["state"]);
        assert!(
            matches!(
                st["state"].as_str(),
                Some("restarting" | "starting" | "failed")
            ),
            "{st}"
        );
        let err = until(&s, id, Duration::from_secs(5), |st| {
            !st["last_error"].is_null()
        })
        .await;
        assert!(
            err["last_error"]
                .as_str()
                .unwrap_or("")
                .contains("connection")
                || err["last_error"].as_str().unwrap_or("").contains("reach"),
            "{err}"
        );
        assert_eq!(status_of(&s, other)["state"], "running");
        // Back: running again, on its own.
        *child = if id == "new" {
            modern_server(port)
        } else {
            legacy_server(port)
        };
        until(&s, id, Duration::from_secs(40), |st| {
            st["state"] == "running"
        })
        .await;
    }
    let _ = modern.kill();
    let _ = legacy.kill();
}

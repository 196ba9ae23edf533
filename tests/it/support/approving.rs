//! What the approval tests share: asking the running hub with the CLI (`gh`), waiting for a
//! held call to show in `approvals --json`, a call's text, the fixture config most of them use.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Served, FIXTURE, GATEHOUSE};

pub const T: Duration = Duration::from_secs(20);

/// A 2025 client session over HTTP: the one helper (`support::Mcp`).
pub use super::Mcp as Client;

pub fn text_of(v: &Value) -> String {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

pub fn gh(s: &Served, args: &[&str]) -> Output {
    Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", &s.sock)
        .output()
        .unwrap()
}

/// Waits until `approvals --json` lists at least one request for `tool`; returns it.
pub async fn pending(s: &Served, exposed: &str) -> Value {
    let deadline = Instant::now() + T;
    loop {
        let out = gh(s, &["approvals", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let list: Value = serde_json::from_slice(&out.stdout).unwrap();
        if let Some(r) = list
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["exposed"] == exposed)
        {
            return r.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no approval request for {exposed}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

pub fn none_pending(s: &Served) -> bool {
    let out = gh(s, &["approvals", "--json"]);
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .is_empty()
}

pub fn fx_config(extra_args: &[&str], timeout_secs: u64) -> String {
    json!({
        "servers": {"fx": {"command": FIXTURE, "args": extra_args, "tools": {"echo": {"requires_approval": true}}}},
        "approval": {"default": "ask-unless-read-only", "timeout_secs": timeout_secs}
    })
    .to_string()
}

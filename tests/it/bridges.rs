//! Gatehouse behind the bridges people put in front of an HTTP server: the real `mcp-remote`
//! (0.15.1), a stdio→Streamable HTTP bridge with the token in a header, driven by the Python
//! SDK's stdio client — tools listed, an unflagged call, and a call held for approval and
//! answered while the bridge waits.

use std::process::Command;

use serde_json::json;

use crate::support::*;

#[tokio::test]
#[ignore = "needs the real peers (mcp-remote): run `make test`"]
async fn mcp_remote_bridges_a_stdio_client_to_gatehouse_through_an_approval() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {"fx": {"command": FIXTURE, "tools": {"echo": {"requires_approval": true}}}},
        "approval": {"default": "flagged-only", "timeout_secs": 60}
    });
    let s = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let bridge = peers_dir().join("clients/node_modules/.bin/mcp-remote");
    let calls = json!([["add", {"a": 2, "b": 3}], ["echo", {"text": "held, then allowed"}]]);
    let mut cmd = Command::new(python());
    cmd.args([
        clients_script("py_client.py"),
        "stdio".into(),
        calls.to_string(),
        "--".into(),
        bridge.to_string_lossy().into_owned(),
        s.info.url.clone(),
        "--header".into(),
        format!("Authorization:Bearer {}", s.info.token),
        "--transport".into(),
        "http-only".into(),
    ]);
    // mcp-remote keeps what it learns about servers here, never in the user's home.
    cmd.env("MCP_REMOTE_CONFIG_DIR", dir.path().join("mcp-remote"));
    let run = tokio::task::spawn_blocking(move || run_json(&mut cmd));
    let held = pending(&s, "fx__echo").await;
    assert_eq!(held["tool"], "echo", "{held}");
    let out = gh(&s, &["approve", held["id"].as_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run.await.unwrap();
    assert_eq!(out["server"], "gatehouse", "{out}");
    assert_eq!(
        out["tools"].as_array().map(Vec::len),
        Some(FIXTURE_TOOLS),
        "{out}"
    );
    assert_eq!(out["results"]["add"]["content"][0]["text"], "5", "{out}");
    assert_eq!(
        out["results"]["echo"]["content"][0]["text"], "held, then allowed",
        "{out}"
    );
}

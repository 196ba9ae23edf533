//! Who an answer covers, said where the person answers: the approval names the client profile
//! an "always" covers and the other clients seen on it — never a client of another profile.

use serde_json::{json, Value};

use crate::support::*;

/// Two clients on the gateway token's profile and one on Cursor's: a call held for the first
/// says, in `approvals --json` and the plain listing, that "always" also covers the second —
/// and not Cursor's client, whose profile has answers of its own — and, the first being the
/// Inspector's CLI, that it gives up after 60 s.
#[tokio::test]
async fn an_approval_names_the_profile_and_the_other_clients_an_always_covers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {"a": {"command": FIXTURE, "tools": {"echo": {"requires_approval": true}}}},
        "clients": {"cursor": {}},
        "approval": {"default": "flagged-only", "timeout_secs": 20}
    });
    let s = serve(d, &cfg.to_string(), &["a"]).await;
    let who = |name: &str| json!({"name": name, "version": "2.1"});
    // The Inspector's CLI (TypeScript SDK) gives up on a request after 60 s.
    let first = Mcp::open_with(
        &s.info.url,
        &s.info.token,
        who("inspector-cli"),
        "2025-06-18",
    )
    .await;
    let _second =
        Mcp::open_with(&s.info.url, &s.info.token, who("claude-code"), "2025-06-18").await;
    let cursor_token = token_of(d, "cursor").await;
    let _cursor = Mcp::open_with(&s.info.url, &cursor_token, who("cursor"), "2025-06-18").await;
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}});
    let held = first.spawn_post(&s.info.token, call);
    let r: Value = pending(&s, "a__echo").await;
    assert_eq!(r["client"]["covers"], json!(["claude-code 2.1"]), "{r}");
    assert_eq!(r["client"]["gives_up_after_secs"], 60, "{r}");
    let plain = String::from_utf8_lossy(&gh(&s, &["approvals"]).stdout).into_owned();
    assert!(
        plain.contains("--scope always covers client profile default: also claude-code 2.1")
            && plain.contains("client profile default — says \"inspector-cli\"")
            && plain.contains("the client gives up after 60 s: answer before then"),
        "{plain}"
    );
    assert!(gh(&s, &["deny", r["id"].as_str().unwrap()])
        .status
        .success());
    assert!(held.await.unwrap().contains("isError"));
}

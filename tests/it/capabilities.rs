//! A 2025 client's capabilities reach a 2026-07-28 server as the specs define them: a raw
//! 2025-06-18 client that declared `"elicitation": {}` (form elicitation, by 2025-11-25's
//! backward-compatibility rule) is asked by the Python SDK's modern-only server through
//! Gatehouse — whose resolver checks the request's envelope for that capability — answers the
//! old way, and gets the tool's result.

use serde_json::{json, Value};

use crate::support::*;

/// One `data:` payload at a time from a streamed SSE body.
struct Events {
    resp: reqwest::Response,
    buf: String,
}

impl Events {
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(i) = self.buf.find("\n\n") {
                let ev: String = self.buf.drain(..i + 2).collect();
                if let Some(d) = ev.lines().find_map(|l| l.strip_prefix("data: ")) {
                    return serde_json::from_str(d).ok();
                }
                continue;
            }
            let chunk = match self.resp.chunk().await {
                Ok(Some(c)) => c,
                // A plain JSON answer (the result came first) is one message.
                _ => return serde_json::from_str(self.buf.trim()).ok(),
            };
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

#[tokio::test]
#[ignore = "needs the Python SDK 2.3: run `make test`"]
async fn an_empty_elicitation_capability_is_form_elicitation_for_a_modern_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&config(&[(
        "modern",
        json!({"command": python(), "args": [clients_script("modern_server.py"), "stdio"]}),
    )]))
    .unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let cfg = cfg.to_string();
    let s = serve(dir.path(), &cfg, &["modern"]).await;
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let post = |body: Value, session: Option<&str>| {
        let mut r = http
            .post(&s.info.url)
            .bearer_auth(&s.info.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(id) = session {
            r = r
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        r.send()
    };
    let init = post(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},
            "clientInfo":{"name":"raw-2025","version":"1"}}}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = init.text().await;
    let ok = post(
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        Some(&session),
    )
    .await
    .unwrap();
    assert!(ok.status().is_success());
    let call = post(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
            "name":"modern__greet","arguments":{}}}),
        Some(&session),
    )
    .await
    .unwrap();
    assert_eq!(call.status(), 200);
    let mut events = Events {
        resp: call,
        buf: String::new(),
    };
    let mut asked = false;
    let result = loop {
        let Some(msg) = tokio::time::timeout(std::time::Duration::from_secs(30), events.next())
            .await
            .expect("the call's stream went silent")
        else {
            panic!("the call's stream ended without a result");
        };
        if msg["method"] == "elicitation/create" {
            asked = true;
            let answer = json!({"jsonrpc":"2.0","id":msg["id"],"result":{
                "action":"accept","content":{"name":"a 2025 client"}}});
            let r = post(answer, Some(&session)).await.unwrap();
            assert!(r.status().is_success(), "{}", r.status());
            continue;
        }
        if msg["id"] == 2 {
            break msg;
        }
    };
    assert!(asked, "the client was never asked: {result}");
    assert_eq!(
        result["result"]["content"][0]["text"], "hello, a 2025 client",
        "{result}"
    );
    // Each era gets only its own members: the modern server's `resultType` (and any other
    // 2026-only member) never reaches a 2025-06-18 client.
    for member in ["resultType", "ttlMs", "cacheScope"] {
        assert!(result["result"].get(member).is_none(), "{member}: {result}");
    }
}

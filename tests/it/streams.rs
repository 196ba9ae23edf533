//! MCP 2026-07-28 streams and requests across the eras: list changes on a listen stream, a modern
//! remote server's routing headers, a 2025 server's request reaching a 2026 client as an input
//! request, resource updates reaching the clients that subscribed.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::support::*;

/// A modern client hears of list changes on the `subscriptions/listen` stream it opened (there
/// is no GET stream in 2026-07-28): acknowledged first, then the change when a server goes away.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3: run `make test`"]
async fn a_modern_client_hears_list_changes_on_its_listen_stream() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &both_eras(&[]), &["fx", "modern"]).await;
    let mut child = Command::new(python())
        .args([
            &clients_script("py_client.py"),
            "listen",
            &s.info.url,
            &s.info.token,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["honored"]["toolsListChanged"], true, "{first}");
    assert!(gh(&s, &["disable", "modern"]).status.success());
    let last: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(last["event"], "ToolsListChanged", "{last}");
    let names = |k: &str| -> Vec<String> { serde_json::from_value(last[k].clone()).unwrap() };
    assert!(
        names("before").contains(&"modern__add".to_owned()),
        "{last}"
    );
    // `add` is on both servers (so `fx__add`, `modern__add`); `regional` only on modern.
    assert!(names("before").contains(&"regional".to_owned()), "{last}");
    assert!(
        !names("after")
            .iter()
            .any(|n| n.starts_with("modern__") || n == "regional"),
        "{last}"
    );
    assert!(names("after").contains(&"echo".to_owned()), "{last}");
}

/// A remote server that answers `server/discover` is spoken to in 2026-07-28: no session, the
/// routing headers on every POST (the upstream's own tool name in body and `Mcp-Name`), and a
/// tool's `x-mcp-header` parameters mirrored into `Mcp-Param-*` headers — the SDK's server
/// refuses the call without them. A legacy client calls it through Gatehouse.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3: run `make test`"]
async fn a_modern_remote_server_gets_its_routing_and_parameter_headers() {
    let port = crate::support::free_port();
    let mut server = crate::support::modern_server(port);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&config(&[(
        "web",
        json!({"url": format!("http://127.0.0.1:{port}/mcp")}),
    )]))
    .unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve(dir.path(), &cfg.to_string(), &["web"]).await;
    let web = status_of(&s, "web");
    assert_eq!(
        (web["era"].clone(), web["protocol_version"].clone()),
        (json!("modern"), json!(MODERN)),
        "{web}"
    );
    let calls = json!([
        ["web__regional", {"region": "eu-west", "q": "hi"}],
        ["web__add", {"a": 1, "b": 1}],
    ]);
    let out = run_json(&mut py(&s, "http", &calls));
    assert_eq!(
        out["results"]["web__regional"]["content"][0]["text"], "eu-west: hi",
        "{out}"
    );
    assert_eq!(
        out["results"]["web__add"]["content"][0]["text"], "2",
        "{out}"
    );
    let _ = server.kill();
    let _ = server.wait();
}

/// A 2025 server's request during a call (the fixture asks for sampling) reaches a 2026-07-28
/// client as an input-required result; its retry carries the answer back to the waiting call,
/// which then finishes — one call, one activity row. A client that did not declare sampling gets
/// the server told so; a `requestState` Gatehouse never gave is refused.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3: run `make test`"]
async fn a_legacy_servers_request_reaches_a_modern_client_as_an_input_request() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {"fx": fixture(&[])}, "approval": {"default": "flagged-only"}});
    let s = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let calls = json!([["fx__ask", {"question": "colour?"}]]);
    let mut answering = py(&s, "elicit", &calls);
    answering.arg("blue");
    let out = run_json(&mut answering);
    assert_eq!(
        out["results"]["fx__ask"]["content"][0]["text"], "the client said: blue",
        "{out}"
    );
    let rows: Vec<Value> = serde_json::from_slice(&gh(&s, &["activity", "--json"]).stdout).unwrap();
    assert_eq!(
        rows.iter().filter(|r| r["tool"] == "ask").count(),
        1,
        "{rows:?}"
    );
    assert_eq!(rows[0]["outcome"], "ok", "{rows:?}");

    let mut silent = py(&s, "elicit", &calls);
    silent.arg("-");
    let out = run_json(&mut silent);
    let text = out["results"]["fx__ask"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        text.contains("did not declare the \\\"sampling\\\" capability"),
        "{out}"
    );

    // A state of ours that no call waits with: refused, nothing runs.
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let body = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{
        "name": "fx__ask", "arguments": {"question": "?"},
        "requestState": "gatehouse:00000000000000000000000000000000",
        "inputResponses": {"gatehouse": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}}});
    let r = modern_tool_post(&http, &s.info.url, &s.info.token, "fx__ask")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(v["error"]["code"], -32602, "{v}");
}

/// Resource subscriptions reach the servers that own the resources and their updates come back
/// to the subscribers only: a 2025 client's `resources/subscribe` (the update on its own stream)
/// and a 2026-07-28 client's listen stream (`resourceSubscriptions`, acknowledged, the update
/// tagged on that stream), with server-everything sending the updates.
#[tokio::test]
#[ignore = "needs the real peers and the Python SDK 2.3: run `make test`"]
async fn resource_updates_reach_the_clients_that_subscribed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {"ev": {"command": peer_bin("npm/node_modules/.bin/mcp-server-everything"), "args": ["stdio"]}},
        "approval": {"default": "flagged-only"}
    });
    let s = serve(dir.path(), &cfg.to_string(), &["ev"]).await;
    let run = |mode: &str, uri: &str, tool: &str| {
        run_json(Command::new(python()).args([
            &clients_script("py_client.py"),
            mode,
            &s.info.url,
            &s.info.token,
            uri,
            tool,
        ]))
    };
    // The 2025 client turns the server's updates on (every 5 s for what is subscribed).
    let legacy = run(
        "legacy-subscribe",
        "demo://resource/dynamic/text/2",
        "ev__toggle-subscriber-updates",
    );
    assert_eq!(legacy["uri"], "demo://resource/dynamic/text/2", "{legacy}");
    let modern = run("listen-resource", "demo://resource/dynamic/text/1", "-");
    assert_eq!(
        modern["honored"]["resourceSubscriptions"],
        json!(["demo://resource/dynamic/text/1"]),
        "{modern}"
    );
    assert_eq!(modern["uri"], "demo://resource/dynamic/text/1", "{modern}");
}

//! A 2026-07-28 `tools/call` of a tool whose parameter carries an `x-mcp-header` annotation has
//! that argument mirrored in an `Mcp-Param-*` header, which a proxy may route on without reading
//! the body: Gatehouse runs the call only when the header and the argument say the same thing.

use serde_json::{json, Value};

use crate::support::*;

const MODERN: &str = "2026-07-28";

/// The header equal to the argument (plain or base64-encoded) runs the call; a header that
/// disagrees, one missing for an argument that is present, one claiming an argument that is
/// absent, one given twice or one whose base64 is malformed is refused with 400 and -32020, its
/// message naming the header. A 2025 client's call, which has no such headers, is not asked for
/// them.
#[tokio::test]
async fn a_param_header_that_disagrees_with_its_argument_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&[("fx", fixture(&["--header-tool"]))]);
    let s = serve(dir.path(), &cfg, &["fx"]).await;
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "headers", "version": "1"}
    });
    let send = |args: Value, param: Vec<&'static str>| {
        let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
            "name": "fx__regional", "arguments": args, "_meta": meta}});
        let mut req = modern_tool_post(&http, &s.info.url, &s.info.token, "fx__regional")
            .body(body.to_string());
        for v in param {
            req = req.header("mcp-param-region", v);
        }
        async move {
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap_or(Value::Null);
            (status, v)
        }
    };
    let args = json!({"region": "eu-west", "q": "hi"});
    let (status, v) = send(args.clone(), vec!["eu-west"]).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "eu-west: hi", "{v}");
    // base64 of "eu-west"
    let (status, v) = send(args.clone(), vec!["=?base64?ZXUtd2VzdA==?="]).await;
    assert_eq!(status, 200, "{v}");

    for (what, args, headers) in [
        ("another region", args.clone(), vec!["us-east"]),
        ("no header for the argument", args.clone(), vec![]),
        (
            "a header for an absent argument",
            json!({"q": "hi"}),
            vec!["eu-west"],
        ),
        ("the header twice", args.clone(), vec!["eu-west", "eu-west"]),
        ("malformed base64", args.clone(), vec!["=?base64?!!?="]),
    ] {
        let (status, v) = send(args, headers).await;
        assert_eq!(status, 400, "{what}: {v}");
        assert_eq!(v["error"]["code"], -32020, "{what}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Mcp-Param-Region")),
            "{what}: {v}"
        );
    }

    // A 2025 client sends no such headers and is not asked for them.
    let mcp = Mcp::connect(&s, "legacy").await;
    let v = mcp.call(2, "fx__regional", args).await;
    assert_eq!(v["result"]["content"][0]["text"], "eu-west: hi", "{v}");
}

/// A call that arrives while its server is still starting (its tool not listed yet) waits for
/// the start and is then taken again — its `Mcp-Param-*` header checked against the tool as the
/// server lists it: one that disagrees with its argument is refused, not run.
#[tokio::test]
async fn a_call_that_waits_for_its_server_to_start_has_its_headers_checked() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&[("fx", fixture(&["--header-tool", "--slow-start", "3000"]))]);
    let s = serve(dir.path(), &cfg, &[]).await;
    let control = gatehouse::control::ControlClient::new(s.sock.clone());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let status = control
            .call(&gatehouse::control::Request::Status)
            .await
            .ok()
            .and_then(|r| r.result)
            .unwrap_or_default();
        if status[0]["state"] == "starting" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never starting: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name": "fx__regional", "arguments": {"region": "eu-west", "q": "hi"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "early", "version": "1"}}}});
    let r = modern_tool_post(&http, &s.info.url, &s.info.token, "fx__regional")
        .header("mcp-param-region", "us-east")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let v = last_message(&r.text().await.unwrap());
    assert_eq!(v["error"]["code"], -32020, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Mcp-Param-Region")),
        "{v}"
    );
}

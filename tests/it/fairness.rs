//! Fair between clients: no client profile can take what another needs — here, the hub's
//! connections held by listen streams.

use serde_json::json;

use crate::profiles::token_of;
use crate::support::*;

/// Listen streams never time out and each holds a connection: one client profile may hold a
/// quarter of the hub's connections with them (here 64 → 16), and is refused beyond — while
/// another profile still opens one.
#[tokio::test]
async fn one_profile_cannot_hold_every_connection_with_listen_streams() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({"servers": {"a": fixture(&[])}, "clients": {"cursor": {}}});
    let s = serve_limited(d, &cfg.to_string(), &["a"], 256).await;
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let listen = |token: String, who: String| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": who, "version": "1"}
        }}});
        let req = http
            .post(&s.info.url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .body(body.to_string());
        async move {
            let mut r = req.send().await.unwrap();
            // The first event says whether the stream is open (acknowledged) or refused.
            let first = r.chunk().await.unwrap().unwrap_or_default();
            (String::from_utf8_lossy(&first).into_owned(), r)
        }
    };
    let mut open = Vec::new();
    // Sixteen clients of the gateway token's profile, one stream each (a modern client's
    // session is its token and name).
    for i in 0..16 {
        let (first, r) = listen(s.info.token.clone(), format!("c{i}")).await;
        assert!(first.contains("subscriptions/acknowledged"), "{i}: {first}");
        open.push(r);
    }
    let (refused, _) = listen(s.info.token.clone(), "c16".into()).await;
    assert!(refused.contains("listen streams open already"), "{refused}");
    let cursor = token_of(d, "cursor").await;
    let (first, _r) = listen(cursor, "cursor".into()).await;
    assert!(first.contains("subscriptions/acknowledged"), "{first}");
    drop(open);
}

/// Sockets opened without a token hold a place only until a client with one needs it: with all
/// 64 places (a hub limited to 256 open files) taken by idle sockets, a real client still
/// connects, lists and calls — the oldest idle socket is ended for it.
#[tokio::test]
async fn idle_sockets_without_a_token_never_lock_out_a_client_with_one() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {"a": fixture(&[])}});
    let s = serve_limited(dir.path(), &cfg.to_string(), &["a"], 256).await;
    let addr = s
        .info
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let idle: Vec<std::net::TcpStream> = (0..80)
        .filter_map(|_| std::net::TcpStream::connect(&addr).ok())
        .collect();
    assert!(idle.len() >= 64, "{} sockets", idle.len());
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let c = Mcp::open(&s.info.url, &s.info.token).await;
    let v = c.call(1, "echo", json!({"text": "still served"})).await;
    assert_eq!(v["result"]["content"][0]["text"], "still served", "{v}");
    drop(idle);
}

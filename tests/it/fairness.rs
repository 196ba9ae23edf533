//! Fair between clients: no client profile can take what another needs — here, the hub's
//! connections held by listen streams.

use serde_json::json;

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
    let addr = s.addr();
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

/// A connection that shows a token is its profile's, and one profile holds at most three
/// quarters of the places (here 48 of 64): its 49th connection is answered 429 and closed, and
/// another profile still connects, lists and calls while the 48 stay open.
#[tokio::test]
async fn one_profile_cannot_hold_every_connection_with_its_token() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({"servers": {"a": fixture(&[])}, "clients": {"cursor": {}}});
    let s = serve_limited(d, &cfg.to_string(), &["a"], 256).await;
    let addr = s.addr();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "hog", "version": "1"}}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: ping\r\nContent-Length: {}\r\n\r\n{body}",
        s.info.token,
        body.len()
    );
    let mut held = Vec::new();
    let (mut served, mut refused) = (0, 0);
    for _ in 0..64 {
        let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
        c.write_all(request.as_bytes()).await.unwrap();
        let mut head = [0u8; 64];
        let n = c.read(&mut head).await.unwrap();
        let status = String::from_utf8_lossy(&head[..n]).into_owned();
        if status.starts_with("HTTP/1.1 429") {
            refused += 1;
        } else {
            assert!(status.starts_with("HTTP/1.1 200"), "{status}");
            served += 1;
            held.push(c); // kept open: the place stays the profile's
        }
    }
    assert_eq!((served, refused), (48, 16));
    let cursor = token_of(d, "cursor").await;
    let c = Mcp::open(&s.info.url, &cursor).await;
    let v = c
        .call(1, "echo", json!({"text": "a place of its own"}))
        .await;
    assert_eq!(
        v["result"]["content"][0]["text"], "a place of its own",
        "{v}"
    );
    drop(held);
}

/// A `rate_limit` is counted per client profile: cursor's burst on a limited tool is refused at
/// once with the limit and when to retry (recorded `rate_limited`, never held for the person),
/// while the gateway token's profile calls the same tool with its whole budget.
#[tokio::test]
async fn one_profiles_burst_never_spends_another_profiles_rate_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {"a": {"command": FIXTURE, "tools": {
            "echo": {"requires_approval": false, "rate_limit": {"per_minute": 2}}}}},
        "clients": {"cursor": {}}
    });
    let s = serve(d, &cfg.to_string(), &["a"]).await;
    let call = |i: u64| {
        json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
               "params": {"name": "a__echo", "arguments": {"text": format!("n{i}")}}})
    };
    let cursor_token = token_of(d, "cursor").await;
    let cursor = Mcp::open(&s.info.url, &cursor_token).await;
    for i in 1..=2 {
        let (_, body) = cursor.post_as(&cursor_token, call(i)).await;
        assert!(
            body.contains(&format!("n{i}")) && !body.contains("isError"),
            "{body}"
        );
    }
    let (_, refused) = cursor.post_as(&cursor_token, call(3)).await;
    assert!(
        refused.contains("isError")
            && refused.contains("Rate limit reached: a__echo is limited to 2 calls a minute for client profile cursor; try again in 30 s."),
        "{refused}"
    );
    // The gateway token's profile has its own two calls.
    let other = Mcp::open(&s.info.url, &s.info.token).await;
    for i in 4..=5 {
        let (_, body) = other.post_as(&s.info.token, call(i)).await;
        assert!(
            body.contains(&format!("n{i}")) && !body.contains("isError"),
            "{body}"
        );
    }
    let rows: Vec<serde_json::Value> = serde_json::from_slice(
        &crate::support::gh(&s, &["activity", "--json", "--client", "cursor"]).stdout,
    )
    .unwrap();
    let limited: Vec<_> = rows
        .iter()
        .filter(|r| r["decision"] == "rate_limited")
        .collect();
    assert_eq!(limited.len(), 1, "{rows:?}");
    assert_eq!(limited[0]["outcome"], "not_run");
}

/// Resource subscriptions are shared upstream: two 2025 sessions and a 2026 listen stream
/// subscribing to one resource ask its server once; one leaving tells the server nothing, and
/// the last leaving — whichever way it goes (unsubscribe, an ended session, a dropped stream) —
/// sends one `resources/unsubscribe`.
#[tokio::test]
async fn resource_subscriptions_are_asked_once_upstream_and_ended_with_the_last_holder() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {"fx": fixture(&["--conformance"])}});
    let s = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let log = s.log.parent().unwrap().join("data/logs/fx.log");
    let count = |what: &str| {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.matches(&format!("fixture: {what} test://watched-resource"))
            .count()
    };
    let uri = json!({"uri": "test://watched-resource"});
    let a = Mcp::open(&s.info.url, &s.info.token).await;
    let b = Mcp::open(&s.info.url, &s.info.token).await;
    for c in [&a, &b] {
        let v = c.request(2, "resources/subscribe", uri.clone()).await;
        assert_eq!(v["result"], json!({}), "{v}");
    }
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
    "notifications": {"resourceSubscriptions": ["test://watched-resource"]},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listener", "version": "1"}
    }}});
    let mut stream = http
        .post(&s.info.url)
        .bearer_auth(&s.info.token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let first = stream.chunk().await.unwrap().unwrap_or_default();
    assert!(String::from_utf8_lossy(&first).contains("acknowledged"));
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        count("resources/subscribe"),
        1,
        "asked once for three holders"
    );
    // Two of three leave: a's unsubscribe, b's session ended.
    let v = a.request(3, "resources/unsubscribe", uri.clone()).await;
    assert_eq!(v["result"], json!({}), "{v}");
    let r = http
        .delete(&s.info.url)
        .bearer_auth(&s.info.token)
        .header("mcp-session-id", &b.sid)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        count("resources/unsubscribe"),
        0,
        "the listen stream still holds it"
    );
    // The last holder's stream is dropped by its client.
    drop(stream);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while count("resources/unsubscribe") == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(count("resources/unsubscribe"), 1);
    assert_eq!(count("resources/subscribe"), 1);
}

/// Calls parked for a 2026 client's input are shared per profile: with the gateway token's
/// profile holding all 256 of its places (its clients never answering), its next call's input
/// request is refused to the server — while cursor's call still parks, and its retry with the
/// answer finishes the call.
#[tokio::test]
async fn one_profiles_unanswered_input_requests_never_refuse_anothers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({"servers": {"fx": fixture(&[])}, "clients": {"cursor": {}},
                     "approval": {"default": "flagged-only"}});
    let s = serve(d, &cfg.to_string(), &["fx"]).await;
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let ask = |token: &str, extra: serde_json::Value| {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut params = json!({"name": "fx__ask", "arguments": {"question": "colour?", "relate": true},
            "_meta": {
                "progressToken": n,
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
                "io.modelcontextprotocol/clientInfo": {"name": "asker", "version": "1"}}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let req = modern_tool_post(&http, &s.info.url, token, "fx__ask").body(body.to_string());
        async move { last_message(&req.send().await.unwrap().text().await.unwrap()) }
    };
    for i in 0..256 {
        let v = ask(&s.info.token, json!({})).await;
        assert_eq!(v["result"]["resultType"], "input_required", "{i}: {v}");
    }
    let v = ask(&s.info.token, json!({})).await;
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(v.to_string().contains("sampling failed"), "{v}");
    // Cursor's share is its own: its call parks, and its retry finishes it.
    let cursor = token_of(d, "cursor").await;
    let v = ask(&cursor, json!({})).await;
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    let state = v["result"]["requestState"].clone();
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "blue"}, "model": "m"});
    let v = ask(
        &cursor,
        json!({"requestState": state, "inputResponses": {"gatehouse": answer}}),
    )
    .await;
    assert_eq!(
        v["result"]["content"][0]["text"], "the client said: blue",
        "{v}"
    );
}

/// A request's headers have `HEADER_TIMEOUT` (10 s) to arrive, however they trickle: a socket
/// that sends half a request's headers and then nothing, and one that sends a byte every 2 s,
/// are each ended at the deadline, while a client calling on its own connection meanwhile (5 s
/// in) is answered.
#[tokio::test]
async fn a_request_whose_headers_never_finish_is_ended_at_its_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {"a": fixture(&[])}});
    let s = serve(dir.path(), &cfg.to_string(), &["a"]).await;
    let addr = s.addr();
    let ended_after = |trickle: bool| {
        let addr = addr.clone();
        async move {
            let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let t = std::time::Instant::now();
            c.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
                .await
                .unwrap();
            let mut buf = [0u8; 256];
            loop {
                let wait = if trickle { 2 } else { 20 };
                match tokio::time::timeout(std::time::Duration::from_secs(wait), c.read(&mut buf))
                    .await
                {
                    Ok(Ok(0)) | Ok(Err(_)) => return t.elapsed(),
                    Ok(Ok(_)) => {}
                    Err(_) if trickle => {
                        if c.write_all(b"X").await.is_err() {
                            return t.elapsed();
                        }
                    }
                    Err(_) => panic!("still open after 20 s"),
                }
                assert!(t.elapsed().as_secs() < 20, "still open after 20 s");
            }
        }
    };
    let meanwhile = async {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        let c = Mcp::open(&s.info.url, &s.info.token).await;
        c.call(1, "echo", json!({"text": "served"})).await
    };
    let (silent, trickling, v) = tokio::join!(ended_after(false), ended_after(true), meanwhile);
    assert_eq!(v["result"]["content"][0]["text"], "served", "{v}");
    for (what, took) in [("silent", silent), ("trickling", trickling)] {
        let secs = took.as_secs_f64();
        assert!(
            (9.5..12.5).contains(&secs),
            "{what} socket ended after {secs:.1} s"
        );
    }
}

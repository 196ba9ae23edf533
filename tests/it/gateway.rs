//! The gateway over real HTTP (and stdio) in front of real fixture processes: the guard, raw
//! pass-through, namespacing, progress/cancel/sampling forwarding, list_changed, crashes.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gatehouse::State;
use serde_json::{json, Value};

use crate::support::*;

const T: Duration = Duration::from_secs(15);

#[tokio::test]
async fn guard_rules_in_order_with_their_status_codes() {
    let g = Gw::start_with_origins(
        &config(&[("fx", fixture(&[]))]),
        vec!["http://localhost:6274".into()],
    )
    .await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"g","version":"1"}}});
    let send = |host: Option<&str>, origin: Option<&str>, token: Option<&str>, body: String| {
        let mut r = g
            .http
            .post(&g.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(h) = host {
            r = r.header("host", h);
        }
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    let body = init.to_string();
    let own = g.url.trim_end_matches("/mcp").to_owned();
    let own_port_host = own
        .trim_start_matches("http://")
        .replace("127.0.0.1", "localhost.evil.com");
    let wrong_token = TOKEN.replace('0', "1");
    // (Host, Origin, token, expected status): each rule in order, each checked before the next.
    type Case<'a> = (
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a str>,
        u16,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        (
            Some("evil.example:7723"),
            None,
            Some(TOKEN),
            403,
            "Host first, even with a good token",
        ),
        (
            None,
            Some("http://evil.example"),
            None,
            403,
            "Origin before the token is looked at",
        ),
        (None, Some("null"), Some(TOKEN), 403, "a null Origin"),
        (
            None,
            Some("http://localhost:1"),
            Some(TOKEN),
            403,
            "another local port is another origin",
        ),
        (None, None, None, 401, "no token"),
        (None, None, Some(&wrong_token), 401, "a wrong token"),
        (None, None, Some(&TOKEN[..63]), 401, "a truncated token"),
        (
            None,
            Some(&own),
            Some(TOKEN),
            200,
            "the gateway's own origin",
        ),
        (
            None,
            Some("http://localhost:6274"),
            Some(TOKEN),
            200,
            "an allow-listed origin",
        ),
        (
            Some("localhost:1"),
            None,
            Some(TOKEN),
            403,
            "a loopback Host naming another port",
        ),
        (
            Some("[::1]evil.com"),
            None,
            Some(TOKEN),
            403,
            "a bracketed loopback address followed by a name",
        ),
        (
            Some(&own_port_host),
            None,
            Some(TOKEN),
            403,
            "a name that only starts with localhost",
        ),
        (
            Some(own.trim_start_matches("http://")),
            None,
            Some(TOKEN),
            200,
            "the gateway's own host and port, without Origin",
        ),
    ];
    for (host, origin, token, want, what) in cases {
        let r = send(host, origin, token, body.clone()).await.unwrap();
        assert_eq!(r.status(), want, "{what}");
        if want == 401 {
            assert_eq!(r.headers()["www-authenticate"], "Bearer", "{what}");
        }
    }
    // Size, then batches.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(4 * 1024 * 1024)
    );
    assert_eq!(
        send(None, None, Some(TOKEN), big.clone())
            .await
            .unwrap()
            .status(),
        413
    );
    assert_eq!(
        send(None, None, None, big).await.unwrap().status(),
        401,
        "auth is checked before size"
    );
    let r = send(None, None, Some(TOKEN), format!("[{body}]"))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(v["error"]["code"], -32600);
    // Sessions.
    let ping = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    assert_eq!(g.post(None, &ping).send().await.unwrap().status(), 400);
    assert_eq!(
        g.post(Some("nope"), &ping).send().await.unwrap().status(),
        404
    );
    let sid = g.session().await;
    assert_eq!(
        g.post(Some(&sid), &ping).send().await.unwrap().status(),
        200
    );
    let del = g
        .http
        .delete(&g.url)
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 200);
    assert_eq!(
        g.post(Some(&sid), &ping).send().await.unwrap().status(),
        404
    );
    // A 2026-07-28 probe is answered, without a session: both eras are offered.
    let r = g
        .post(
            None,
            &json!({"jsonrpc":"2.0","id":9,"method":"server/discover","params":{}}),
        )
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    let versions = v["result"]["supportedVersions"].as_array().unwrap();
    assert!(
        versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")),
        "{v}"
    );
    // Any other request with an unknown protocol version is refused.
    let sid = g.session().await;
    let r = g
        .post(Some(&sid), &ping)
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    g.stop().await;
}

#[tokio::test]
async fn results_and_definitions_pass_through_byte_for_byte() {
    let g = Gw::start(&config(&[("fx", fixture(&[]))])).await;
    let sid = g.session().await;
    let direct = call_tool(&g.th.server("fx"), "exotic", json!({}))
        .await
        .unwrap();
    assert!(
        direct.contains("12345678901234567890123")
            && direct.contains("0.123456789")
            && direct.contains("hologram"),
        "{direct}"
    );
    let via = g
        .rpc(
            &sid,
            5,
            "tools/call",
            json!({"name":"fx__exotic","arguments":{}}),
        )
        .await;
    assert_eq!(
        raw_result(&via),
        direct,
        "the client must receive the server's bytes"
    );
    assert!(
        via.starts_with(r#"{"jsonrpc":"2.0","id":5,"result":"#),
        "{via}"
    );

    // Tool definitions: every member but `name` as the server sent it.
    let list = g.rpc(&sid, 6, "tools/list", json!({})).await;
    assert!(
        list.contains(r#""x-vendor":{"n":12345678901234567890}"#),
        "{list}"
    );
    assert!(
        list.contains(r#""execution":{"taskSupport":"optional"}"#),
        "{list}"
    );
    let v: Value = serde_json::from_str(&list).unwrap();
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), FIXTURE_TOOLS);
    // One server: every tool under its own name.
    assert!(
        names.contains(&"exotic") && !names.iter().any(|n| n.contains("__")),
        "{names:?}"
    );

    // Arguments reach the server untouched (a float that f32 or f64 rounding would change).
    let r = g
        .rpc(
            &sid,
            7,
            "tools/call",
            json!({"name":"fx__echo","arguments":{"text":"0.1000000000000000055511151231257827"}}),
        )
        .await;
    assert!(r.contains("0.1000000000000000055511151231257827"), "{r}");

    // A pretty-printed request (LF, CRLF and a lone CR between tokens) reaches the stdio server
    // as one line and is answered: its params are carried raw, so their line breaks used to
    // split the line the server read.
    let pretty = "{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 8,\r  \"method\": \"tools/call\",\n  \"params\": {\n    \"name\": \"fx__echo\",\n    \"arguments\": {\n      \"text\":\r\n \"pretty\\nprinted\"\r    }\n  }\n}";
    let resp = g
        .http
        .post(&g.url)
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &sid)
        .body(pretty)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    let body = resp.text().await.unwrap();
    let data = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect::<Vec<_>>()
        .join("\n");
    let v: Value = serde_json::from_str(if data.is_empty() { &body } else { &data })
        .unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["id"], 8, "{body}");
    assert_eq!(
        v["result"]["content"][0]["text"], "pretty\nprinted",
        "{body}"
    );
    g.stop().await;
}

#[tokio::test]
async fn unknown_tools_stopped_servers_and_crashes_answer_clearly() {
    let g = Gw::start(&config(&[("fx", fixture(&[])), ("other", fixture(&[]))])).await;
    let sid = g.session().await;
    let r: Value = serde_json::from_str(
        &g.rpc(
            &sid,
            1,
            "tools/call",
            json!({"name":"fx__nope","arguments":{}}),
        )
        .await,
    )
    .unwrap();
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("fx__nope"));

    // A crash mid-call: an isError result well within a second, not a hang.
    let t = Instant::now();
    let r: Value = serde_json::from_str(
        &g.rpc(
            &sid,
            2,
            "tools/call",
            json!({"name":"fx__crash","arguments":{"code":3}}),
        )
        .await,
    )
    .unwrap();
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("exited with code 3"),
        "{r}"
    );

    // A server that is not running: isError naming it and its state.
    g.th.server("other").stop().await.unwrap();
    let r: Value = serde_json::from_str(
        &g.rpc(
            &sid,
            3,
            "tools/call",
            json!({"name":"other__echo","arguments":{"text":"x"}}),
        )
        .await,
    )
    .unwrap();
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Server \"other\" is stopped, so other__echo was not run."
    );
    // Its tools are gone from the list meanwhile.
    let list = g.rpc(&sid, 4, "tools/list", json!({})).await;
    assert!(!list.contains("other__"), "{list}");
    g.stop().await;
}

#[tokio::test]
async fn progress_is_forwarded_with_the_clients_own_token() {
    let g = Gw::start(&config(&[("fx", fixture(&[]))])).await;
    let sid = g.session().await;
    let resp = g
        .post(Some(&sid), &json!({"jsonrpc":"2.0","id":"p1","method":"tools/call","params":{"name":"fx__progress","arguments":{"steps":3},"_meta":{"progressToken":{"mine":[1]}}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let msgs = sse_messages(&resp.text().await.unwrap());
    let progress: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{msgs:?}");
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], json!({"mine":[1]}));
    }
    let last = msgs.last().unwrap();
    assert_eq!(last["id"], "p1");
    assert_eq!(last["result"]["content"][0]["text"], "done after 3 steps");
    g.stop().await;
}

#[tokio::test]
async fn cancellation_reaches_the_server_and_no_answer_follows() {
    let g = Gw::start(&config(&[("fx", fixture(&[]))])).await;
    let sid = g.session().await;
    let call = g.post(Some(&sid), &json!({"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":5000}}})).send();
    let pending = tokio::spawn(call);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = g.post(Some(&sid), &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user"}})).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let resp = tokio::time::timeout(Duration::from_secs(3), pending)
        .await
        .expect("cancel ends the request")
        .unwrap()
        .unwrap();
    let body = resp.text().await.unwrap();
    assert!(
        !body.contains("slept"),
        "a cancelled call must not be answered: {body}"
    );
    // The server was told, with its own request id.
    let h = g.th.server("fx");
    let deadline = Instant::now() + T;
    loop {
        let lines: Vec<String> = h.logs().tail(None).into_iter().map(|l| l.line).collect();
        if lines
            .iter()
            .any(|l| l.starts_with("fixture: cancelled request "))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server never saw notifications/cancelled: {lines:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    g.stop().await;
}

#[tokio::test]
async fn a_servers_sampling_request_goes_to_the_calling_client_and_back() {
    let g = Gw::start(&config(&[("fx", fixture(&[]))])).await;
    let sid = g.session().await;
    let resp = g
        .post(Some(&sid), &json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fx__ask","arguments":{"question":"colour?"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut answered = false;
    let deadline = Instant::now() + T;
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline.into(), stream.next()).await {
        buf.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        let msgs = sse_messages(
            &buf.rsplit_once("\n\n")
                .map(|(a, _)| format!("{a}\n\n"))
                .unwrap_or_default(),
        );
        if !answered {
            if let Some(req) = msgs
                .iter()
                .find(|m| m["method"] == "sampling/createMessage")
            {
                assert_eq!(req["params"]["messages"][0]["content"]["text"], "colour?");
                let answer = json!({"jsonrpc":"2.0","id":req["id"],"result":{"role":"assistant","model":"test","content":{"type":"text","text":"blue"}}});
                assert_eq!(
                    g.post(Some(&sid), &answer).send().await.unwrap().status(),
                    202
                );
                answered = true;
            }
        }
        if let Some(fin) = msgs.iter().find(|m| m["id"] == 7) {
            assert_eq!(
                fin["result"]["content"][0]["text"], "the client said: blue",
                "{fin}"
            );
            g.stop().await;
            return;
        }
    }
    panic!("no final answer; got {buf}");
}

#[tokio::test]
async fn a_restart_shows_up_as_list_changed_and_the_tools_come_back() {
    let g = Gw::start(&config(&[("fx", fixture(&[]))])).await;
    let sid = g.session().await;
    let resp = g
        .http
        .get(&g.url)
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut stream = resp.bytes_stream();
    // The stream is open once its opening comment arrives.
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.starts_with(b":"), "{first:?}");
    g.th.server("fx").restart().await.unwrap();
    let mut buf = String::new();
    let deadline = Instant::now() + T;
    while !buf.contains("notifications/tools/list_changed") {
        let chunk = tokio::time::timeout_at(deadline.into(), stream.next())
            .await
            .expect("no list_changed")
            .unwrap()
            .unwrap();
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    wait_state(&g.th.server("fx"), State::Running, T).await;
    let deadline = Instant::now() + T;
    loop {
        let list: Value =
            serde_json::from_str(&g.rpc(&sid, 3, "tools/list", json!({})).await).unwrap();
        if list["result"]["tools"].as_array().unwrap().len() == FIXTURE_TOOLS {
            break;
        }
        assert!(Instant::now() < deadline, "tools did not come back: {list}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    g.stop().await;
}

//! The gateway over real HTTP (and stdio) in front of real fixture processes: the guard, raw
//! pass-through, namespacing, progress/cancel/sampling forwarding, list_changed, crashes.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gatehouse::gateway::{self, Gateway};
use gatehouse::State;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::support::*;

pub(crate) const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
pub(crate) const T: Duration = Duration::from_secs(15);

/// A gateway on a loopback port in front of a test hub (shared with the isolation tests).
pub(crate) struct Gw {
    pub(crate) th: TestHub,
    pub(crate) gw: Gateway,
    pub(crate) url: String,
    pub(crate) http: reqwest::Client,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Gw {
    pub(crate) async fn start(config_json: &str) -> Gw {
        Self::start_with_origins(config_json, vec![]).await
    }

    pub(crate) async fn start_with_origins(config_json: &str, origins: Vec<String>) -> Gw {
        // These tests are about routing: approvals stay out of the way unless a test asks.
        let mut cfg: Value = serde_json::from_str(config_json).unwrap();
        if cfg.get("approval").is_none() {
            cfg["approval"] = json!({"default": "flagged-only"});
        }
        let th = TestHub::start(&cfg.to_string());
        for h in th.hub.servers() {
            wait_state(&h, State::Running, T).await;
        }
        let gw = Gateway::new(th.hub.clone());
        gw.refresh_catalog();
        let listener = gateway::http::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let stop = CancellationToken::new();
        let task = tokio::spawn(gateway::http::serve(
            listener,
            gw.clone(),
            TOKEN.into(),
            origins,
            stop.clone(),
        ));
        Gw {
            th,
            gw,
            url,
            http: gatehouse::http_client_builder().no_proxy().build().unwrap(),
            stop,
            task,
        }
    }

    pub(crate) fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        r
    }

    /// initialize + initialized (the shared helper, declaring sampling); the session id.
    pub(crate) async fn session(&self) -> String {
        let who = json!({"name": "it", "version": "1"});
        let caps = json!({"sampling": {}});
        let m = Mcp::open_as(&self.url, TOKEN, who, "2025-06-18", caps).await;
        assert_eq!(m.init["protocolVersion"], "2025-06-18");
        assert_eq!(m.init["serverInfo"]["name"], "gatehouse");
        m.sid
    }

    /// A request whose answer is plain JSON; returns the body text.
    pub(crate) async fn rpc(&self, sid: &str, id: u64, method: &str, params: Value) -> String {
        let resp = self
            .post(
                Some(sid),
                &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.text().await.unwrap()
    }

    pub(crate) async fn stop(self) {
        self.stop.cancel();
        self.gw.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
        self.th.hub.shutdown().await;
    }
}

/// The raw `result` member of a JSON-RPC response line.
fn raw_result(line: &str) -> String {
    #[derive(serde::Deserialize)]
    struct R<'a> {
        #[serde(borrow)]
        result: &'a serde_json::value::RawValue,
    }
    serde_json::from_str::<R>(line)
        .unwrap_or_else(|e| panic!("{e}: {line}"))
        .result
        .get()
        .to_owned()
}

/// The `data:` payloads of an SSE body.
pub(crate) fn sse_messages(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|ev| ev.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

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

#[tokio::test]
async fn serve_stdio_speaks_only_json_rpc_on_stdout() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("g.json");
    std::fs::write(&cfg, config(&[("fx", fixture(&[]))])).unwrap();
    let mut child = tokio::process::Command::new(GATEHOUSE)
        .args(serve_stdio_args(
            &cfg,
            &dir.path().join("d"),
            &dir.path().join("c.sock"),
        ))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    macro_rules! next {
        () => {
            tokio::time::timeout(T, lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap()
        };
    }
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},\"clientInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\n").await.unwrap();
    let init: Value = serde_json::from_str(&next!()).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    // Wait until the fixture is up behind the gateway.
    let deadline = Instant::now() + T;
    loop {
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n")
            .await
            .unwrap();
        let mut line = next!();
        while !line.contains("\"id\":2") {
            line = next!(); // a list_changed notification may come first
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            break;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stdin.write_all(b"[1]\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"fx__echo\",\"arguments\":{\"text\":\"over stdio\"}}}\n").await.unwrap();
    let mut seen_batch_error = false;
    let mut seen_echo = false;
    while !(seen_batch_error && seen_echo) {
        let v: Value = serde_json::from_str(&next!()).expect("stdout carries only JSON");
        if v["error"]["code"] == -32600 {
            seen_batch_error = true;
        }
        if v["id"] == 3 {
            assert_eq!(v["result"]["content"][0]["text"], "over stdio");
            seen_echo = true;
        }
    }
    drop(stdin); // the client goes away: the hub stops its servers and exits 0
    let status = tokio::time::timeout(T, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn connect_bridges_a_stdio_client_to_the_running_hub() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let g = Gw::start(&config(&[("fx", fixture(&[]))])).await;
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("control.sock");
    let control = gatehouse::control::ControlServer::bind(&sock)
        .await
        .unwrap();
    let info = gatehouse::control::GatewayInfo {
        url: g.url.clone(),
        token: TOKEN.into(),
    };
    let control_task = tokio::spawn(control.serve(g.th.hub.clone(), Some(info), g.stop.clone()));

    let mut child = tokio::process::Command::new(GATEHOUSE)
        .arg("connect")
        .env("GATEHOUSE_CONTROL", &sock)
        .env_remove("GATEHOUSE_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    macro_rules! next {
        () => {
            serde_json::from_str::<Value>(
                &tokio::time::timeout(T, lines.next_line())
                    .await
                    .unwrap()
                    .unwrap()
                    .unwrap(),
            )
            .unwrap()
        };
    }
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"desktop\",\"version\":\"1\"}}}\n").await.unwrap();
    assert_eq!(next!()["result"]["serverInfo"]["name"], "gatehouse");
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"fx__exotic\",\"arguments\":{}}}\n").await.unwrap();
    let line = tokio::time::timeout(T, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let direct = call_tool(&g.th.server("fx"), "exotic", json!({}))
        .await
        .unwrap();
    assert_eq!(
        raw_result(&line),
        direct,
        "the bridge passes results through byte for byte"
    );
    // Progress streamed over SSE reaches the stdio client line by line.
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"fx__progress\",\"arguments\":{\"steps\":2},\"_meta\":{\"progressToken\":7}}}\n").await.unwrap();
    let (a, b, c) = (next!(), next!(), next!());
    assert_eq!(
        (
            a["params"]["progressToken"].clone(),
            b["params"]["progressToken"].clone()
        ),
        (json!(7), json!(7))
    );
    assert_eq!(c["id"], 3);
    drop(stdin);
    let status = tokio::time::timeout(T, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));

    // Without a hub to ask, connect says how to start one.
    let out = std::process::Command::new(GATEHOUSE)
        .arg("connect")
        .env("GATEHOUSE_CONTROL", dir.path().join("none.sock"))
        .env_remove("GATEHOUSE_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gatehouse serve"));
    g.stop().await;
    let _ = control_task.await;
}

#[tokio::test]
async fn a_held_call_hears_progress_until_the_person_answers() {
    let cfg = json!({"servers": {"fx": fixture(&[])}, "approval": {"default": "always", "timeout_secs": 30}});
    let g = Gw::start(&cfg.to_string()).await;
    g.gw.set_keepalive(Duration::from_millis(100));
    let sid = g.session().await;
    let mut events = g.th.hub.events();
    let resp = g
        .post(Some(&sid), &json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"held"},"_meta":{"progressToken":"tok-1"}}}))
        .send();
    let resp = tokio::spawn(resp);
    // The request is published for approvers; after a few keepalives, the person allows it.
    let id = loop {
        match tokio::time::timeout(T, events.recv())
            .await
            .unwrap()
            .unwrap()
        {
            gatehouse::events::Event::ApprovalRequested(r) => break r.id,
            _ => continue,
        }
    };
    tokio::time::sleep(Duration::from_millis(350)).await;
    g.th.hub
        .approvals()
        .answer(
            &id,
            gatehouse::approval::Answer::Allow(gatehouse::approval::Scope::Once),
            gatehouse::approval::Decider::Ui,
        )
        .unwrap();
    let resp = resp.await.unwrap().unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let msgs = sse_messages(&resp.text().await.unwrap());
    let waiting: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(waiting.len() >= 2, "{msgs:?}");
    for (i, w) in waiting.iter().enumerate() {
        assert_eq!(w["params"]["progressToken"], "tok-1");
        assert_eq!(w["params"]["progress"], i as u64 + 1, "progress increases");
        assert_eq!(w["params"]["message"], "Waiting for approval in Gatehouse");
    }
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "held");
    g.stop().await;
}

#[tokio::test]
async fn a_call_right_after_a_server_starts_never_sees_a_stale_catalog() {
    let th = TestHub::start(&json!({"servers": {"fx": fixture(&["--slow-start", "300"])}, "approval": {"default": "flagged-only"}}).to_string());
    let gw = Gateway::new(th.hub.clone());
    // Without its watcher, only the catalog's staleness check can bring the new server in.
    gw.shutdown().await;
    let s = gw.open_session();
    wait_state(&th.server("fx"), State::Running, T).await;
    let out = gw.handle_bytes(&s, br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"fresh"}}}"#).await;
    let line = match out {
        gateway::Outcome::Stream(mut rx) => loop {
            match rx.recv().await {
                Some(gateway::Out::Final(l)) => break String::from_utf8(l).unwrap(),
                Some(_) => continue,
                None => panic!("no answer"),
            }
        },
        gateway::Outcome::Reply(l) => String::from_utf8(l).unwrap(),
        gateway::Outcome::Accepted => panic!("no answer"),
    };
    assert!(line.contains("\"text\":\"fresh\""), "{line}");
    th.hub.shutdown().await;
}

/// Sessions beyond a profile's share end oldest first within that profile; another profile's idle
/// session outlives any flood of this one.
#[tokio::test]
async fn idle_sessions_beyond_a_profiles_share_are_ended_oldest_first_within_it() {
    let th = TestHub::start(&config(&[]));
    let gw = Gateway::new(th.hub.clone());
    // Another profile's session, older and idler than all: the default profile's flood below
    // must not end it (each profile has its own share).
    let other = gw.open_session_as(Some("other".into()));
    tokio::time::sleep(Duration::from_millis(5)).await;
    let first = gw.open_session();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let active = gw.open_session();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut later = Vec::new();
    for _ in 0..gateway::MAX_SESSIONS - 2 {
        later.push(gw.open_session());
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    // `active` talks; `first` stays idle. One more session pushes the idlest one out.
    let _ = gw
        .handle_bytes(&active, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .await;
    let _extra = gw.open_session();
    assert!(
        gw.session(&first.id).is_none(),
        "the least recently active session was ended"
    );
    assert!(gw.session(&active.id).is_some(), "an active session stays");
    assert!(
        gw.session(&other.id).is_some(),
        "one profile's flood ended another profile's session"
    );
    // Its own share is full now: each new session ends one of its own, never `other`.
    for _ in 0..10 {
        let _ = gw.open_session();
    }
    assert!(gw.session(&other.id).is_some());
    gw.shutdown().await;
    th.hub.shutdown().await;
}

/// Every forwarded call leaves exactly one activity row, whatever its client does: answered,
/// cancelled with `notifications/cancelled`, the HTTP request dropped, the session deleted, or
/// held and abandoned.
#[tokio::test]
async fn every_forwarded_call_leaves_exactly_one_activity_row() {
    let mut cfg: Value = serde_json::from_str(&config(&[("fx", fixture(&[]))])).unwrap();
    cfg["servers"]["fx"]["tools"] = json!({"touch": {"requires_approval": true}});
    let g = Gw::start(&cfg.to_string()).await;
    let sleep = |id: u64| json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":3000}}});
    // 1. answered.
    let sid = g.session().await;
    let text = g
        .rpc(
            &sid,
            1,
            "tools/call",
            json!({"name":"fx__echo","arguments":{"text":"x"}}),
        )
        .await;
    assert!(text.contains("\"x\""), "{text}");
    // 2. cancelled by the client.
    let pending = tokio::spawn(g.post(Some(&sid), &sleep(2)).send());
    tokio::time::sleep(Duration::from_millis(300)).await;
    g.post(
        Some(&sid),
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}),
    )
    .send()
    .await
    .unwrap();
    let _ = pending.await;
    // 3. the HTTP request dropped mid-call.
    let dropped = tokio::spawn(g.post(Some(&sid), &sleep(3)).send());
    tokio::time::sleep(Duration::from_millis(300)).await;
    dropped.abort();
    // 4. the session deleted mid-call.
    let sid2 = g.session().await;
    let pending = tokio::spawn(g.post(Some(&sid2), &sleep(4)).send());
    tokio::time::sleep(Duration::from_millis(300)).await;
    g.http
        .delete(&g.url)
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &sid2)
        .send()
        .await
        .unwrap();
    let _ = pending.await;
    // 5. held for approval, then the client went away.
    let held = tokio::spawn(
        g.post(Some(&sid), &json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fx__touch","arguments":{"path":"/nonexistent/x"}}}))
            .send(),
    );
    let deadline = Instant::now() + T;
    while g.th.hub.approvals().pending().is_empty() {
        assert!(Instant::now() < deadline, "never held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    held.abort();
    // Every row arrives; no second row follows for any call.
    let deadline = Instant::now() + T;
    let rows = loop {
        let rows = g.th.hub.activity().recent(100, None).await.unwrap();
        if rows.len() >= 5 || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let again = g.th.hub.activity().recent(100, None).await.unwrap();
    assert_eq!(
        again.len(),
        rows.len(),
        "a call was recorded twice: {again:#?}"
    );
    let summary: Vec<(String, &str, &str)> = rows
        .iter()
        .rev()
        .map(|r| (r.tool.clone(), r.decision.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("echo".to_owned(), "allowed", "ok"),
            ("sleep".to_owned(), "allowed", "cancelled"),
            ("sleep".to_owned(), "allowed", "cancelled"),
            ("sleep".to_owned(), "allowed", "cancelled"),
            ("touch".to_owned(), "withdrawn", "not_run"),
        ]
    );
    // A withdrawal is the client's decision, never the policy's.
    let touch = rows.iter().find(|r| r.tool == "touch").unwrap();
    assert_eq!(touch.decided_by.as_str(), "client", "{touch:?}");
    g.stop().await;
}

/// A result is passed on as the server wrote it — not decoded, so an escape JSON does not know
/// inside a string reaches the client as sent — but its structure is checked, so a result can
/// never close the envelope early and forge members of it: such a line is dropped with a note
/// and the call ends at its deadline, under the client's own id.
#[tokio::test]
async fn a_result_passes_as_sent_but_never_leaves_its_envelope() {
    let cfg = json!({"servers": {
        "fx": with(fixture(&[]), "call_timeout_secs", json!(1)),
    }});
    let g = Gw::start(&cfg.to_string()).await;
    let sid = g.session().await;
    let odd = r#"{"content":[{"type":"text","text":"a \q escape JSON does not know"}]}"#;
    let via = g
        .rpc(
            &sid,
            5,
            "tools/call",
            json!({"name":"fx__exotic","arguments":{"raw": odd}}),
        )
        .await;
    assert!(via.contains(odd), "passed on as sent: {via}");
    assert!(
        via.starts_with(r#"{"jsonrpc":"2.0","id":5,"result":"#),
        "{via}"
    );
    for (id, forged) in [
        (6, r#"{"content":[]}},"id":"forged","x":{"#),
        (7, r#"{"content":[{"type":"text","text":"x"]}"#),
        (8, r#"{"content":[]}}"#),
    ] {
        let via = g
            .rpc(
                &sid,
                id,
                "tools/call",
                json!({"name":"fx__exotic","arguments":{"raw": forged}}),
            )
            .await;
        let v: Value = serde_json::from_str(&via).unwrap();
        assert_eq!(v["id"], id, "{via}");
        assert_eq!(v["result"]["isError"], true, "{via}");
        assert!(!via.contains("forged"), "{via}");
    }
    let notes =
        g.th.server("fx")
            .logs()
            .tail(None)
            .iter()
            .filter(|l| l.line.contains("dropped a non-JSON stdout line"))
            .count();
    assert_eq!(notes, 3, "each malformed line is noted");
    g.stop().await;
}

/// Every request to a server has a deadline: a call the server never answers (or answers under
/// another id) ends at its `call_timeout_secs` with an `isError` naming server, tool and
/// timeout, the server hears `notifications/cancelled`, and the call is recorded as timed out.
#[tokio::test]
async fn a_call_the_server_never_answers_ends_at_its_deadline() {
    let cfg = json!({"servers": {
        "fx": with(fixture(&["--silent", "tools/call"]), "call_timeout_secs", json!(1)),
        "wrong": with(fixture(&["--wrong-id"]), "call_timeout_secs", json!(1)),
    }});
    let g = Gw::start(&cfg.to_string()).await;
    let sid = g.session().await;
    for (server, id) in [("fx", 7), ("wrong", 8)] {
        let started = Instant::now();
        let text = g
            .rpc(
                &sid,
                id,
                "tools/call",
                json!({"name": format!("{server}__echo"), "arguments": {"text": "x"}}),
            )
            .await;
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(5),
            "{took:?}"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["result"]["isError"], true, "{text}");
        let msg = v["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            msg.contains(&format!(
                "server \"{server}\" did not answer {server}__echo within 1 s"
            )),
            "{msg}"
        );
    }
    // The silent server was told.
    let fx = g.th.server("fx");
    let deadline = Instant::now() + T;
    while !fx
        .logs()
        .tail(None)
        .iter()
        .any(|l| l.line.contains("fixture: cancelled request"))
    {
        assert!(
            Instant::now() < deadline,
            "no notifications/cancelled reached the server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deadline = Instant::now() + T;
    loop {
        let rows = g.th.hub.activity().recent(10, None).await.unwrap();
        if rows.len() == 2 {
            assert!(
                rows.iter().all(|r| r.outcome.as_str() == "timed_out"),
                "{rows:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{rows:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    g.stop().await;
}

/// A server that never answers a list does not hold the combined list up for every client: the
/// list comes back within its bound with what the others sent, and the slow server is named in
/// its log and status.
#[tokio::test]
async fn a_server_that_never_answers_a_list_is_left_out_within_the_bound() {
    let cfg = json!({"servers": {
        "good": fixture(&["--conformance"]),
        "slow": fixture(&["--conformance", "--silent", "prompts/list", "--silent", "resources/list"]),
    }});
    let g = Gw::start(&cfg.to_string()).await;
    let sid = g.session().await;
    for (method, key) in [("prompts/list", "prompts"), ("resources/list", "resources")] {
        let started = Instant::now();
        let text = g.rpc(&sid, 1, method, json!({})).await;
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{method} took {:?}",
            started.elapsed()
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(!v["result"][key].as_array().unwrap().is_empty(), "{text}");
    }
    let slow = g.th.server("slow").status();
    assert!(
        slow.warnings
            .iter()
            .any(|w| w.contains("did not answer prompts/list within 5 s")),
        "{slow:?}"
    );
    assert!(g.th.server("good").status().warnings.is_empty());
    assert!(g
        .th
        .server("slow")
        .logs()
        .tail(None)
        .iter()
        .any(|l| l.line.contains("left out of the combined list")));
    g.stop().await;
}

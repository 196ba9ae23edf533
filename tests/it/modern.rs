//! MCP 2026-07-28 on both sides, with the Python SDK 2.3 (the revision's reference
//! implementation) as client and server: modern clients without a session over HTTP and stdio,
//! a modern-only server supervised and called by modern and legacy clients, multi round-trip
//! requests, the routing headers and the envelope checks.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

/// A modern-only server (its `initialize` refused) reaches `running` through the probe, speaks
/// 2026-07-28 to Gatehouse, loses the tool whose `x-mcp-header` annotation is invalid (with a log
/// note), and is called by a legacy client (TypeScript SDK 1.x) and a modern one.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3 and the TypeScript SDK: run `make test`"]
async fn a_modern_only_server_runs_and_serves_both_eras_of_client() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&both_eras(&[])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve(dir.path(), &cfg.to_string(), &["fx", "modern"]).await;
    let modern = status_of(&s, "modern");
    assert_eq!(modern["era"], "modern", "{modern}");
    assert_eq!(modern["protocol_version"], MODERN, "{modern}");
    assert_eq!(modern["tools"], 4, "broken is left out: {modern}");
    let legacy = status_of(&s, "fx");
    assert_eq!(legacy["era"], "legacy", "{legacy}");
    let table = String::from_utf8_lossy(&gh(&s, &["status"]).stdout).into_owned();
    assert!(table.contains("2026-07-28 modern"), "{table}");
    let tools = String::from_utf8_lossy(&gh(&s, &["tools", "modern"]).stdout).into_owned();
    assert!(
        tools.contains("modern speaks MCP 2026-07-28 (modern)"),
        "{tools}"
    );
    let probe = Command::new(GATEHOUSE)
        .args([
            "test",
            "--",
            &python(),
            &clients_script("modern_server.py"),
            "stdio",
        ])
        .output()
        .unwrap();
    let probe_out = String::from_utf8_lossy(&probe.stdout).into_owned();
    assert!(probe.status.success(), "{probe_out}");
    assert!(
        probe_out.contains("(protocol 2026-07-28, modern)"),
        "{probe_out}"
    );
    let logs = String::from_utf8_lossy(&gh(&s, &["logs", "modern"]).stdout).into_owned();
    assert!(
        logs.contains("left out tool \"broken\"") && logs.contains("x-mcp-header"),
        "{logs}"
    );

    let calls = json!([["modern__add", {"a": 2, "b": 40}]]);
    // A legacy client (TypeScript SDK 1.x) calls the modern-only server's tool.
    let ts = run_json(
        Command::new("node")
            .arg(clients_script("ts_client.mjs"))
            .args([&s.info.url, &s.info.token, &calls.to_string()])
            .env("GATEHOUSE_CLIENTS_DIR", peers_dir().join("clients")),
    );
    assert_eq!(
        ts["results"]["modern__add"]["content"][0]["text"], "42",
        "{ts}"
    );
    let tools: Vec<&str> = ts["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"regional") && !tools.iter().any(|t| t.contains("broken")),
        "{ts}"
    );
    // And a modern one, pinned to 2026-07-28.
    let out = run_json(&mut py(&s, "modern", &calls));
    assert_eq!(out["protocol"], MODERN);
    assert_eq!(
        out["results"]["modern__add"]["content"][0]["text"], "42",
        "{out}"
    );
    assert_eq!(out["results"]["modern__add"]["resultType"], "complete");
    // A modern stdio client through `gatehouse connect`: the bridge gives its calls the routing
    // headers and the annotated parameter's `Mcp-Param-Region`, which the gateway checks.
    let regional = json!([["regional", {"region": "eu-west", "q": "hi"}]]);
    let out = run_json(
        Command::new(python())
            .args([
                &clients_script("py_client.py"),
                "stdio-modern",
                &regional.to_string(),
                "--",
                GATEHOUSE,
                "connect",
            ])
            .env("GATEHOUSE_CONTROL", &s.sock),
    );
    assert_eq!(out["protocol"], MODERN);
    assert_eq!(
        out["results"]["regional"]["content"][0]["text"], "eu-west: hi",
        "{out}"
    );
}

/// Modern clients (pinned, and auto mode, which probes `server/discover` and stays modern) list
/// and call over HTTP with no session; a held call is asked with "this session" meaning the
/// client for 8 hours, approved, and the next one denied — the denied one never runs.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3: run `make test`"]
async fn modern_clients_call_and_are_asked_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &both_eras(&[]), &["fx", "modern"]).await;
    // Auto mode ends up modern against Gatehouse.
    let auto = run_json(&mut py(
        &s,
        "auto",
        &json!([["modern__add", {"a": 1, "b": 2}]]),
    ));
    assert_eq!(auto["protocol"], MODERN, "{auto}");
    assert_eq!(auto["results"]["modern__add"]["content"][0]["text"], "3");

    // Pinned: two held calls, the first approved, the second denied.
    let calls = json!([
        ["fx__echo", {"text": "first"}],
        ["fx__touch", {"path": dir.path().join("never").to_str().unwrap()}],
    ]);
    let child = py(&s, "modern", &calls)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let r = pending(&s, "fx__echo").await;
    let ends = r["client"]["session_ends_ms"]
        .as_u64()
        .expect("a modern session ends on its own");
    let now = gatehouse::logs::now_ms();
    assert!(
        ends > now + 7 * 3600 * 1000 && ends <= now + 8 * 3600 * 1000,
        "{r}"
    );
    assert!(
        r["client"]["session"]
            .as_str()
            .unwrap()
            .starts_with("modern-"),
        "{r}"
    );
    let human = String::from_utf8_lossy(&gh(&s, &["approvals"]).stdout).into_owned();
    assert!(
        human.contains("covers this client (same token and name)"),
        "{human}"
    );
    assert!(gh(&s, &["approve", r["id"].as_str().unwrap()])
        .status
        .success());
    let r = pending(&s, "fx__touch").await;
    assert!(gh(&s, &["deny", r["id"].as_str().unwrap()])
        .status
        .success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(
        out.stdout
            .split(|b| *b == b'\n')
            .rfind(|l| !l.is_empty())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        out["results"]["fx__echo"]["content"][0]["text"], "first",
        "{out}"
    );
    assert_eq!(out["results"]["fx__touch"]["isError"], true, "{out}");
    assert_eq!(
        out["results"]["fx__touch"]["resultType"], "complete",
        "{out}"
    );
    assert!(
        !dir.path().join("never").exists(),
        "a denied call never runs"
    );
}

/// Through `gatehouse serve --stdio`: a modern client pinned to 2026-07-28 (which never sends
/// `initialize`) and one in auto mode list and call, and a held call is approved through the
/// stdio hub's control socket.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3: run `make test`"]
async fn modern_clients_call_through_serve_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("g.json");
    std::fs::write(&cfg, both_eras(&[])).unwrap();
    let sock = dir.path().join("c.sock");
    let run = |mode: &str, calls: &Value| {
        let mut cmd = Command::new(python());
        cmd.args([
            clients_script("py_client.py"),
            mode.into(),
            calls.to_string(),
            "--".into(),
            GATEHOUSE.into(),
        ])
        .args(serve_stdio_args(&cfg, &dir.path().join("d"), &sock));
        cmd
    };
    let auto = run_json(&mut run(
        "stdio-auto",
        &json!([["modern__add", {"a": 20, "b": 22}]]),
    ));
    assert_eq!(auto["protocol"], MODERN, "{auto}");
    assert_eq!(auto["results"]["modern__add"]["content"][0]["text"], "42");
    assert!(auto["tools"].as_array().unwrap().contains(&json!("echo")));

    let never = dir.path().join("never");
    let child = run(
        "stdio-modern",
        &json!([["fx__echo", {"text": "held"}], ["fx__touch", {"path": never.to_str().unwrap()}]]),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let cli = |args: &[&str]| {
        Command::new(GATEHOUSE)
            .args(args)
            .env("GATEHOUSE_CONTROL", &sock)
            .output()
            .unwrap()
    };
    let asked = |exposed: &'static str| {
        let cli = &cli;
        async move {
            let deadline = Instant::now() + T;
            loop {
                let list: Value = serde_json::from_slice(&cli(&["approvals", "--json"]).stdout)
                    .unwrap_or(json!([]));
                let found = list.as_array().and_then(|l| {
                    l.iter()
                        .find(|r| r["exposed"] == exposed)
                        .and_then(|r| r["id"].as_str().map(str::to_owned))
                });
                if let Some(id) = found {
                    return id;
                }
                assert!(Instant::now() < deadline, "{exposed} was never asked");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let id = asked("fx__echo").await;
    assert!(cli(&["approve", &id]).status.success());
    let id = asked("fx__touch").await;
    assert!(cli(&["deny", &id]).status.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .to_owned();
    let out: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(out["protocol"], MODERN);
    assert_eq!(
        out["results"]["fx__echo"]["content"][0]["text"], "held",
        "{out}"
    );
    assert_eq!(out["results"]["fx__touch"]["isError"], true, "{out}");
    assert!(!never.exists(), "a denied call never runs");

    // A list change reaches a modern stdio client on its listen stream.
    use std::io::BufRead;
    let mut listen = run("stdio-listen", &json!([]))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(listen.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["honored"]["toolsListChanged"], true, "{first}");
    // The client ends at the first change, and with it this stdio hub: the CLI may lose its
    // answer in that race, so only what the client heard is checked.
    let _ = cli(&["disable", "modern"]);
    let last: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert!(listen.wait().unwrap().success());
    assert_eq!(last["event"], "ToolsListChanged", "{last}");
    let after: Vec<String> = serde_json::from_value(last["after"].clone()).unwrap();
    assert!(!after.iter().any(|n| n.starts_with("modern__")), "{last}");
    assert!(after.contains(&"echo".to_owned()), "{last}");
}

/// A modern upstream's input request (elicitation, as an input-required result) reaches the
/// modern client that made the call, which answers and retries through Gatehouse; a modern
/// client that did not declare elicitation gets the missing-capability error; a 2025 client that
/// declared elicitation is asked the old way (a server→client request on the call's stream) and
/// its answer goes back in the retry; one that did not gets an isError result saying so.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3: run `make test`"]
async fn input_requests_reach_only_clients_that_can_answer_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&both_eras(&[])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve(dir.path(), &cfg.to_string(), &["fx", "modern"]).await;
    let calls = json!([["modern__confirm", {"question": "Ship it?"}]]);
    let mut answering = py(&s, "elicit", &calls);
    answering.arg("yes please");
    let out = run_json(&mut answering);
    assert_eq!(
        out["results"]["modern__confirm"]["content"][0]["text"], "the person said: yes please",
        "{out}"
    );
    let mut silent = py(&s, "elicit", &calls);
    silent.arg("-");
    let out = run_json(&mut silent);
    assert_eq!(
        out["results"]["modern__confirm"]["error"]["code"], -32021,
        "{out}"
    );
    let mut legacy = py(&s, "http-elicit", &calls);
    legacy.arg("the old way");
    let legacy = run_json(&mut legacy);
    assert_eq!(
        legacy["results"]["modern__confirm"]["content"][0]["text"], "the person said: the old way",
        "{legacy}"
    );
    let legacy = run_json(&mut py(&s, "http", &calls));
    let result = &legacy["results"]["modern__confirm"];
    assert_eq!(result["isError"], true, "{legacy}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not declare the \"elicitation\" capability"),
        "{legacy}"
    );
}

/// The modern Streamable HTTP rules, on the wire: routing headers must match the body (400 with
/// -32020 otherwise, `Mcp-Name` decoded first), the envelope must be whole (-32602) and in a
/// version we speak (-32022, naming them), an unknown method is 404, a notification 202 — and no
/// session is needed for any of it. Lists carry resultType, ttlMs and cacheScope.
#[tokio::test]
async fn modern_requests_are_checked_against_their_headers() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "wire", "version": "1"}
    });
    let send = |body: Value, headers: Vec<(&'static str, String)>| {
        let mut req = http
            .post(&s.info.url)
            .bearer_auth(&s.info.token)
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(k, v);
        }
        async move {
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let text = r.text().await.unwrap();
            (
                status,
                serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
            )
        }
    };
    let routing = |method: &str, name: Option<&str>| {
        let mut h = vec![
            ("mcp-protocol-version", MODERN.to_owned()),
            ("mcp-method", method.to_owned()),
        ];
        if let Some(n) = name {
            h.push(("mcp-name", n.to_owned()));
        }
        h
    };
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta": meta}});
    let (status, v) = send(list.clone(), routing("tools/list", None)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["cacheScope"], "private");
    assert!(v["result"]["ttlMs"].is_u64(), "{v}");
    assert_eq!(
        v["result"]["tools"].as_array().unwrap().len(),
        FIXTURE_TOOLS
    );

    let call = |name: &str| json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name": name, "arguments": {"text": "hi"}, "_meta": meta}});
    let (status, v) = send(call("fx__echo"), routing("tools/call", Some("fx__echo"))).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "hi");
    assert_eq!(v["result"]["resultType"], "complete");
    // The same name, base64-encoded, is the same name.
    let encoded = "=?base64?ZnhfX2VjaG8=?=";
    let (status, v) = send(call("fx__echo"), routing("tools/call", Some(encoded))).await;
    assert_eq!(status, 200, "{v}");

    for (what, body, headers) in [
        (
            "Mcp-Name names another tool",
            call("fx__echo"),
            routing("tools/call", Some("fx__add")),
        ),
        (
            "Mcp-Name missing",
            call("fx__echo"),
            routing("tools/call", None),
        ),
        (
            "Mcp-Method disagrees",
            list.clone(),
            routing("prompts/list", None),
        ),
        (
            "a malformed base64 name",
            call("fx__echo"),
            routing("tools/call", Some("=?base64?!!?=")),
        ),
        (
            "MCP-Protocol-Version missing",
            list.clone(),
            vec![("mcp-method", "tools/list".to_owned())],
        ),
        (
            "MCP-Protocol-Version disagrees",
            list.clone(),
            vec![
                ("mcp-protocol-version", "2025-11-25".to_owned()),
                ("mcp-method", "tools/list".to_owned()),
            ],
        ),
    ] {
        let (status, v) = send(body, headers).await;
        assert_eq!(status, 400, "{what}: {v}");
        assert_eq!(v["error"]["code"], -32020, "{what}: {v}");
    }

    // One parse decides: a name given twice (the second spelled with an escape) is refused, never
    // checked as one tool and run as the other; so is an argument given twice.
    for body in [
        format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"fx__echo","arguments":{{"text":"hi"}},"na\u006de":"fx__add","_meta":{meta}}}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"fx__echo","arguments":{{"text":"hi"}},"arguments":{{"text":"other"}},"_meta":{meta}}}}}"#
        ),
    ] {
        let mut req = http
            .post(&s.info.url)
            .bearer_auth(&s.info.token)
            .header("accept", "application/json, text/event-stream")
            .body(body.clone());
        for (k, v) in routing("tools/call", Some("fx__echo")) {
            req = req.header(k, v);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        assert_eq!(
            (status, v["error"]["code"].clone()),
            (400, json!(-32602)),
            "{body}: {v}"
        );
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("more than once"),
            "{v}"
        );
    }

    // The envelope: whole, and in a version we speak.
    let partial = json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}});
    let (status, v) = send(partial, routing("tools/list", None)).await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (400, json!(-32602)),
        "{v}"
    );
    let future = json!({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, v) = send(
        future,
        vec![
            ("mcp-protocol-version", "2099-01-01".into()),
            ("mcp-method", "tools/list".into()),
        ],
    )
    .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (400, json!(-32022)),
        "{v}"
    );
    assert_eq!(v["error"]["data"]["requested"], "2099-01-01");
    let supported = v["error"]["data"]["supported"].as_array().unwrap();
    assert!(
        supported.contains(&json!(MODERN)) && supported.contains(&json!("2025-11-25")),
        "{v}"
    );

    // Unknown method: 404 with -32601; a notification: 202.
    let unknown = json!({"jsonrpc":"2.0","id":5,"method":"no/such","params":{"_meta": meta}});
    let (status, v) = send(unknown, routing("no/such", None)).await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (404, json!(-32601)),
        "{v}"
    );
    let note = json!({"jsonrpc":"2.0","method":"notifications/whatever","params":{"_meta": meta}});
    let (status, _) = send(note, routing("notifications/whatever", None)).await;
    assert_eq!(status, 202);

    // The activity rows name the modern client, in its one session.
    let out = gh(&s, &["activity", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let echo: Vec<&Value> = rows.iter().filter(|r| r["tool"] == "echo").collect();
    assert_eq!(echo.len(), 2, "{rows:?}");
    assert!(
        echo.iter()
            .all(|r| r["client"] == "wire" && r["session"] == echo[0]["session"]),
        "{rows:?}"
    );
}

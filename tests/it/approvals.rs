//! Approvals end to end: a real MCP client calls through the gateway of a `gatehouse serve`
//! process; the person answers with the CLI (`approvals`, `approve`, `deny`).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

#[tokio::test]
async fn held_calls_follow_the_persons_answers() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &fx_config(&[], 2), &["fx"]).await;
    let c = Client::connect(&s, "test-client").await;

    // Read-only and unflagged: runs without asking.
    assert_eq!(
        text_of(&c.call(1, "fx__add", json!({"a": 1, "b": 2})).await),
        "3"
    );
    assert!(none_pending(&s));

    // Flagged (despite readOnlyHint): held; the request shows server, tool, client, exact arguments.
    let call = tokio::spawn({
        let c = c.clone();
        async move {
            c.call(
                2,
                "fx__echo",
                json!({"text": "hello", "n": 9_007_199_254_740_991_u64}),
            )
            .await
        }
    });
    let r = pending(&s, "fx__echo").await;
    assert_eq!(
        (r["server"].as_str(), r["tool"].as_str()),
        (Some("fx"), Some("echo"))
    );
    assert_eq!(r["client"]["name"], "test-client");
    assert_eq!(
        r["arguments"],
        json!({"text": "hello", "n": 9_007_199_254_740_991_u64})
    );
    assert!(r["expires_at"].as_u64().unwrap() > r["requested_at"].as_u64().unwrap());
    assert_eq!(r["annotations"], json!({"readOnlyHint": true}));
    let out = gh(&s, &["approve", r["id"].as_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text_of(&call.await.unwrap()), "hello");
    // Answered once only.
    let out = gh(&s, &["approve", r["id"].as_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such call"));

    // Deny with a reason: isError saying so; the side effect never happens.
    let marker = dir.path().join("touched");
    let args = json!({"path": marker});
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(3, "fx__touch", args).await }
    });
    let r = pending(&s, "fx__touch").await;
    assert!(gh(
        &s,
        &[
            "deny",
            r["id"].as_str().unwrap(),
            "--reason",
            "not in my home dir"
        ]
    )
    .status
    .success());
    let v = call.await.unwrap();
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(
        text_of(&v),
        "Denied by the user in Gatehouse: not in my home dir"
    );
    assert!(!marker.exists());

    // Nobody answers: denied by timeout, nothing ran, nothing left pending.
    let v = c.call(4, "fx__touch", json!({"path": marker})).await;
    assert_eq!(v["result"]["isError"], true);
    assert!(text_of(&v).contains("no one answered in 2 s"), "{v}");
    assert!(!marker.exists());
    assert!(none_pending(&s));

    // Session scope: this session is not asked again; another session is.
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(5, "fx__echo", json!({"text": "s1"})).await }
    });
    let r = pending(&s, "fx__echo").await;
    assert!(gh(
        &s,
        &["approve", r["id"].as_str().unwrap(), "--scope", "session"]
    )
    .status
    .success());
    assert_eq!(text_of(&call.await.unwrap()), "s1");
    assert_eq!(
        text_of(&c.call(6, "fx__echo", json!({"text": "again"})).await),
        "again"
    );
    let other = Client::connect(&s, "other").await;
    let v = other.call(7, "fx__echo", json!({"text": "x"})).await;
    assert!(
        text_of(&v).contains("no one answered"),
        "another session is asked: {v}"
    );

    // Every call above is in the activity log with its decision, who made it and the outcome.
    let deadline = Instant::now() + T;
    let rows = loop {
        let out = gh(&s, &["activity", "--json", "--limit", "20"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        if rows.len() >= 7 || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let got: Vec<(String, String, String, String)> = rows
        .iter()
        .rev()
        .map(|r| {
            let f = |k: &str| r[k].as_str().unwrap_or("").to_owned();
            (f("tool"), f("decision"), f("decided_by"), f("outcome"))
        })
        .collect();
    let want: Vec<(String, String, String, String)> = [
        ("add", "allowed", "policy", "ok"),
        ("echo", "approved_once", "person", "ok"),
        ("touch", "denied", "person", "not_run"),
        ("touch", "timed_out", "policy", "not_run"),
        ("echo", "approved_session", "person", "ok"),
        ("echo", "remembered_session", "session", "ok"),
        ("echo", "timed_out", "policy", "not_run"),
    ]
    .iter()
    .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
    .collect();
    assert_eq!(got, want);
    assert_eq!(rows.last().unwrap()["arguments"], "{\"a\":1,\"b\":2}");
    assert_eq!(rows.last().unwrap()["client"], "test-client");
    let human = String::from_utf8_lossy(&gh(&s, &["activity"]).stdout).into_owned();
    assert!(
        human.contains("fx__echo") && human.contains("approved_once"),
        "{human}"
    );
    // The same rows as CSV, filtered to one decision group: the two timed-out calls.
    let csv =
        String::from_utf8_lossy(&gh(&s, &["activity", "--csv", "--decision", "timed_out"]).stdout)
            .into_owned();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("time,time_ms,client,profile"), "{csv}");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.contains(",timed_out,policy,") && l.contains(",not_run,")),
        "{csv}"
    );
    let refused = gh(&s, &["activity", "--decision", "nonsense"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("timed_out"),
        "the error lists the groups"
    );
}

#[tokio::test]
async fn a_cancelled_request_disappears_and_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &fx_config(&[], 30), &["fx"]).await;
    let c = Client::connect(&s, "canceller").await;
    let marker = dir.path().join("never");
    let call = tokio::spawn({
        let c = c.clone();
        let args = json!({"path": marker});
        async move { c.call(41, "fx__touch", args).await }
    });
    let r = pending(&s, "fx__touch").await;
    c.post(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41}}))
        .await;
    let deadline = Instant::now() + T;
    while !none_pending(&s) {
        assert!(Instant::now() < deadline, "the request was not withdrawn");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let out = gh(&s, &["approve", r["id"].as_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "a late approve finds nothing");
    assert_eq!(
        call.await.unwrap(),
        Value::Null,
        "a cancelled call gets no answer"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "a withdrawn call never runs");

    // A client that disconnects withdraws too.
    let c2 = Client::connect(&s, "leaver").await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__touch","arguments":{"path": marker}}});
    let req = c2
        .http
        .post(&c2.url)
        .bearer_auth(&c2.token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &c2.sid)
        .body(body.to_string())
        .send();
    let _ = tokio::time::timeout(Duration::from_millis(500), req).await; // gives up: the connection drops
    let deadline = Instant::now() + T;
    while !none_pending(&s) {
        assert!(
            Instant::now() < deadline,
            "a disconnected client's request was not withdrawn"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    // Give a wrongly released call the time to show its side effect.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!marker.exists(), "a withdrawn call never runs");
}

#[tokio::test]
async fn always_survives_a_restart_until_the_definition_changes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, "Echoes text\n").unwrap();
    let cfg_v1 = fx_config(&["--spec-file", spec.to_str().unwrap()], 2);
    let s = serve(dir.path(), &cfg_v1, &["fx"]).await;
    let c = Client::connect(&s, "c").await;
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(1, "fx__echo", json!({"text": "first"})).await }
    });
    let r = pending(&s, "fx__echo").await;
    assert_eq!(r["changed"], Value::Null);
    assert!(gh(
        &s,
        &["approve", r["id"].as_str().unwrap(), "--scope", "always"]
    )
    .status
    .success());
    assert_eq!(text_of(&call.await.unwrap()), "first");
    drop(c);
    drop(s); // SIGTERM: the hub stops

    // A new hub on the same data dir remembers, for any session.
    let s = serve(dir.path(), &cfg_v1, &["fx"]).await;
    let c = Client::connect(&s, "c2").await;
    assert_eq!(
        text_of(&c.call(2, "fx__echo", json!({"text": "remembered"})).await),
        "remembered"
    );

    // The server (same command) changes the tool's description: asked again, with the change
    // shown.
    std::fs::write(&spec, "Echoes text and uploads it\n").unwrap();
    assert!(gh(&s, &["restart", "fx"]).status.success());
    let deadline = Instant::now() + T;
    loop {
        let tools = gh(&s, &["tools", "fx", "--json"]);
        let v: Value = serde_json::from_slice(&tools.stdout).unwrap_or(Value::Null);
        if v.as_array().is_some_and(|a| {
            a.iter()
                .any(|t| t["description"] == "Echoes text and uploads it")
        }) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new definition never appeared"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let c = Client::connect(&s, "c3").await;
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(3, "fx__echo", json!({"text": "changed"})).await }
    });
    let r = pending(&s, "fx__echo").await;
    assert_eq!(r["changed"]["fields"], json!(["description"]));
    assert_eq!(r["changed"]["old"]["description"], "Echoes text");
    assert_eq!(
        r["changed"]["new"]["description"],
        "Echoes text and uploads it"
    );
    let human = String::from_utf8_lossy(&gh(&s, &["approvals"]).stdout).into_owned();
    assert!(
        human.contains("definition changed") && human.contains("description"),
        "{human}"
    );
    assert!(gh(
        &s,
        &["approve", r["id"].as_str().unwrap(), "--scope", "always"]
    )
    .status
    .success());
    assert_eq!(text_of(&call.await.unwrap()), "changed");
    assert_eq!(
        text_of(
            &c.call(4, "fx__echo", json!({"text": "trusted again"}))
                .await
        ),
        "trusted again"
    );

    // Forgetting revokes it.
    let out = gh(&s, &["approvals", "--forget", "fx__echo"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("forgot 1"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v = c.call(5, "fx__echo", json!({"text": "x"})).await;
    assert!(text_of(&v).contains("no one answered"), "{v}");
}

#[tokio::test]
async fn policies_flagged_only_always_disabled_and_deny_unattended() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {
            "free": {"command": FIXTURE, "tools": {"echo": {"requires_approval": true}, "pid": {"enabled": false}},
                     "sandbox": {"write": [dir.path()]}},
            "strict": {"command": FIXTURE, "tools": {"add": {"requires_approval": false}}}
        },
        "approval": {"default": "flagged-only", "timeout_secs": 1}
    });
    let s = serve(dir.path(), &cfg.to_string(), &["free", "strict"]).await;
    let c = Client::connect(&s, "p").await;
    let marker = dir.path().join("m");
    // flagged-only: an unflagged destructive tool runs; a flagged one asks.
    assert!(
        text_of(&c.call(1, "free__touch", json!({"path": marker})).await).starts_with("created")
    );
    assert!(
        text_of(&c.call(2, "free__echo", json!({"text": "x"})).await).contains("no one answered")
    );
    // enabled: false: hidden and refused.
    let list = c
        .post(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}))
        .await;
    assert!(
        !list.contains("free__pid") && list.contains("free__echo"),
        "{list}"
    );
    let v = c.call(4, "free__pid", json!({})).await;
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(text_of(&v).contains("disabled"), "{v}");
    // A call to a stopped server is refused too; both refusals are in the activity log.
    assert!(gh(&s, &["stop", "strict"]).status.success());
    let v = c.call(41, "strict__add", json!({"a": 1, "b": 1})).await;
    assert!(text_of(&v).contains("is stopped"), "{v}");
    let rows: Vec<Value> = serde_json::from_slice(&gh(&s, &["activity", "--json"]).stdout).unwrap();
    let has = |server: &str, tool: &str, decision: &str| {
        rows.iter().any(|r| {
            r["server"] == server
                && r["tool"] == tool
                && r["decision"] == decision
                && r["outcome"] == "not_run"
        })
    };
    assert!(has("free", "pid", "disabled"), "{rows:?}");
    assert!(has("strict", "add", "not_running"), "{rows:?}");
    drop(s);

    // always: even read-only tools ask, unless flagged free.
    let mut cfg2 = cfg.clone();
    cfg2["approval"]["default"] = json!("always");
    std::fs::write(dir.path().join("gatehouse.json"), cfg2.to_string()).unwrap();
    let s = serve(dir.path(), &cfg2.to_string(), &["free", "strict"]).await;
    let c = Client::connect(&s, "p").await;
    assert!(
        text_of(&c.call(5, "strict__echo", json!({"text": "x"})).await).contains("no one answered")
    );
    assert_eq!(
        text_of(&c.call(6, "strict__add", json!({"a": 2, "b": 2})).await),
        "4"
    );
    drop(s);

    // --deny-unattended: held calls are denied at once.
    let dir2 = tempfile::tempdir().unwrap();
    let cfg3 = fx_config(&[], 30);
    std::fs::write(dir2.path().join("gatehouse.json"), &cfg3).unwrap();
    let sock = dir2.path().join("c.sock");
    let mut child = Command::new(GATEHOUSE)
        .args([
            "serve",
            "--deny-unattended",
            "--listen",
            "127.0.0.1:0",
            "--config",
            dir2.path().join("gatehouse.json").to_str().unwrap(),
            "--data-dir",
            dir2.path().join("d").to_str().unwrap(),
        ])
        .env("GATEHOUSE_CONTROL", &sock)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = gatehouse::control::ControlClient::new(sock.clone());
    let deadline = Instant::now() + T;
    let info = loop {
        if let Ok(r) = client
            .call(&gatehouse::control::Request::Gateway { client: None })
            .await
        {
            if let Some(v) = r.result {
                break serde_json::from_value::<gatehouse::control::GatewayInfo>(v).unwrap();
            }
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let c = Client::connect_to(&info, "u").await;
    let t = Instant::now();
    let mut v = Value::Null;
    while Instant::now() < deadline {
        v = c.call(1, "fx__echo", json!({"text": "x"})).await;
        if !text_of(&v).contains("is starting") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Who denied is said: no one answered; the person never saw it.
    assert!(text_of(&v).contains("--deny-unattended"), "{v}");
    assert!(text_of(&v).contains("no one answered"), "{v}");
    assert!(!text_of(&v).contains("Denied by the user"), "{v}");
    assert!(t.elapsed() < Duration::from_secs(10));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
}

#[tokio::test]
async fn the_gateway_token_reaches_nothing_approval_related() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &fx_config(&[], 30), &["fx"]).await;
    let c = Client::connect(&s, "nosy").await;
    for method in [
        "approvals/list",
        "approvals/approve",
        "gatehouse/approve",
        "approve",
    ] {
        let v: Value = serde_json::from_str(
            &c.post(json!({"jsonrpc":"2.0","id":1,"method":method,"params":{"id":"apr-1"}}))
                .await,
        )
        .unwrap();
        assert_eq!(v["error"]["code"], -32601, "{method}: {v}");
    }
    for path in ["/approvals", "/approve", "/control", "/mcp/approvals"] {
        let url = s.info.url.replace("/mcp", path);
        let r = c
            .http
            .get(&url)
            .bearer_auth(&s.info.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{path}");
        let r = c
            .http
            .post(&url)
            .bearer_auth(&s.info.token)
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{path}");
    }
}

#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn real_filesystem_server_writes_only_with_approval() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let fs_bin = peers_dir().join("npm/node_modules/.bin/mcp-server-filesystem");
    let cfg = json!({"servers": {"fs": {"command": fs_bin, "args": [scratch]}}, "approval": {"timeout_secs": 2}});
    let s = serve(dir.path(), &cfg.to_string(), &["fs"]).await;
    let c = Client::connect(&s, "agent").await;
    let file = |n: &str| scratch.join(n);
    let write = |id: u64, name: &str| {
        let c = c.clone();
        let path = file(name);
        tokio::spawn(async move {
            c.call(id, "fs__write_file", json!({"path": path, "content": "hi"}))
                .await
        })
    };

    // write_file (destructive) waits; approve → it runs and the file appears.
    let call = write(1, "approved.txt");
    let r = pending(&s, "fs__write_file").await;
    assert_eq!(r["arguments"]["content"], "hi");
    assert!(gh(&s, &["approve", r["id"].as_str().unwrap()])
        .status
        .success());
    let v = call.await.unwrap();
    assert_ne!(v["result"]["isError"], true, "{v}");
    assert_eq!(std::fs::read_to_string(file("approved.txt")).unwrap(), "hi");

    // deny --reason → isError with the reason, no file.
    let call = write(2, "denied.txt");
    let r = pending(&s, "fs__write_file").await;
    assert!(gh(
        &s,
        &[
            "deny",
            r["id"].as_str().unwrap(),
            "--reason",
            "wrong folder"
        ]
    )
    .status
    .success());
    assert_eq!(
        text_of(&call.await.unwrap()),
        "Denied by the user in Gatehouse: wrong folder"
    );
    assert!(!file("denied.txt").exists());

    // timeout → isError, no file.
    let v = write(3, "late.txt").await.unwrap();
    assert!(text_of(&v).contains("no one answered in 2 s"), "{v}");
    assert!(!file("late.txt").exists());

    // The client cancels while pending → the request disappears; a late approve changes nothing.
    let call = write(4, "cancelled.txt");
    let r = pending(&s, "fs__write_file").await;
    c.post(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}))
        .await;
    let deadline = Instant::now() + T;
    while !none_pending(&s) {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert_eq!(
        gh(&s, &["approve", r["id"].as_str().unwrap()])
            .status
            .code(),
        Some(1)
    );
    let _ = call.await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!file("cancelled.txt").exists());

    // read_text_file (read-only) runs without asking under the default policy.
    let v = c
        .call(
            5,
            "fs__read_text_file",
            json!({"path": file("approved.txt")}),
        )
        .await;
    assert_eq!(text_of(&v), "hi");
    assert!(none_pending(&s));
}

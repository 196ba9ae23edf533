//! Approvals end to end: a real MCP client calls through the gateway of a `gatehouse serve`
//! process; the person answers with the CLI (`approvals`, `approve`, `deny`).

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

pub(crate) const T: Duration = Duration::from_secs(20);

/// A 2025 client session over HTTP: the one helper (`support::Mcp`).
pub(crate) use crate::support::Mcp as Client;

pub(crate) fn text_of(v: &Value) -> String {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

pub(crate) fn gh(s: &Served, args: &[&str]) -> Output {
    Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", &s.sock)
        .output()
        .unwrap()
}

/// Waits until `approvals --json` lists at least one request for `tool`; returns it.
pub(crate) async fn pending(s: &Served, exposed: &str) -> Value {
    let deadline = Instant::now() + T;
    loop {
        let out = gh(s, &["approvals", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let list: Value = serde_json::from_slice(&out.stdout).unwrap();
        if let Some(r) = list
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["exposed"] == exposed)
        {
            return r.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no approval request for {exposed}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

pub(crate) fn none_pending(s: &Served) -> bool {
    let out = gh(s, &["approvals", "--json"]);
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .is_empty()
}

fn fx_config(extra_args: &[&str], timeout_secs: u64) -> String {
    json!({
        "servers": {"fx": {"command": FIXTURE, "args": extra_args, "tools": {"echo": {"requires_approval": true}}}},
        "approval": {"default": "ask-unless-read-only", "timeout_secs": timeout_secs}
    })
    .to_string()
}

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
                json!({"text": "hello", "n": 12345678901234567890u64}),
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
        json!({"text": "hello", "n": 12345678901234567890u64})
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
    assert!(String::from_utf8_lossy(&out.stderr).contains("no pending approval"));

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
        ("echo", "approved_once", "cli", "ok"),
        ("touch", "denied", "cli", "not_run"),
        ("touch", "timed_out", "policy", "not_run"),
        ("echo", "approved_session", "cli", "ok"),
        ("echo", "remembered_session", "policy", "ok"),
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

/// Random interleavings of calls, answers, timeouts, cancels and restarts (seeded, so a
/// failure names its seed): a gated tool never runs without a matching approval, and every
/// call that was not cancelled gets exactly one answer.
#[tokio::test]
async fn random_interleavings_never_run_a_gated_call_without_approval() {
    let mut runs = tokio::task::JoinSet::new();
    for seed in 1..=12u64 {
        runs.spawn(interleaving(seed));
    }
    while let Some(r) = runs.join_next().await {
        r.unwrap();
    }
}

async fn interleaving(seed: u64) {
    use gatehouse::approval::{Answer, Decider, Scope};
    use gatehouse::gateway::{Gateway, Out, Outcome};
    use std::collections::{HashMap, HashSet};
    use std::sync::{Arc, Mutex};

    let mut rng = fastrand::Rng::with_seed(seed);
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {"fx": fixture(&[])}, "approval": {"default": "always", "timeout_secs": 1}});
    let th = TestHub::start(&cfg.to_string());
    wait_state(&th.server("fx"), gatehouse::State::Running, T).await;
    let gw = Gateway::new(th.hub.clone());
    gw.refresh_catalog();
    let session = gw.open_session();
    let broker = th.hub.approvals().clone();
    // call number → how many final answers it got
    let finals: Arc<Mutex<HashMap<u64, u32>>> = Arc::default();
    let mut approved: HashSet<u64> = HashSet::new();
    let mut cancelled: HashSet<u64> = HashSet::new();
    let mut calls: Vec<u64> = Vec::new();
    let marker = |i: u64| dir.path().join(format!("call-{i}"));
    let call_of = |r: &gatehouse::approval::ApprovalRequest| -> Option<u64> {
        let v: Value = serde_json::from_str(r.arguments.get()).ok()?;
        v["path"].as_str()?.rsplit('-').next()?.parse().ok()
    };
    let mut log = Vec::new();
    for step in 0..14 {
        match rng.u8(0..10) {
            0..=3 => {
                let i = step as u64;
                calls.push(i);
                let msg = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"fx__touch","arguments":{"path": marker(i)}}});
                let out = gw.handle_bytes(&session, msg.to_string().as_bytes()).await;
                let finals = finals.clone();
                finals.lock().unwrap().insert(i, 0);
                match out {
                    Outcome::Stream(mut rx) => {
                        tokio::spawn(async move {
                            while let Some(o) = rx.recv().await {
                                if let Out::Final(_) = o {
                                    *finals.lock().unwrap().entry(i).or_default() += 1;
                                }
                            }
                        });
                    }
                    Outcome::Reply(_) => *finals.lock().unwrap().entry(i).or_default() += 1,
                    Outcome::Accepted => {}
                }
                log.push(format!("call {i}"));
            }
            4 | 5 => {
                let pending = broker.pending();
                if let Some(r) = pending.get(rng.usize(0..pending.len().max(1))) {
                    if broker
                        .answer(&r.id, Answer::Allow(Scope::Once), Decider::Cli)
                        .is_ok()
                    {
                        if let Some(i) = call_of(r) {
                            approved.insert(i);
                            log.push(format!("approve {i}"));
                        }
                    }
                }
            }
            6 => {
                let pending = broker.pending();
                if let Some(r) = pending.get(rng.usize(0..pending.len().max(1))) {
                    let _ = broker.answer(&r.id, Answer::Deny(Some("no".into())), Decider::Cli);
                    log.push(format!("deny {:?}", call_of(r)));
                }
            }
            7 => {
                if let Some(&i) = calls.get(rng.usize(0..calls.len().max(1))) {
                    let msg = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": i}});
                    let _ = gw.handle_bytes(&session, msg.to_string().as_bytes()).await;
                    cancelled.insert(i);
                    log.push(format!("cancel {i}"));
                }
            }
            8 => {
                let _ = th.server("fx").restart().await;
                log.push("restart".into());
            }
            _ => {
                let ms = rng.u64(0..400);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                log.push(format!("sleep {ms}"));
            }
        }
    }
    // Let everything settle: held calls time out after 1 s.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let done = calls.iter().all(|i| {
            cancelled.contains(i) || finals.lock().unwrap().get(i).copied().unwrap_or(0) >= 1
        });
        if done && broker.pending().is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: calls never settled; {log:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for &i in &calls {
        let n = finals.lock().unwrap().get(&i).copied().unwrap_or(0);
        assert!(n <= 1, "seed {seed}: call {i} got {n} answers; {log:?}");
        if !cancelled.contains(&i) {
            assert_eq!(n, 1, "seed {seed}: call {i} got no answer; {log:?}");
        }
        if marker(i).exists() {
            assert!(
                approved.contains(&i),
                "seed {seed}: call {i} ran without approval; {log:?}"
            );
        }
    }
    gw.shutdown().await;
    th.hub.shutdown().await;
}

#[tokio::test]
async fn secret_values_in_arguments_are_stored_redacted() {
    use gatehouse::gateway::{Gateway, Out, Outcome};
    let secret = "sk-live-0123456789abcdef";
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {"fx": {"command": FIXTURE, "env": {"API_KEY": {"secret": "api-key"}}}},
        "approval": {"default": "flagged-only"}
    });
    let config = gatehouse::Config::parse(&cfg.to_string(), "t".as_ref()).unwrap();
    let mut opts = gatehouse::HubOptions::new(dir.path().to_owned());
    // The keychain store arrives with the secrets issue; the in-memory one stands in here.
    opts.secrets = std::sync::Arc::new(gatehouse::secrets::MemorySecretStore(
        [("api-key".to_owned(), secret.to_owned())].into(),
    ));
    let hub = gatehouse::Hub::start(config, opts);
    wait_state(&hub.server("fx").unwrap(), gatehouse::State::Running, T).await;
    let gw = Gateway::new(hub.clone());
    gw.refresh_catalog();
    let session = gw.open_session();
    let call = |id: u64, tool: &str, args: Value| {
        let gw = gw.clone();
        let session = session.clone();
        let msg = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}).to_string();
        async move {
            let Outcome::Stream(mut rx) = gw.handle_bytes(&session, msg.as_bytes()).await else {
                panic!("not forwarded")
            };
            let mut last = Vec::new();
            while let Some(o) = rx.recv().await {
                if let Out::Final(l) = o {
                    last = l;
                }
            }
            String::from_utf8(last).unwrap()
        }
    };
    // The child got the value in its env (results pass through untouched).
    assert!(call(1, "fx__getenv", json!({"name": "API_KEY"}))
        .await
        .contains(secret));
    // A call whose arguments carry the value.
    call(
        2,
        "fx__echo",
        json!({"text": format!("use {secret} please")}),
    )
    .await;
    let deadline = Instant::now() + T;
    let rows = loop {
        let rows = hub.activity().recent(10, None).await.unwrap();
        if rows.len() >= 2 || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0].arguments,
        "{\"text\":\"use [secret:api-key] please\"}"
    );
    assert!(rows.iter().all(|r| !r.arguments.contains(secret)));

    // An approver never sees the value either: a held call's request shows it masked.
    let mut cfg2 = hub.config().as_ref().clone();
    cfg2.approval.default = gatehouse::config::ApprovalDefault::Always;
    cfg2.approval.timeout_secs = 30;
    hub.apply_config(cfg2).await.unwrap();
    let mut events = hub.events();
    let held = tokio::spawn(call(
        3,
        "fx__echo",
        json!({"text": format!("again {secret}")}),
    ));
    let request = loop {
        match tokio::time::timeout(T, events.recv())
            .await
            .unwrap()
            .unwrap()
        {
            gatehouse::events::Event::ApprovalRequested(r) => break r,
            _ => continue,
        }
    };
    assert_eq!(
        request.arguments.get(),
        "{\"text\":\"again [secret:api-key]\"}"
    );
    hub.approvals()
        .answer(
            &request.id,
            gatehouse::approval::Answer::Deny(None),
            gatehouse::approval::Decider::Cli,
        )
        .unwrap();
    let _ = held.await;
    gw.shutdown().await;
    hub.shutdown().await;
    for f in ["activity.db", "activity.db-wal"] {
        let bytes = std::fs::read(dir.path().join(f)).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "{f} holds the raw value"
        );
    }
}

/// An answer given through the control socket is recorded with the process that gave it (pid and
/// executable, from the socket's peer credentials): the person's CLI is told apart from any
/// other program speaking the protocol.
#[tokio::test]
async fn an_answer_through_the_control_socket_records_the_process_that_gave_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &fx_config(&[], 30), &["fx"]).await;
    let c = Client::connect(&s, "recorder").await;
    // 1. The gatehouse CLI allows.
    let call = {
        let c = Client::connect(&s, "recorder").await;
        tokio::spawn(async move { c.call(1, "fx__echo", json!({"text": "one"})).await })
    };
    let r = pending(&s, "fx__echo").await;
    assert!(gh(&s, &["approve", r["id"].as_str().unwrap()])
        .status
        .success());
    call.await.unwrap();
    // 2. Another program on the socket denies.
    let call = tokio::spawn(async move { c.call(2, "fx__echo", json!({"text": "two"})).await });
    let r = pending(&s, "fx__echo").await;
    let script = r#"
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall((json.dumps({"verb": "deny", "id": sys.argv[2]}) + "\n").encode())
print(s.recv(65536).decode())
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            script,
            s.sock.to_str().unwrap(),
            r["id"].as_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"ok\":true"));
    call.await.unwrap();
    let deadline = Instant::now() + T;
    let rows = loop {
        let out = gh(&s, &["activity", "--json"]);
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        if rows.len() >= 2 || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let via = |decision: &str| {
        rows.iter()
            .find(|r| r["decision"] == decision)
            .and_then(|r| r["decided_via"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let cli = via("approved_once");
    assert!(cli.starts_with("pid ") && cli.ends_with(GATEHOUSE), "{cli}");
    let other = via("denied");
    assert!(
        other.starts_with("pid ") && other.contains("python3"),
        "{other}"
    );
}

/// A database locked for a while by another process (or a full disk) is not taken for corrupt:
/// the records wait and land once it can be written; nothing is moved aside or lost.
#[tokio::test]
async fn a_busy_activity_database_is_retried_not_moved_aside() {
    use gatehouse::gateway::{Gateway, Out, Outcome};
    let cfg = json!({"servers": {"fx": fixture(&[])}, "approval": {"default": "flagged-only"}});
    let th = TestHub::start(&cfg.to_string());
    wait_state(&th.server("fx"), gatehouse::State::Running, T).await;
    let gw = Gateway::new(th.hub.clone());
    gw.refresh_catalog();
    let session = gw.open_session();
    let call = |i: u64| {
        let (gw, session) = (gw.clone(), session.clone());
        async move {
            let msg = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"x"}}}).to_string();
            if let Outcome::Stream(mut rx) = gw.handle_bytes(&session, msg.as_bytes()).await {
                while let Some(o) = rx.recv().await {
                    if let Out::Final(_) = o {
                        break;
                    }
                }
            }
        }
    };
    call(0).await;
    let db = th.dir.path().join("activity.db");
    let deadline = Instant::now() + T;
    while th.hub.activity().recent(10, None).await.unwrap().is_empty() {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Another process holds the database for 4.5 s while calls go on.
    let locker = std::thread::spawn({
        let db = db.clone();
        move || {
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.execute_batch("BEGIN EXCLUSIVE;").unwrap();
            std::thread::sleep(Duration::from_millis(4500));
            conn.execute_batch("COMMIT;").unwrap();
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 1..=10 {
        call(i).await;
    }
    locker.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let rows = loop {
        let rows = th.hub.activity().recent(100, None).await;
        if rows.as_ref().is_ok_and(|r| r.len() >= 11) || Instant::now() > deadline {
            break rows.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(rows.len(), 11, "records were lost");
    let aside: Vec<_> = std::fs::read_dir(th.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
        .collect();
    assert!(
        aside.is_empty(),
        "a sound database was moved aside: {aside:?}"
    );
    gw.shutdown().await;
    th.hub.shutdown().await;
}

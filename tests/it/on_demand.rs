//! Start on first use: an on-demand server runs only while it is used — no process at a launch
//! where its tools are known, its tools listed all the same, a call answered after it starts,
//! the process gone after its idle time; a definition changed while it was idle is asked about
//! again before anything runs.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

/// The pids of processes whose environment holds `mark` (the one server started with it).
fn processes_marked(mark: &str) -> Vec<u32> {
    let needle = format!("ON_DEMAND_MARK={mark}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}

fn status_of(s: &Served, id: &str) -> Value {
    let all: Value = serde_json::from_slice(&gh(s, &["status", "--json"]).stdout).unwrap();
    all.as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == id).cloned())
        .unwrap_or(Value::Null)
}

async fn until_state(s: &Served, id: &str, state: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let st = status_of(s, id);
        if st["state"] == state {
            return st;
        }
        assert!(Instant::now() < deadline, "{id} never {state}: {st}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn config(spec: &Path, mark: &str) -> String {
    json!({
        "servers": {
            "lazy": {"command": FIXTURE, "args": ["--spec-file", spec.to_str().unwrap()],
                     "env": {"ON_DEMAND_MARK": mark},
                     "start": "on_demand", "idle_stop_secs": 2,
                     "tools": {"echo": {"requires_approval": true}}},
            "eager": {"command": FIXTURE}
        },
        "approval": {"default": "flagged-only", "timeout_secs": 20}
    })
    .to_string()
}

/// No process before the first call (its tools known from the last run), the tools listed, the
/// call answered, the process gone after the idle time; `status --json` says `idle` and
/// `on_demand`.
#[tokio::test]
async fn an_on_demand_server_runs_only_while_it_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("m{}", std::process::id());
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, "Echoes the text\n").unwrap();
    // First run: its tools are not known yet, so it starts once to learn them, then idles.
    {
        let s = serve(dir.path(), &config(&spec, &mark), &["eager"]).await;
        let st = until_state(&s, "lazy", "idle", T).await;
        assert_eq!(st["start"], "on_demand", "{st}");
        assert!(st["tools"].as_u64().unwrap() > 0, "{st}");
    }
    // Next login: nothing of it runs, its tools are offered all the same.
    let s = serve(dir.path(), &config(&spec, &mark), &["eager"]).await;
    let st = until_state(&s, "lazy", "idle", T).await;
    assert!(st["pid"].is_null(), "{st}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        processes_marked(&mark).is_empty(),
        "it runs before any call"
    );
    let c = Client::connect(&s, "c").await;
    let list = c
        .post(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
        .await;
    assert!(list.contains("lazy__add"), "{list}");
    // The first call waits for it and is answered.
    let v = c.call(2, "lazy__add", json!({"a": 2, "b": 3})).await;
    assert_eq!(text_of(&v), "5", "{v}");
    let st = status_of(&s, "lazy");
    assert_eq!(st["state"], "running", "{st}");
    assert_eq!(processes_marked(&mark).len(), 1);
    // Idle for its idle time: stopped, no process.
    until_state(&s, "lazy", "idle", Duration::from_secs(15)).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_marked(&mark).is_empty() {
        assert!(
            Instant::now() < deadline,
            "its process outlived the idle stop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A call in flight keeps it running past its idle time.
    let slow = tokio::spawn({
        let c = c.clone();
        async move { c.call(3, "lazy__sleep", json!({"ms": 3500})).await }
    });
    until_state(&s, "lazy", "running", T).await;
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(status_of(&s, "lazy")["state"], "running");
    let v = slow.await.unwrap();
    assert!(v["result"]["isError"] != true, "{v}");
}

/// "Always" covers the definition the person saw: the server changes it while idle, and the
/// next call, which starts it, is asked about again — nothing runs on the old answer.
#[tokio::test]
async fn a_definition_changed_while_idle_is_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("d{}", std::process::id());
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, "Echoes the text\n").unwrap();
    let s = serve(dir.path(), &config(&spec, &mark), &["eager"]).await;
    until_state(&s, "lazy", "idle", T).await;
    let c = Client::connect(&s, "c").await;
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(1, "lazy__echo", json!({"text": "one"})).await }
    });
    let first = pending(&s, "lazy__echo").await;
    let out = gh(
        &s,
        &[
            "approve",
            first["id"].as_str().unwrap(),
            "--scope",
            "always",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text_of(&call.await.unwrap()), "one");
    // Idle again; meanwhile the same program describes the tool differently.
    until_state(&s, "lazy", "idle", Duration::from_secs(15)).await;
    std::fs::write(&spec, "Echoes the text and mails it to a stranger\n").unwrap();
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(2, "lazy__echo", json!({"text": "two"})).await }
    });
    let again = pending(&s, "lazy__echo").await;
    assert_eq!(again["reason"], "changed", "{again}");
    assert!(!call.is_finished(), "the call ran on the old answer");
    let out = gh(
        &s,
        &["approve", again["id"].as_str().unwrap(), "--scope", "once"],
    );
    assert!(out.status.success());
    assert_eq!(text_of(&call.await.unwrap()), "two");
}

/// A client that stops waiting while an idle server starts for its call gets no call made for
/// it: nothing is asked of the person and nothing runs once the server is up.
#[tokio::test]
async fn a_call_given_up_while_its_server_starts_is_not_made() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({
        "servers": {
            "slow": {"command": FIXTURE, "args": ["--slow-start", "2500"],
                     "start": "on_demand", "tools": {"echo": {"requires_approval": true}}}
        },
        "approval": {"default": "flagged-only", "timeout_secs": 20}
    })
    .to_string();
    // First run: it starts once to learn its tools, then idles.
    {
        let s = serve(dir.path(), &config, &[]).await;
        until_state(&s, "slow", "idle", T).await;
    }
    let s = serve(dir.path(), &config, &[]).await;
    until_state(&s, "slow", "idle", T).await;
    let c = Client::connect(&s, "c").await;
    // The client gives up half a second into the server's start.
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
                      "params":{"name":"slow__echo","arguments":{"text":"given up"}}});
    let gave_up = tokio::time::timeout(Duration::from_millis(500), c.post(call)).await;
    assert!(
        gave_up.is_err(),
        "answered before the server started: {gave_up:?}"
    );
    until_state(&s, "slow", "running", T).await;
    // Had the call gone on, it would wait for the person now.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let waiting: Value = serde_json::from_slice(&gh(&s, &["approvals", "--json"]).stdout).unwrap();
    assert_eq!(
        waiting,
        json!([]),
        "a call nobody waits for was put to the person"
    );
}

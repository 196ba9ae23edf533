//! What an answer covers: a held call runs only if, at the moment it would run, its tool is still
//! listed, enabled and defined as the person saw it; a tool that appears on a server already
//! known is not believed about itself (`readOnlyHint`) until the person has allowed it once;
//! pins belong to the program that was listed and never grow past what it lists.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

fn config(spec: &Path, touch: Value, extra_args: &[&str]) -> Value {
    let mut args = vec!["--spec-file", spec.to_str().unwrap()];
    args.extend_from_slice(extra_args);
    json!({
        "servers": {"fx": {"command": FIXTURE, "args": args, "tools": {"touch": touch},
                           "sandbox": {"write": [spec.parent().unwrap()]}}},
        "approval": {"default": "ask-unless-read-only", "timeout_secs": 20}
    })
}

/// Applies a new config through `gatehouse reload`.
fn reload(s: &Served, dir: &Path, cfg: &Value) {
    std::fs::write(dir.join("gatehouse.json"), cfg.to_string()).unwrap();
    let out = gh(s, &["reload"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits until the gateway's tool list satisfies `ok`.
async fn until_listed(c: &Client, ok: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + T;
    loop {
        let list = c
            .post(json!({"jsonrpc":"2.0","id":900,"method":"tools/list"}))
            .await;
        if ok(&list) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never listed as expected: {list}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn approve(s: &Served, r: &Value, scope: &str) {
    let out = gh(s, &["approve", r["id"].as_str().unwrap(), "--scope", scope]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A call the person allows after its tool was disabled, or its server removed, while it waited
/// does not run: it is refused with the reason and recorded as such.
#[tokio::test]
async fn an_allowed_call_runs_only_if_its_tool_is_still_allowed_when_it_would_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, "Echoes\n").unwrap();
    let ask = json!({"requires_approval": true});
    let s = serve(
        dir.path(),
        &config(&spec, ask.clone(), &[]).to_string(),
        &["fx"],
    )
    .await;
    let c = Client::connect(&s, "c").await;
    let marker = dir.path().join("disabled-meanwhile");
    let call = tokio::spawn({
        let (c, m) = (c.clone(), marker.clone());
        async move { c.call(1, "fx__touch", json!({"path": m})).await }
    });
    let r = pending(&s, "fx__touch").await;
    reload(
        &s,
        dir.path(),
        &config(
            &spec,
            json!({"requires_approval": true, "enabled": false}),
            &[],
        ),
    );
    until_listed(&c, |l| !l.contains(r#""name":"touch""#)).await;
    approve(&s, &r, "once");
    let v = call.await.unwrap();
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(
        text_of(&v).contains("disabled or removed while the call waited"),
        "{v}"
    );
    assert!(!marker.exists(), "a disabled tool ran");

    // Removed server.
    reload(&s, dir.path(), &config(&spec, ask.clone(), &[]));
    until_listed(&c, |l| l.contains(r#""name":"touch""#)).await;
    let marker = dir.path().join("removed-meanwhile");
    let call = tokio::spawn({
        let (c, m) = (c.clone(), marker.clone());
        async move { c.call(2, "fx__touch", json!({"path": m})).await }
    });
    let r = pending(&s, "fx__touch").await;
    reload(&s, dir.path(), &json!({"servers": {}}));
    until_listed(&c, |l| !l.contains(r#""name":"touch""#)).await;
    approve(&s, &r, "once");
    let v = call.await.unwrap();
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(!marker.exists(), "a removed server's tool ran");
    let rows: Vec<Value> = serde_json::from_slice(&gh(&s, &["activity", "--json"]).stdout).unwrap();
    let refused = rows
        .iter()
        .filter(|r| r["tool"] == "touch" && r["outcome"] == "not_run")
        .count();
    assert_eq!(refused, 2, "{rows:?}");
}

/// The person's answer covers the definition they were shown: if the server changes it while
/// the call waits, nothing runs until the person is asked again, with the change; then it runs.
#[tokio::test]
async fn an_answer_covers_only_the_definition_the_person_saw() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, "Echoes the text\n").unwrap();
    let cfg = json!({
        "servers": {"fx": {"command": FIXTURE, "args": ["--spec-file", spec.to_str().unwrap()], "tools": {"echo": {"requires_approval": true}}}},
        "approval": {"default": "ask-unless-read-only", "timeout_secs": 20}
    });
    let s = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let c = Client::connect(&s, "c").await;
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(1, "fx__echo", json!({"text": "hi"})).await }
    });
    let first = pending(&s, "fx__echo").await;
    assert_eq!(first["description"], "Echoes the text");
    // While it waits, the same program now describes the tool differently.
    std::fs::write(&spec, "Echoes the text and mails it to a stranger\n").unwrap();
    assert!(gh(&s, &["restart", "fx"]).status.success());
    until_listed(&c, |l| l.contains("mails it to a stranger")).await;
    approve(&s, &first, "once");
    // Asked again, showing what changed; nothing ran meanwhile.
    let deadline = Instant::now() + T;
    let again = loop {
        let r = pending(&s, "fx__echo").await;
        if r["id"] != first["id"] {
            break r;
        }
        assert!(Instant::now() < deadline, "never asked again");
        tokio::time::sleep(Duration::from_millis(30)).await;
    };
    assert!(
        !call.is_finished(),
        "the call ran on an answer to another definition"
    );
    assert_eq!(
        again["changed"]["fields"],
        json!(["description"]),
        "{again}"
    );
    assert_eq!(again["reason"], "changed", "{again}");
    assert_eq!(
        again["changed"]["new"]["description"],
        "Echoes the text and mails it to a stranger"
    );
    approve(&s, &again, "once");
    assert_eq!(text_of(&call.await.unwrap()), "hi");
    assert!(none_pending(&s));
    // The row says how much of the call's time was spent waiting for the person.
    let rows: Value = serde_json::from_slice(&gh(&s, &["activity", "--json"]).stdout).unwrap();
    let row = &rows[0];
    let (waited, total) = (
        row["waited_ms"].as_u64().unwrap(),
        row["duration_ms"].as_u64().unwrap(),
    );
    assert!(waited > 0 && waited <= total, "{row}");
}

/// A tool that appears on an already-listed server is not believed when it says it only reads:
/// it asks until the person has allowed it once. A server's first listing is taken as it is; a
/// changed command is another program, so its "always" answers no longer apply.
#[tokio::test]
async fn new_tools_on_a_known_server_ask_until_allowed_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, "Echoes\nlook\n").unwrap();
    let cfg = config(&spec, json!({"requires_approval": true}), &[]);
    let s = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let c = Client::connect(&s, "c").await;
    // First listing: `look` says read-only and runs.
    let m = dir.path().join("look");
    let v = c.call(1, "fx__look", json!({"path": m})).await;
    assert!(text_of(&v).starts_with("look created"), "{v}");
    // `look` disappears; `peek` appears claiming the same: held, not run.
    std::fs::write(&spec, "Echoes\npeek\n").unwrap();
    assert!(gh(&s, &["restart", "fx"]).status.success());
    until_listed(&c, |l| l.contains(r#""name":"peek""#)).await;
    let m = dir.path().join("peek");
    let call = tokio::spawn({
        let (c, m) = (c.clone(), m.clone());
        async move { c.call(2, "fx__peek", json!({"path": m})).await }
    });
    let r = pending(&s, "fx__peek").await;
    assert_eq!(r["reason"], "new_tool", "{r}");
    assert!(!m.exists());
    approve(&s, &r, "once");
    assert!(text_of(&call.await.unwrap()).starts_with("peek created"));
    // Seen once: its annotation counts from now on.
    std::fs::remove_file(&m).unwrap();
    let v = c.call(3, "fx__peek", json!({"path": m})).await;
    assert!(text_of(&v).starts_with("peek created"), "{v}");
    // The pin of `look`, no longer listed, is gone from the store (written off the async
    // threads: within moments).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let store = loop {
        let store = std::fs::read_to_string(dir.path().join("data/approvals.json")).unwrap();
        if (!store.contains("fx/look") && store.contains("fx/peek"))
            || std::time::Instant::now() > deadline
        {
            break store;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        !store.contains("fx/look") && store.contains("fx/peek"),
        "{store}"
    );

    // "always" for touch, then the command changes: another program, asked again.
    let call = tokio::spawn({
        let (c, m) = (c.clone(), dir.path().join("t1"));
        async move { c.call(4, "fx__touch", json!({"path": m})).await }
    });
    let r = pending(&s, "fx__touch").await;
    assert_eq!(r["reason"], "flagged", "{r}");
    approve(&s, &r, "always");
    // A tool with no flag and no read-only claim asks because of that.
    let add = tokio::spawn({
        let c = c.clone();
        async move { c.call(40, "fx__sleep", json!({"ms": 1})).await }
    });
    let r = pending(&s, "fx__sleep").await;
    assert_eq!(r["reason"], "not_read_only", "{r}");
    approve(&s, &r, "once");
    assert_eq!(text_of(&add.await.unwrap()), "slept 1 ms");
    assert!(text_of(&call.await.unwrap()).starts_with("created"));
    let v = c
        .call(5, "fx__touch", json!({"path": dir.path().join("t2")}))
        .await;
    assert!(text_of(&v).starts_with("created"), "always applies: {v}");
    reload(
        &s,
        dir.path(),
        &config(&spec, json!({"requires_approval": true}), &["--tools", "1"]),
    );
    until_listed(&c, |l| l.contains(r#""name":"tool_0""#)).await;
    let call = tokio::spawn({
        let (c, m) = (c.clone(), dir.path().join("t3"));
        async move { c.call(6, "fx__touch", json!({"path": m})).await }
    });
    let r = pending(&s, "fx__touch").await;
    assert!(!dir.path().join("t3").exists());
    approve(&s, &r, "once");
    assert!(text_of(&call.await.unwrap()).starts_with("created"));
}

/// A tool whose server marks it as needing a person (`_meta` `anthropic/requiresUserInteraction:
/// true`) asks as if flagged — under `flagged-only`, and though it says it only reads — naming
/// the server as why and where the call goes; a flag of yours (`requires_approval: false`) runs
/// it unasked.
#[tokio::test]
async fn a_server_asking_for_a_person_is_asked_for_unless_your_config_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {
            "fx": {"command": FIXTURE, "args": ["--asks-person"]},
            "trusted": {"command": FIXTURE, "args": ["--asks-person"], "tools": {"confirm": {"requires_approval": false}}}
        },
        "approval": {"default": "flagged-only", "timeout_secs": 20}
    });
    let s = serve(dir.path(), &cfg.to_string(), &["fx", "trusted"]).await;
    let c = Client::connect(&s, "c").await;
    let v = c.call(1, "trusted__confirm", json!({"text": "go"})).await;
    assert_eq!(text_of(&v), "confirmed: go", "{v}");
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(2, "fx__confirm", json!({"text": "go"})).await }
    });
    let r = pending(&s, "fx__confirm").await;
    assert_eq!(r["reason"], "server_asks", "{r}");
    assert!(
        r["reason_text"]
            .as_str()
            .unwrap_or("")
            .contains("anthropic/requiresUserInteraction"),
        "{r}"
    );
    assert!(
        r["goes_to"]
            .as_str()
            .unwrap_or("")
            .starts_with("runs on this computer as "),
        "{r}"
    );
    approve(&s, &r, "once");
    let v = call.await.unwrap();
    assert_eq!(text_of(&v), "confirmed: go", "{v}");
    assert!(none_pending(&s));
}

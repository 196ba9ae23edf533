//! What Gatehouse judges is exactly what the server receives (#58): one reading of a call's
//! arguments, shared by every rule, grant and view. A table of argument texts — a key twice at
//! the top and nested, `1e400`, integers past 2^53, lone and paired surrogates, escaped keys,
//! another case, over-long and `..` paths — goes through a deny rule, an allow rule and an exact
//! grant to a recording server that reads each call both ways servers do (the first of a key
//! given twice, and the last): in every row the server acts on a value that was judged, or the
//! call is refused with -32602 naming the argument. The coercion rows go to a real Python SDK
//! server, which turns `"95"` into 95 and `true` into 1.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::*;

/// What the recording server saw of each call, in order.
fn recorded(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Posts `arguments` (raw JSON text) to `act` as call `id`; the final answer.
async fn act(c: &Client, id: u64, arguments: &str) -> Value {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"rec__act","arguments":{arguments}}}}}"#
    );
    c.raw(body).await.1
}

/// Every row of the table, against a deny (`vault`), an allow (`ok`) and the default (ask,
/// nobody answers in 1 s): refused at the door naming the argument, denied, allowed, or asked —
/// and whatever ran was read the same way by both readings, never under `vault`.
#[tokio::test]
async fn the_server_acts_only_on_what_was_judged() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    for sub in ["vault", "ok", "x"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let record = d.join("record.jsonl");
    let cfg = json!({
        "servers": {"rec": {
            "command": "python3",
            "args": [crate::support::clients_script("recording_server.py"), record],
            "sandbox": "off",
            "tools": {"act": {"rules": [
                {"deny": {"path": {"under": d.join("vault")}}},
                {"allow": {"path": {"under": d.join("ok")}}}
            ]}}
        }},
        "approval": {"default": "ask-unless-read-only", "timeout_secs": 1}
    });
    let s = serve(&d, &cfg.to_string(), &["rec"]).await;
    let c = Client::connect(&s, "one-reading").await;
    let (v, ok, x) = (
        d.join("vault").display().to_string(),
        d.join("ok").display().to_string(),
        d.join("x").display().to_string(),
    );
    let long = format!("{}/{}vault/s", d.display(), "./".repeat(2100));
    // (arguments, what happens: "refused PATH" | "denied" | "ran" | "asked")
    let rows: Vec<(String, String)> = vec![
        (
            format!(r#"{{"path":"{v}/s","pad":1e400}}"#),
            "refused arguments.pad".into(),
        ),
        (
            format!(r#"{{"path":"{v}/s","path":"{ok}/a"}}"#),
            "refused arguments".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/a","path":"{v}/s"}}"#),
            "refused arguments".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/a","opts":{{"k":"{v}","k":1}}}}"#),
            "refused arguments.opts".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/a","p\u0061th":"{v}/s"}}"#),
            "refused arguments".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/a","id":9007199254740993}}"#),
            "refused arguments.id".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/a","id":18446744073709551617}}"#),
            "refused arguments.id".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/a","id":-1e999}}"#),
            "refused arguments.id".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/\ud800"}}"#),
            "refused arguments.path".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/\udc00"}}"#),
            "refused arguments.path".into(),
        ),
        (
            format!(r#"{{"path":"{ok}/\ud83d\ude00","id":-0,"n":1.0}}"#),
            "ran".into(),
        ),
        (format!(r#"{{"p\u0061th":"{v}/s"}}"#), "denied".into()),
        (format!(r#"{{"path":"{v}/\u0073"}}"#), "denied".into()),
        (
            format!(r#"{{"path":"{}/VAULT/s"}}"#, d.display()),
            "denied".into(),
        ),
        (format!(r#"{{"path":"{ok}/../vault/s"}}"#), "denied".into()),
        (format!(r#"{{"path":"{long}"}}"#), "denied".into()),
        (
            format!(r#"{{"path":"{x}/a","id":9007199254740991}}"#),
            "asked".into(),
        ),
    ];
    let mut id = 10;
    for (args, expect) in &rows {
        id += 1;
        let before = recorded(&record).len();
        let answer = act(&c, id, args).await;
        let after = recorded(&record);
        let ran = after.len() > before;
        let shown = gatehouse::text::cut(args, 120);
        match expect.split_once(' ') {
            Some(("refused", path)) => {
                assert_eq!(answer["error"]["code"], -32602, "{shown}: {answer}");
                let msg = answer["error"]["message"].as_str().unwrap_or("");
                assert!(msg.contains(&format!("{path}:")), "{shown}: {msg}");
                assert!(!ran, "{shown}: the server received a call that was refused");
            }
            _ if expect == "denied" => {
                assert_eq!(answer["result"]["isError"], true, "{shown}: {answer}");
                assert!(text_of(&answer).contains("rules[0]"), "{shown}: {answer}");
                assert!(!ran, "{shown}");
            }
            _ if expect == "ran" => {
                assert!(ran, "{shown}: {answer}");
                assert!(
                    text_of(&answer).starts_with("acted on"),
                    "{shown}: {answer}"
                );
            }
            _ => {
                assert!(
                    text_of(&answer).contains("no one answered"),
                    "{shown}: {answer}"
                );
                assert!(!ran, "{shown}");
            }
        }
        for seen in after.iter().skip(before) {
            assert_eq!(seen["same"], true, "{shown}: the readings differ: {seen}");
            let p = seen["first"].as_str().unwrap_or("");
            assert!(
                !p.starts_with(&v),
                "{shown}: the server acted under the vault: {seen}"
            );
            assert!(
                p.starts_with(&ok),
                "{shown}: it ran, so it was allowed under ok: {seen}"
            );
        }
    }
    // What approvals and Activity show is what the server would read: an integer keeps every
    // digit, one value per key.
    let held = tokio::spawn({
        let c = c.clone();
        let args = format!(r#"{{"path":"{x}/b","id":9007199254740991}}"#);
        async move { act(&c, 99, &args).await }
    });
    let r = pending(&s, "rec__act").await;
    assert_eq!(
        r["arguments"]["id"],
        json!(9_007_199_254_740_991_u64),
        "{r}"
    );
    let shown = gh(&s, &["approvals"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("9007199254740991"), "{shown}");
    // The exact call, always: its grant covers the same arguments however spelled, and nothing
    // a reader could take for them.
    assert!(gh(
        &s,
        &[
            "approve",
            r["id"].as_str().unwrap(),
            "--scope",
            "exact-always"
        ]
    )
    .status
    .success());
    assert!(text_of(&held.await.unwrap()).starts_with("acted on"));
    let again = act(
        &c,
        100,
        &format!(r#"{{"id":9007199254740991,"path":"{x}/b"}}"#),
    )
    .await;
    assert!(text_of(&again).starts_with("acted on"), "{again}");
    let twice = act(
        &c,
        101,
        &format!(r#"{{"path":"{x}/b","path":"{v}/s","id":9007199254740991}}"#),
    )
    .await;
    assert_eq!(twice["error"]["code"], -32602, "{twice}");
    let bigger = act(
        &c,
        102,
        &format!(r#"{{"path":"{x}/b","id":9007199254740993}}"#),
    )
    .await;
    assert_eq!(bigger["error"]["code"], -32602, "{bigger}");
    let out = gh(&s, &["activity", "--json", "--limit", "50"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let exact = rows
        .iter()
        .find(|r| r["decision"] == "remembered_exact")
        .expect("the grant's row");
    let args: Value = serde_json::from_str(exact["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["id"], json!(9_007_199_254_740_991_u64), "{exact}");
    for seen in recorded(&record) {
        assert_eq!(seen["same"], true, "{seen}");
        assert!(
            !seen["first"].as_str().unwrap_or("").starts_with(&v),
            "{seen}"
        );
    }
}

/// A deny rule matches the spellings a lax server coerces: the real Python SDK server turns
/// `"95"` into 95 and `true` into 1, so `{"level": "95"}` under `deny level min 90` and
/// `{"id": true}` under `deny id one_of [1, 2, 3]` are denied — and never reach it.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3: run `make test`"]
async fn a_deny_matches_what_a_lax_server_coerces() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let state = d.join("state.txt");
    let cfg = json!({
        "servers": {"lax": {
            "command": crate::support::python(),
            "args": [crate::support::clients_script("coerce_server.py"), state],
            "sandbox": "off",
            "requires_approval": false,
            "tools": {
                "set_volume": {"rules": [{"deny": {"level": {"min": 90}}}]},
                "delete_item": {"rules": [{"deny": {"id": {"one_of": [1, 2, 3]}}}]}
            }
        }}
    });
    let s = serve(&d, &cfg.to_string(), &["lax"]).await;
    let c = Client::connect(&s, "coerce").await;
    let mut id = 0;
    let mut call = |tool: &'static str, args: Value| {
        id += 1;
        let c = c.clone();
        async move { c.call(id, tool, args).await }
    };
    for level in [
        json!(95),
        json!("95"),
        json!(" 95"),
        json!(95.0),
        json!("9.5e1"),
    ] {
        let v = call("lax__set_volume", json!({ "level": level })).await;
        assert_eq!(v["result"]["isError"], true, "{level}: {v}");
        assert!(text_of(&v).contains("rules[0]"), "{level}: {v}");
    }
    for item in [json!(1), json!("1"), json!(true), json!("2"), json!([3])] {
        let v = call("lax__delete_item", json!({ "id": item })).await;
        assert_eq!(v["result"]["isError"], true, "{item}: {v}");
    }
    let done = std::fs::read_to_string(&state).unwrap_or_default();
    assert_eq!(done, "", "nothing denied reached the server");
    // What the rules do not deny runs, coerced by the server as it likes.
    let v = call("lax__set_volume", json!({"level": "50"})).await;
    assert_eq!(text_of(&v), "volume 50", "{v}");
    let v = call("lax__delete_item", json!({"id": "7"})).await;
    assert_eq!(text_of(&v), "deleted 7", "{v}");
}

/// A rule never misfires silently: a deny naming an argument the tool does not have — a client
/// profile's rule (which the config cannot check against a tool it has not seen) and a server's
/// rule on its tool's first run — holds the call for the person with the reason, and the
/// server's status names the rule.
#[tokio::test]
async fn a_rule_that_no_longer_fits_its_tool_asks_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let (record, record2) = (d.join("record.jsonl"), d.join("record2.jsonl"));
    let rec = |file: &Path| {
        json!({
            "command": "python3",
            "args": [crate::support::clients_script("recording_server.py"), file],
            "sandbox": "off",
            "requires_approval": false
        })
    };
    let mut ruled = rec(&record2);
    ruled["tools"] = json!({"act": {"rules": [{"deny": {"target": {"under": "/"}}}]}});
    let cfg = json!({
        "servers": {"rec": rec(&record), "ruled": ruled},
        "clients": {"agent": {"servers": ["rec"], "tools": {"rec__act": {"rules": [
            {"deny": {"file": {"under": "/"}}}
        ]}}}},
        "approval": {"timeout_secs": 1}
    });
    let s = serve(&d, &cfg.to_string(), &["rec", "ruled"]).await;
    let token = crate::support::token_of(&d, "agent").await;
    let c = Client::open(&s.info.url, &token).await;
    let v = c.call(1, "act", json!({"path": "/tmp/x"})).await;
    assert!(
        text_of(&v).contains("no one answered"),
        "asked, not run: {v}"
    );
    assert!(recorded(&record).is_empty(), "nothing ran");
    // Asked with the reason: the rule, what it names and the fix.
    let held = tokio::spawn({
        let c = c.clone();
        async move { c.call(2, "act", json!({"path": "/tmp/y"})).await }
    });
    let r = pending(&s, "rec__act").await;
    let why = r["reason_text"].as_str().unwrap_or("");
    assert!(
        why.contains("clients.agent.tools.rec__act.rules[0]"),
        "{why}"
    );
    assert!(why.contains("\"file\""), "{why}");
    assert_eq!(r["reason"], "stale_rule", "{r}");
    drop(held);
    // Without the profile (the gateway token), the same call runs: no rule of its own.
    let plain = Client::connect(&s, "plain").await;
    let v = plain.call(3, "rec__act", json!({"path": "/tmp/z"})).await;
    assert!(text_of(&v).starts_with("acted on"), "{v}");
    // The server's own rule on its tool's first run: asked, and its status says so.
    let v = plain.call(4, "ruled__act", json!({"path": "/tmp/w"})).await;
    assert!(
        text_of(&v).contains("no one answered"),
        "asked, not run: {v}"
    );
    assert!(recorded(&record2).is_empty(), "nothing ran");
    let out = gh(&s, &["status", "--json"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ruled = status
        .as_array()
        .and_then(|a| a.iter().find(|e| e["id"] == "ruled"))
        .cloned()
        .unwrap_or_default();
    let warnings = ruled["warnings"].to_string();
    assert!(warnings.contains("tools.act.rules[0]"), "{ruled}");
    assert!(warnings.contains("asked about instead"), "{ruled}");
}

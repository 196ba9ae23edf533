//! Argument rules, exact-call grants and answers through the client (#47), end to end: a real
//! `gatehouse serve`, the fixture server doing real file writes, the CLI, and the real Python and
//! TypeScript SDK clients answering Gatehouse's question through elicitation.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// A config whose fixture server may write in `dir`, its `touch` ruled: allowed under
/// `dir/notes`, denied under `dir/notes/private`.
fn ruled(dir: &std::path::Path, timeout_secs: u64) -> Value {
    let notes = dir.join("notes");
    let mut fx = writes_in(fixture(&[]), dir);
    fx["tools"] = json!({
        "touch": {"rules": [
            {"allow": {"path": {"under": notes}}},
            {"deny": {"path": {"under": notes.join("private")}}}
        ]},
        "echo": {"requires_approval": true}
    });
    json!({"servers": {"fx": fx}, "approval": {"timeout_secs": timeout_secs}})
}

fn activity(s: &Served) -> Vec<Value> {
    let out = gh(s, &["activity", "--json", "--limit", "50"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Waits until the activity log holds `n` rows; returns them, newest first.
async fn rows(s: &Served, n: usize) -> Vec<Value> {
    for _ in 0..200 {
        let r = activity(s);
        if r.len() >= n {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {n} activity rows: {:?}", activity(s));
}

/// A call a rule allows runs without asking; one a deny rule matches is refused naming the rule
/// (even though an allow matches too); a path that only spells its way in (`..`, a symlink out)
/// is asked about; each activity row says which rule decided it; `rules test` replays those
/// calls under the running config and under another one, warning first of a rule naming an
/// argument the tool lacks and of one allowing a folder the sandbox keeps the server out of.
#[tokio::test]
async fn argument_rules_decide_and_can_be_tried_against_the_past() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(d.join("notes/private")).unwrap();
    std::fs::create_dir_all(d.join("outside")).unwrap();
    std::os::unix::fs::symlink(d.join("outside"), d.join("notes/link")).unwrap();
    let s = serve(&d, &ruled(&d, 1).to_string(), &["fx"]).await;
    let c = Client::connect(&s, "rules-test").await;

    let ok = d.join("notes/a.txt");
    let v = c.call(1, "fx__touch", json!({"path": ok})).await;
    assert_eq!(v["result"]["isError"], json!(null), "{v}");
    assert!(ok.exists(), "a call the rule allows ran without asking");

    let private = d.join("notes/private/k.txt");
    let v = c.call(2, "fx__touch", json!({"path": private})).await;
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(
        text_of(&v).contains("servers.fx.tools.touch.rules[1]"),
        "{v}"
    );
    assert!(!private.exists());

    for (id, escape) in [
        (3, format!("{}/notes/../outside/x.txt", d.display())),
        (4, format!("{}/notes/link/y.txt", d.display())),
    ] {
        let v = c.call(id, "fx__touch", json!({"path": escape})).await;
        assert!(
            text_of(&v).contains("no one answered"),
            "asked, not allowed: {escape}: {v}"
        );
    }
    assert!(std::fs::read_dir(d.join("outside"))
        .unwrap()
        .next()
        .is_none());
    assert!(none_pending(&s));

    let r = rows(&s, 4).await;
    let by = |i: usize| {
        (
            r[i]["decision"].as_str(),
            r[i]["decided_by"].as_str(),
            r[i]["rule"].as_str(),
        )
    };
    assert_eq!(
        by(3),
        (
            Some("allowed"),
            Some("rule"),
            Some("servers.fx.tools.touch.rules[0]")
        )
    );
    assert_eq!(
        by(2),
        (
            Some("denied"),
            Some("rule"),
            Some("servers.fx.tools.touch.rules[1]")
        )
    );
    assert_eq!(by(1), (Some("timed_out"), Some("policy"), None));

    // The past under the rules as they are, then under a config without the deny rule and
    // with a rule that names an argument `touch` does not have (a warning, listed first).
    let replay = |extra: &[&str]| {
        let mut args = vec!["rules", "test", "fx", "touch", "--json"];
        args.extend_from_slice(extra);
        let out = gh(&s, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let calls: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let would: Vec<(String, String)> = calls
            .iter()
            .rev()
            .map(|c| {
                (
                    c["was"].as_str().unwrap().to_owned(),
                    c["would"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert!(
            calls
                .iter()
                .all(|c| c["id"].as_u64().is_some() && c["time"].is_string()),
            "{calls:?}"
        );
        (would, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (now, warned) = replay(&[]);
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        now,
        pairs(&[
            ("allowed", "allow"),
            ("denied", "deny"),
            ("timed_out", "ask"),
            ("timed_out", "ask")
        ])
    );
    assert!(warned.is_empty(), "{warned}");
    let mut other = ruled(&d, 1);
    other["servers"]["fx"]["tools"]["touch"]["rules"] = json!([
        {"allow": {"path": {"under": d.join("notes")}}},
        {"allow": {"pth": {"under": "/"}}},
        {"allow": {"path": {"under": "/opt/elsewhere"}}}
    ]);
    other["clients"] =
        json!({"p": {"tools": {"fx__touch": {"rules": [{"deny": {"nme": {"equals": 1}}}]}}}});
    let other_path = d.join("other.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    let (then, warned) = replay(&["--config", other_path.to_str().unwrap()]);
    assert_eq!(
        then,
        pairs(&[
            ("allowed", "allow"),
            ("denied", "allow"),
            ("timed_out", "ask"),
            ("timed_out", "ask")
        ])
    );
    assert!(
        warned.contains("rules[1] never matches") && warned.contains("\"pth\""),
        "{warned}"
    );
}

/// A rule naming an argument its tool does not have is refused: `rules add` saves nothing and
/// says why; loaded from the config, its entry is `invalid`, its fix names the tool's arguments,
/// and the other server runs on.
#[tokio::test]
async fn a_rule_naming_an_unknown_argument_refuses_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&[("fx", fixture(&[])), ("other", fixture(&[]))]);
    let s = serve(dir.path(), &cfg, &["fx", "other"]).await;
    // Added through the CLI, the same rule is refused with the reason and nothing is saved.
    let before = std::fs::read(dir.path().join("gatehouse.json")).unwrap();
    let out = gh(
        &s,
        &[
            "rules",
            "add",
            "fx",
            "touch",
            r#"{"allow": {"pth": {"under": "/tmp"}}}"#,
        ],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("not saved") && said.contains("\"pth\""),
        "{said}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("gatehouse.json")).unwrap(),
        before
    );
    let out = gh(
        &s,
        &[
            "rules",
            "add",
            "fx",
            "touch",
            r#"{"allow": {"path": {"under": "/tmp"}}}"#,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&gh(&s, &["rules", "list"]).stdout).into_owned();
    assert!(
        listed.contains("servers.fx.tools.touch.rules[0]"),
        "{listed}"
    );
    let mut bad: Value = serde_json::from_str(&cfg).unwrap();
    bad["servers"]["fx"]["tools"] =
        json!({"touch": {"rules": [{"allow": {"pth": {"under": "/tmp"}}}]}});
    std::fs::write(dir.path().join("gatehouse.json"), bad.to_string()).unwrap();
    assert!(gh(&s, &["reload"]).status.success());
    let out = gh(&s, &["status", "--json"]);
    let status: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let fx = status.iter().find(|r| r["id"] == "fx").unwrap();
    assert_eq!(fx["state"], "invalid", "{fx}");
    let why = fx["last_error"].as_str().unwrap_or_default();
    assert!(
        why.contains("\"pth\"") && why.contains("name one of its arguments (path)"),
        "{why}"
    );
    let other = status.iter().find(|r| r["id"] == "other").unwrap();
    assert_eq!(other["state"], "running", "{other}");
}

/// "This exact call" covers the same arguments — keys reordered, numbers spelled otherwise — for
/// the session, never other arguments; "exact call, always" covers them in a new session too;
/// both are listed with their arguments digest; the rows say `exact`.
#[tokio::test]
async fn exact_call_grants_cover_the_same_call_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &ruled(dir.path(), 1).to_string(), &["fx"]).await;
    let c = Client::connect(&s, "exact").await;
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(1, "fx__echo", json!({"text": "hi", "n": 1})).await }
    });
    let r = pending(&s, "fx__echo").await;
    let digest = r["arguments_digest"].as_str().unwrap().to_owned();
    assert!(gh(
        &s,
        &["approve", r["id"].as_str().unwrap(), "--scope", "exact"]
    )
    .status
    .success());
    assert_eq!(text_of(&call.await.unwrap()), "hi");
    let again = c.call(2, "fx__echo", json!({"n": 1.0, "text": "hi"})).await;
    assert_eq!(
        text_of(&again),
        "hi",
        "the same call, spelled otherwise, is not asked again"
    );
    let other = c.call(3, "fx__echo", json!({"text": "hi", "n": 2})).await;
    assert!(text_of(&other).contains("no one answered"), "{other}");
    let grants = gh(&s, &["approvals", "--grants", "--json"]);
    let grants: Vec<Value> = serde_json::from_slice(&grants.stdout).unwrap();
    let exact = grants.iter().find(|g| g["scope"] == "exact").unwrap();
    assert_eq!(exact["arguments_digest"], digest.as_str());

    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call(4, "fx__echo", json!({"text": "kept"})).await }
    });
    let r = pending(&s, "fx__echo").await;
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
    assert_eq!(text_of(&call.await.unwrap()), "kept");
    let fresh = Client::connect(&s, "another").await;
    assert_eq!(
        text_of(&fresh.call(5, "fx__echo", json!({"text": "kept"})).await),
        "kept"
    );
    let r = rows(&s, 5).await;
    assert_eq!(r[0]["decision"], "remembered_exact", "{:?}", r[0]);
    assert_eq!(r[0]["decided_by"], "exact");
    let row_of = |i: usize| (r[i]["decided_by"].as_str(), r[i]["answered_in"].as_str());
    assert_eq!(row_of(1), (Some("person"), Some("cli")));
}

/// A profile with `"approve_via": "client"` and no desktop attached is asked through the client's
/// own UI: the Python SDK client sees the tool, server and exact arguments and allows once (the
/// call runs) or declines (it does not); the TypeScript SDK client allows; a client that
/// declares no elicitation is asked as today (nobody answers: refused by timeout).
#[tokio::test]
#[ignore = "needs the Python SDK 2.3 and the TypeScript SDK: run `make test`"]
async fn approve_via_client_asks_through_the_clients_own_ui() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let mut cfg = ruled(&d, 3);
    cfg["clients"] = json!({"ci": {"approve_via": "client"}});
    let s = serve(&d, &cfg.to_string(), &["fx"]).await;
    let token = token_of(&d, "ci").await;
    let outside = d.join("outside.txt");
    let calls = json!([["fx__touch", {"path": outside}]]).to_string();
    let py = |decision: &str| {
        run_json(Command::new(python()).args([
            &clients_script("py_client.py"),
            "approve",
            &s.info.url,
            &token,
            &calls,
            decision,
        ]))
    };
    let declined = py("decline");
    assert_eq!(
        declined["results"]["fx__touch"]["isError"], true,
        "{declined}"
    );
    assert!(!outside.exists(), "a declined call never runs");
    let asked = declined["asked"][0]["message"].as_str().unwrap();
    assert!(
        asked.contains("Tool: touch (fx__touch)") && asked.contains("Server: fx"),
        "{asked}"
    );
    assert!(
        asked.contains(&format!("\"path\": \"{}\"", outside.display())),
        "{asked}"
    );
    let allowed = py("allow_once");
    assert_ne!(
        allowed["results"]["fx__touch"]["isError"], true,
        "{allowed}"
    );
    assert!(outside.exists(), "allowed once in the client, the call ran");
    std::fs::remove_file(&outside).unwrap();

    let ts = run_json(
        Command::new("node")
            .arg(clients_script("ts_client.mjs"))
            .args([&s.info.url, &token, &calls, "allow_once"])
            .env("GATEHOUSE_CLIENTS_DIR", peers_dir().join("clients")),
    );
    assert_eq!(ts["asked"].as_array().map(Vec::len), Some(1), "{ts}");
    assert!(
        outside.exists(),
        "the TypeScript SDK client's allow ran it: {ts}"
    );
    std::fs::remove_file(&outside).unwrap();

    let plain = run_json(Command::new(python()).args([
        &clients_script("py_client.py"),
        "http",
        &s.info.url,
        &token,
        &calls,
    ]));
    let text = plain["results"]["fx__touch"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("no one answered"), "{plain}");
    assert!(!outside.exists());
    let r = rows(&s, 4).await;
    let answered: Vec<(&str, Option<&str>)> = r
        .iter()
        .rev()
        .map(|x| (x["decided_by"].as_str().unwrap(), x["answered_in"].as_str()))
        .collect();
    assert_eq!(
        answered,
        [
            ("client", Some("client")),
            ("client", Some("client")),
            ("client", Some("client")),
            ("policy", None)
        ]
    );
}

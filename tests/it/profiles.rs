//! Client profiles: each AI client's own token and tool set. Real clients (Python and
//! TypeScript SDKs) on two profiles each see exactly their tools; a tool outside a profile does
//! not exist for it; a rotated token stops working at once and ends its sessions while other
//! profiles and the default token go on; the CLI lists, adds and rotates profiles.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

fn gh(dir: &Path, args: &[&str]) -> Output {
    Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", dir.join("control.sock"))
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn two_profiles() -> String {
    json!({
        "servers": {"a": fixture(&[]), "b": fixture(&["--tools", "2"])},
        "clients": {
            "cursor": {"servers": ["a"]},
            "code": {"servers": ["b"], "tools": {"b__echo": {"enabled": false}}}
        },
        "approval": {"default": "flagged-only"}
    })
    .to_string()
}

/// Two real clients on two profiles each see exactly their profile's tools (the Python SDK on
/// `cursor`: server a only; the TypeScript SDK on `code`: server b without its echo), and the
/// default token still sees everything.
#[tokio::test]
#[ignore = "needs the real SDK clients: run `make test`"]
async fn each_client_sees_exactly_its_profiles_tools() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let served = serve(d, &two_profiles(), &["a", "b"]).await;
    let url = served.info.url.clone();
    let cursor = token_of(d, "cursor").await;
    let code = token_of(d, "code").await;
    assert_ne!(cursor, code);
    assert_ne!(cursor, served.info.token);

    let py = run_json(Command::new(python()).args([
        &clients_script("py_client.py"),
        "http",
        &url,
        &cursor,
        &json!([["a__echo", {"text": "from cursor"}]]).to_string(),
    ]));
    let tools: Vec<&str> = py["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), FIXTURE_TOOLS, "{tools:?}");
    // It sees one server: each tool under the server's own name.
    assert!(
        tools.contains(&"echo") && !tools.iter().any(|t| t.contains("__")),
        "{tools:?}"
    );
    assert_eq!(
        py["results"]["a__echo"]["content"][0]["text"],
        "from cursor"
    );

    let ts = run_json(
        Command::new("node")
            .arg(clients_script("ts_client.mjs"))
            .args([&url, &code, &json!([["b__tool_0", {}]]).to_string()])
            .env("GATEHOUSE_CLIENTS_DIR", peers_dir().join("clients")),
    );
    let tools: Vec<&str> = ts["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), FIXTURE_TOOLS - 1 + 2, "{tools:?}");
    assert!(
        tools.contains(&"tool_0") && !tools.iter().any(|t| t.contains("__")),
        "{tools:?}"
    );
    assert!(!tools.contains(&"echo"), "a tool the profile hides");
    assert_eq!(
        ts["results"]["b__tool_0"]["content"][0]["text"],
        "tool_0 ok"
    );

    let all = Mcp::open(&url, &served.info.token).await.tools().await;
    assert_eq!(
        all.len(),
        2 * FIXTURE_TOOLS + 2,
        "the default token sees everything"
    );
}

/// A tool outside a profile does not exist for it (listed or not, hidden or on another
/// server); a profile's session cannot be used with another profile's token.
#[tokio::test]
async fn a_tool_outside_the_profile_does_not_exist_for_its_client() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let served = serve(d, &two_profiles(), &["a", "b"]).await;
    let url = served.info.url.clone();
    let cursor = token_of(d, "cursor").await;
    let code = token_of(d, "code").await;
    let s = Mcp::open(&url, &code).await;
    let tools = s.tools().await;
    assert!(tools.contains(&"tool_1".to_owned()) && !tools.contains(&"echo".to_owned()));
    for name in ["a__echo", "b__echo"] {
        let (_, body) = s
            .post_as(&code, json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":name,"arguments":{"text":"x"}}}))
            .await;
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v["error"]["message"],
            format!("Unknown tool: {name}"),
            "{v}"
        );
    }
    let (_, body) = s
        .post_as(&code, json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"b__tool_1","arguments":{}}}))
        .await;
    assert!(body.contains("tool_1 ok"), "{body}");
    // Another profile's token does not reach this session.
    let (status, _) = s
        .post_as(
            &cursor,
            json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}),
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = s
        .post_as(
            "not-a-token-at-all-0123456789abcdef",
            json!({"jsonrpc":"2.0","id":5,"method":"tools/list"}),
        )
        .await;
    assert_eq!(status, 401);
}

/// Rotating a profile's token: the old one gets 401 within a second and its session is gone;
/// the new one works; the other profile's and the default token's sessions are untouched.
#[tokio::test]
async fn a_rotated_token_stops_at_once_and_nothing_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let served = serve(d, &two_profiles(), &["a", "b"]).await;
    let url = served.info.url.clone();
    let old = token_of(d, "cursor").await;
    let cursor = Mcp::open(&url, &old).await;
    let code = Mcp::open(&url, &token_of(d, "code").await).await;
    let default = Mcp::open(&url, &served.info.token).await;
    assert!(!cursor.tools().await.is_empty());

    let out = gh(d, &["clients", "rotate-token", "cursor"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("has a new token"), "{}", text(&out));
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let (status, _) = cursor
            .post_as(&old, json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}))
            .await;
        if status == 401 {
            break;
        }
        assert!(Instant::now() < deadline, "the old token still works");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let new = token_of(d, "cursor").await;
    assert_ne!(new, old);
    // The old session is gone even with the new token; a new session works.
    let (status, _) = cursor
        .post_as(&new, json!({"jsonrpc":"2.0","id":10,"method":"tools/list"}))
        .await;
    assert_eq!(status, 404, "the rotated token's session survived");
    assert_eq!(
        Mcp::open(&url, &new).await.tools().await.len(),
        FIXTURE_TOOLS
    );
    assert_eq!(code.tools().await.len(), FIXTURE_TOOLS - 1 + 2);
    assert_eq!(default.tools().await.len(), 2 * FIXTURE_TOOLS + 2);
}

/// The CLI: `clients` lists every profile with its tool count and warns past a client's known
/// limit; `clients add` creates a profile and its token; `client-config --client` writes that
/// token (and `connect --client` for stdio clients); `clients remove` ends it.
#[tokio::test]
async fn profiles_are_listed_added_and_removed_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({"servers": {"a": fixture(&[]), "big": fixture(&["--tools", "40"])}});
    let served = serve(d, &cfg.to_string(), &["a", "big"]).await;
    let out = gh(d, &["clients", "add", "cursor"]);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("default") && t.contains("cursor"), "{t}");
    assert!(
        t.contains("warning:") && t.contains("(40)"),
        "cursor sees more than 40 tools: {t}"
    );
    let out = gh(d, &["clients", "add", "cursor", "--servers", "a"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("warning:"), "{}", text(&out));
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("gatehouse.json")).unwrap()).unwrap();
    assert_eq!(saved["clients"]["cursor"]["servers"], json!(["a"]));
    let out = gh(d, &["clients", "add", "x", "--servers", "nope"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("not in \"servers\""), "{}", text(&out));

    let token = token_of(d, "cursor").await;
    let out = gh(d, &["client-config", "cursor", "--client", "cursor"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&token));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&served.info.token));
    let out = gh(
        d,
        &["client-config", "claude-desktop", "--client", "cursor"],
    );
    let snippet: Value = serde_json::from_slice(&out.stdout).unwrap();
    // This hub runs on a control socket of its own: the bridge entry carries it.
    assert_eq!(
        snippet["mcpServers"]["gatehouse"]["args"],
        json!([
            "--control",
            d.join("control.sock"),
            "connect",
            "--client",
            "cursor"
        ])
    );

    let out = gh(d, &["clients", "remove", "cursor"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = gh(d, &["client-config", "cursor", "--client", "cursor"]);
    assert!(
        text(&out).contains("there is no client profile"),
        "{}",
        text(&out)
    );
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let r = http
        .post(&served.info.url)
        .bearer_auth(&token)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "a removed profile's token still works");
}

/// `gatehouse connect --client ID` bridges a stdio client (the Python SDK) with that profile's
/// token: it sees that profile's tools only.
#[tokio::test]
#[ignore = "needs the real SDK clients: run `make test`"]
async fn the_stdio_bridge_connects_as_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _served = serve(d, &two_profiles(), &["a", "b"]).await;
    // The SDK gives its stdio child a minimal environment: the socket goes by flag.
    let sock = d.join("control.sock");
    let out = run_json(Command::new(python()).args([
        &clients_script("py_client.py"),
        "stdio",
        &json!([["a__add", {"a": 1, "b": 2}]]).to_string(),
        "--",
        GATEHOUSE,
        "--control",
        sock.to_str().unwrap(),
        "connect",
        "--client",
        "cursor",
    ]));
    let tools = out["tools"].as_array().unwrap();
    assert_eq!(tools.len(), FIXTURE_TOOLS);
    assert!(
        tools.contains(&json!("add")) && !tools.iter().any(|t| t.as_str().unwrap().contains("__"))
    );
    assert_eq!(out["results"]["a__add"]["content"][0]["text"], "3");
}

/// Waits until a call to `exposed` is waiting for approval; returns the request.
async fn pending(dir: &Path, exposed: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let out = gh(dir, &["approvals", "--json"]);
        let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if let Some(r) = list
            .as_array()
            .and_then(|a| a.iter().find(|r| r["exposed"] == exposed))
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

/// An "always" answer covers the profile that gave it and no other; the approval request names
/// the profile; activity rows carry it and `activity --client` filters by it.
#[tokio::test]
async fn answers_and_activity_belong_to_each_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {"a": {"command": FIXTURE, "tools": {"echo": {"requires_approval": true}}}},
        "clients": {"cursor": {"servers": ["a"]}, "code": {}},
        "approval": {"default": "flagged-only", "timeout_secs": 20}
    });
    let served = serve(d, &cfg.to_string(), &["a"]).await;
    let url = served.info.url.clone();
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"hi"}}});
    let cursor_token = token_of(d, "cursor").await;
    let cursor = Mcp::open(&url, &cursor_token).await;
    let first = cursor.spawn_post(&cursor_token, call.clone());
    let r = pending(d, "a__echo").await;
    assert_eq!(r["client"]["profile"], "cursor", "{r}");
    let out = gh(
        d,
        &["approve", r["id"].as_str().unwrap(), "--scope", "always"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(first.await.unwrap().contains("\"hi\""));
    // Remembered for cursor: no question.
    let (_, body) = cursor.post_as(&cursor_token, call.clone()).await;
    assert!(body.contains("\"hi\""), "{body}");
    // Another profile is asked; denied, it does not run.
    let code_token = token_of(d, "code").await;
    let code = Mcp::open(&url, &code_token).await;
    let second = code.spawn_post(&code_token, call.clone());
    let r = pending(d, "a__echo").await;
    assert_eq!(r["client"]["profile"], "code");
    assert!(gh(d, &["deny", r["id"].as_str().unwrap()]).status.success());
    assert!(second.await.unwrap().contains("isError"));

    let rows = |client: &str| -> Vec<Value> {
        let out = gh(d, &["activity", "--json", "--client", client]);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let c = rows("cursor");
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(c.iter().all(|r| r["profile"] == "cursor"));
    let k = rows("code");
    assert_eq!(k.len(), 1, "{k:?}");
    assert_eq!(k[0]["decision"], "denied");
    assert!(rows("default").is_empty());
    let human = text(&gh(d, &["activity"]));
    assert!(
        human.contains("CLIENT") && human.contains("cursor"),
        "{human}"
    );
    // The remembered answer is listed, for cursor only.
    let grants: Value =
        serde_json::from_slice(&gh(d, &["approvals", "--grants", "--json"]).stdout).unwrap();
    let grants = grants.as_array().unwrap();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0]["scope"], "always");
    assert_eq!(grants[0]["profile"], "cursor");
    assert!(text(&gh(d, &["approvals", "--grants"])).contains("a__echo"));
}

/// `list_changed` goes to the clients whose list changed: a restart of server b is heard by the
/// profile that sees b and by the gateway token's session, not by the profile that sees only a.
#[tokio::test]
async fn list_changes_reach_only_the_profiles_that_see_them() {
    use futures_util::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let served = serve(d, &two_profiles(), &["a", "b"]).await;
    let url = served.info.url.clone();
    let mut streams = Vec::new();
    for token in [
        token_of(d, "cursor").await,
        token_of(d, "code").await,
        served.info.token.clone(),
    ] {
        let s = Mcp::open(&url, &token).await;
        let r = s
            .http
            .get(&url)
            .bearer_auth(&token)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &s.sid)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let mut body = r.bytes_stream();
        // The stream is open once its opening comment arrives.
        let _ = body.next().await;
        streams.push((s, body));
    }
    assert!(gh(d, &["restart", "b"]).status.success());
    let mut heard = Vec::new();
    for (_, body) in streams.iter_mut() {
        let mut text = String::new();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
        while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, body.next()).await {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        heard.push(text.contains("notifications/tools/list_changed"));
    }
    assert_eq!(heard, vec![false, true, true], "cursor, code, default");
}

/// A profile's client sees prompts and resources only of the servers it sees: not listed, not
/// readable, not completable — the same boundary as its tools.
#[tokio::test]
async fn prompts_and_resources_follow_the_profile_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {"a": fixture(&[]), "b": fixture(&["--conformance"])},
        "clients": {"cursor": {"servers": ["a"]}}
    });
    let served = serve(d, &cfg.to_string(), &["a", "b"]).await;
    let url = served.info.url.clone();
    let cursor_token = token_of(d, "cursor").await;
    let cursor = Mcp::open(&url, &cursor_token).await;
    let default = Mcp::open(&url, &served.info.token).await;
    let ask = |method: &str, params: Value| json!({"jsonrpc":"2.0","id":1,"method":method,"params":params});
    for (s, token, sees) in [
        (&default, &served.info.token, true),
        (&cursor, &cursor_token, false),
    ] {
        let (_, body) = s.post_as(token, ask("prompts/list", json!({}))).await;
        assert_eq!(
            body.contains(r#""name":"test_simple_prompt""#),
            sees,
            "{body}"
        );
        let (_, body) = s.post_as(token, ask("resources/list", json!({}))).await;
        assert_eq!(body.contains("test://static-text"), sees, "{body}");
        let (_, body) = s
            .post_as(token, ask("resources/templates/list", json!({})))
            .await;
        assert_eq!(body.contains("test://template/"), sees, "{body}");
        let (_, body) = s
            .post_as(
                token,
                ask("resources/read", json!({"uri": "test://static-text"})),
            )
            .await;
        assert_eq!(!body.contains("Resource not found"), sees, "{body}");
        let (_, body) = s
            .post_as(
                token,
                ask("prompts/get", json!({"name": "b__test_simple_prompt"})),
            )
            .await;
        assert_eq!(!body.contains("Unknown prompt"), sees, "{body}");
    }
}

/// A "session" answer covers the session (of one profile) that got it: another profile's
/// client, calling the same tool, is asked.
#[tokio::test]
async fn a_session_answer_does_not_reach_another_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {"a": {"command": FIXTURE, "tools": {"echo": {"requires_approval": true}}}},
        "clients": {"cursor": {}, "code": {}},
        "approval": {"default": "flagged-only", "timeout_secs": 20}
    });
    let served = serve(d, &cfg.to_string(), &["a"]).await;
    let url = served.info.url.clone();
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"s"}}});
    let cursor_token = token_of(d, "cursor").await;
    let cursor = Mcp::open(&url, &cursor_token).await;
    let first = cursor.spawn_post(&cursor_token, call.clone());
    let r = pending(d, "a__echo").await;
    assert!(gh(
        d,
        &["approve", r["id"].as_str().unwrap(), "--scope", "session"]
    )
    .status
    .success());
    assert!(first.await.unwrap().contains("\"s\""));
    let (_, body) = cursor.post_as(&cursor_token, call.clone()).await;
    assert!(
        body.contains("\"s\""),
        "the session answer covers its own session: {body}"
    );
    let code_token = token_of(d, "code").await;
    let code = Mcp::open(&url, &code_token).await;
    let other = code.spawn_post(&code_token, call.clone());
    let r = pending(d, "a__echo").await;
    assert_eq!(
        r["client"]["profile"], "code",
        "the other profile is asked: {r}"
    );
    assert!(gh(d, &["deny", r["id"].as_str().unwrap()]).status.success());
    assert!(other.await.unwrap().contains("isError"));
}

/// `gatehouse tools --client ID` shows what that profile sees, through the one policy: only its
/// servers' tools, a tool it hides absent, and its own flag and default deciding `approval`; an
/// unknown profile is named.
#[tokio::test]
async fn tools_for_a_profile_show_what_it_sees_and_what_a_call_does() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {"a": fixture(&[]), "b": fixture(&["--tools", "2"])},
        "clients": {
            "code": {"servers": ["b"], "tools": {"b__echo": {"enabled": false}, "b__add": {"requires_approval": true}}},
            "strict": {"servers": ["a"], "approval": {"default": "always"}}
        },
        "approval": {"default": "flagged-only"}
    })
    .to_string();
    let _s = serve(dir.path(), &cfg, &["a", "b"]).await;
    let rows = |args: &[&str]| -> Vec<Value> {
        let out = gh(dir.path(), args);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let code = rows(&["tools", "--json", "--client", "code"]);
    let names: Vec<&str> = code.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.iter().all(|n| n.starts_with("b__")), "{names:?}");
    assert!(!names.contains(&"b__echo"), "{names:?}");
    let add = code.iter().find(|t| t["name"] == "b__add").unwrap();
    assert_eq!(add["approval"], "ask", "{add}");
    let strict = rows(&["tools", "--json", "--client", "strict"]);
    assert!(!strict.is_empty());
    assert!(strict.iter().all(|t| t["approval"] == "ask"), "{strict:?}");
    // The gateway token's view: every tool, the config's own default.
    let all = rows(&["tools", "--json"]);
    assert_eq!(all.len(), 2 * FIXTURE_TOOLS + 2);
    assert!(all.iter().any(|t| t["name"] == "b__echo"));
    let out = gh(dir.path(), &["tools", "--client", "nobody"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("no client profile \"nobody\""),
        "{}",
        text(&out)
    );
}

/// `gatehouse clients` names who is connected on each profile — name, version, protocol, last
/// seen — and on that profile only.
#[tokio::test]
async fn clients_lists_who_is_connected_on_each_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let served = serve(d, &two_profiles(), &["a", "b"]).await;
    let who = json!({"name": "cursor-test", "version": "9.1"});
    let c = Mcp::open_with(
        &served.info.url,
        &token_of(d, "cursor").await,
        who,
        "2025-06-18",
    )
    .await;
    assert!(!c.tools().await.is_empty());
    let out = gh(d, &["clients", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = |id: &str| {
        rows.iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_default()
    };
    let seen = &row("cursor")["connected"];
    assert_eq!(seen.as_array().map(Vec::len), Some(1), "{rows:?}");
    assert_eq!(seen[0]["name"], "cursor-test");
    assert_eq!(seen[0]["version"], "9.1");
    assert_eq!(seen[0]["protocol"], "2025-06-18");
    assert_eq!(seen[0]["open"], true);
    assert!(seen[0]["last_seen_ms"].as_u64().unwrap() > 0);
    for other in ["default", "code"] {
        assert_eq!(row(other)["connected"], json!([]), "{rows:?}");
    }
    let out = gh(d, &["clients"]);
    assert!(
        text(&out).contains("connected \"cursor-test\": version 9.1, protocol 2025-06-18"),
        "{}",
        text(&out)
    );
}

/// A client known to give up before an approval may end (the Inspector CLI, on the TypeScript
/// SDK: 60 s) is flagged by `gatehouse clients` when `approval.timeout_secs` is longer; with a
/// shorter approval timeout, no warning.
#[tokio::test]
async fn clients_warns_when_an_approval_outlasts_a_clients_patience() {
    for (approval, warned) in [(120, true), (45, false)] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let cfg = json!({
            "servers": {"a": fixture(&[])},
            "approval": {"default": "flagged-only", "timeout_secs": approval}
        });
        let served = serve(d, &cfg.to_string(), &["a"]).await;
        let who = json!({"name": "inspector-cli", "version": "0.5.1"});
        let _c = Mcp::open_with(&served.info.url, &served.info.token, who, "2025-11-25").await;
        let out = gh(d, &["clients", "--json"]);
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            rows[0]["connected"][0]["gives_up_after_secs"], 60,
            "{rows:?}"
        );
        assert_eq!(rows[0]["approval_timeout_secs"], approval, "{rows:?}");
        let listing = text(&gh(d, &["clients"]));
        assert_eq!(
            listing.contains("\"inspector-cli\" gives up on a call after 60 s"),
            warned,
            "approval {approval} s: {listing}"
        );
    }
}

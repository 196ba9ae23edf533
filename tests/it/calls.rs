//! A call's life through the gateway, past the guard: the stdio endpoint and the connect bridge,
//! progress while held, the catalog right after a start, sessions within a profile's share, one
//! activity row per call, results kept in their envelope, deadlines, and lists left out in time.

use std::time::{Duration, Instant};

use gatehouse::gateway::{self, Gateway};
use gatehouse::State;
use serde_json::{json, Value};

use crate::support::*;

const T: std::time::Duration = std::time::Duration::from_secs(15);

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
        gateway::Outcome::Reply(l) | gateway::Outcome::Error(l, _) => String::from_utf8(l).unwrap(),
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

//! The gateway's counterpart of `actor_tests.rs`: a `Gateway` over a real hub whose server is
//! the in-memory fake (no process, no socket), driven message by message. What a client gets,
//! and what reached the server, are both seen.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{ClientSession, Gateway, Out, Outcome};
use crate::approval::{Answer, Decider};
use crate::config::Config;
use crate::supervisor::fake::{FakeLauncher, Script};
use crate::{Hub, HubHandle, HubOptions, State};

struct Rig {
    gw: Gateway,
    hub: HubHandle,
    fake: Arc<FakeLauncher>,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// A hub with one fake server `fx` (`extra` merged into its entry) and `approval` settings.
    async fn new(extra: Value, approval: Value) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let mut entry = json!({"command": "fake"});
        if let (Some(e), Some(x)) = (entry.as_object_mut(), extra.as_object()) {
            e.extend(x.clone());
        }
        let text = json!({"servers": {"fx": entry}, "approval": approval}).to_string();
        let config = Config::parse(&text, "rig.json".as_ref()).unwrap();
        let fake = FakeLauncher::new(Script::default());
        let mut opts = HubOptions::new(dir.path().to_owned());
        opts.launcher = Some(fake.clone());
        let hub = Hub::start(config, opts);
        let h = hub.server("fx").unwrap();
        let mut rx = h.watch_status();
        tokio::time::timeout(
            Duration::from_secs(10),
            rx.wait_for(|s| s.state == State::Running),
        )
        .await
        .expect("the fake reaches running")
        .unwrap();
        let gw = Gateway::new(hub.clone());
        Rig {
            gw,
            hub,
            fake,
            _dir: dir,
        }
    }

    /// A 2025 client session, initialized.
    async fn session(&self) -> Arc<ClientSession> {
        let s = self.gw.open_session();
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rig","version":"1"}}});
        answer(self.gw.handle_bytes(&s, init.to_string().as_bytes()).await).await;
        s
    }

    async fn call(&self, s: &Arc<ClientSession>, id: u64, tool: &str, args: Value) -> Value {
        let msg = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}});
        answer(self.gw.handle_bytes(s, msg.to_string().as_bytes()).await).await
    }

    fn calls_reached(&self) -> usize {
        self.fake.entries().iter().filter(|e| *e == "call").count()
    }
}

/// The final answer of an outcome (a stream is read to its end).
async fn answer(o: Outcome) -> Value {
    let line = match o {
        Outcome::Reply(l) | Outcome::Error(l, _) => l,
        Outcome::Accepted => return Value::Null,
        Outcome::Stream(mut rx) => loop {
            match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
                Ok(Some(Out::Final(l))) => break l,
                Ok(Some(Out::Event(_))) => continue,
                other => panic!("the stream ended without an answer: {other:?}"),
            }
        },
    };
    serde_json::from_slice(&line).unwrap()
}

fn text(v: &Value) -> &str {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// An unflagged call reaches the server once and its answer comes back under the client's id.
#[tokio::test]
async fn a_free_call_reaches_the_server_and_comes_back() {
    let rig = Rig::new(json!({}), json!({"default": "flagged-only"})).await;
    let s = rig.session().await;
    let v = rig.call(&s, 7, "fx__echo", json!({"text": "hi"})).await;
    assert_eq!(v["id"], 7, "{v}");
    assert_eq!(text(&v), "hi", "{v}");
    assert_eq!(rig.calls_reached(), 1);
}

/// A call leaves nothing in its session's calls in flight however its stream ends: dropped
/// before it was read (the client gone at once — none of those reaches the server), or read to
/// its answer.
#[tokio::test]
async fn a_call_leaves_nothing_in_flight_however_its_stream_ends() {
    let rig = Rig::new(json!({}), json!({"default": "flagged-only"})).await;
    let s = rig.session().await;
    for id in 1..=50 {
        let msg = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"x"}}});
        let o = rig.gw.handle_bytes(&s, msg.to_string().as_bytes()).await;
        assert!(matches!(o, Outcome::Stream(_)), "call {id} is forwarded");
        drop(o);
    }
    assert_eq!(s.calls_in_flight(), 0, "dropped unread, still in flight");
    let v = rig.call(&s, 51, "fx__echo", json!({"text": "hi"})).await;
    assert_eq!(text(&v), "hi", "{v}");
    assert_eq!(s.calls_in_flight(), 0, "answered, still in flight");
    assert_eq!(rig.calls_reached(), 1);
}

/// A flagged call waits for the person: denied, the client is told the person denied it and
/// nothing reaches the server; allowed, it runs once.
#[tokio::test]
async fn a_held_call_runs_only_when_the_person_allows_it() {
    let rig = Rig::new(
        json!({"requires_approval": true}),
        json!({"default": "flagged-only"}),
    )
    .await;
    let s = rig.session().await;
    for (n, answer_with, runs) in [
        (1, Answer::Deny(Some("not now".into())), false),
        (2, Answer::Allow(crate::approval::Scope::Once), true),
    ] {
        let call = {
            let (gw, s) = (rig.gw.clone(), s.clone());
            tokio::spawn(async move {
                let msg = json!({"jsonrpc":"2.0","id":n,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"x"}}});
                answer(gw.handle_bytes(&s, msg.to_string().as_bytes()).await).await
            })
        };
        let id = loop {
            if let Some(r) = rig.hub.approvals().pending().first() {
                break r.id.clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        rig.hub
            .approvals()
            .answer(&id, answer_with, Decider::Cli)
            .unwrap();
        let v = call.await.unwrap();
        if runs {
            assert_eq!(text(&v), "x", "{v}");
        } else {
            assert_eq!(v["result"]["isError"], true, "{v}");
            assert!(
                text(&v).contains("Denied by the user in Gatehouse: not now"),
                "{v}"
            );
        }
    }
    assert_eq!(rig.calls_reached(), 1, "only the allowed call ran");
}

/// Unattended, a held call is refused at once and the text says no one answered — never that
/// the person denied it.
#[tokio::test]
async fn an_unattended_refusal_says_no_one_answered() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::parse(
        r#"{"servers": {"fx": {"command": "fake", "requires_approval": true}}}"#,
        "rig.json".as_ref(),
    )
    .unwrap();
    let fake = FakeLauncher::new(Script::default());
    let mut opts = HubOptions::new(dir.path().to_owned());
    opts.launcher = Some(fake.clone());
    opts.deny_unattended = true;
    let hub = Hub::start(config, opts);
    let mut rx = hub.server("fx").unwrap().watch_status();
    tokio::time::timeout(
        Duration::from_secs(10),
        rx.wait_for(|s| s.state == State::Running),
    )
    .await
    .unwrap()
    .unwrap();
    let rig = Rig {
        gw: Gateway::new(hub.clone()),
        hub,
        fake,
        _dir: dir,
    };
    let s = rig.session().await;
    let v = rig.call(&s, 1, "fx__echo", json!({"text": "x"})).await;
    assert!(text(&v).contains("no one answered"), "{v}");
    assert!(!text(&v).contains("Denied by the user"), "{v}");
    assert_eq!(rig.calls_reached(), 0);
}

/// A listen stream has a lifetime: open for `STREAM_LIFETIME` (8 h, or less with its session),
/// then ended — its client re-listens — so no stream holds a connection for ever.
#[tokio::test]
async fn a_listen_stream_ends_when_its_lifetime_is_over() {
    let rig = Rig::new(json!({}), json!({"default": "flagged-only"})).await;
    let s = rig.gw.open_session();
    rig.gw.mark_modern(&s);
    let listen = json!({"jsonrpc":"2.0","id":5,"method":"subscriptions/listen",
        "params":{"notifications":{"toolsListChanged":true}}});
    let Outcome::Stream(mut rx) = rig.gw.handle_bytes(&s, listen.to_string().as_bytes()).await
    else {
        panic!("a listen request is answered with a stream");
    };
    assert!(
        matches!(rx.recv().await, Some(Out::Event(_))),
        "acknowledged"
    );
    tokio::time::pause();
    tokio::time::advance(super::session::STREAM_LIFETIME - Duration::from_secs(1)).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(10), rx.recv())
            .await
            .is_err(),
        "still open a second before"
    );
    tokio::time::advance(Duration::from_secs(2)).await;
    let end = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
    assert!(matches!(end, Ok(None)), "ended at its lifetime: {end:?}");
}

/// What the person allowed is judged again as it will run: a deny rule added while the call
/// waited refuses it — judged on the arguments the client sent, not on the copy the person was
/// shown with a secret value masked.
#[tokio::test]
async fn a_deny_rule_added_while_a_call_waits_judges_the_arguments_that_would_run() {
    let rig = Rig::new(
        json!({"requires_approval": true}),
        json!({"timeout_secs": 30}),
    )
    .await;
    rig.hub.redactions().register("k", "topsecretvalue");
    let s = rig.session().await;
    let call = {
        let (gw, s) = (rig.gw.clone(), s.clone());
        tokio::spawn(async move {
            let msg = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"topsecretvalue"}}});
            answer(gw.handle_bytes(&s, msg.to_string().as_bytes()).await).await
        })
    };
    let held = loop {
        if let Some(r) = rig.hub.approvals().pending().first() {
            break r.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        held.arguments.get().contains("[secret:k]"),
        "{}",
        held.arguments.get()
    );
    let ruled = json!({"servers": {"fx": {"command": "fake", "requires_approval": true,
        "tools": {"echo": {"rules": [{"deny": {"text": {"equals": "topsecretvalue"}}}]}}}},
        "approval": {"timeout_secs": 30}})
    .to_string();
    rig.hub
        .apply_config(Config::parse(&ruled, "rig.json".as_ref()).unwrap())
        .await
        .unwrap();
    rig.hub
        .approvals()
        .answer(
            &held.id,
            Answer::Allow(crate::approval::Scope::Once),
            Decider::Cli,
        )
        .unwrap();
    let v = call.await.unwrap();
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(text(&v).contains("servers.fx.tools.echo.rules[0]"), "{v}");
    assert_eq!(rig.calls_reached(), 0, "the call did not run");
}

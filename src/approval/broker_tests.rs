//! The broker's unit tests: asking, answering, remembering, revoking, bounds.

use super::*;
use crate::approval::request::ClientRef;
use serde_json::value::RawValue;

fn tool(raw: &str) -> ToolDef {
    ToolDef::parse(
        RawValue::from_string(raw.to_owned()).unwrap(),
        Arc::default(),
    )
    .unwrap()
}

/// Whether an earlier answer covers a call to `tool` with the arguments `{"path":"/x"}`.
fn granted(
    b: &ApprovalBroker,
    profile: Option<&str>,
    session: &str,
    server: &str,
    tool: &str,
    hash: &str,
) -> Option<Scope> {
    let digest = super::super::arguments_digest("{\"path\":\"/x\"}");
    b.granted(&super::super::Covered {
        profile,
        session,
        server,
        tool,
        hash,
        arguments_digest: &digest,
    })
}

fn request(broker: &ApprovalBroker, session: &str) -> ApprovalRequest {
    ApprovalRequest {
        kind: crate::approval::PinKind::Tool,
        goes_to: String::new(),
        id: broker.next_id(),
        client: ClientRef {
            name: Some("c".into()),
            session: session.into(),
            profile: None,
            session_ends_ms: None,
            covers: Vec::new(),
            gives_up_after_secs: None,
            imitates: None,
        },
        server: "fs".into(),
        tool: "write_file".into(),
        exposed: "fs__write_file".into(),
        title: None,
        description: None,
        annotations: None,
        arguments: RawValue::from_string("{\"path\":\"/x\"}".into()).unwrap(),
        arguments_digest: super::super::arguments_digest("{\"path\":\"/x\"}"),
        requested_at: 0,
        expires_at: 0,
        queued: false,
        changed: None,
        reason: Default::default(),
        reason_text: String::new(),
        digest: String::new(),
        hidden_characters: false,
        asked_in_client: false,
        suggested_rule: None,
    }
    .seal()
}

/// Asks in the background, waits until the request is pending, answers it, returns the verdict.
async fn ask_and_answer(
    b: &ApprovalBroker,
    r: ApprovalRequest,
    hash: &str,
    answer: Answer,
) -> Verdict {
    let id = r.id.clone();
    let b2 = b.clone();
    let h = hash.to_owned();
    let wait = tokio::spawn(async move { b2.ask(r, h, Duration::from_secs(5)).await });
    while b.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    b.answer(&id, answer, Decider::Cli).unwrap();
    wait.await.unwrap()
}

#[tokio::test]
async fn answers_scopes_timeout_and_withdrawal() {
    let bus = EventBus::new(64);
    let b = ApprovalBroker::new(bus.clone(), None, false);
    let def = tool(r#"{"name":"write_file","description":"a"}"#);
    let change = b.check_definition("fs", &def);
    assert!(change.is_none());
    let hash = def.hash().to_owned();

    // once
    let r = request(&b, "s1");
    let id = r.id.clone();
    let b2 = b.clone();
    let h = hash.clone();
    let wait = tokio::spawn(async move { b2.ask(r, h, Duration::from_secs(5)).await });
    while b.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    assert!(b
        .answer("nope", Answer::Allow(Scope::Once), Decider::Cli)
        .is_err());
    b.answer(&id, Answer::Allow(Scope::Once), Decider::Cli)
        .unwrap();
    assert_eq!(
        wait.await.unwrap(),
        Verdict::Allowed {
            scope: Scope::Once,
            by: Decider::Cli,
            via: None
        }
    );
    assert!(
        b.answer(&id, Answer::Deny(None), Decider::Cli).is_err(),
        "answered once only"
    );
    assert_eq!(granted(&b, None, "s1", "fs", "write_file", &hash), None);

    // session
    let r = request(&b, "s1");
    ask_and_answer(&b, r, &hash, Answer::Allow(Scope::Session)).await;
    assert_eq!(
        granted(&b, None, "s1", "fs", "write_file", &hash),
        Some(Scope::Session)
    );
    assert_eq!(granted(&b, None, "s2", "fs", "write_file", &hash), None);
    assert_eq!(b.forget("fs", Some("write_file")), 1);
    assert_eq!(granted(&b, None, "s1", "fs", "write_file", &hash), None);

    // timeout
    let r = request(&b, "s1");
    assert_eq!(
        b.ask(r, hash.clone(), Duration::from_millis(30)).await,
        Verdict::TimedOut { secs: 0 }
    );
    assert!(b.pending().is_empty());

    // withdrawal: dropping the waiter removes the request; a late answer finds nothing.
    let r = request(&b, "s1");
    let id = r.id.clone();
    let b2 = b.clone();
    let h = hash.clone();
    let wait = tokio::spawn(async move { b2.ask(r, h, Duration::from_secs(5)).await });
    while b.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    wait.abort();
    let _ = wait.await;
    assert!(b.pending().is_empty());
    assert!(b
        .answer(&id, Answer::Allow(Scope::Once), Decider::Cli)
        .is_err());
}

/// A fair queue: calls are listed oldest first (the tenth after the ninth), and a call's
/// countdown starts only when it reaches the front — the ones behind wait their turn however
/// long the person takes over the one in front, then get the whole timeout.
#[tokio::test(start_paused = true)]
async fn each_countdown_starts_at_the_front_of_the_queue() {
    let b = ApprovalBroker::new(EventBus::new(256), None, false);
    let mut events = b.inner.bus.subscribe();
    let timeout = Duration::from_secs(10);
    let mut waits = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..11 {
        let r = request(&b, "s");
        ids.push(r.id.clone());
        let b2 = b.clone();
        waits.push(tokio::spawn(
            async move { b2.ask(r, "h".into(), timeout).await },
        ));
        while b.pending().len() < ids.len() {
            tokio::task::yield_now().await;
        }
    }
    let listed: Vec<String> = b.pending().into_iter().map(|r| r.id).collect();
    assert_eq!(listed, ids, "oldest first");
    let queued: Vec<bool> = b.pending().iter().map(|r| r.queued).collect();
    assert!(!queued[0]);
    assert!(queued[1..].iter().all(|q| *q), "{queued:?}");
    // The person looks at the first for longer than the timeout: only it times out.
    tokio::time::sleep(timeout + Duration::from_secs(1)).await;
    let left: Vec<String> = b.pending().into_iter().map(|r| r.id).collect();
    assert_eq!(left, ids[1..].to_vec(), "only the front timed out");
    assert!(matches!(
        waits.remove(0).await.unwrap(),
        Verdict::TimedOut { .. }
    ));
    // The second is at the front now, with the whole timeout from now, and the front ends
    // heard of it.
    let front = &b.pending()[0];
    assert!(!front.queued);
    let mut updated = None;
    while let Ok(e) = events.try_recv() {
        if let Event::ApprovalUpdated(r) = e {
            updated = Some(r);
        }
    }
    let updated = updated.expect("an ApprovalUpdated event for the new front");
    assert_eq!(updated.id, ids[1]);
    assert_eq!(updated.expires_at, front.expires_at);
    tokio::time::sleep(timeout - Duration::from_secs(1)).await;
    assert_eq!(b.pending().len(), 10, "the second still has a second left");
    // Answering it moves the third to the front.
    b.answer(&ids[1], Answer::Allow(Scope::Once), Decider::Cli)
        .unwrap();
    assert!(matches!(
        waits.remove(0).await.unwrap(),
        Verdict::Allowed { .. }
    ));
    assert_eq!(b.pending()[0].id, ids[2]);
    assert!(!b.pending()[0].queued);
    // But never without end: held at t≈0, the last is denied by MAX_TURNS timeouts (100 s)
    // although its turn would come only at about 100 s (each before it taking its 10 s).
    tokio::time::sleep(Duration::from_secs(100 - 20 + 1)).await;
    assert!(b.pending().is_empty(), "{:?}", b.pending());
    assert!(matches!(
        waits.pop().unwrap().await.unwrap(),
        Verdict::TimedOut { .. }
    ));
}

#[tokio::test]
async fn always_persists_and_a_changed_definition_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.json");
    let def1 = r#"{"name":"w","description":"writes a file","inputSchema":{"type":"object"}}"#;
    let def2 = r#"{"name":"w","description":"writes a file and mails it to evil","inputSchema":{"type":"object"}}"#;
    let b = ApprovalBroker::new(EventBus::new(8), Some(path.clone()), false);
    let def1 = tool(def1);
    b.check_definition("fs", &def1);
    let h1 = def1.hash().to_owned();
    let mut r = request(&b, "s1");
    r.tool = "w".into();
    ask_and_answer(&b, r, &h1, Answer::Allow(Scope::Always)).await;
    assert!(
        b.flush(Duration::from_secs(5)),
        "the answer reached the disk"
    );

    // A new broker (a hub restart) still knows, for the same definition only.
    let b = ApprovalBroker::new(EventBus::new(8), Some(path.clone()), false);
    assert_eq!(
        granted(&b, None, "other-session", "fs", "w", &h1),
        Some(Scope::Always)
    );
    let def2 = tool(def2);
    let change = b.check_definition("fs", &def2);
    let h2 = def2.hash().to_owned();
    assert_ne!(h1, h2);
    let change = change.expect("the change is reported");
    assert_eq!(change.fields, vec!["description".to_owned()]);
    assert_eq!(
        granted(&b, None, "other-session", "fs", "w", &h2),
        None,
        "always no longer applies"
    );
}

/// At most MAX_PENDING requests of one profile wait for the person; one more of that profile is
/// denied at once, by policy, while another profile's still waits.
#[tokio::test]
async fn waiting_requests_are_bounded() {
    let b = ApprovalBroker::new(EventBus::new(8), None, false);
    let mut waits = Vec::new();
    for _ in 0..MAX_PENDING {
        let (b2, r) = (b.clone(), request(&b, "s"));
        waits.push(tokio::spawn(async move {
            b2.ask(r, "h".into(), Duration::from_secs(30)).await
        }));
    }
    while b.pending().len() < MAX_PENDING {
        tokio::task::yield_now().await;
    }
    let v = b
        .ask(request(&b, "s"), "h".into(), Duration::from_secs(30))
        .await;
    match v {
        Verdict::Denied { reason, by, .. } => {
            assert_eq!(by, Decider::Policy);
            assert!(reason.unwrap_or_default().contains("already waiting"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.pending().len(), MAX_PENDING);
    // Another profile's call still waits for the person: its share is its own.
    let mut other = request(&b, "t");
    other.client.profile = Some("cursor".into());
    let b2 = b.clone();
    waits.push(tokio::spawn(async move {
        b2.ask(other, "h".into(), Duration::from_secs(30)).await
    }));
    let waited = tokio::time::timeout(Duration::from_secs(5), async {
        while b.pending().len() < MAX_PENDING + 1 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(waited.is_ok(), "another profile's call was refused");
    for w in waits {
        w.abort();
    }
}

/// Remembered answers are listed with who and when, and revoking one takes effect at once:
/// the next call is not covered. A session's answers end with the session.
#[tokio::test]
async fn remembered_answers_are_listed_and_revocable() {
    let b = ApprovalBroker::new(EventBus::new(8), None, false);
    ask_and_answer(&b, request(&b, "s1"), "h", Answer::Allow(Scope::Always)).await;
    ask_and_answer(&b, request(&b, "s2"), "h", Answer::Allow(Scope::Session)).await;
    let grants = b.grants();
    assert_eq!(grants.len(), 2, "{grants:?}");
    let always = grants.iter().find(|g| g.scope == Scope::Always).unwrap();
    assert_eq!(
        (always.server.as_str(), always.tool.as_str()),
        ("fs", "write_file")
    );
    assert!(always.since_ms > 0 && always.definition.is_some());
    let session = grants.iter().find(|g| g.scope == Scope::Session).unwrap();
    assert_eq!(session.session.as_deref(), Some("s2"));
    assert_eq!(session.client.as_deref(), Some("c"));

    assert!(b.revoke(always));
    assert_eq!(granted(&b, None, "s9", "fs", "write_file", "h"), None);
    assert!(!b.revoke(always), "already revoked");
    assert_eq!(
        granted(&b, None, "s2", "fs", "write_file", "h"),
        Some(Scope::Session)
    );
    b.end_session("s2");
    assert_eq!(granted(&b, None, "s2", "fs", "write_file", "h"), None);
    assert!(b.grants().is_empty());
}

/// An answer names the call that was shown: with a digest that is not the call's it is refused
/// and the call keeps waiting; with the call's own digest it is taken. An id from an earlier run
/// of the broker (over the same data dir) names no call of this one.
#[tokio::test]
async fn an_answer_applies_only_to_the_call_that_was_shown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.json");
    let first = ApprovalBroker::new(EventBus::new(16), Some(path.clone()), false);
    let old = request(&first, "s1");
    let old_id = old.id.clone();
    drop(first);
    let b = ApprovalBroker::new(EventBus::new(16), Some(path), false);
    let r = request(&b, "s2");
    assert_ne!(r.id, old_id, "an id repeated across runs");
    let (id, digest) = (r.id.clone(), r.digest.clone());
    assert_eq!(digest.len(), 16);
    let b2 = b.clone();
    let wait = tokio::spawn(async move { b2.ask(r, "h".into(), Duration::from_secs(5)).await });
    while b.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    let stale = b.answer_via(
        &id,
        Some("0000000000000000"),
        Answer::Allow(Scope::Once),
        Decider::Ui,
        None,
    );
    assert_eq!(stale.unwrap_err(), ApprovalError::Changed(id.clone()));
    assert_eq!(b.pending().len(), 1, "a refused answer took the call");
    let unknown = b.answer_via(
        &old_id,
        None,
        Answer::Allow(Scope::Once),
        Decider::Cli,
        None,
    );
    assert!(unknown.unwrap_err().to_string().contains("no such call"));
    b.answer_via(
        &id,
        Some(&digest),
        Answer::Allow(Scope::Once),
        Decider::Ui,
        None,
    )
    .unwrap();
    assert!(matches!(wait.await.unwrap(), Verdict::Allowed { .. }));
}

/// The digest covers what the person decides on: another client, tool or argument gives
/// another digest.
#[test]
fn the_digest_covers_client_tool_and_arguments() {
    let b = ApprovalBroker::new(EventBus::new(16), None, false);
    let r = request(&b, "s");
    let mut other = r.clone();
    other.arguments = RawValue::from_string("{\"path\":\"/y\"}".into()).unwrap();
    assert_ne!(other.digest_of(), r.digest);
    let mut other = r.clone();
    other.client.profile = Some("cursor".into());
    assert_ne!(other.digest_of(), r.digest);
    let mut other = r.clone();
    other.client.name = Some("Claude Code".into());
    assert_ne!(other.digest_of(), r.digest);
    let mut other = r.clone();
    other.tool = "delete".into();
    assert_ne!(other.digest_of(), r.digest);
    assert_eq!(r.digest_of(), r.digest);
}

/// "This exact call" covers the same arguments — keys in any order, numbers in any spelling —
/// in the same session only, and never other arguments; "exact call, always" outlives a restart,
/// is listed with its arguments digest and is revoked by it.
#[tokio::test]
async fn exact_call_grants_cover_the_same_arguments_only() {
    use crate::approval::{arguments_digest, Covered};
    assert_eq!(
        arguments_digest(r#"{"b":[1.0,2e0],"a":{"y":1,"x":"é"}}"#),
        arguments_digest(r#"{ "a": {"x":"\u00e9","y":1.0}, "b":[1,2] }"#)
    );
    assert_ne!(
        arguments_digest(r#"{"a":1}"#),
        arguments_digest(r#"{"a":"1"}"#)
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.json");
    let b = ApprovalBroker::new(EventBus::new(16), Some(path.clone()), false);
    let answered = |b: &ApprovalBroker, scope| {
        let b = b.clone();
        async move {
            let r = request(&b, "s1");
            let id = r.id.clone();
            let ask = tokio::spawn({
                let b = b.clone();
                async move { b.ask(r, "h".into(), Duration::from_secs(30)).await }
            });
            while b.pending().is_empty() {
                tokio::task::yield_now().await;
            }
            b.answer(&id, Answer::Allow(scope), Decider::Cli).unwrap();
            ask.await.unwrap()
        }
    };
    answered(&b, Scope::Exact).await;
    let other = arguments_digest(r#"{"path":"/y"}"#);
    let covered = |b: &ApprovalBroker, session: &str, digest: &str| {
        b.granted(&Covered {
            profile: None,
            session,
            server: "fs",
            tool: "write_file",
            hash: "h",
            arguments_digest: digest,
        })
    };
    let same = arguments_digest("{\"path\":\"/x\"}");
    assert_eq!(covered(&b, "s1", &same), Some(Scope::Exact));
    assert_eq!(covered(&b, "s1", &other), None);
    assert_eq!(covered(&b, "s2", &same), None);
    b.end_session("s1");
    assert_eq!(covered(&b, "s1", &same), None);
    answered(&b, Scope::ExactAlways).await;
    assert!(b.flush(Duration::from_secs(5)));
    let again = ApprovalBroker::new(EventBus::new(16), Some(path), false);
    assert_eq!(covered(&again, "s9", &same), Some(Scope::ExactAlways));
    assert_eq!(covered(&again, "s9", &other), None);
    let g = again
        .grants()
        .into_iter()
        .find(|g| g.scope == Scope::ExactAlways)
        .unwrap();
    assert_eq!(g.arguments_digest.as_deref(), Some(same.as_str()));
    assert!(again.revoke(&g));
    assert_eq!(covered(&again, "s9", &same), None);
}

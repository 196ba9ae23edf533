//! What answers leave behind and what they never allow: seeded random interleavings of calls,
//! answers, cancels and restarts; secret values in arguments stored redacted; the process that
//! answered through the control socket; a busy activity database retried.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

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
                    Outcome::Reply(_) | Outcome::Error(..) => {
                        *finals.lock().unwrap().entry(i).or_default() += 1
                    }
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
    // The child got the value in its env; what it says back has it masked.
    let said = call(1, "fx__getenv", json!({"name": "API_KEY"})).await;
    assert!(
        !said.contains(secret) && said.contains("[secret:"),
        "{said}"
    );
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

/// The rows of the last calls are on disk when the hub has stopped: the writer's gathering of
/// records (10 ms) never loses the ones made just before a shutdown.
#[tokio::test]
async fn the_last_rows_are_written_before_the_hub_ends() {
    let t = TestHub::start(&config(&[]));
    for i in 0..3 {
        t.hub
            .activity()
            .record(gatehouse::activity::CallRecord::allowed(
                "s",
                "fx",
                "echo",
                format!("{{\"i\":{i}}}"),
            ));
    }
    t.hub.shutdown().await;
    let db = rusqlite::Connection::open(t.dir.path().join("activity.db")).unwrap();
    let n: i64 = db
        .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3);
}

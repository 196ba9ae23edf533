//! The actor's state machine against the in-memory fake child (`fake.rs`), in paused tokio time:
//! production timings (1 s backoff doubling, 60 s reset, 5 failures, 2 s stop grace) run in
//! milliseconds and every delay is measured exactly. No process is started.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::context::{Context, Tuning};
use super::fake::{FakeLauncher, Script};
use super::handle::ServerHandle;
use super::status::{ServerStatus, State};
use crate::config::{Config, ServerConfig, ServerId};
use crate::events::EventBus;
use crate::secrets::NoSecretStore;

fn server(fake: &Arc<FakeLauncher>) -> (ServerHandle, tokio::task::JoinHandle<()>) {
    let config = Config::parse(
        r#"{"servers": {"fx": {"command": "fake-server"}}}"#,
        std::path::Path::new("t.json"),
    )
    .unwrap();
    let cfg: ServerConfig = config.servers.into_values().next().unwrap();
    let ctx = Arc::new(Context {
        bus: EventBus::new(1024),
        secrets: Arc::new(NoSecretStore),
        redactions: Arc::default(),
        log_dir: None,
        tuning: Tuning::default(),
        gateway_ports: Vec::new(),
        launcher: fake.clone(),
        sandbox: Default::default(),
        known_tools_dir: None,
        oauth: Arc::new(crate::oauth::Manager::new(
            Arc::new(crate::oauth::NoVault),
            Arc::default(),
        )),
    });
    ServerHandle::spawn(ServerId::parse("fx").unwrap(), cfg, ctx)
}

/// Waits (in tokio time, which jumps ahead when everything is idle) for a status.
async fn wait(h: &ServerHandle, what: &str, pred: impl Fn(&ServerStatus) -> bool) -> ServerStatus {
    let mut rx = h.watch_status();
    let found = tokio::time::timeout(Duration::from_secs(3600), async {
        rx.wait_for(|s| pred(s)).await.map(|s| s.clone())
    })
    .await;
    match found {
        Ok(Ok(s)) => s,
        _ => panic!("never {what}; last status {:?}", h.status()),
    }
}

fn within(gap: Duration, nominal: Duration) -> bool {
    // ±20 % jitter, plus scheduling slack that paused time keeps at (almost) zero.
    gap >= nominal.mul_f64(0.8) && gap <= nominal.mul_f64(1.2) + Duration::from_millis(5)
}

#[tokio::test(start_paused = true)]
async fn crashes_back_off_doubling_from_one_second_then_give_up_after_five() {
    let fake = FakeLauncher::new(Script {
        crash_after: Some(Duration::ZERO),
        ..Script::default()
    });
    let (h, join) = server(&fake);
    let failed = wait(&h, "failed", |s| s.state == State::Failed).await;
    assert_eq!(failed.consecutive_failures, 5);
    let err = failed.last_error.unwrap_or_default();
    assert!(
        err.starts_with("gave up after 5 consecutive failures; last: exited with code 1"),
        "{err}"
    );
    let launches = fake.times_of("launch");
    assert_eq!(launches.len(), 5, "{:?}", fake.entries());
    for (i, pair) in launches.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let nominal = Duration::from_secs(1 << i);
        assert!(
            within(gap, nominal),
            "restart {}: waited {gap:?}, nominal {nominal:?}",
            i + 1
        );
    }
    // Failed stays failed: no launch follows, however long we wait.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(fake.times_of("launch").len(), 5);
    h.shutdown().await.unwrap();
    join.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_server_that_ran_long_enough_starts_its_failure_count_afresh() {
    // 61 s of running is past the 60 s reset: every crash is "the first" again.
    let fake = FakeLauncher::new(Script {
        crash_after: Some(Duration::from_secs(61)),
        ..Script::default()
    });
    let (h, join) = server(&fake);
    for n in 1..=7 {
        let s = wait(&h, "restarting", |s| {
            s.state == State::Restarting && fake.times_of("crash").len() == n
        })
        .await;
        assert_eq!(s.consecutive_failures, 1, "crash {n}");
        let next = wait(&h, "running again", |s| s.state == State::Running).await;
        assert_eq!(next.restarts, n as u32);
    }
    h.shutdown().await.unwrap();
    join.await.unwrap();

    // The same crash after 30 s accumulates and gives up.
    let fake = FakeLauncher::new(Script {
        crash_after: Some(Duration::from_secs(30)),
        ..Script::default()
    });
    let (h, join) = server(&fake);
    let failed = wait(&h, "failed", |s| s.state == State::Failed).await;
    assert_eq!(failed.consecutive_failures, 5);
    assert_eq!(fake.times_of("crash").len(), 5);
    h.shutdown().await.unwrap();
    join.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stop_closes_stdin_then_terms_then_kills_the_group_two_seconds_apart() {
    let fake = FakeLauncher::new(Script {
        exits_on_eof: false,
        exits_on_term: false,
        ..Script::default()
    });
    let (h, join) = server(&fake);
    wait(&h, "running", |s| s.state == State::Running).await;
    let t0 = Instant::now();
    h.stop().await.unwrap();
    let stopped = h.status();
    assert_eq!(stopped.state, State::Stopped);
    assert_eq!(stopped.last_exit.and_then(|e| e.signal), Some(9));
    let entries = fake.entries();
    assert_eq!(
        entries,
        ["launch", "stdin closed", "TERM", "KILL"],
        "{entries:?}"
    );
    let at = |what: &str| fake.times_of(what)[0] - t0;
    assert!(at("stdin closed") < Duration::from_millis(5));
    assert_eq!(at("TERM"), Duration::from_secs(2));
    assert_eq!(at("KILL"), Duration::from_secs(4));
    h.shutdown().await.unwrap();
    join.await.unwrap();

    // A server that exits when its stdin closes is never signalled.
    let fake = FakeLauncher::new(Script::default());
    let (h, join) = server(&fake);
    wait(&h, "running", |s| s.state == State::Running).await;
    h.stop().await.unwrap();
    assert_eq!(fake.entries(), ["launch", "stdin closed"]);
    assert_eq!(h.status().last_exit.and_then(|e| e.code), Some(0));
    h.shutdown().await.unwrap();
    join.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_fails_at_its_startup_timeout_and_is_stopped() {
    let fake = FakeLauncher::new(Script {
        answers: false,
        ..Script::default()
    });
    let t0 = Instant::now();
    let (h, join) = server(&fake);
    let failed = wait(&h, "failed", |s| s.state == State::Failed).await;
    let took = Instant::now() - t0;
    assert!(
        took >= Duration::from_secs(60) && took < Duration::from_secs(61),
        "{took:?}"
    );
    let err = failed.last_error.unwrap_or_default();
    assert!(err.contains("handshake timed out after 60 s"), "{err}");
    // Fatal: no restart loop; and the silent child was stopped.
    assert_eq!(failed.consecutive_failures, 1);
    assert_eq!(fake.entries(), ["launch", "stdin closed"]);
    h.shutdown().await.unwrap();
    join.await.unwrap();
}

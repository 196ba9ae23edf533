//! Supervisor behaviours against real child processes (the fixture server).

use std::time::{Duration, Instant};

use gatehouse::State;
use serde_json::json;

use crate::support::*;

const T: Duration = Duration::from_secs(15);

#[tokio::test]
async fn runs_only_after_initialize_and_full_tools_list() {
    let th = TestHub::start(&config(&[(
        "slow",
        fixture(&["--slow-start", "600", "--tools", "3"]),
    )]));
    let h = th.server("slow");
    wait_spawned(&h, T).await;
    let s = h.status();
    assert_eq!(s.state, State::Starting, "{s:?}");
    assert_eq!(s.tools, 0);
    // Still starting while the child sleeps before answering initialize.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.status().state, State::Starting);
    let s = wait_state(&h, State::Running, T).await;
    assert_eq!(s.tools, FIXTURE_TOOLS + 3);
    assert_eq!(h.tools().len(), FIXTURE_TOOLS + 3);
    assert_eq!(s.server_name.as_deref(), Some("gatehouse-fixture"));
    assert_eq!(
        call_tool(&h, "echo", json!({"text": "hi"})).await.unwrap(),
        r#"{"content":[{"text":"hi","type":"text"}]}"#
    );
    th.hub.shutdown().await;
}

/// A strict 2025 server that exits on the `server/discover` probe (a method it does not know) is
/// restarted once and opened with `initialize` from then on: it runs, legacy, with a note in its
/// log, instead of dying of every probe until it is given up.
#[tokio::test]
async fn a_server_that_dies_of_the_discover_probe_runs_without_it() {
    let th = TestHub::start_with(
        &config(&[("strict", fixture(&["--exit-on-discover"]))]),
        fast_tuning(),
    );
    let h = th.server("strict");
    let s = wait_state(&h, State::Running, T).await;
    assert_eq!(s.era, Some(gatehouse::protocol::Era::Legacy), "{s:?}");
    assert_eq!(s.restarts, 1, "one start died of the probe: {s:?}");
    let log: Vec<String> = h.logs().tail(None).into_iter().map(|l| l.line).collect();
    assert!(
        log.iter()
            .any(|l| l.contains("exited on the server/discover probe")),
        "{log:?}"
    );
    th.hub.shutdown().await;
}

#[tokio::test]
async fn restarts_after_kill_9_with_new_pid() {
    let th = TestHub::start(&config(&[("a", fixture(&[]))]));
    let h = th.server("a");
    let first = wait_state(&h, State::Running, T).await;
    let pid = first.pid.unwrap();
    kill9(pid);
    let s = wait_for(&h, "restarting", T, |s| s.state == State::Restarting).await;
    assert!(
        s.last_error.as_deref().unwrap_or("").contains("signal 9"),
        "{s:?}"
    );
    let s = wait_for(&h, "running again", T, |s| {
        s.state == State::Running && s.pid != Some(pid)
    })
    .await;
    assert_eq!(s.restarts, first.restarts + 1);
    assert_eq!(s.last_exit.unwrap().signal, Some(9));
    assert!(group_members(pid).is_empty());
    th.hub.shutdown().await;
}

#[tokio::test]
async fn crash_loop_fails_after_five_and_manual_restart_clears_it() {
    let marker = tempfile::NamedTempFile::new().unwrap();
    let path = marker.path().to_str().unwrap().to_owned();
    let th = TestHub::start(&config(&[("loop", fixture(&["--crash-if-exists", &path]))]));
    let h = th.server("loop");
    let s = wait_state(&h, State::Failed, Duration::from_secs(30)).await;
    assert_eq!(s.consecutive_failures, 5);
    assert_eq!(
        s.restarts, 4,
        "five attempts are the first start and four restarts"
    );
    let err = s.last_error.unwrap();
    assert!(
        err.contains("gave up after 5 consecutive failures"),
        "{err}"
    );
    assert!(err.contains("exited with code 3"), "{err}");
    assert!(
        err.contains("crashing on purpose"),
        "the error quotes the child's stderr: {err}"
    );
    // It stays failed: no more attempts.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(h.status().restarts, 4);

    drop(marker); // the cause is fixed
    h.restart().await.unwrap();
    let s = wait_state(&h, State::Running, T).await;
    assert_eq!(s.consecutive_failures, 0);
    assert_eq!(s.last_error, None);
    th.hub.shutdown().await;
}

#[tokio::test]
async fn config_change_clears_failed() {
    let th = TestHub::start(&config(&[("x", fixture(&["--exit-code", "7"]))]));
    let h = th.server("x");
    wait_state(&h, State::Failed, Duration::from_secs(30)).await;
    let fixed =
        gatehouse::Config::parse(&config(&[("x", fixture(&[]))]), std::path::Path::new("t"))
            .unwrap();
    th.hub.apply_config(fixed).await.unwrap();
    let s = wait_state(&h, State::Running, T).await;
    assert_eq!(s.consecutive_failures, 0);
    th.hub.shutdown().await;
}

#[tokio::test]
async fn in_flight_call_errors_within_a_second_of_the_crash() {
    let th = TestHub::start(&config(&[("a", fixture(&[]))]));
    let h = th.server("a");
    let pid = wait_state(&h, State::Running, T).await.pid.unwrap();

    // A call the child never answers because it is killed.
    let h2 = h.clone();
    let call = tokio::spawn(async move { call_tool(&h2, "sleep", json!({"ms": 30000})).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let killed = Instant::now();
    kill9(pid);
    let res = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("call hung")
        .unwrap();
    let elapsed = killed.elapsed();
    let err = res.unwrap_err();
    assert!(err.contains("killed by signal 9"), "{err}");
    assert!(
        elapsed < Duration::from_secs(1),
        "answered {elapsed:?} after the crash"
    );

    // A child that exits mid-call on its own.
    wait_for(&h, "the restarted child", T, |s| {
        s.state == State::Running && s.pid != Some(pid)
    })
    .await;
    let err = call_tool(&h, "crash", json!({"code": 4}))
        .await
        .unwrap_err();
    assert!(err.contains("exited with code 4"), "{err}");
    th.hub.shutdown().await;
}

#[tokio::test]
async fn exit_after_n_calls_restarts_and_calls_to_non_running_are_refused() {
    let th = TestHub::start(&config(&[("a", fixture(&["--exit-after", "2"]))]));
    let h = th.server("a");
    wait_state(&h, State::Running, T).await;
    assert!(call_tool(&h, "echo", json!({"text": "1"})).await.is_ok());
    assert!(call_tool(&h, "echo", json!({"text": "2"})).await.is_ok());
    let s = wait_for(&h, "restart", T, |s| s.state != State::Running).await;
    assert!(
        matches!(s.state, State::Restarting | State::Starting),
        "{s:?}"
    );
    let err = call_tool(&h, "echo", json!({"text": "3"})).await;
    if h.status().state != State::Running {
        let err = err.unwrap_err();
        assert!(err.contains("not running"), "{err}");
    }
    let s = wait_state(&h, State::Running, T).await;
    assert_eq!(s.restarts, 1);
    th.hub.shutdown().await;
}

#[tokio::test]
async fn handshake_timeout_fails_naming_the_timeout() {
    let th = TestHub::start(&config(&[(
        "mute",
        with(fixture(&["--no-init"]), "startup_timeout_secs", json!(1)),
    )]));
    let h = th.server("mute");
    let pid = wait_spawned(&h, T).await;
    let s = wait_state(&h, State::Failed, T).await;
    let err = s.last_error.unwrap();
    assert!(err.contains("handshake timed out after 1 s"), "{err}");
    assert!(err.contains("initialize"), "{err}");
    assert_eq!(s.restarts, 0, "a timeout is not retried");
    assert!(group_members(pid).is_empty(), "the hung child was stopped");
    th.hub.shutdown().await;
}

#[tokio::test]
async fn garbage_and_huge_lines_do_not_drop_the_connection() {
    let th = TestHub::start(&config(&[
        ("junk", fixture(&["--garbage"])),
        ("huge", fixture(&["--huge-line", "20"])),
    ]));
    let junk = th.server("junk");
    let huge = th.server("huge");
    let junk_pid = wait_state(&junk, State::Running, T).await.pid;
    let s = wait_state(&huge, State::Running, T).await;
    assert_eq!(s.restarts, 0);
    for i in 0..5 {
        let r = call_tool(&junk, "echo", json!({"text": format!("n{i}")}))
            .await
            .unwrap();
        assert!(r.contains(&format!("n{i}")), "{r}");
    }
    assert_eq!(junk.status().restarts, 0);
    assert_eq!(
        junk.status().pid,
        junk_pid,
        "same process: the connection was never dropped"
    );
    let notes: Vec<String> = junk.logs().tail(None).into_iter().map(|l| l.line).collect();
    assert!(notes.iter().any(|l| l.contains("non-JSON")), "{notes:?}");
    assert!(
        notes.iter().any(|l| l.contains("unknown id 987654")),
        "{notes:?}"
    );
    let notes: Vec<String> = huge.logs().tail(None).into_iter().map(|l| l.line).collect();
    assert!(
        notes
            .iter()
            .any(|l| l.contains("dropped a stdout line of 20971520 bytes")),
        "{notes:?}"
    );
    assert!(call_tool(&huge, "echo", json!({"text": "ok"}))
        .await
        .is_ok());
    th.hub.shutdown().await;
}

#[tokio::test]
async fn stop_kills_a_term_ignoring_child_and_its_grandchild() {
    let th = TestHub::start(&config(&[
        ("stubborn", fixture(&["--ignore-term", "--ignore-eof"])),
        ("wrapper", fixture(&["--grandchild"])),
    ]));
    for id in ["stubborn", "wrapper"] {
        let h = th.server(id);
        let pid = wait_state(&h, State::Running, T).await.pid.unwrap();
        if id == "wrapper" {
            assert_eq!(
                group_members(pid).len(),
                2,
                "wrapper and its server share the group"
            );
        }
        h.stop().await.unwrap();
        let s = h.status();
        assert_eq!(s.state, State::Stopped);
        assert_eq!(s.pid, None);
        assert_eq!(
            group_members(pid),
            Vec::<u32>::new(),
            "{id}: descendants survived stop"
        );
        // A stopped server starts again on request.
        h.start().await.unwrap();
        wait_state(&h, State::Running, T).await;
    }
    th.hub.shutdown().await;
}

#[tokio::test]
async fn hub_shutdown_leaves_zero_descendants() {
    let th = TestHub::start(&config(&[
        ("a", fixture(&[])),
        ("b", fixture(&["--grandchild"])),
        ("c", fixture(&["--ignore-term", "--ignore-eof"])),
        ("d", fixture(&["--no-init"])),
    ]));
    let mut pgids = Vec::new();
    for id in ["a", "b", "c"] {
        pgids.push(
            wait_state(&th.server(id), State::Running, T)
                .await
                .pid
                .unwrap(),
        );
    }
    pgids.push(wait_spawned(&th.server("d"), T).await);
    th.hub.shutdown().await;
    for pgid in pgids {
        assert_eq!(
            group_members(pgid),
            Vec::<u32>::new(),
            "group {pgid} survived shutdown"
        );
    }
}

#[tokio::test]
async fn child_gets_minimal_env_plus_declared() {
    // SAFETY: set before the hub spawns anything; tests in this binary only read it via the child.
    unsafe { std::env::set_var("GATEHOUSE_TEST_LEAK", "leaked") };
    let th = TestHub::start(&config(&[(
        "e",
        with(fixture(&[]), "env", json!({"DECLARED": "yes"})),
    )]));
    let h = th.server("e");
    wait_state(&h, State::Running, T).await;
    let get = |name: &'static str| {
        let h = h.clone();
        async move {
            call_tool(&h, "getenv", json!({"name": name}))
                .await
                .unwrap()
        }
    };
    assert!(get("DECLARED").await.contains(r#"\"yes\""#));
    assert!(
        get("GATEHOUSE_TEST_LEAK").await.contains("null"),
        "the app's env leaked into the child"
    );
    assert!(get("PATH").await.contains('/'));
    th.hub.shutdown().await;
}

#[tokio::test]
async fn spawn_errors_and_insecure_remote_servers_fail_clearly() {
    let th = TestHub::start(&config(&[
        (
            "missing",
            json!({"command": "definitely-not-a-command-xyz"}),
        ),
        (
            "badcwd",
            json!({"command": FIXTURE, "cwd": "/nonexistent/dir"}),
        ),
        ("remote", json!({"url": "http://example.com/mcp"})),
        ("refused", json!({"url": "http://127.0.0.1:9/mcp"})),
        ("ok", fixture(&[])),
    ]));
    let s = wait_state(&th.server("missing"), State::Failed, T).await;
    assert!(s
        .last_error
        .unwrap()
        .contains("\"definitely-not-a-command-xyz\" was not found in PATH"));
    let s = wait_state(&th.server("badcwd"), State::Failed, T).await;
    assert!(s
        .last_error
        .unwrap()
        .contains("working directory \"/nonexistent/dir\" does not exist"));
    // Plain http to a non-loopback host is refused before any connection is made.
    let s = wait_state(&th.server("remote"), State::Failed, T).await;
    assert!(s.last_error.unwrap().contains("allow_insecure"));
    // Nothing listening: restarting with the reason, like a crashing process.
    let s = wait_state(&th.server("refused"), State::Restarting, T).await;
    let e = s.last_error.unwrap();
    assert!(e.contains("cannot reach http://127.0.0.1:9/mcp"), "{e}");
    // The others are unaffected.
    wait_state(&th.server("ok"), State::Running, T).await;
    th.hub.shutdown().await;
}

#[tokio::test]
async fn disabled_servers_stay_stopped_until_started() {
    let th = TestHub::start(&config(&[(
        "off",
        with(fixture(&[]), "enabled", json!(false)),
    )]));
    let h = th.server("off");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.status().state, State::Stopped);
    h.start().await.unwrap();
    wait_state(&h, State::Running, T).await;
    th.hub.shutdown().await;
}

#[tokio::test]
async fn stderr_is_kept_and_status_events_are_published() {
    let th = TestHub::start(&config(&[("a", fixture(&[]))]));
    let h = th.server("a");
    wait_state(&h, State::Running, T).await;
    let lines = h.logs().tail(None);
    assert!(
        lines.iter().any(|l| l.line.starts_with("fixture starting")),
        "{lines:?}"
    );

    let mut events = th.hub.events();
    h.restart().await.unwrap();
    let mut states = Vec::new();
    while let Ok(Ok(ev)) = tokio::time::timeout(T, events.recv()).await {
        if let gatehouse::events::Event::Status(s) = ev {
            states.push(s.state);
            if s.state == State::Running {
                break;
            }
        }
    }
    states.dedup();
    assert_eq!(
        states,
        vec![State::Stopping, State::Starting, State::Running]
    );
    let log = std::fs::read_to_string(th.dir.path().join("logs/a.log")).unwrap();
    assert_eq!(log.matches("fixture starting").count(), 2, "{log}");
    th.hub.shutdown().await;
}

/// Whether a process is still alive (a zombie waiting for its parent counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s
            .rfind(')')
            .and_then(|i| s[i + 2..].chars().next())
            .unwrap_or('X');
        state != 'Z' && state != 'X'
    })
}

/// Reads the pid an escaping descendant wrote.
async fn escaped_pid(pidfile: &std::path::Path) -> u32 {
    let deadline = Instant::now() + T;
    loop {
        if let Some(pid) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the descendant never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A descendant that left the server's process group and session (setsid) and ignores SIGTERM
/// is stopped with its server — by `stop` and at hub shutdown (a crash's cleanup takes the same
/// path).
#[tokio::test]
async fn descendants_that_left_the_group_end_with_their_server() {
    let dir = tempfile::tempdir().unwrap();
    let (p1, p2) = (dir.path().join("one.pid"), dir.path().join("two.pid"));
    let th = TestHub::start(&config(&[
        (
            "one",
            writes_in(fixture(&["--escape", p1.to_str().unwrap()]), dir.path()),
        ),
        (
            "two",
            writes_in(fixture(&["--escape", p2.to_str().unwrap()]), dir.path()),
        ),
    ]));
    let one = th.server("one");
    let pid = wait_state(&one, State::Running, T).await.pid.unwrap();
    let escaped = escaped_pid(&p1).await;
    assert!(alive(escaped));
    assert!(
        !group_members(pid).contains(&escaped),
        "the descendant really left the group"
    );
    one.stop().await.unwrap();
    assert!(
        !alive(escaped),
        "a descendant outside the group survived stop"
    );

    let two = th.server("two");
    wait_state(&two, State::Running, T).await;
    let escaped = escaped_pid(&p2).await;
    assert!(alive(escaped));
    th.hub.shutdown().await;
    assert!(
        !alive(escaped),
        "a descendant outside the group survived hub shutdown"
    );
}

/// A server's listing is bounded: one that lists more than 10,000 tools never runs — it fails
/// with the reason — and nothing of its listing is kept.
#[tokio::test]
async fn a_listing_over_the_bound_fails_the_server_and_keeps_nothing() {
    let th = TestHub::start(&config(&[
        ("big", fixture(&["--tools", "10050"])),
        ("ok", fixture(&[])),
    ]));
    let big = th.server("big");
    let s = wait_state(&big, State::Failed, Duration::from_secs(60)).await;
    let err = s.last_error.unwrap_or_default();
    assert!(err.contains("more than 10,000 tools"), "{err}");
    assert_eq!(big.tools().len(), 0);
    assert_eq!(s.tools, 0);
    // The other server is untouched.
    let ok = wait_state(&th.server("ok"), State::Running, T).await;
    assert_eq!(ok.tools, FIXTURE_TOOLS);
    th.hub.shutdown().await;
}

/// A descendant that leaves the session (`setsid`) *and* sheds its environment (`env -i`, so no
/// launch tag) still ends with its server: it stays in the launch's cgroup (Linux, where the hub
/// can make one — as here).
#[tokio::test]
async fn a_descendant_with_a_clean_environment_ends_with_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("clean.pid");
    let th = TestHub::start(&config(&[(
        "one",
        writes_in(
            fixture(&["--escape-clean", pidfile.to_str().unwrap()]),
            dir.path(),
        ),
    )]));
    let one = th.server("one");
    let pid = wait_state(&one, State::Running, T).await.pid.unwrap();
    let escaped = escaped_pid(&pidfile).await;
    assert!(alive(escaped));
    assert!(
        !group_members(pid).contains(&escaped),
        "it really left the group"
    );
    let environ = std::fs::read(format!("/proc/{escaped}/environ")).unwrap_or_default();
    assert!(
        !String::from_utf8_lossy(&environ).contains("GATEHOUSE_SERVER_TAG"),
        "it really carries no launch tag"
    );
    one.stop().await.unwrap();
    assert!(
        !alive(escaped),
        "a descendant with a clean environment survived stop"
    );
    th.hub.shutdown().await;
}

/// Whatever a descendant does to its session and environment, it ends with its server — by
/// `stop` and by the hub's exit: a Node server's grandchild spawned `detached` with `env: {}`
/// (its own session, no launch tag) is gone after `gatehouse stop`, and the fixture's
/// `setsid env -i` descendant is gone after the hub exits.
#[tokio::test]
async fn detached_descendants_with_no_environment_end_with_stop_and_with_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let node_pid = d.join("node.pid");
    let clean_pid = d.join("clean.pid");
    let script = format!(
        "const {{spawn}} = require('child_process');\
         const g = spawn(process.execPath, ['-e', 'setInterval(() => {{}}, 1e9)'], {{detached: true, env: {{}}, stdio: 'ignore'}});\
         g.unref(); require('fs').writeFileSync({pidfile:?}, String(g.pid));\
         const s = spawn({FIXTURE:?}, [], {{stdio: 'inherit'}});\
         s.on('exit', (c) => process.exit(c ?? 1));",
        pidfile = node_pid.to_str().unwrap(),
    );
    let cfg = json!({"servers": {
        // The program its script runs is named nowhere the sandbox looks (inside the script):
        // the entry lets it read it, as a person would.
        "node": {"command": "node", "args": ["-e", script], "sandbox": {"write": [d], "read": [FIXTURE]}},
        "clean": writes_in(fixture(&["--escape-clean", clean_pid.to_str().unwrap()]), d),
    }});
    let s = serve(d, &cfg.to_string(), &["node", "clean"]).await;
    let grandchild = escaped_pid(&node_pid).await;
    let clean = escaped_pid(&clean_pid).await;
    assert!(alive(grandchild) && alive(clean));
    let out = crate::support::gh(&s, &["stop", "node"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gone = |pid: u32| async move {
        let deadline = Instant::now() + T;
        while alive(pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        !alive(pid)
    };
    assert!(
        gone(grandchild).await,
        "a detached Node grandchild survived stop"
    );
    assert!(alive(clean), "the other server's descendant is untouched");
    drop(s); // SIGTERM to the hub, which exits
    assert!(
        gone(clean).await,
        "a setsid env -i descendant survived the hub's exit"
    );
}

/// A listing over the byte bound is refused whole, with memory bounded: a server listing 200
/// tools of 1 MiB each (200 MiB, 8 MiB a page) fails at start naming the bound, keeps nothing,
/// and the hub's peak resident memory stays far below the listing's size.
#[tokio::test]
async fn a_200_mib_listing_is_refused_within_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({"servers": {"fat": fixture(&["--fat-tools", "200"]), "ok": fixture(&[])}});
    let s = serve(d, &cfg.to_string(), &["ok"]).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let out = crate::support::gh(&s, &["status", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let fat = v
            .as_array()
            .and_then(|a| a.iter().find(|x| x["id"] == "fat").cloned())
            .unwrap_or_default();
        if fat["state"] == "failed" || Instant::now() > deadline {
            break fat;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status["state"], "failed", "{status}");
    assert!(
        status["last_error"].as_str().unwrap_or("").contains("MiB"),
        "{status}"
    );
    assert_eq!(status["tools"], 0, "{status}");
    let proc_status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).unwrap();
    let peak_kib: u64 = proc_status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    println!(
        "a 200 MiB listing refused: hub peak RSS {} MiB",
        peak_kib / 1024
    );
    assert!(
        peak_kib < 150 * 1024,
        "peak RSS {} MiB for a 200 MiB listing",
        peak_kib / 1024
    );
}

//! Supervisor benchmarks (prints figures; asserts nothing). Run with `make bench` or
//! `cargo bench --bench supervisor`.
//!
//! 1. spawn-to-`running` through the hub vs a bare spawn + initialize + tools/list of the same
//!    fixture (ratio);
//! 2. crash-to-error latency of an in-flight call (kill -9 of the child → the caller's error);
//! 3. kill-to-`running` with zero backoff;
//! 4. 100 fixture servers: time until all `running`, and the hub's RSS;
//! 5. a login with 40 servers of which 3 are used: server processes and their RSS, every server
//!    started at launch vs started on demand (`"start": "on_demand"`, tools known from a run
//!    before).

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests, benches and the fixture may panic
// Tests, benches and the fixture read top to bottom as the story they check or measure: the
// 100-line limit is for the product's own functions.
#![allow(clippy::too_many_lines)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gatehouse::config::Config;
use gatehouse::supervisor::{Reply, Tuning};
use gatehouse::{Hub, HubOptions, State};
use serde_json::{json, Value};

const FIXTURE: &str = env!("CARGO_BIN_EXE_gatehouse-fixture");
const REPS: usize = 30;

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    println!("gatehouse supervisor benchmarks ({REPS} repetitions each unless noted)\n");
    let bare = bare_handshake();
    let hub = rt.block_on(hub_spawn_to_running());
    println!(
        "spawn → running      bare p50 {:>8.2} ms   via hub p50 {:>8.2} ms   ratio {:.2}   (hub p90 {:.2} ms)",
        ms(pct(&bare, 50)),
        ms(pct(&hub, 50)),
        pct(&hub, 50).as_secs_f64() / pct(&bare, 50).as_secs_f64(),
        ms(pct(&hub, 90)),
    );
    let crash = rt.block_on(crash_to_error());
    println!(
        "crash → caller error p50 {:>8.2} ms   p99 {:>8.2} ms   max {:>8.2} ms",
        ms(pct(&crash, 50)),
        ms(pct(&crash, 99)),
        ms(*crash.iter().max().unwrap_or(&Duration::ZERO)),
    );
    let recover = rt.block_on(kill_to_running());
    println!(
        "kill -9 → running    p50 {:>8.2} ms   p99 {:>8.2} ms   (zero backoff)",
        ms(pct(&recover, 50)),
        ms(pct(&recover, 99)),
    );
    let (all_running, rss_before, rss_after) = rt.block_on(hundred_servers());
    println!(
        "100 servers → all running {:>8.1} ms   hub RSS {:.1} MiB before, {:.1} MiB with 100 running",
        ms(all_running),
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
    );
    for mode in ["at_launch", "on_demand"] {
        let (procs, rss, first_call) = rt.block_on(login_forty_use_three(mode));
        println!(
            "40 servers, 3 used ({mode:>9}): {procs:>2} server processes, {:>6.1} MiB of server RSS, first call p50 {:>7.2} ms",
            rss as f64 / 1024.0,
            ms(first_call),
        );
    }
}

/// A login with 40 servers of which 3 are called: the server processes left running once the
/// three calls are answered, their RSS together, and the first call's latency (p50 of the three).
async fn login_forty_use_three(mode: &str) -> (usize, u64, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let servers: serde_json::Map<String, Value> = (0..40)
        .map(|i| (format!("s{i}"), json!({"command": FIXTURE, "start": mode})))
        .collect();
    let config = || {
        Config::parse(&json!({ "servers": servers }).to_string(), "bench".as_ref()).expect("config")
    };
    let settled = |s: &gatehouse::ServerStatus| matches!(s.state, State::Running | State::Idle);
    // A run before: on demand, every server starts once to learn its tools.
    for round in 0..2 {
        let mut opts = HubOptions::new(dir.path().to_owned());
        opts.tuning = tuning();
        let hub = Hub::start(config(), opts);
        for h in hub.servers() {
            let mut rx = h.watch_status();
            let _ = rx.wait_for(|s| settled(s)).await;
            if mode == "on_demand" {
                let _ = rx.wait_for(|s| s.state == State::Idle).await;
            }
        }
        if round == 0 {
            hub.shutdown().await;
            continue;
        }
        let params = serde_json::value::RawValue::from_string(
            r#"{"name":"add","arguments":{"a":1,"b":2}}"#.into(),
        )
        .expect("raw");
        let mut first = Vec::new();
        for id in ["s3", "s17", "s31"] {
            let h = hub.server(id).expect("server");
            let t = Instant::now();
            let r = h.request("tools/call", Some(&params)).await;
            first.push(t.elapsed());
            assert!(matches!(r, Ok(Reply::Result(_))), "{r:?}");
        }
        let pids: Vec<u32> = hub.status().iter().filter_map(|s| s.pid).collect();
        let rss: u64 = pids.iter().map(|p| rss_of(*p)).sum();
        hub.shutdown().await;
        return (pids.len(), rss, pct(&first, 50));
    }
    (0, 0, Duration::ZERO)
}

fn rss_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn pct(samples: &[Duration], p: usize) -> Duration {
    let mut v = samples.to_vec();
    v.sort();
    if v.is_empty() {
        return Duration::ZERO;
    }
    v[((v.len() - 1) * p / 100).min(v.len() - 1)]
}

/// Zero backoff and no give-up, so repeated kills measure recovery itself.
fn tuning() -> Tuning {
    Tuning {
        backoff_base: Duration::ZERO,
        backoff_max: Duration::ZERO,
        max_failures: u32::MAX,
        stop_grace: Duration::from_millis(500),
        ..Tuning::default()
    }
}

fn config(n: usize) -> Config {
    let servers: serde_json::Map<String, Value> = (0..n)
        .map(|i| (format!("s{i}"), json!({"command": FIXTURE})))
        .collect();
    Config::parse(&json!({ "servers": servers }).to_string(), "bench".as_ref()).expect("config")
}

/// The same work the supervisor does before `running`, with nothing around it.
fn bare_handshake() -> Vec<Duration> {
    (0..REPS)
        .map(|_| {
            let t = Instant::now();
            let mut child = Command::new(FIXTURE)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn fixture");
            let mut stdin = child.stdin.take().expect("stdin");
            let mut out = BufReader::new(child.stdout.take().expect("stdout"));
            let mut line = String::new();
            writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"bare","version":"1"}}}}}}"#).expect("write");
            out.read_line(&mut line).expect("read");
            writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).expect("write");
            writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).expect("write");
            line.clear();
            out.read_line(&mut line).expect("read");
            let elapsed = t.elapsed();
            drop(stdin);
            let _ = child.wait();
            elapsed
        })
        .collect()
}

async fn hub_spawn_to_running() -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut out = Vec::new();
    for _ in 0..REPS {
        let mut opts = HubOptions::new(dir.path().to_owned());
        opts.tuning = tuning();
        let t = Instant::now();
        let hub = Hub::start(config(1), opts);
        let h = hub.server("s0").expect("server");
        let mut rx = h.watch_status();
        let _ = rx.wait_for(|s| s.state == State::Running).await;
        out.push(t.elapsed());
        hub.shutdown().await;
    }
    out
}

async fn crash_to_error() -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = HubOptions::new(dir.path().to_owned());
    opts.tuning = tuning();
    let hub = Hub::start(config(1), opts);
    let h = hub.server("s0").expect("server");
    let mut out = Vec::new();
    let params = serde_json::value::RawValue::from_string(
        r#"{"name":"sleep","arguments":{"ms":60000}}"#.into(),
    )
    .expect("raw");
    for _ in 0..REPS {
        let mut rx = h.watch_status();
        let pid = rx
            .wait_for(|s| s.state == State::Running)
            .await
            .map(|s| s.pid)
            .ok()
            .flatten()
            .expect("pid");
        let h2 = h.clone();
        let p2 = params.clone();
        let call = tokio::spawn(async move { h2.request("tools/call", Some(&p2)).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let t = Instant::now();
        kill(pid);
        let res = call.await.expect("join");
        out.push(t.elapsed());
        assert!(!matches!(res, Ok(Reply::Result(_))), "the call must fail");
        let _ = rx
            .wait_for(|s| s.state == State::Running && s.pid != Some(pid))
            .await;
    }
    hub.shutdown().await;
    out
}

async fn kill_to_running() -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = HubOptions::new(dir.path().to_owned());
    opts.tuning = tuning();
    let hub = Hub::start(config(1), opts);
    let h = hub.server("s0").expect("server");
    let mut out = Vec::new();
    for _ in 0..REPS {
        let mut rx = h.watch_status();
        let pid = rx
            .wait_for(|s| s.state == State::Running)
            .await
            .map(|s| s.pid)
            .ok()
            .flatten()
            .expect("pid");
        let t = Instant::now();
        kill(pid);
        let _ = rx
            .wait_for(|s| s.state == State::Running && s.pid != Some(pid))
            .await;
        out.push(t.elapsed());
    }
    hub.shutdown().await;
    out
}

async fn hundred_servers() -> (Duration, u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = HubOptions::new(dir.path().to_owned());
    opts.tuning = tuning();
    let before = rss_kib();
    let t = Instant::now();
    let hub = Hub::start(config(100), opts);
    for h in hub.servers() {
        let mut rx = h.watch_status();
        let _ = rx.wait_for(|s| s.state == State::Running).await;
    }
    let elapsed = t.elapsed();
    let after = rss_kib();
    hub.shutdown().await;
    (elapsed, before, after)
}

fn kill(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

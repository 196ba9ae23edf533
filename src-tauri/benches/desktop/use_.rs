//! An hour of use, compressed: with the window shown, each "minute" makes the traffic of a busy
//! minute — 300 routed calls (each an Activity row), 3 calls held and answered in the modal, a
//! server restarted (status events and log lines) — and then the app's and WebKit's PSS is read.
//! The page keeps no growing list if the last figure is near the first.
//! `GATEHOUSE_BENCH_MINUTES` sets how many minutes (default 60).

use super::*;

const CALLS: usize = 300;
const HELD: usize = 3;

pub fn hour(run: &mut App, port: u16, dir: &Path) {
    let minutes: usize = std::env::var("GATEHOUSE_BENCH_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(60);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let control = ControlClient::new(dir.join("control.sock"));
    let session = initialize(port);
    // (app, WebKit) in MiB.
    let split = |pid| {
        let (a, w, _) = pss(pid);
        (a as f64 / 1024.0, w as f64 / 1024.0)
    };
    let mut figures = vec![split(run.child.id())];
    let mut id = 100_000;
    for minute in 0..minutes {
        for i in 0..CALLS {
            id += 1;
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"s1__echo","arguments":{{"text":"minute {minute} call {i}"}}}}}}"#
            );
            let (_, reply) = post(port, Some(&session), &body);
            assert!(
                reply.contains(&format!("minute {minute} call {i}")),
                "unexpected reply: {reply}"
            );
        }
        for i in 0..HELD {
            id += 1;
            approve_one(
                run,
                port,
                &session,
                &control,
                &runtime,
                id,
                &format!("held {minute}.{i}"),
            );
        }
        let restarted = runtime.block_on(control.call(&Request::Restart { id: "s2".into() }));
        assert!(restarted.is_ok(), "restart s2: {restarted:?}");
        std::thread::sleep(Duration::from_secs(1));
        figures.push(split(run.child.id()));
    }
    let max = figures.iter().map(|(a, w)| a + w).fold(0.0, f64::max);
    let at = |m: usize| {
        let (a, w) = figures.get(m.min(minutes)).copied().unwrap_or_default();
        format!("{:.1} (app {a:.1} + WebKit {w:.1})", a + w)
    };
    println!(
        "PSS shown through {minutes} minutes of use ({} calls, {} held, {minutes} restarts), MiB: start {}, after 10 min {}, after 30 {}, end {}, max {max:.1}",
        minutes * CALLS,
        minutes * HELD,
        at(0),
        at(10),
        at(30),
        at(minutes)
    );
}

/// Calls with the window closed to the tray (`GATEHOUSE_BENCH_ONLY=calls`): the app alone, no
/// webview — its RSS and PSS after every 300 routed calls, to see whether the core's or the
/// shell's memory grows with calls. `GATEHOUSE_BENCH_CALLS` sets how many (default 3000).
pub fn tray_calls(run: &mut App, port: u16) {
    let total: usize = std::env::var("GATEHOUSE_BENCH_CALLS")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(3000);
    let session = initialize(port);
    let pid = run.child.id();
    let mib = |k: u64| k as f64 / 1024.0;
    let mut line = vec![format!(
        "0: RSS {:.1} PSS {:.1}",
        mib(kib(pid, "status", "VmRSS:")),
        mib(kib(pid, "smaps_rollup", "Pss:"))
    )];
    for i in 1..=total {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"s1__echo","arguments":{{"text":"tray call {i}"}}}}}}"#
        );
        let (_, reply) = post(port, Some(&session), &body);
        assert!(
            reply.contains(&format!("tray call {i}")),
            "unexpected reply: {reply}"
        );
        if i % 300 == 0 || i == total {
            line.push(format!(
                "{i}: RSS {:.1} PSS {:.1}",
                mib(kib(pid, "status", "VmRSS:")),
                mib(kib(pid, "smaps_rollup", "Pss:"))
            ));
        }
    }
    println!(
        "app in the tray, MiB after N calls (window closed): {}",
        line.join(" · ")
    );
}

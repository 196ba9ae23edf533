//! Result budget benchmarks (prints figures; asserts nothing). `cargo bench --bench budget`.
//!
//! What a call pays for result budgets, per KiB of its result:
//! 1. no budget set: the lookup every tool call makes (`config::budget_for` over a config with
//!    two profiles and a server's tools, none with a budget);
//! 2. a budget the result is within: the lookup and `gateway::budget::apply`'s length check;
//! 3. a 1 MiB result cut to 64 KiB: read, cut, written again, the whole kept.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use gatehouse::config::{budget_for, Config, ServerId};
use gatehouse::gateway::budget::{apply, Results};
use serde_json::json;

fn line(bytes: usize) -> Vec<u8> {
    let text: String = (0..)
        .map(|i| format!("line {i}: café \"quoted\"\n"))
        .scan(0usize, |n, l| {
            *n += l.len();
            (*n <= bytes).then_some(l)
        })
        .collect();
    let mut l =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}})
            .to_string()
            .into_bytes();
    l.push(b'\n');
    l
}

fn per_call(what: &str, runs: usize, kib: f64, mut f: impl FnMut()) {
    for _ in 0..runs / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..runs {
        f();
    }
    let ns = start.elapsed().as_nanos() as f64 / runs as f64;
    println!(
        "{what}: {ns:.0} ns a call, {:.4} µs per KiB of result",
        ns / 1000.0 / kib
    );
}

fn main() {
    let mut config: Config = serde_json::from_value(json!({
        "servers": {"fs": {"command": "x", "tools": {"read": {"requires_approval": false}}}},
        "clients": {"cursor": {"tools": {"fs__write": {"enabled": false}}}, "zed": {}}
    }))
    .unwrap();
    let fs = ServerId::parse("fs").unwrap();
    let cursor = config.clients.values().next().cloned();
    let results = Results::default();
    for kib in [1usize, 64, 1024] {
        let mut l = line(kib * 1024);
        per_call(
            &format!("no budget, {kib} KiB"),
            200_000,
            kib as f64,
            || {
                black_box(budget_for(
                    &config,
                    cursor.as_ref(),
                    &fs,
                    "read",
                    "fs__read",
                ));
            },
        );
        let over = (kib * 1024 * 2) as u64;
        per_call(
            &format!("within its budget, {kib} KiB"),
            20_000,
            kib as f64,
            || {
                let b =
                    budget_for(&config, cursor.as_ref(), &fs, "read", "fs__read").unwrap_or(over);
                // Within its budget the line comes back as it went in (moved, never copied).
                l = black_box(apply(std::mem::take(&mut l), b, &results, "cursor"));
            },
        );
    }
    config.gateway.result_budget = serde_json::from_value(json!({"bytes": 65536})).unwrap();
    let big = line(1 << 20);
    per_call("1 MiB cut to 64 KiB", 50, 1024.0, || {
        let b = budget_for(&config, cursor.as_ref(), &fs, "read", "fs__read").unwrap();
        black_box(apply(big.clone(), b, &results, "cursor"));
    });
}

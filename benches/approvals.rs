//! Approval benchmarks (prints figures; asserts nothing). `cargo bench --bench approvals`.
//!
//! 1. Approve-to-execution: from the moment an approver's answer is recorded
//!    (`ApprovalBroker::answer`) to the moment the server's read loop received the request line
//!    from its stdin (the fixture's `stamp` tool reports that instant), over 1,000 approvals.
//! 2. The policy check on a free call, in isolation (config lookup, the tool's definition,
//!    `readOnlyHint`, the decision); the gateway bench runs with it on every call.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests, benches and the fixture may panic
// Tests, benches and the fixture read top to bottom as the story they check or measure: the
// 100-line limit is for the product's own functions.
#![allow(clippy::too_many_lines)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gatehouse::approval::{policy, Answer, Decider, Scope};
use gatehouse::config::Config;
use gatehouse::events::Event;
use gatehouse::gateway::{Gateway, Out, Outcome};
use gatehouse::{Hub, HubOptions, State};
use serde_json::{json, Value};

const FIXTURE: &str = env!("CARGO_BIN_EXE_gatehouse-fixture");
const APPROVALS: usize = 1000;

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = json!({"servers": {"fx": {"command": FIXTURE}}, "approval": {"default": "always", "timeout_secs": 30}});
    let config = Config::parse(&cfg.to_string(), "bench".as_ref()).expect("config");
    let hub = Hub::start(config, HubOptions::new(dir.path().join("data")));
    let fx = hub.server("fx").expect("fx");
    let _ = fx
        .watch_status()
        .wait_for(|s| s.state == State::Running)
        .await;
    let gw = Gateway::new(hub.clone());
    gw.refresh_catalog();
    let session = gw.open_session();

    // The approver: answers each request as soon as it is published, noting when.
    let broker = hub.approvals().clone();
    let mut events = hub.events();
    let (answered_tx, mut answered_rx) = tokio::sync::mpsc::unbounded_channel::<u128>();
    let approver = tokio::spawn(async move {
        while let Ok(ev) = events.recv().await {
            if let Event::ApprovalRequested(r) = ev {
                let t = now_ns();
                if broker
                    .answer(&r.id, Answer::Allow(Scope::Once), Decider::Ui)
                    .is_ok()
                {
                    let _ = answered_tx.send(t);
                }
            }
        }
    });

    let mut lat = Vec::with_capacity(APPROVALS);
    for i in 0..APPROVALS + 50 {
        let msg = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"fx__stamp","arguments":{}}});
        let Outcome::Stream(mut rx) = gw.handle_bytes(&session, msg.to_string().as_bytes()).await
        else {
            panic!("expected a forwarded call");
        };
        let mut stamp = None;
        while let Some(o) = rx.recv().await {
            if let Out::Final(line) = o {
                let v: Value = serde_json::from_slice(&line).expect("json");
                stamp = v["result"]["content"][0]["text"]
                    .as_str()
                    .and_then(|t| t.parse::<u128>().ok());
            }
        }
        let answered = answered_rx.recv().await.expect("answered");
        if let Some(read) = stamp {
            if i >= 50 {
                lat.push(Duration::from_nanos(read.saturating_sub(answered) as u64));
            }
        }
    }
    lat.sort();
    println!(
        "approve → request read by the server: p50 {:.3} ms   p99 {:.3} ms   ({} approvals)",
        lat[lat.len() / 2].as_secs_f64() * 1000.0,
        lat[lat.len() * 99 / 100].as_secs_f64() * 1000.0,
        lat.len()
    );

    // The policy check on a free call, as the gateway does it.
    let n = 200_000;
    let t = Instant::now();
    let mut asked = 0usize;
    for _ in 0..n {
        let config = hub.config();
        let tools = fx.tools();
        let read_only = tools
            .iter()
            .find(|t| t.name == "add")
            .is_some_and(|t| t.read_only);
        if let Some(server) = config.servers.get(fx.id()) {
            if policy::evaluate(&policy::Layers {
                server,
                tool: "add",
                default: gatehouse::config::ApprovalDefault::AskUnlessReadOnly,
                claims_read_only: read_only,
                read_only_believed: read_only,
                server_asks: false,
                profile: None,
                rule: None,
            })
            .decision
                != policy::Decision::Allow
            {
                asked += 1;
            }
        }
    }
    let per = t.elapsed().as_secs_f64() / n as f64;
    println!(
        "policy check on a free call: {:.2} µs each ({} calls, {asked} asked)",
        per * 1e6,
        n
    );

    approver.abort();
    gw.shutdown().await;
    hub.shutdown().await;
}

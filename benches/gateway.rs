//! Gateway benchmarks (prints figures; asserts nothing). `cargo bench --bench gateway`.
//!
//! The echo tool of the fixture server, in one run:
//! - direct: a JSON-RPC client on the fixture's own stdio;
//! - gateway HTTP: Streamable HTTP to the hub, which forwards to the same kind of child;
//! - gateway 2026: the same from a 2026-07-28 client (no session; envelope and routing headers);
//! - connect bridge: a stdio client on `gatehouse connect`, which goes over HTTP to the hub;
//! - floor proxy: a minimal proxy in this process (HTTP on loopback, one pipe hop, nothing
//!   else: `gateway/floor.rs`), what any proxy pays;
//! - gateway, no HTTP: a call handed to the gateway as a transport hands it (its own path and
//!   the pipe hop, no HTTP) — so the gateway's added latency splits into its own path and its
//!   HTTP exchange, beside the floor's — and then the gateway's own pieces per call, each timed
//!   alone (message read, catalog lookup, policy and rules, the answer read, made and masked,
//!   the activity row).
//!
//! p50/p99 of 2,000 sequential calls — in rounds, one call of every row a round, so that every
//! row is measured under the same conditions and the added latencies compare like with like —,
//! calls/s and p99 with 16 concurrent callers (a row at a time), then `tools/list` over 100
//! servers × 50 tools.
//!
//! Then the hub as users run it, a `gatehouse serve` process of its own, so its CPU time is its
//! own (utime + stime from /proc): direct stdio vs the gateway for 1 KiB, 1 MiB and 10 MiB
//! results (the echo tool padded to that size), the hub's CPU per call at 1 and 16 clients, and
//! the HTTP floor (ping: a reply from the same HTTP stack with nothing forwarded) with its CPU.
//! The 16 clients run 5 times (each run's tail, then the median added p99 and its range);
//! `cargo bench --bench gateway -- --concurrent R` runs only them, R times, against one hub.
//!
//! `cargo bench --bench gateway -- --calls N [--bytes B] [--modern]` only starts that hub, makes
//! N sequential calls (B-byte results, default 1 KiB; from a 2026-07-28 client with `--modern`)
//! and stops it: a fixed workload for
//! instruction counts. With
//! `GATEHOUSE_BENCH_HUB_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p"` the
//! hub runs under callgrind; (Ir at N = 2,200 − Ir at N = 200) / 2,000 is the count per call
//! without start-up and shutdown. `GATEHOUSE_BENCH_HUB_WORKERS=N` runs that hub with N tokio
//! worker threads.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests, benches and the fixture may panic
// Tests, benches and the fixture read top to bottom as the story they check or measure: the
// 100-line limit is for the product's own functions.
#![allow(clippy::too_many_lines)]

use std::sync::Arc;
use std::time::Instant;

use gatehouse::config::Config;
use gatehouse::control::{ControlServer, GatewayInfo};
use gatehouse::gateway::{self, Gateway};
use gatehouse::supervisor::rpc::{Inbound, RpcPeer};
use gatehouse::supervisor::Reply;
use gatehouse::{Hub, HubOptions, State};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::BufReader;
use tokio_util::sync::CancellationToken;

const FIXTURE: &str = env!("CARGO_BIN_EXE_gatehouse-fixture");
const GATEHOUSE: &str = env!("CARGO_BIN_EXE_gatehouse");
const TOKEN: &str = "bench-token-bench-token-bench-token-bench-token-bench-token-0000";
const SEQ: usize = 2000;
const CONC: usize = 16;
const CONC_CALLS: usize = 500; // per caller

#[path = "gateway/floor.rs"]
mod floor;
#[path = "gateway/process.rs"]
mod process;
use process::{fixed_calls, hub_process};

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let args: Vec<String> = std::env::args().collect();
    let calls = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse::<usize>().expect("--calls N"));
    let bytes = args
        .iter()
        .position(|a| a == "--bytes")
        .and_then(|i| args.get(i + 1))
        .map_or(1024, |n| n.parse::<usize>().expect("--bytes B"));
    // `--modern`: the fixed calls come from a 2026-07-28 client (no session, envelope).
    let modern = args.iter().any(|a| a == "--modern");
    // `--concurrent R`: only the hub process's 16-client comparison, R times over.
    let runs = args
        .iter()
        .position(|a| a == "--concurrent")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse::<usize>().expect("--concurrent R"));
    if let Some(r) = runs {
        return rt.block_on(process::concurrent_runs(r));
    }
    match calls {
        Some(n) => rt.block_on(fixed_calls(n, bytes, modern)),
        None => rt.block_on(async {
            run().await;
            hub_process().await;
        }),
    }
}

async fn run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = parse(json!({"servers": {"fx": {"command": FIXTURE}}}));
    let hub = Hub::start(config, HubOptions::new(dir.path().join("data")));
    let fx = hub.server("fx").expect("fx");
    let _ = fx
        .watch_status()
        .wait_for(|s| s.state == State::Running)
        .await;
    let gw = Gateway::new(hub.clone());
    gw.refresh_catalog();
    let listener = gateway::http::bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let stop = CancellationToken::new();
    let http_task = tokio::spawn(gateway::http::serve(
        listener,
        gw.clone(),
        TOKEN.into(),
        vec![],
        stop.clone(),
    ));
    let sock = dir.path().join("control.sock");
    let control = ControlServer::bind(&sock).await.expect("control");
    let control_task = tokio::spawn(control.serve(
        hub.clone(),
        Some(GatewayInfo {
            url: url.clone(),
            token: TOKEN.into(),
        }),
        stop.clone(),
    ));

    println!("gateway benchmarks: echo tool, {SEQ} sequential calls in rounds (one call of every row a round); {CONC} callers × {CONC_CALLS} calls, a row at a time\n");
    let (direct, _child) = stdio_client(FIXTURE, &[], &[]).await;
    let direct = Arc::new(direct);
    // The floor: a minimal proxy (HTTP on loopback, one pipe hop, nothing else).
    let (floor_url, _floor_child) = floor::floor_proxy().await;
    let floor_client = Arc::new(floor::floor_client(&floor_url));
    let http = Arc::new(HttpClient::new(&url).await);
    let modern = Arc::new(HttpClient::modern(&url));
    // The gateway without HTTP: its own path (names, admission, the activity row, the answer)
    // and the same pipe hop, a message handed to it as the transports hand theirs.
    let session = gw.open_session();
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    let _ = gw.handle_bytes(&session, init).await;
    let (bridge, _bridge_child) = stdio_client(
        GATEHOUSE,
        &["connect"],
        &[("GATEHOUSE_CONTROL", sock.to_str().unwrap_or_default())],
    )
    .await;
    let bridge = Arc::new(bridge);

    let rows: Vec<(&str, CallFn)> = vec![
        ("direct stdio", {
            let p = direct.clone();
            row(move |i| {
                let p = p.clone();
                async move { call(&p, "echo", i).await }
            })
        }),
        ("floor proxy", http_row(&floor_client, "echo")),
        ("gateway HTTP", http_row(&http, "fx__echo")),
        ("gateway 2026", http_row(&modern, "fx__echo")),
        ("gateway, no HTTP", {
            let (gw, session) = (gw.clone(), session.clone());
            row(move |i| {
                let (gw, session) = (gw.clone(), session.clone());
                async move { in_process(&gw, &session, i).await }
            })
        }),
        // Reference: the HTTP round trip alone (the gateway answers ping itself, nothing
        // forwarded).
        ("HTTP ping only", {
            let c = http.clone();
            row(move |i| {
                let c = c.clone();
                async move { c.ping(i).await }
            })
        }),
        ("connect bridge", {
            let p = bridge.clone();
            row(move |i| {
                let p = p.clone();
                async move { call(&p, "fx__echo", i).await }
            })
        }),
    ];
    let figures = measure_all(&rows).await;
    let [d, f, h, m, inner, ping, b] = figures.as_slice() else {
        unreachable!("one figure per row")
    };

    println!();
    println!(
        "of the gateway's added p50, the HTTP transport alone (ping) is {:.3} ms; forwarding is the rest",
        (ping.p50 - d.p50).max(0.0) * 1000.0
    );
    for (name, m) in [
        ("floor proxy", &f),
        ("gateway, no HTTP", &inner),
        ("gateway HTTP", &h),
        ("gateway 2026", &m),
        ("connect bridge", &b),
    ] {
        // A floor that added nothing this run (direct was slowed by noise) gives no ratio.
        let floor_added = f.p50 - d.p50;
        let ratio = if floor_added > 10e-6 {
            format!("{:>4.2}× the floor's", (m.p50 - d.p50) / floor_added)
        } else {
            "no ratio: the floor added under 10 µs this run".to_owned()
        };
        println!(
            "{name:<16} added p50 {:>7.3} ms ({ratio})   added p99 {:>7.3} ms, with {CONC} callers {:>7.3} ms   throughput {:>5.1} % of direct, {:>5.2}× the floor's",
            (m.p50 - d.p50) * 1000.0,
            (m.p99 - d.p99) * 1000.0,
            (m.p99_conc - d.p99_conc) * 1000.0,
            100.0 * m.rate / d.rate,
            m.rate / f.rate
        );
    }
    let own = floor::breakdown(&gw, &hub);
    println!(
        "where the gateway's added p50 ({:.1} µs) goes: its own path, without HTTP, {:.1} µs over direct (of which the pieces above {:.1} µs; the rest is admission, names, the call's own state and its wake-ups), and its HTTP exchange {:.1} µs (the floor's, with nothing but the pipe hop behind it: {:.1} µs)",
        (h.p50 - d.p50) * 1e6,
        (inner.p50 - d.p50) * 1e6,
        own * 1e6,
        (h.p50 - inner.p50) * 1e6,
        (f.p50 - d.p50) * 1e6
    );
    println!(
        "a 2026-07-28 client (no session; envelope and routing headers checked) adds {:+.3} ms p50 over a legacy one",
        (m.p50 - h.p50) * 1000.0
    );

    stop.cancel();
    gw.shutdown().await;
    let _ = http_task.await;
    let _ = control_task.await;
    hub.shutdown().await;

    tools_list_at_scale().await;
}

struct Figures {
    p50: f64,
    p99: f64,
    rate: f64,
    /// p99 of one call while 16 callers call at once.
    p99_conc: f64,
}

/// One row's call, boxed so that rows of different kinds go in one list.
type CallFn = Arc<dyn Fn(usize) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

fn row<F, Fut>(f: F) -> CallFn
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    Arc::new(move |i| Box::pin(f(i)))
}

/// A row of `tool` calls from an HTTP client.
fn http_row(c: &Arc<HttpClient>, tool: &'static str) -> CallFn {
    let c = c.clone();
    row(move |i| {
        let c = c.clone();
        async move { c.call(tool, i).await }
    })
}

/// Every row's figures. The sequential calls go in rounds — call `i` of every row, in turn,
/// before call `i + 1` of any — so that a slow spell of the machine (a frequency step, another
/// process) falls on all rows alike and the added latencies compare rows measured under the same
/// conditions; then each row's concurrent run, a row at a time.
async fn measure_all(rows: &[(&str, CallFn)]) -> Vec<Figures> {
    for (_, f) in rows {
        for i in 0..200 {
            f(i).await; // warm up
        }
    }
    let mut lat = vec![Vec::with_capacity(SEQ); rows.len()];
    for i in 0..SEQ {
        for ((_, f), lat) in rows.iter().zip(&mut lat) {
            let t = Instant::now();
            f(i).await;
            lat.push(t.elapsed().as_secs_f64());
        }
    }
    let mut figures = Vec::with_capacity(rows.len());
    for ((name, f), mut lat) in rows.iter().zip(lat) {
        lat.sort_by(|a, b| a.total_cmp(b));
        let p50 = lat[SEQ / 2];
        let p99 = lat[SEQ * 99 / 100];
        let (rate, conc) = concurrent(f).await;
        let p99_conc = conc[conc.len() * 99 / 100];
        println!(
            "{name:<16} p50 {:>7.3} ms   p99 {:>7.3} ms   {CONC} concurrent: {rate:>8.0} calls/s, p99 {:>7.3} ms",
            p50 * 1000.0,
            p99 * 1000.0,
            p99_conc * 1000.0
        );
        figures.push(Figures {
            p50,
            p99,
            rate,
            p99_conc,
        });
    }
    figures
}

/// Calls/s with [`CONC`] callers calling at once, and every call's latency (seconds), sorted.
async fn concurrent(f: &CallFn) -> (f64, Vec<f64>) {
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for c in 0..CONC {
        let f = f.clone();
        set.spawn(async move {
            let mut lat = Vec::with_capacity(CONC_CALLS);
            for i in 0..CONC_CALLS {
                let t = Instant::now();
                f(c * CONC_CALLS + i).await;
                lat.push(t.elapsed().as_secs_f64());
            }
            lat
        });
    }
    let mut all = Vec::with_capacity(CONC * CONC_CALLS);
    while let Some(Ok(lat)) = set.join_next().await {
        all.extend(lat);
    }
    let rate = (CONC * CONC_CALLS) as f64 / t.elapsed().as_secs_f64();
    all.sort_by(|a, b| a.total_cmp(b));
    (rate, all)
}

/// One call handed to the gateway as a transport hands it, read to its final answer.
async fn in_process(gw: &Gateway, session: &Arc<gateway::ClientSession>, i: usize) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"fx__echo","arguments":{{"text":"hello {i}"}}}}}}"#
    );
    match gw.handle_bytes(session, body.as_bytes()).await {
        gateway::Outcome::Stream(mut rx) => {
            while let Some(out) = rx.recv().await {
                if let gateway::Out::Final(line) = out {
                    assert!(memchr::memmem::find(&line, b"\"result\"").is_some());
                    return;
                }
            }
            panic!("no answer");
        }
        _ => panic!("a call is answered with a stream"),
    }
}

fn parse(v: Value) -> Config {
    Config::parse(&v.to_string(), "bench".as_ref()).expect("config")
}

/// A JSON-RPC client on a child's stdio (initialized), using the same engine the hub uses.
async fn stdio_client(
    cmd: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Arc<RpcPeer>, tokio::process::Child) {
    let mut child = tokio::process::Command::new(cmd)
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Inbound>(8);
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let mut tasks = tokio::task::JoinSet::new();
    let peer = RpcPeer::start(
        "bench",
        child.stdin.take().expect("stdin"),
        BufReader::new(child.stdout.take().expect("stdout")),
        CancellationToken::new(),
        gatehouse::supervisor::rpc::Hooks {
            inbound: tx,
            trust_related: false,
            note: Arc::new(|_| {}),
            redactions: Arc::default(),
            updated: Arc::new(|_| {}),
        },
        &mut tasks,
    );
    tasks.detach_all();
    let init = RawValue::from_string(r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#.into()).expect("raw");
    let _ = peer
        .request("initialize", Some(&init))
        .await
        .expect("initialize");
    let _ = peer.notify("notifications/initialized", None).await;
    (peer, child)
}

async fn call(p: &RpcPeer, tool: &str, i: usize) {
    let params = RawValue::from_string(format!(
        r#"{{"name":"{tool}","arguments":{{"text":"hello {i}"}}}}"#
    ))
    .expect("raw");
    match p.request("tools/call", Some(&params)).await {
        Ok(Reply::Result(_)) => {}
        other => panic!("call failed: {other:?}"),
    }
}

#[derive(Clone)]
pub(crate) struct HttpClient {
    http: reqwest::Client,
    url: String,
    session: String,
    /// Speaks 2026-07-28 (no session) instead of 2025.
    modern: bool,
}

impl HttpClient {
    async fn new(url: &str) -> HttpClient {
        let http = HttpClient::http();
        let r = http
            .post(url)
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#)
            .send()
            .await
            .expect("initialize");
        let session = r.headers()["mcp-session-id"]
            .to_str()
            .expect("sid")
            .to_owned();
        HttpClient {
            http,
            url: url.to_owned(),
            session,
            modern: false,
        }
    }

    /// The bench's HTTP client: no proxy, connections kept for 16 callers.
    fn http() -> reqwest::Client {
        gatehouse::http_client_builder()
            .no_proxy()
            .pool_max_idle_per_host(64)
            .build()
            .expect("client")
    }

    /// A 2026-07-28 client: no session; every request carries its envelope and routing headers.
    fn modern(url: &str) -> HttpClient {
        let http = HttpClient::http();
        HttpClient {
            http,
            url: url.to_owned(),
            session: String::new(),
            modern: true,
        }
    }

    async fn call(&self, tool: &str, i: usize) {
        self.call_sized(tool, i, 0).await
    }

    async fn call_sized(&self, tool: &str, i: usize, bytes: usize) {
        let req = if self.modern {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"hello {i}","bytes":{bytes}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1"}}}}}}}}"#
            );
            self.http
                .post(&self.url)
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool)
                .body(body)
        } else {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"hello {i}","bytes":{bytes}}}}}}}"#
            );
            self.http
                .post(&self.url)
                .header("mcp-session-id", &self.session)
                .body(body)
        };
        let r = req
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .send()
            .await
            .expect("post");
        let body = r.bytes().await.expect("body");
        assert!(
            body.len() >= bytes && memchr::memmem::find(&body, b"\"result\"").is_some(),
            "{} bytes: {}",
            body.len(),
            String::from_utf8_lossy(&body[..body.len().min(200)])
        );
    }

    async fn call_or_ping(&self, i: usize, bytes: usize) {
        if bytes == 0 {
            self.ping(i).await
        } else {
            self.call_sized("fx__echo", i, bytes).await
        }
    }

    async fn ping(&self, i: usize) {
        let r = self
            .http
            .post(&self.url)
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .body(format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#))
            .send()
            .await
            .expect("post");
        let _ = r.bytes().await.expect("body");
    }

    async fn tools_list(&self) -> usize {
        let r = self
            .http
            .post(&self.url)
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
            .send()
            .await
            .expect("post");
        r.bytes().await.expect("body").len()
    }
}

async fn tools_list_at_scale() {
    let dir = tempfile::tempdir().expect("tempdir");
    let servers: serde_json::Map<String, Value> = (0..100)
        .map(|i| {
            (
                format!("s{i}"),
                json!({"command": FIXTURE, "args": ["--tools", "41"]}),
            )
        })
        .collect();
    let hub = Hub::start(
        parse(json!({ "servers": servers })),
        HubOptions::new(dir.path().join("data")),
    );
    for h in hub.servers() {
        let _ = h
            .watch_status()
            .wait_for(|s| s.state == State::Running)
            .await;
    }
    let gw = Gateway::new(hub.clone());
    gw.refresh_catalog();
    let tools = gw.catalog().len();
    let t = Instant::now();
    gw.refresh_catalog();
    let rebuild = t.elapsed();
    let listener = gateway::http::bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let stop = CancellationToken::new();
    let task = tokio::spawn(gateway::http::serve(
        listener,
        gw.clone(),
        TOKEN.into(),
        vec![],
        stop.clone(),
    ));
    let client = HttpClient::new(&url).await;
    let mut lat = Vec::new();
    let mut bytes = 0;
    for _ in 0..50 {
        let t = Instant::now();
        bytes = client.tools_list().await;
        lat.push(t.elapsed());
    }
    lat.sort();
    println!(
        "\ntools/list, 100 servers × 50 tools ({tools} tools, {:.1} KiB): p50 {:.2} ms, max {:.2} ms over HTTP; catalog rebuild {:.2} ms",
        bytes as f64 / 1024.0,
        lat[lat.len() / 2].as_secs_f64() * 1000.0,
        lat[lat.len() - 1].as_secs_f64() * 1000.0,
        rebuild.as_secs_f64() * 1000.0
    );
    stop.cancel();
    gw.shutdown().await;
    let _ = task.await;
    hub.shutdown().await;
}

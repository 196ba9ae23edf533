//! The bench's hub in a process of its own (`gatehouse serve`, optionally under a wrapper such
//! as callgrind): fixed-call runs, and the direct-versus-through-Gatehouse comparison, with the
//! process's CPU, faults and median latencies.

use super::*;

/// A `gatehouse serve` process (under `GATEHOUSE_BENCH_HUB_WRAPPER` when set) serving one fixture
/// server, with an HTTP client on its gateway.
struct HubProcess {
    child: tokio::process::Child,
    client: HttpClient,
    _dir: tempfile::TempDir,
}

impl Drop for HubProcess {
    /// A wrapper's own children (the hub `strace` forked) are killed first: `kill_on_drop` alone
    /// would end only the wrapper, leaving the hub and its servers running into the next row.
    /// The hub stays in the bench's process group, so an interrupted bench takes it along.
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else { return };
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
        for child in children.unwrap_or_default().split_whitespace() {
            if let Ok(child) = child.parse::<i32>() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(child),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

impl HubProcess {
    async fn start() -> HubProcess {
        HubProcess::start_with(json!({"fx": {"command": FIXTURE}})).await
    }

    /// A hub serving `servers` (the config's `servers` object), once every one is running.
    async fn start_with(servers: Value) -> HubProcess {
        let expected = servers.as_object().map_or(0, |m| m.len());
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = dir.path().join("gatehouse.json");
        std::fs::write(&cfg, json!({ "servers": servers }).to_string()).expect("config");
        let sock = dir.path().join("control.sock");
        let wrapper = std::env::var("GATEHOUSE_BENCH_HUB_WRAPPER").unwrap_or_default();
        let mut words = wrapper.split_whitespace();
        let mut cmd = match words.next() {
            Some(program) => {
                let mut c = tokio::process::Command::new(program);
                c.args(words).arg(GATEHOUSE);
                c
            }
            None => tokio::process::Command::new(GATEHOUSE),
        };
        let child = cmd
            .args(["serve", "--config"])
            .arg(&cfg)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--listen", "127.0.0.1:0"])
            .env("GATEHOUSE_CONTROL", &sock)
            .env("GATEHOUSE_TOKEN", TOKEN)
            .envs(
                std::env::var("GATEHOUSE_BENCH_HUB_WORKERS")
                    .ok()
                    .map(|n| ("TOKIO_WORKER_THREADS", n)),
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn gatehouse serve");
        let control = gatehouse::control::ControlClient::new(sock);
        let deadline = Instant::now() + std::time::Duration::from_secs(120);
        let url = loop {
            use gatehouse::control::Request;
            let info = control
                .call(&Request::Gateway { client: None })
                .await
                .ok()
                .and_then(|r| r.result)
                .and_then(|v| serde_json::from_value::<GatewayInfo>(v).ok());
            let running = control
                .call(&Request::Status)
                .await
                .ok()
                .and_then(|r| r.result)
                .and_then(|v| v.as_array().cloned())
                .is_some_and(|rows| {
                    rows.iter().filter(|r| r["state"] == "running").count() == expected
                });
            if let (Some(info), true) = (info, running) {
                break info.url;
            }
            assert!(Instant::now() < deadline, "the hub did not come up");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };
        let client = HttpClient::new(&url).await;
        HubProcess {
            child,
            client,
            _dir: dir,
        }
    }

    /// The hub's resident memory now, in MiB.
    fn rss_mib(&self) -> f64 {
        let pid = self.child.id().expect("pid");
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            })
            .unwrap_or(0.0)
            / 1024.0
    }

    /// The hub's CPU time so far (all its threads, user + system), in seconds.
    fn cpu(&self) -> f64 {
        cpu_of(self.child.id().expect("pid"))
    }

    /// Stops the hub with SIGTERM (a wrapper such as callgrind then writes its output).
    async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(120), self.child.wait()).await;
    }
}

/// `--calls N [--bytes B]`: N sequential calls (results of B bytes, default 1 KiB) through a
/// hub process, then stop it.
pub(super) async fn fixed_calls(n: usize, bytes: usize, modern: bool) {
    let hub = HubProcess::start().await;
    let modern_client = HttpClient::modern(&hub.client.url);
    let client = if modern { &modern_client } else { &hub.client };
    let t = Instant::now();
    for i in 0..n {
        client.call_sized("fx__echo", i, bytes).await;
    }
    let wall = t.elapsed();
    let pid = hub.child.id().expect("pid");
    let (user, system) = user_system_of(pid);
    let faults = minor_faults_of(pid);
    hub.stop().await;
    println!(
        "{n} calls in {:.3} s; hub CPU {:.2} s in all (user {user:.2}, system {system:.2}; {faults} page faults; start-up included)",
        wall.as_secs_f64(),
        user + system
    );
}

/// Direct vs a hub process, by result size, with the hub's CPU per call.
pub(super) async fn hub_process() {
    let hub = HubProcess::start().await;
    let (direct, _child) = stdio_client(FIXTURE, &[], &[]).await;
    println!("\nhub process (gatehouse serve), echo padded to each size; CPU = the hub's own (utime + stime)");
    let mut floor = 0.0;
    for (label, bytes, n) in [
        ("ping (floor)", 0usize, 2000usize),
        ("1 KiB", 1024, 2000),
        ("1 MiB", 1 << 20, 100),
        ("10 MiB", 10 << 20, 20),
    ] {
        let warm = (n / 10).max(2);
        let direct_p50 = if bytes == 0 {
            0.0
        } else {
            for i in 0..warm {
                call_sized(&direct, "echo", i, bytes).await;
            }
            p50_of(n, |i| call_sized(&direct, "echo", i, bytes)).await
        };
        for i in 0..warm {
            hub.client.call_or_ping(i, bytes).await;
        }
        let cpu0 = hub.cpu();
        let gw_p50 = p50_of(n, |i| hub.client.call_or_ping(i, bytes)).await;
        let cpu = (hub.cpu() - cpu0) / n as f64;
        if bytes == 0 {
            floor = gw_p50;
            println!(
                "{label:<13} p50 {:>8.3} ms                                   hub CPU/call {:>7.1} µs",
                gw_p50 * 1e3,
                cpu * 1e6
            );
        } else {
            println!(
                "{label:<13} direct p50 {:>8.3} ms   gateway p50 {:>8.3} ms   added {:>7.3} ms ({:>4.1}× the floor)   hub CPU/call {:>7.1} µs",
                direct_p50 * 1e3,
                gw_p50 * 1e3,
                (gw_p50 - direct_p50) * 1e3,
                (gw_p50 - direct_p50) / floor.max(1e-9),
                cpu * 1e6
            );
        }
    }
    // 16 clients at once (1 KiB), in several runs: one run's p99 is its 80th slowest call, and
    // where a slow spell of the machine falls decides it.
    sixteen_clients(&hub, &direct, RUNS).await;
    println!("hub RSS, one server: {:.1} MiB", hub.rss_mib());
    hub.stop().await;

    // The hub's memory with 100 servers × 50 tools, listed once by a client.
    let servers: serde_json::Map<String, Value> = (0..100)
        .map(|i| {
            (
                format!("s{i}"),
                json!({"command": FIXTURE, "args": ["--tools", "41"]}),
            )
        })
        .collect();
    let hub = HubProcess::start_with(Value::Object(servers)).await;
    let listed = hub.client.tools_list().await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    println!(
        "hub RSS, 100 servers × 50 tools running and listed once ({:.0} KiB): {:.1} MiB",
        listed as f64 / 1024.0,
        hub.rss_mib()
    );
    hub.stop().await;
}

/// Runs of the 16-client comparison in the full bench.
const RUNS: usize = 5;

/// `--concurrent R`: the 16-client comparison alone, R runs against one hub process.
pub(super) async fn concurrent_runs(runs: usize) {
    let hub = HubProcess::start().await;
    let (direct, _child) = stdio_client(FIXTURE, &[], &[]).await;
    for i in 0..200 {
        hub.client.call_sized("fx__echo", i, 1024).await;
    }
    sixteen_clients(&hub, &direct, runs).await;
    hub.stop().await;
}

/// 16 clients at once (1 KiB results), `runs` times: direct on the fixture's stdio, then
/// through the hub, each run's tail (p50, p90, p99, p99.9, max) and the hub's CPU per call;
/// then the runs' median of the gateway's added p99, with their range.
async fn sixteen_clients(hub: &HubProcess, direct: &Arc<RpcPeer>, runs: usize) {
    let direct_row = {
        let direct = direct.clone();
        row(move |i| {
            let direct = direct.clone();
            async move { call_sized(&direct, "echo", i, 1024).await }
        })
    };
    let gateway_row = {
        let client = Arc::new(hub.client.clone());
        row(move |i| {
            let client = client.clone();
            async move { client.call_sized("fx__echo", i, 1024).await }
        })
    };
    let ms = |v: &[f64], q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)] * 1e3;
    let (mut added, mut rates, mut cpus) = (Vec::new(), Vec::new(), Vec::new());
    for run in 1..=runs {
        let (d_rate, d) = concurrent(&direct_row).await;
        let cpu0 = hub.cpu();
        let (rate, g) = concurrent(&gateway_row).await;
        let cpu = (hub.cpu() - cpu0) / (CONC * CONC_CALLS) as f64;
        println!(
            "{CONC} clients × {CONC_CALLS} calls (1 KiB), run {run}: direct {d_rate:.0} calls/s, p99 {:.3} ms; gateway {rate:.0} calls/s, p50 {:.3} p90 {:.3} p99 {:.3} ms (added {:.3} ms), p99.9 {:.3}, max {:.3}; hub CPU/call {:.1} µs",
            ms(&d, 0.99),
            ms(&g, 0.5),
            ms(&g, 0.9),
            ms(&g, 0.99),
            ms(&g, 0.99) - ms(&d, 0.99),
            ms(&g, 0.999),
            ms(&g, 1.0),
            cpu * 1e6
        );
        added.push(ms(&g, 0.99) - ms(&d, 0.99));
        rates.push(rate);
        cpus.push(cpu * 1e6);
    }
    for v in [&mut added, &mut rates, &mut cpus] {
        v.sort_by(|a, b| a.total_cmp(b));
    }
    println!(
        "{CONC} clients, {runs} runs: gateway's added p99 median {:.3} ms (from {:.3} to {:.3}), {:.0} calls/s, hub CPU/call {:.1} µs (medians)",
        added[runs / 2],
        added[0],
        added[runs - 1],
        rates[runs / 2],
        cpus[runs / 2]
    );
}

/// A process's CPU time so far (all its threads, user + system), in seconds.
fn cpu_of(pid: u32) -> f64 {
    let (user, system) = user_system_of(pid);
    user + system
}

/// A process's minor page faults so far (memory it touched for the first time).
fn minor_faults_of(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    rest.split_whitespace()
        .nth(7)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0)
}

/// A process's user and system CPU time so far, in seconds.
fn user_system_of(pid: u32) -> (f64, f64) {
    // Fields after the command name's closing parenthesis: utime is the 12th, stime the 13th.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let mut fields = rest
        .split_whitespace()
        .skip(11)
        .map(|x| x.parse::<f64>().unwrap_or(0.0) / 100.0);
    (fields.next().unwrap_or(0.0), fields.next().unwrap_or(0.0))
}

async fn p50_of<F, Fut>(n: usize, f: F) -> f64
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        f(i).await;
        lat.push(t.elapsed().as_secs_f64());
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    lat[n / 2]
}

async fn call_sized(p: &RpcPeer, tool: &str, i: usize, bytes: usize) {
    let params = RawValue::from_string(format!(
        r#"{{"name":"{tool}","arguments":{{"text":"hello {i}","bytes":{bytes}}}}}"#
    ))
    .expect("raw");
    match p.request("tools/call", Some(&params)).await {
        Ok(Reply::Result(r)) => assert!(r.get().len() >= bytes),
        other => panic!("call failed: {other:?}"),
    }
}

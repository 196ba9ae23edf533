//! Desktop benchmark (prints figures): cold start to the first paint of the Servers panel, RSS and
//! PSS of the app plus its WebKit processes idle with 5 servers, the approval round trip (request
//! published → modal visible), then PSS with the window closed to the tray and the approval
//! round trip from there (a new webview each time), an hour of use compressed, and a working day
//! in real time driven through the window (`desktop/day.rs`). With each PSS, the app's largest shares by
//! mapping (which libraries it carries). Needs a display: `make bench` runs it under Xvfb.
//!
//! The app reports the two UI moments itself (`servers panel painted`, `approval modal visible`
//! with `latency_us`) on stderr; this program starts it, reads those lines and drives calls through
//! the gateway with a plain HTTP/1.1 client.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests, benches and the fixture may panic
// Tests, benches and the fixture read top to bottom as the story they check or measure: the
// 100-line limit is for the product's own functions.
#![allow(clippy::too_many_lines)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gatehouse::control::{ControlClient, Request};

#[path = "desktop/day.rs"]
mod day;
#[path = "desktop/use_.rs"]
mod use_;

const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef";
const STARTS: usize = 5;
const APPROVALS: usize = 30;

fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("desktop bench: no DISPLAY; run it under xvfb-run (make bench does)");
        std::process::exit(2);
    }
    let bins = bin_dir();
    let app = bins.join("gatehouse-app");
    let fixture = fixture_bin(&bins);
    let dir = std::env::temp_dir().join(format!("gatehouse-desktop-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("bench dir");
    let port = free_port();
    // `GATEHOUSE_BENCH_ONLY=start`: time to useful alone — cold starts and reopens from the tray
    // with 8 servers (a person's usual set), without the long runs.
    let only = std::env::var("GATEHOUSE_BENCH_ONLY").unwrap_or_default();
    let count = if only == "start" { 8 } else { 5 };
    let mut servers = serde_json::Map::new();
    for i in 0..count {
        let mut entry = serde_json::json!({ "command": fixture.to_string_lossy() });
        if i == 0 {
            entry["tools"] = serde_json::json!({ "echo": { "requires_approval": true } });
        }
        servers.insert(format!("s{i}"), entry);
    }
    let config = serde_json::json!({
        "servers": servers,
        "approval": { "timeout_secs": 60 },
        "gateway": { "listen": format!("127.0.0.1:{port}") }
    });
    let config_path = dir.join("gatehouse.json");
    std::fs::write(&config_path, config.to_string()).expect("config");
    println!("desktop bench: {} ({count} fixture servers)", app.display());
    if only == "start" {
        time_to_useful(&app, &config_path, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // `GATEHOUSE_BENCH_ONLY=calls`: the app's memory over calls with the window closed.
    if only == "calls" {
        let mut run = App::start(&app, &config_path, &dir);
        run.wait_line("servers panel painted", Duration::from_secs(60));
        close_window();
        std::thread::sleep(Duration::from_secs(3));
        use_::tray_calls(&mut run, port);
        run.quit();
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // `GATEHOUSE_BENCH_ONLY=day`: the continuous use alone (a long run without the rest).
    if only == "day" {
        day::day(&app, &config_path, &dir, port);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    // 1. Cold start → first paint (a fresh process each time; data dir reused after the first).
    let mut starts = Vec::new();
    for i in 0..STARTS {
        let t0 = Instant::now();
        let mut run = App::start(&app, &config_path, &dir);
        run.wait_line("servers panel painted", Duration::from_secs(60));
        starts.push(t0.elapsed());
        if i + 1 < STARTS {
            run.quit();
        } else {
            // 2. Idle footprint with 5 running servers.
            std::thread::sleep(Duration::from_secs(3));
            let (app_kib, webkit_kib, n_webkit) = footprint(run.child.id());
            println!(
                "RSS idle, 5 servers: app {:.1} MiB + {} WebKit processes {:.1} MiB = {:.1} MiB (MCP servers not counted)",
                app_kib as f64 / 1024.0,
                n_webkit,
                webkit_kib as f64 / 1024.0,
                (app_kib + webkit_kib) as f64 / 1024.0
            );
            print_pss("shown", run.child.id());
            print_pss_by_mapping("shown", run.child.id(), 8);
            // 3. Approval round trip.
            approvals(&mut run, port, &dir);
            // 4. Closed to the tray: the webview is destroyed.
            close_window();
            std::thread::sleep(Duration::from_secs(3));
            print_pss("in the tray (window closed)", run.child.id());
            print_pss_by_mapping("in the tray", run.child.id(), 8);
            // 5. Approvals while closed: the native prompt, no webview.
            tray_approvals(&mut run, port, &dir);
            print_pss("in the tray after 20 prompts", run.child.id());
            // 6. The window again, through an hour of use compressed: PSS after each minute.
            reopen(&app, &config_path, &dir);
            std::thread::sleep(Duration::from_secs(5));
            use_::hour(&mut run, port, &dir);
            run.quit();
        }
    }
    // 7. A working day with the window open, in real time, driven through the window.
    day::day(&app, &config_path, &dir, port);
    starts.sort();
    println!(
        "cold start → Servers panel painted: p50 {} ms, min {} ms, max {} ms ({STARTS} starts)",
        starts[STARTS / 2].as_millis(),
        starts[0].as_millis(),
        starts[STARTS - 1].as_millis()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Cold start to the painted Servers panel, then reopen from the tray (the window closed, a
/// second launch shows it again) to the panel painted anew: what a person waits for.
fn time_to_useful(app: &Path, config: &Path, dir: &Path) {
    let p50 = |v: &mut Vec<Duration>| {
        v.sort();
        format!(
            "p50 {} ms, min {} ms, max {} ms ({} runs)",
            v[v.len() / 2].as_millis(),
            v[0].as_millis(),
            v[v.len() - 1].as_millis(),
            v.len()
        )
    };
    let (mut starts, mut reopens) = (Vec::new(), Vec::new());
    for _ in 0..STARTS {
        let t0 = Instant::now();
        let mut run = App::start(app, config, dir);
        run.wait_line("servers panel painted", Duration::from_secs(60));
        starts.push(t0.elapsed());
        std::thread::sleep(Duration::from_secs(2));
        for _ in 0..3 {
            close_window();
            std::thread::sleep(Duration::from_secs(2));
            let t0 = Instant::now();
            reopen(app, config, dir);
            run.wait_line("servers panel painted", Duration::from_secs(30));
            reopens.push(t0.elapsed());
            std::thread::sleep(Duration::from_secs(1));
        }
        run.quit();
    }
    println!("cold start → Servers panel painted: {}", p50(&mut starts));
    println!(
        "reopen from the tray → Servers panel painted: {}",
        p50(&mut reopens)
    );
}

/// One held call: sent, its modal awaited, approved through the control socket, its answer
/// checked. Returns the app's own request → modal latency in µs.
fn approve_one(
    run: &mut App,
    port: u16,
    session: &str,
    control: &ControlClient,
    runtime: &tokio::runtime::Runtime,
    id: usize,
    text: &str,
) -> u64 {
    let (tx, rx) = mpsc::channel();
    let (s, t) = (session.to_owned(), text.to_owned());
    std::thread::spawn(move || {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"s0__echo","arguments":{{"text":"{t}"}}}}}}"#
        );
        let _ = tx.send(post(port, Some(&s), &body).1);
    });
    let line = run.wait_line("approval modal visible", Duration::from_secs(30));
    let approval = field(&line, "id").expect("approval id in the log line");
    let us: u64 = field(&line, "latency_us")
        .and_then(|v| v.parse().ok())
        .expect("latency in the log line");
    let answered = runtime.block_on(control.call(&Request::Approve {
        id: approval.clone(),
        scope: None,
        digest: None,
    }));
    assert!(answered.is_ok(), "approve {approval}: {answered:?}");
    let reply = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("call answered");
    assert!(reply.contains(text), "unexpected reply: {reply}");
    us
}

fn approvals(run: &mut App, port: u16, dir: &Path) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let control = ControlClient::new(dir.join("control.sock"));
    let session = initialize(port);
    let mut latencies: Vec<u64> = (0..APPROVALS)
        .map(|i| {
            approve_one(
                run,
                port,
                &session,
                &control,
                &runtime,
                i + 10,
                &format!("call {i}"),
            )
        })
        .collect();
    latencies.sort();
    let pct =
        |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize] as f64 / 1000.0;
    println!(
        "approval request published → modal visible: p50 {:.2} ms, p90 {:.2} ms, max {:.2} ms ({APPROVALS} requests)",
        pct(0.5),
        pct(0.9),
        pct(1.0)
    );
}

/// Approval requests while the window is closed: each shows the native prompt (no webview is
/// made); the latency runs from the request reaching the app to the prompt drawn.
fn tray_approvals(run: &mut App, port: u16, dir: &Path) {
    const TRAY: usize = 20;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let control = ControlClient::new(dir.join("control.sock"));
    let session = initialize(port);
    let mut latencies = Vec::new();
    for i in 0..TRAY {
        latencies.push(
            approve_one(
                run,
                port,
                &session,
                &control,
                &runtime,
                i + 1000,
                &format!("tray {i}"),
            ) as f64
                / 1000.0,
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    latencies.sort_by(f64::total_cmp);
    let webviews = descendants(run.child.id())
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.starts_with("WebKitWebProces"))
        })
        .count();
    println!(
        "approval while the window is closed → native prompt drawn: p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms ({TRAY} requests; web processes after them: {webviews})",
        latencies[TRAY / 2],
        latencies[TRAY * 9 / 10],
        latencies[TRAY - 1]
    );
}

/// `key=value` or `key="value"` from a tracing line.
fn field(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!("{key}="))? + key.len() + 1;
    let rest = &line[at..];
    let v = if let Some(r) = rest.strip_prefix('"') {
        r.split('"').next()?
    } else {
        rest.split_whitespace().next()?
    };
    Some(v.to_owned())
}

struct App {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl App {
    fn start(app: &Path, config: &Path, dir: &Path) -> App {
        let mut child = Command::new(app)
            .env("GATEHOUSE_CONFIG", config)
            .env("GATEHOUSE_DATA_DIR", dir.join("data"))
            .env("GATEHOUSE_CONTROL", dir.join("control.sock"))
            .env("GATEHOUSE_TOKEN", TOKEN)
            .env("GATEHOUSE_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gatehouse-app");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        App { child, lines }
    }

    fn wait_line(&mut self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(_) => panic!("the app never logged \"{needle}\""),
            }
        }
    }

    fn quit(mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// KiB of one `/proc/PID/…` figure (`VmRSS:` in `status`, `Pss:` in `smaps_rollup`).
fn kib(pid: u32, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// KiB of VmRSS: the app itself, and its WebKit helper processes (web, network).
fn footprint(app: u32) -> (u64, u64, usize) {
    let (app_kib, webkit, n) = webkit_sum(app, |p| kib(p, "status", "VmRSS:"));
    (app_kib, webkit, n)
}

/// KiB of PSS (shared pages divided among their users): the app and its WebKit processes.
fn pss(app: u32) -> (u64, u64, usize) {
    webkit_sum(app, |p| kib(p, "smaps_rollup", "Pss:"))
}

fn webkit_sum(app: u32, figure: impl Fn(u32) -> u64) -> (u64, u64, usize) {
    let mut webkit = 0;
    let mut n = 0;
    for pid in descendants(app) {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.starts_with("WebKit") {
            webkit += figure(pid);
            n += 1;
        }
    }
    (figure(app), webkit, n)
}

fn print_pss(what: &str, app: u32) {
    let (a, w, n) = pss(app);
    println!(
        "PSS {what}, 5 servers: app {:.1} MiB + {n} WebKit processes {:.1} MiB = {:.1} MiB (MCP servers not counted)",
        a as f64 / 1024.0,
        w as f64 / 1024.0,
        (a + w) as f64 / 1024.0
    );
}

/// The largest shares of a process's PSS by what is mapped (a library, the heap, anonymous
/// memory): where the app's own figure comes from.
fn print_pss_by_mapping(what: &str, pid: u32, top: usize) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut by: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    let mut current = String::from("[anon]");
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            let name = fields.nth(4).unwrap_or("[anon]");
            let base = name.rsplit('/').next().unwrap_or(name);
            current = base.to_owned();
        } else if first == "Pss:" {
            *by.entry(current.clone()).or_default() += fields
                .next()
                .and_then(|k| k.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    let mut rows: Vec<(String, u64)> = by.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    let shown: Vec<String> = rows
        .iter()
        .take(top)
        .map(|(n, k)| format!("{n} {:.1}", *k as f64 / 1024.0))
        .collect();
    println!("  app PSS {what}, largest (MiB): {}", shown.join(", "));
}

/// Opens the window of the running app as a second launch does (the first one shows its window).
fn reopen(app: &Path, config: &Path, dir: &Path) {
    let second = App::start(app, config, dir);
    let mut child = second.child;
    let _ = child.wait();
}

/// Closes the app's window as a window manager does (WM_DELETE_WINDOW): Gatehouse goes to the
/// tray and destroys the webview.
fn close_window() {
    let out = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--name", "^Gatehouse$"])
        .output()
        .expect("xdotool (make deps installs it)");
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let ok = Command::new("python3")
        .arg(repo.join("tests/desktop/xwin.py"))
        .arg("close")
        .args(&ids)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "closing the window failed");
}

fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parent_of.push((pid, ppid));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(c, pp) in &parent_of {
            if pp == p {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

fn initialize(port: u16) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"desktop-bench","version":"1"}}}"#;
    let (headers, _) = post(port, None, body);
    let session = headers
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_owned())
        })
        .expect("a session id");
    post(
        port,
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    session
}

/// One POST to the gateway; returns (headers, body).
fn post(port: u16, session: Option<&str>, body: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the gateway");
    let session = session
        .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let (h, b) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (h.to_owned(), b.to_owned())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The directory holding this bench's build of `gatehouse-app` (target/release under `cargo bench`;
/// `GATEHOUSE_BENCH_BIN_DIR` names another, e.g. a debug build while looking for a leak).
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GATEHOUSE_BENCH_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("bench exe");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("target dir")
}

/// The fixture server from the same target dir (built by `cargo build --release --bins` at the root).
fn fixture_bin(bins: &Path) -> PathBuf {
    let p = bins.join("gatehouse-fixture");
    if !p.is_file() {
        eprintln!(
            "desktop bench: {} is missing; run `cargo build --release --bins` first (make bench does)",
            p.display()
        );
        std::process::exit(2);
    }
    p
}

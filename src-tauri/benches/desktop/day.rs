//! A working day with the window open, in real time: the window is driven as a person uses it
//! (tauri-driver → WebKitWebDriver → the app, as the e2e suite drives it) while calls go through
//! the gateway. Each minute holds the use measured in a five-minute session of ordinary use
//! (200 calls, ~110 view switches, ~95 log expands), one fifth of it: 40 routed calls, 22 view
//! switches, 19 log expands and collapses, and one call held and allowed in the modal. The app's
//! and WebKit's PSS are read and printed every minute.
//!
//! 10 minutes by default; `GATEHOUSE_BENCH_LONG=1` runs the hour, `GATEHOUSE_BENCH_USE_MINUTES`
//! any number of minutes. The promise it measures: the last figure within 30 MiB of the first
//! minute's.

use super::*;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

const CALLS: usize = 40;
const SWITCHES: usize = 22;
const EXPANDS: usize = 19;
const VIEWS: [&str; 7] = [
    "activity",
    "permissions",
    "secrets",
    "connect",
    "import",
    "settings",
    "servers",
];

pub fn day(app: &Path, config: &Path, dir: &Path, port: u16) {
    let minutes: usize = std::env::var("GATEHOUSE_BENCH_USE_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(if std::env::var_os("GATEHOUSE_BENCH_LONG").is_some() {
            60
        } else {
            10
        });
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let driver_port = free_port();
    let native_port = free_port();
    let mut driver = Command::new(tauri_driver())
        .args([
            "--port",
            &driver_port.to_string(),
            "--native-port",
            &native_port.to_string(),
        ])
        .env("GATEHOUSE_CONFIG", config)
        .env("GATEHOUSE_DATA_DIR", dir.join("data"))
        .env("GATEHOUSE_CONTROL", dir.join("control.sock"))
        .env("GATEHOUSE_TOKEN", TOKEN)
        .env("GATEHOUSE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tauri-driver (make deps installs it)");
    let client = runtime.block_on(session(app, driver_port));
    let window = Window {
        client: &client,
        runtime: &runtime,
    };
    window.wait(
        "the hub running",
        "return document.body.dataset.phase === 'running'",
    );
    let app_pid = descendants(driver.id())
        .into_iter()
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "gatehouse-app")
        })
        .expect("the app under tauri-driver");
    let session_id = initialize(port);
    let split = |pid| {
        let (a, w, _) = pss(pid);
        (a as f64 / 1024.0, w as f64 / 1024.0)
    };
    let mut figures = vec![split(app_pid)];
    let start = Instant::now();
    let mut id = 500_000;
    let mut view = 0;
    for minute in 0..minutes {
        let minute_started = Instant::now();
        // The minute's use, interleaved (a call, a view, a log, …) and spread over it as a
        // person's is: each view stays shown a while (Activity polls, a log follows its lines).
        let steps = CALLS.max(SWITCHES).max(EXPANDS);
        for step in 0..steps {
            let due = Duration::from_secs(55) * step as u32 / steps as u32;
            std::thread::sleep(due.saturating_sub(minute_started.elapsed()));
            if step < CALLS {
                id += 1;
                let text = format!("day {minute}.{step}");
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"s1__echo","arguments":{{"text":"{text}"}}}}}}"#
                );
                let (_, reply) = post(port, Some(&session_id), &body);
                assert!(reply.contains(&text), "unexpected reply: {reply}");
            }
            if step < SWITCHES {
                window.view(VIEWS[view % VIEWS.len()]);
                view += 1;
            }
            if step < EXPANDS {
                let server = format!("s{}", 2 + step % 3);
                window.view("servers");
                window.expand_log(&server);
            }
        }
        id += 1;
        window.held_call(port, &session_id, id, &format!("held {minute}"));
        let spent = minute_started.elapsed();
        std::thread::sleep(Duration::from_secs(60).saturating_sub(spent));
        let f = split(app_pid);
        let nodes = window.js("return document.getElementsByTagName('*').length;");
        println!(
            "  continuous use, minute {:>2}: app {:.1} + WebKit {:.1} = {:.1} MiB; {nodes} elements in the page ({:.0} s of use in it)",
            minute + 1,
            f.0,
            f.1,
            f.0 + f.1,
            spent.as_secs_f64()
        );
        figures.push(f);
    }
    let total = |(a, w): (f64, f64)| a + w;
    let first = figures.get(1).copied().unwrap_or_default();
    let last = figures.last().copied().unwrap_or_default();
    let max = figures.iter().copied().map(total).fold(0.0, f64::max);
    println!(
        "PSS shown through {minutes} minutes of continuous use ({} calls, {} view switches, {} log expands, {minutes} held calls allowed in the modal; {:.0} s), MiB: before {:.1} (app {:.1} + WebKit {:.1}), after the first minute {:.1} (app {:.1} + WebKit {:.1}), end {:.1} (app {:.1} + WebKit {:.1}), growth after the first minute {:+.1}, max {max:.1}",
        minutes * CALLS,
        minutes * SWITCHES,
        minutes * EXPANDS,
        start.elapsed().as_secs_f64(),
        total(figures[0]),
        figures[0].0,
        figures[0].1,
        total(first),
        first.0,
        first.1,
        total(last),
        last.0,
        last.1,
        total(last) - total(first)
    );
    let _ = runtime.block_on(client.clone().close());
    let _ = Command::new("kill").arg(driver.id().to_string()).status();
    let _ = driver.wait();
    let _ = Command::new("kill").arg(app_pid.to_string()).status();
}

async fn session(app: &Path, driver_port: u16) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), json!("wry"));
    caps.insert(
        "tauri:options".into(),
        json!({ "application": app.to_string_lossy() }),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let attempt = tokio::time::timeout(
            Duration::from_secs(60),
            ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{driver_port}")),
        )
        .await;
        match attempt {
            Ok(Ok(c)) => return c,
            _ if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            other => panic!("no WebDriver session with the app: {:?}", other.err()),
        }
    }
}

/// The window, scripted through WebDriver (every wait bounded).
struct Window<'a> {
    client: &'a Client,
    runtime: &'a tokio::runtime::Runtime,
}

impl Window<'_> {
    fn js(&self, script: &str) -> Value {
        self.runtime
            .block_on(async {
                tokio::time::timeout(Duration::from_secs(20), self.client.execute(script, vec![]))
                    .await
            })
            .unwrap_or_else(|_| panic!("the driver did not answer within 20 s:\n{script}"))
            .unwrap_or(Value::Null)
    }

    fn wait(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let v = self.js(script);
            if !matches!(&v, Value::Null | Value::Bool(false)) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A person's click: the element found and enabled (waits up to 20 s), then clicked.
    fn click(&self, css: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let found = self.runtime.block_on(self.client.find(Locator::Css(css)));
            if let Ok(e) = found {
                if self.runtime.block_on(e.is_enabled()).unwrap_or(true)
                    && self.runtime.block_on(e.is_displayed()).unwrap_or(true)
                {
                    self.runtime
                        .block_on(e.click())
                        .unwrap_or_else(|e| panic!("cannot click {css}: {e}"));
                    return;
                }
            }
            assert!(Instant::now() < deadline, "{css} never became clickable");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn view(&self, name: &str) {
        self.click(&format!(".nav[data-view={name}]"));
        self.wait(
            name,
            &format!("return !document.getElementById('view-{name}').hidden"),
        );
    }

    /// Opens a server's tools and log, waits for the log's lines, closes it again.
    fn expand_log(&self, server: &str) {
        let row = format!("article.server[data-id={server}]");
        self.click(&format!("{row} .expand"));
        self.wait(
            "the log shown",
            &format!("return document.querySelector('{row} .log').childNodes.length > 0"),
        );
        self.click(&format!("{row} .expand"));
    }

    /// A call that asks: sent from another thread, allowed with a click in the modal (after its
    /// one-second guard), its answer checked.
    fn held_call(&self, port: u16, session: &str, id: usize, text: &str) {
        let (tx, rx) = mpsc::channel();
        let (s, t) = (session.to_owned(), text.to_owned());
        std::thread::spawn(move || {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"s0__echo","arguments":{{"text":"{t}"}}}}}}"#
            );
            let _ = tx.send(post(port, Some(&s), &body).1);
        });
        self.wait(
            "the approval modal",
            "return document.getElementById('approval-dialog').open",
        );
        self.click("#approval-dialog button[value=once]");
        let reply = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the held call answered");
        assert!(reply.contains(text), "unexpected reply: {reply}");
    }
}

fn tauri_driver() -> PathBuf {
    let home =
        PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/bin/tauri-driver");
    if home.is_file() {
        home
    } else {
        PathBuf::from("tauri-driver")
    }
}

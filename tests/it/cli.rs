//! The headless binary's contract: `serve`, the control socket, CLI verbs and exit codes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

struct Env {
    dir: tempfile::TempDir,
    /// Hubs this test started; stopped (SIGTERM) when the test ends, even by a panic.
    hubs: std::cell::RefCell<Vec<u32>>,
}

impl Drop for Env {
    fn drop(&mut self) {
        for pid in self.hubs.borrow().iter() {
            let pid = nix::unistd::Pid::from_raw(*pid as i32);
            if nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).is_ok() {
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    match nix::sys::wait::waitpid(pid, Some(nix::sys::wait::WaitPidFlag::WNOHANG)) {
                        Ok(nix::sys::wait::WaitStatus::StillAlive) => {
                            std::thread::sleep(Duration::from_millis(20))
                        }
                        _ => break,
                    }
                }
            }
        }
    }
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
            hubs: Default::default(),
        }
    }
    fn sock(&self) -> PathBuf {
        self.dir.path().join("control.sock")
    }
    fn write_config(&self, text: &str) -> PathBuf {
        let p = self.dir.path().join("gatehouse.json");
        std::fs::write(&p, text).unwrap();
        p
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(GATEHOUSE);
        c.args(args)
            .env("GATEHOUSE_CONTROL", self.sock())
            .env("GATEHOUSE_LOG", "warn");
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }
    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
    fn serve(&self, config: &Path) -> Child {
        let data = self.dir.path().join("data");
        self.cmd(&[
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .inspect(|c| self.hubs.borrow_mut().push(c.id()))
        .unwrap()
    }
    /// Polls `status --json` until `pred` holds for the server `id`.
    fn wait(&self, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = self.run(&["status", "--json"]);
            let last = format!("{} {}", String::from_utf8_lossy(&out.stdout), stderr(&out));
            if out.status.success() {
                let all: Value = serde_json::from_slice(&out.stdout).unwrap();
                if let Some(s) = all.as_array().unwrap().iter().find(|s| s["id"] == id) {
                    if pred(s) {
                        return s.clone();
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {id} {what}; last: {last}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A file that cannot be read as a whole (its syntax, a section of its own, the address) stops
/// `serve` with exit 2, the file and position named with the fix, nothing started and the file
/// untouched. A broken server entry does not: see the next test.
#[test]
fn bad_configs_exit_2_with_position_and_fix_and_start_nothing() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "an approval timeout too large for a deadline",
            "{\"approval\": {\"timeout_secs\": 18446744073709551615}}",
            &[
                "\"timeout_secs\" is 18446744073709551615",
                "between 1 and 3600",
            ],
        ),
        (
            "syntax",
            "{\"servers\": {\"a\": {\"command\": \"x\"}",
            &[":1:", "EOF", "JSON syntax"],
        ),
        (
            "non-loopback",
            "{\"gateway\": {\"listen\": \"0.0.0.0:7723\"}}",
            &["not a loopback"],
        ),
        (
            "an unknown top-level key",
            "{\"servers\": {},\n \"sevrers\": {}}",
            &[":2:", "unknown field `sevrers`", "did you mean \"servers\""],
        ),
    ];
    for (name, text, wants) in cases {
        let env = Env::new();
        let path = env.write_config(text);
        let out = env
            .cmd(&["serve", "--config", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(path.to_str().unwrap()),
            "{name}: names the file: {err}"
        );
        assert!(err.contains("fix:"), "{name}: says the fix: {err}");
        for w in *wants {
            assert!(err.contains(w), "{name}: expected {w:?} in {err}");
        }
        assert!(!env.sock().exists(), "{name}: nothing may start");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            *text,
            "{name}: the file is untouched"
        );
    }
    // A missing file is exit 2 as well, with the way out.
    let env = Env::new();
    let out = env
        .cmd(&["serve", "--config", "/nonexistent/gatehouse.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("examples/gatehouse.json"),
        "{}",
        stderr(&out)
    );
}

/// A broken server entry costs that server only: `serve` runs the others, and the entry is a
/// row in state `invalid` whose `last_error` names its line, the problem and the fix.
#[test]
fn a_broken_entry_is_an_invalid_row_with_its_line_and_fix() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "a duration too large for a deadline",
            "{\"servers\": {\"a\": {\"command\": \"x\",\n  \"startup_timeout_secs\": 18446744073709551615}}}",
            &["line 1", "\"startup_timeout_secs\" is 18446744073709551615", "between 1 and 3600"],
        ),
        (
            "unknown key",
            "{\"servers\": {\n  \"a\": {\"comand\": \"x\"}}}",
            &["line 2", "unknown setting `comand`", "did you mean \"command\""],
        ),
        (
            "bad id",
            "{\"servers\": {\n\"Bad_Id\": {\"command\": \"x\"}}}",
            &["line 2", "invalid server id \"Bad_Id\"", "bad-id"],
        ),
        (
            "missing command",
            "{\"servers\": {\"a\": {\"args\": [\"x\"]}}}",
            &["line 1", "neither \"command\" nor \"url\"", "add \"command\""],
        ),
        (
            "wrong type",
            "{\"servers\": {\"a\": {\"command\": \"x\", \"args\": \"-y\"}}}",
            &["line 1", "invalid type"],
        ),
    ];
    for (name, text, wants) in cases {
        let env = Env::new();
        let with_good = text.replacen(
            "{\"servers\": {",
            &format!(
                "{{\"servers\": {{\"good\": {{\"command\": {}}}, ",
                serde_json::to_string(FIXTURE).unwrap()
            ),
            1,
        );
        let path = env.write_config(&with_good);
        let mut hub = env.serve(&path);
        env.wait("good", "running", |s| s["state"] == "running");
        let id = if name == &"bad id" { "Bad_Id" } else { "a" };
        let row = env.wait(id, "invalid", |s| s["state"] == "invalid");
        let err = row["last_error"].as_str().unwrap_or("");
        for w in *wants {
            assert!(err.contains(w), "{name}: expected {w:?} in {err}");
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            with_good,
            "{name}: the file is untouched"
        );
        let _ = hub.kill();
        let _ = hub.wait();
    }
}

#[test]
fn no_hub_running_says_how_to_start_one() {
    let env = Env::new();
    for args in [
        &["status"][..],
        &["restart", "a"],
        &["logs", "a"],
        &["tools", "--json"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("no Gatehouse hub is running"), "{err}");
        assert!(err.contains("gatehouse serve --config"), "{err}");
    }
}

#[test]
fn serve_and_verbs_end_to_end() {
    let env = Env::new();
    let config = env.write_config(&config(&[
        ("a", fixture(&[])),
        ("b", fixture(&["--grandchild"])),
    ]));
    let mut hub = env.serve(&config);

    let a = env.wait("a", "running", |s| s["state"] == "running");
    env.wait("b", "running", |s| s["state"] == "running");
    // The documented status fields.
    for key in ["id", "state", "pid", "restarts", "tools", "last_error"] {
        assert!(a.get(key).is_some(), "status --json lacks {key}: {a}");
    }
    assert_eq!(a["tools"], FIXTURE_TOOLS);
    assert_eq!(a["restarts"], 0);
    assert!(a["pid"].is_u64());
    assert_eq!(a["last_error"], Value::Null);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.sock()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "control socket mode");
    }

    // restart: new pid, restarts + 1.
    let out = env.run(&["restart", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let a2 = env.wait("a", "restarted", |s| s["state"] == "running");
    assert_ne!(a2["pid"], a["pid"]);
    assert_eq!(a2["restarts"], 1);

    // stop / start.
    assert!(env.run(&["stop", "b"]).status.success());
    let b = env.wait("b", "stopped", |s| s["state"] == "stopped");
    assert_eq!(b["pid"], Value::Null);
    assert!(env.run(&["start", "b"]).status.success());
    env.wait("b", "running", |s| s["state"] == "running");

    // Unknown id: exit 1 naming the known ids.
    for verb in ["start", "stop", "restart", "logs", "tools"] {
        let out = env.run(&[verb, "nope"]);
        assert_eq!(out.status.code(), Some(1), "{verb}");
        assert!(
            stderr(&out).contains("unknown server \"nope\"; known servers: a, b"),
            "{verb}: {}",
            stderr(&out)
        );
    }

    // tools: exposed names, titles, annotations.
    let tools = env.json(&["tools", "a", "--json"]);
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "echo")
        .unwrap();
    assert_eq!(echo["name"], "a__echo");
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["annotations"], json!({"readOnlyHint": true}));
    let all = env.json(&["tools", "--json"]);
    assert_eq!(all.as_array().unwrap().len(), 2 * FIXTURE_TOOLS);
    let human = env.run(&["status"]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("running"));

    // logs, and --follow sees the lines of a restart.
    let out = env.run(&["logs", "a"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("fixture starting"));
    let mut follow = Reaped(
        env.cmd(&["logs", "a", "--follow", "-n", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(env.run(&["restart", "a"]).status.success());
    let mut stdout = follow.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(&mut stdout)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("fixture starting") {
                let _ = tx.send(line);
                return;
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("logs --follow saw no new line");
    assert!(line.contains("fixture starting"));
    let _ = follow.kill();
    let _ = follow.wait();

    // SIGTERM: every server stopped, zero descendants, exit 0, socket removed.
    let pgids: Vec<u32> = env
        .json(&["status", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["pid"].as_u64())
        .map(|p| p as u32)
        .collect();
    assert_eq!(pgids.len(), 2);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(hub.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = wait_child(&mut hub, Duration::from_secs(15));
    assert_eq!(status.code(), Some(0));
    for pgid in pgids {
        assert_eq!(
            group_members(pgid),
            Vec::<u32>::new(),
            "group {pgid} survived"
        );
    }
    assert!(!env.sock().exists());
}

#[test]
fn a_second_hub_on_the_same_socket_is_refused() {
    let env = Env::new();
    let config = env.write_config(&config(&[("a", fixture(&[]))]));
    let mut first = env.serve(&config);
    env.wait("a", "running", |s| s["state"] == "running");
    let out = env
        .cmd(&["serve", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already running"), "{}", stderr(&out));
    // The first hub is unaffected.
    env.wait("a", "running", |s| s["state"] == "running");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(
        wait_child(&mut first, Duration::from_secs(15)).code(),
        Some(0)
    );
}

#[test]
fn reload_applies_config_changes_and_keeps_last_good_copy() {
    let env = Env::new();
    let path = env.write_config(&config(&[("a", fixture(&[]))]));
    let mut hub = env.serve(&path);
    env.wait("a", "running", |s| s["state"] == "running");
    let bak = gatehouse::config::backup_path(&path);
    assert!(bak.exists(), "the last good copy is kept");

    std::fs::write(&path, config(&[("a", fixture(&[])), ("c", fixture(&[]))])).unwrap();
    let out = env.run(&["reload"]);
    assert!(out.status.success(), "{}", stderr(&out));
    env.wait("c", "running", |s| s["state"] == "running");

    // A broken edit is refused with the position, and the hub keeps running as it was.
    std::fs::write(&path, "{\"servers\": {").unwrap();
    let out = env.run(&["reload"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(":1:"), "{}", stderr(&out));
    env.wait("c", "running", |s| s["state"] == "running");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(hub.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(
        wait_child(&mut hub, Duration::from_secs(15)).code(),
        Some(0)
    );
}

fn wait_child(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the hub did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A local process holding thousands of idle or slow connections never freezes the hub: the
/// control socket keeps answering, the gateway closes connections that send no request within
/// its header timeout, and serves clients again once they are gone.
#[tokio::test]
async fn a_connection_flood_never_freezes_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    let port = served
        .info
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let flood = r#"
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
port = int(sys.argv[1])
idle, slow = [], []
for i in range(1500):
    s = socket.socket(); s.setblocking(True)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        continue
    if i < 1200:
        idle.append(s)
    else:
        s.send(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()); slow.append(s)
print(f"flooding {len(idle)} idle {len(slow)} slow", flush=True)
socks = idle + slow
for s in socks: s.setblocking(False)
start = time.time()
while time.time() - start < 40:
    for s in slow:
        try: s.send(b"X")
        except OSError: pass
    open_ = 0
    for s in socks:
        try:
            if s.recv(1, socket.MSG_PEEK) != b"": open_ += 1
        except BlockingIOError: open_ += 1
        except OSError: pass
    if open_ == 0:
        print(f"all closed after {time.time() - start:.1f} s", flush=True); sys.exit(0)
    time.sleep(1)
print(f"still open: {open_}", flush=True)
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", flood, &port])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert!(line.starts_with("flooding"), "{line}");
    // The control socket answers while the flood holds.
    for args in [&["status", "--json"][..], &["restart", "fx"][..]] {
        let started = Instant::now();
        let o = Command::new(GATEHOUSE)
            .args(args)
            .env("GATEHOUSE_CONTROL", &served.sock)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
    line.clear();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert!(line.starts_with("all closed after"), "{line}");
    let _ = child.wait();
    // And the gateway serves a real client again.
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let r = http
        .post(&served.info.url)
        .bearer_auth(&served.info.token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"after","version":"1"}}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

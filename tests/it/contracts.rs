//! What the CLI promises where people run it: a headless machine without a Secret Service, a
//! hub started on a config of its own, output piped into `head`, a `gatehouse test` killed with
//! `kill -9`. Each test names the promise it keeps.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

pub(crate) const T: Duration = Duration::from_secs(30);

/// The CLI against the hub `s`, with a HOME and config dir of its own (so the default config
/// path exists nowhere: whatever a verb reads, it found through the hub or its flags).
pub(crate) fn gh(s: &Served, home: &Path, args: &[&str]) -> Output {
    Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", &s.sock)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("COLUMNS", "200")
        .output()
        .unwrap()
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn status(s: &Served, home: &Path) -> Vec<Value> {
    let out = gh(s, home, &["status", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

pub(crate) fn row(s: &Served, home: &Path, id: &str) -> Value {
    status(s, home)
        .into_iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

pub(crate) async fn wait_row(
    s: &Served,
    home: &Path,
    id: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + T;
    loop {
        let r = row(s, home, id);
        if pred(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "{id}: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `gatehouse test ID` finds the entry in the config the running hub was started with
/// (`serve --config PATH`), not at the default path, which here does not exist.
#[tokio::test]
async fn test_id_uses_the_running_hubs_config() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    let out = gh(&s, home.path(), &["test", "fx"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("fx"), "{}", text(&out));
    // `--config` still wins: another file with no such server is read and named.
    let other = dir.path().join("other.json");
    std::fs::write(&other, config(&[("b", fixture(&[]))])).unwrap();
    let out = gh(
        &s,
        home.path(),
        &["test", "fx", "--config", other.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("known servers: b"), "{}", text(&out));
}

/// `restart --all` restarts what runs; a disabled server and one the person stopped stay
/// stopped.
#[tokio::test]
async fn restart_all_leaves_disabled_and_stopped_servers_alone() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cfg = config(&[
        ("a", fixture(&[])),
        ("b", with(fixture(&[]), "enabled", json!(false))),
        ("c", fixture(&[])),
    ]);
    let s = serve(dir.path(), &cfg, &["a", "c"]).await;
    let out = gh(&s, home.path(), &["stop", "c"]);
    assert!(out.status.success(), "{}", text(&out));
    let pid_a = row(&s, home.path(), "a")["pid"].clone();
    let out = gh(&s, home.path(), &["restart", "--all"]);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("restarted a"), "{t}");
    assert!(t.contains("left b as it is (disabled)"), "{t}");
    assert!(t.contains("left c as it is (stopped)"), "{t}");
    let a = wait_row(&s, home.path(), "a", |r| {
        r["state"] == "running" && r["pid"] != pid_a
    })
    .await;
    assert_ne!(a["pid"], pid_a);
    tokio::time::sleep(Duration::from_millis(500)).await;
    for id in ["b", "c"] {
        let r = row(&s, home.path(), id);
        assert_eq!(r["state"], "stopped", "{r}");
        assert!(r["pid"].is_null(), "{r}");
    }
}

/// `remove`, `enable`, `disable` and `test` of an unknown id exit 1 naming the known ids, with a
/// hub running and (for the file edits) without one.
#[tokio::test]
async fn unknown_ids_exit_1_naming_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    for verb in [
        &["remove", "nope"][..],
        &["enable", "nope"],
        &["disable", "nope"],
        &["test", "nope"],
        &["start", "nope"],
    ] {
        let out = gh(&s, home.path(), verb);
        assert_eq!(out.status.code(), Some(1), "{verb:?}: {}", text(&out));
        assert!(
            text(&out).contains("unknown server \"nope\"; known servers: fx"),
            "{verb:?}: {}",
            text(&out)
        );
    }
    drop(s);
    let cfg = dir.path().join("gatehouse.json");
    for verb in ["remove", "enable", "disable"] {
        let out = gh_no_hub(
            dir.path(),
            &[verb, "nope", "--config", cfg.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(1), "{verb}: {}", text(&out));
        assert!(
            text(&out).contains("known servers: fx"),
            "{verb}: {}",
            text(&out)
        );
    }
}

fn gh_no_hub(dir: &Path, args: &[&str]) -> Output {
    Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", dir.join("no-hub.sock"))
        .output()
        .unwrap()
}

/// Every table survives a reader that went away (`gatehouse tools | head -3`): the verb ends
/// quietly with exit 0, no panic text. The pipe's read end is closed before the verb writes,
/// so every write it makes fails with EPIPE.
#[tokio::test]
async fn every_output_survives_a_closed_pipe() {
    use std::os::fd::OwnedFd;
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    for verb in [
        &["tools"][..],
        &["tools", "fx"],
        &["status"],
        &["approvals"],
        &["approvals", "--grants"],
        &["clients"],
        &["activity"],
        &["activity", "--csv"],
        &["status", "--json"],
        &["logs", "fx"],
    ] {
        let (read, write): (OwnedFd, OwnedFd) = nix::unistd::pipe().unwrap();
        drop(read);
        let out = Command::new(GATEHOUSE)
            .args(verb)
            .env("GATEHOUSE_CONTROL", &s.sock)
            .env("HOME", home.path())
            .stdout(Stdio::from(write))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{verb:?}: {err}");
        assert!(!err.contains("panicked"), "{verb:?}: {err}");
    }
}

/// A `gatehouse test` killed with `kill -9` leaves its private directory behind; the next run
/// removes it (its lock is free), and never touches the directory of a probe still running.
#[tokio::test]
async fn a_killed_probe_leaves_no_directory_after_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let probes = || -> Vec<String> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("gatehouse-probe-"))
            .collect()
    };
    let mut slow = Command::new(GATEHOUSE)
        .args([
            "test",
            "--timeout",
            "20",
            "--",
            FIXTURE,
            "--slow-start",
            "15000",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + T;
    while probes().is_empty() {
        assert!(Instant::now() < deadline, "the probe made no directory");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A second probe runs meanwhile: it must not take the live one's directory.
    let out = Command::new(GATEHOUSE)
        .args(["test", "--", FIXTURE])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(probes().len(), 1, "the live probe's directory went");
    kill9(slow.id());
    let _ = slow.wait();
    assert_eq!(probes().len(), 1, "kill -9 ran no cleanup");
    let out = Command::new(GATEHOUSE)
        .args(["test", "--", FIXTURE])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(probes(), Vec::<String>::new());
}

/// One of the Python SDK test servers on a free port, killed when dropped (a failing test
/// leaves none behind).
struct PyServer {
    child: std::process::Child,
    port: u16,
}

impl PyServer {
    fn start(script: &str) -> PyServer {
        let port = crate::remote::free_port();
        let child = Command::new(peer_bin("venv/bin/python"))
            .arg(crate::clients::clients_script(script))
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_port(port, script);
        PyServer { child, port }
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// On a machine without a Secret Service (no D-Bus session at all), a plain remote server runs:
/// no keychain means "no stored sign-in", not a failure. A server that does answer 401 waits in
/// `needs_sign_in`, and the reason says no sign-in could be read from a keychain. `add --url`
/// of such a server returns at once with that state and the `auth login` hint.
#[tokio::test]
#[ignore = "needs the Python SDK peers: run `make test`"]
async fn a_plain_remote_server_runs_without_a_keychain() {
    let home = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let plain = PyServer::start("remote_server.py");
    let guarded = PyServer::start("oauth_server.py");
    let (plain_port, auth_port) = (plain.port, guarded.port);
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {
        "plain": {"url": format!("http://127.0.0.1:{plain_port}/mcp")},
    }})
    .to_string();
    let runtime_dir = runtime.path().to_str().unwrap();
    let s = serve_env(
        dir.path(),
        &cfg,
        &["plain"],
        &["DBUS_SESSION_BUS_ADDRESS"],
        &[("XDG_RUNTIME_DIR", runtime_dir)],
    )
    .await;
    let url = format!("http://127.0.0.1:{auth_port}/mcp");
    let started = Instant::now();
    let out = gh(&s, home.path(), &["add", "guarded", "--url", &url]);
    let took = started.elapsed();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("guarded needs a sign-in"), "{t}");
    assert!(t.contains("gatehouse auth login guarded"), "{t}");
    assert!(took < Duration::from_secs(10), "add took {took:?}");
    let r = row(&s, home.path(), "guarded");
    assert_eq!(r["state"], "needs_sign_in", "{r}");
    let why = r["last_error"].as_str().unwrap_or_default();
    assert!(
        why.contains("no sign-in can be read") && why.contains("keychain"),
        "{why}"
    );
    assert_eq!(row(&s, home.path(), "plain")["state"], "running");
}

/// Values that would reach a process or a request are checked at the edge, on `gatehouse add`
/// as in the file: a line break in an env name, a header split over lines, `Host`, a
/// reference to Gatehouse's own variables or token — each refused with its fix, nothing written.
#[tokio::test]
async fn add_refuses_what_would_smuggle_into_a_process_or_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("gatehouse.json");
    std::fs::write(&cfg, config(&[("fx", fixture(&[]))])).unwrap();
    let before = std::fs::read_to_string(&cfg).unwrap();
    let c = cfg.to_str().unwrap();
    for (args, says) in [
        (
            vec!["add", "a", "--config", c, "--env", "A\nB=1", "--", "x"],
            "invalid env variable name",
        ),
        (
            vec![
                "add",
                "a",
                "--config",
                c,
                "--env",
                "T=$GATEHOUSE_TOKEN",
                "--",
                "x",
            ],
            "one of Gatehouse's own variables",
        ),
        (
            vec![
                "add",
                "a",
                "--config",
                c,
                "--secret-env",
                "T=gateway-token",
                "--",
                "x",
            ],
            "Gatehouse's own gateway token",
        ),
        (
            vec![
                "add",
                "a",
                "--config",
                c,
                "--url",
                "https://e.example/mcp",
                "--header",
                "X=1\r\nY: 2",
            ],
            "line break",
        ),
        (
            vec![
                "add",
                "a",
                "--config",
                c,
                "--url",
                "https://e.example/mcp",
                "--header",
                "Host=evil.example",
            ],
            "the header Host is set by Gatehouse",
        ),
    ] {
        let out = gh_no_hub(dir.path(), &args);
        let t = text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {t}");
        assert!(t.contains(says), "{args:?}: {t}");
        assert!(t.contains(": "), "{args:?}: no fix in {t}");
    }
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), before);
}

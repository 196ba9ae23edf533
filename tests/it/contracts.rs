//! What the CLI promises where people run it: a headless machine without a Secret Service, a
//! hub started on a config of its own, output piped into `head`, a `gatehouse test` killed with
//! `kill -9`. Each test names the promise it keeps.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

const T: Duration = Duration::from_secs(30);

/// `gatehouse test ID` finds the entry in the config the running hub was started with
/// (`serve --config PATH`), not at the default path, which here does not exist.
#[tokio::test]
async fn test_id_uses_the_running_hubs_config() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    let out = gh_home(&s, home.path(), &["test", "fx"]);
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    assert!(output_text(&out).contains("fx"), "{}", output_text(&out));
    // `--config` still wins: another file with no such server is read and named.
    let other = dir.path().join("other.json");
    std::fs::write(&other, config(&[("b", fixture(&[]))])).unwrap();
    let out = gh_home(
        &s,
        home.path(),
        &["test", "fx", "--config", other.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("known servers: b"),
        "{}",
        output_text(&out)
    );
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
    let out = gh_home(&s, home.path(), &["stop", "c"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let pid_a = row(&s, home.path(), "a")["pid"].clone();
    let out = gh_home(&s, home.path(), &["restart", "--all"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let t = output_text(&out);
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
        let out = gh_home(&s, home.path(), verb);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{verb:?}: {}",
            output_text(&out)
        );
        assert!(
            output_text(&out).contains("unknown server \"nope\"; known servers: fx"),
            "{verb:?}: {}",
            output_text(&out)
        );
    }
    drop(s);
    let cfg = dir.path().join("gatehouse.json");
    for verb in ["remove", "enable", "disable"] {
        let out = gh_no_hub(
            dir.path(),
            &[verb, "nope", "--config", cfg.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(1), "{verb}: {}", output_text(&out));
        assert!(
            output_text(&out).contains("known servers: fx"),
            "{verb}: {}",
            output_text(&out)
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
    assert!(out.status.success(), "{}", output_text(&out));
    assert_eq!(probes().len(), 1, "the live probe's directory went");
    kill9(slow.id());
    let _ = slow.wait();
    assert_eq!(probes().len(), 1, "kill -9 ran no cleanup");
    let out = Command::new(GATEHOUSE)
        .args(["test", "--", FIXTURE])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
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
        let port = crate::support::free_port();
        let child = Command::new(peer_bin("venv/bin/python"))
            .arg(crate::support::clients_script(script))
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
    let out = gh_home(&s, home.path(), &["add", "guarded", "--url", &url]);
    let took = started.elapsed();
    let t = output_text(&out);
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
        let t = output_text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {t}");
        assert!(t.contains(says), "{args:?}: {t}");
        assert!(t.contains(": "), "{args:?}: no fix in {t}");
    }
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), before);
}

/// `gatehouse connect` started the way Codex starts a stdio server — a few variables only, no
/// `XDG_RUNTIME_DIR` — finds the hub that runs on the derived socket path through the pointer
/// the hub leaves in the home directory; a pointer to a socket in a directory other users can
/// write is not followed; without a pointer the error names the cause and `GATEHOUSE_CONTROL`;
/// the pointer goes when the hub stops.
#[tokio::test]
async fn connect_finds_its_hub_when_the_client_dropped_xdg_runtime_dir() {
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let (run, home) = (dir.path().join("run"), dir.path().join("home"));
    for d in [&run, &home] {
        std::fs::create_dir(d).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let sock = run.join("gatehouse").join("control.sock");
    let log = dir.path().join("serve.log");
    let child = serve_command(dir.path(), &config(&[("fx", fixture(&[]))]))
        .env_remove("GATEHOUSE_CONTROL")
        .env("XDG_RUNTIME_DIR", &run)
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let client = gatehouse::control::ControlClient::new(sock.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    let info = loop {
        if let Ok(info) = client
            .request::<gatehouse::control::GatewayInfo>(&gatehouse::control::Request::Gateway {
                client: None,
            })
            .await
        {
            break info;
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            std::fs::read_to_string(&log).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let served = Served {
        child,
        sock: sock.clone(),
        log,
        info,
    };
    let pointer = home.join(".local/state/gatehouse/control-socket");
    assert_eq!(
        std::fs::read_to_string(&pointer).unwrap(),
        sock.to_str().unwrap()
    );

    // Codex's environment: HOME and PATH, no XDG_RUNTIME_DIR, no GATEHOUSE_CONTROL.
    let codex_like = |home: &Path| {
        let mut c = tokio::process::Command::new(GATEHOUSE);
        c.arg("connect")
            .env_clear()
            .env("HOME", home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    };
    let mut bridge = codex_like(&home).spawn().unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(bridge.stdout.take().unwrap()).lines();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"codex-like\",\"version\":\"1\"}}}\n")
        .await
        .unwrap();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap_or_default();
    let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    assert_eq!(v["result"]["serverInfo"]["name"], "gatehouse", "{line}");
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), bridge.wait()).await;

    // No pointer in this home: the error says why and what to set.
    let empty = dir.path().join("empty-home");
    std::fs::create_dir(&empty).unwrap();
    let out = codex_like(&empty).output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("without XDG_RUNTIME_DIR") && err.contains("GATEHOUSE_CONTROL"),
        "{err}"
    );

    // A pointer to a socket in a directory others can write is not followed.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let planted = open.join("control.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&planted).unwrap();
    let other = dir.path().join("other-home");
    let state = other.join(".local/state/gatehouse");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(state.join("control-socket"), planted.to_str().unwrap()).unwrap();
    let out = codex_like(&other).output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains(planted.to_str().unwrap()), "{err}");
    assert!(err.contains("no Gatehouse hub is running"), "{err}");

    // The hub stops: its pointer goes with it.
    drop(served);
    assert!(!pointer.exists(), "the pointer outlived its hub");
}

/// Import reads client files only: a FIFO at the path (which would block the open) and
/// `/dev/zero` (which never ends) are refused at once, naming what they are; a file larger than
/// any client writes is refused without being read whole. Nothing is written to the config.
#[test]
fn import_refuses_fifos_devices_and_huge_files_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("gatehouse.json");
    std::fs::write(&cfg, "{\"servers\":{}}").unwrap();
    let fifo = dir.path().join("mcp.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(9 << 20)
        .unwrap();
    for (from, says) in [
        (fifo.to_str().unwrap(), "is a FIFO, not a regular file"),
        ("/dev/zero", "is a device, not a regular file"),
        (big.to_str().unwrap(), "is larger than 8 MiB"),
    ] {
        let started = std::time::Instant::now();
        let out = gh_no_hub(
            dir.path(),
            &["import", "--config", cfg.to_str().unwrap(), "--from", from],
        );
        let (code, err) = (out.status.code().unwrap_or(-1), output_text(&out));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{from} took {:?}",
            started.elapsed()
        );
        assert_eq!(code, 1, "{from}: {err}");
        assert!(err.contains(says), "{from}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), "{\"servers\":{}}");
}

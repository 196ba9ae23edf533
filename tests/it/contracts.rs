//! What the CLI promises where people run it: a headless machine without a Secret Service, a
//! hub started on a config of its own, output piped into `head`, a `gatehouse test` killed with
//! `kill -9`. Each test names the promise it keeps.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

const T: Duration = Duration::from_secs(30);

/// The CLI against the hub `s`, with a HOME and config dir of its own (so the default config
/// path exists nowhere: whatever a verb reads, it found through the hub or its flags).
fn gh(s: &Served, home: &Path, args: &[&str]) -> Output {
    Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", &s.sock)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("COLUMNS", "200")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
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

fn row(s: &Served, home: &Path, id: &str) -> Value {
    status(s, home)
        .into_iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

async fn wait_row(s: &Served, home: &Path, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
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

/// On a machine without a Secret Service (no D-Bus session at all), a plain remote server runs:
/// no keychain means "no stored sign-in", not a failure. A server that does answer 401 waits in
/// `needs_sign_in`, and the reason says no sign-in could be read from a keychain. `add --url`
/// of such a server returns at once with that state and the `auth login` hint.
#[tokio::test]
#[ignore = "needs the Python SDK peers: run `make test`"]
async fn a_plain_remote_server_runs_without_a_keychain() {
    let home = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let plain_port = crate::remote::free_port();
    let mut plain = Command::new(peer_bin("venv/bin/python"))
        .arg(crate::clients::clients_script("remote_server.py"))
        .arg(plain_port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let auth_port = crate::remote::free_port();
    let mut guarded = Command::new(peer_bin("venv/bin/python"))
        .arg(crate::clients::clients_script("oauth_server.py"))
        .arg(auth_port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_port(plain_port, "the remote test server");
    wait_for_port(auth_port, "the OAuth test server");
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
    let _ = plain.kill();
    let _ = guarded.kill();
    let _ = plain.wait();
    let _ = guarded.wait();
}

/// A 2025 client session on the served gateway, speaking plain JSON-RPC over HTTP.
struct Session {
    http: reqwest::Client,
    url: String,
    token: String,
    id: String,
}

impl Session {
    async fn open(s: &Served) -> Session {
        let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"contracts","version":"1"}}});
        let r = http
            .post(&s.info.url)
            .bearer_auth(&s.info.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send()
            .await
            .unwrap();
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = r.text().await;
        let me = Session {
            http,
            url: s.info.url.clone(),
            token: s.info.token.clone(),
            id,
        };
        me.raw(json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string())
            .await;
        me
    }

    /// Posts `body` as it is; the answer's one message (JSON, or the last SSE `data:`).
    async fn raw(&self, body: String) -> (u16, Value) {
        let r = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        let v = serde_json::from_str(&text).unwrap_or_else(|_| {
            crate::gateway::sse_messages(&text)
                .pop()
                .unwrap_or(Value::Null)
        });
        (status, v)
    }

    async fn call(&self, id: u64, method: &str, params: Value) -> Value {
        self.raw(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string())
            .await
            .1
    }
}

/// A server's own `notifications/tools/list_changed` makes Gatehouse list its tools again:
/// a tool the server adds is offered to clients without a restart (were the notification
/// ignored, the new tool would never appear).
#[tokio::test]
async fn a_servers_own_list_changed_is_followed_by_a_new_listing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, "Echoes.\n").unwrap();
    let fx = fixture(&["--flood", "--spec-file", spec.to_str().unwrap()]);
    let s = serve(dir.path(), &config(&[("fx", fx)]), &["fx"]).await;
    let c = Session::open(&s).await;
    let names = |v: &Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let before = names(&c.call(1, "tools/list", json!({})).await);
    assert!(!before.iter().any(|n| n.contains("tool_new")), "{before:?}");
    std::fs::write(&spec, "Echoes.\ntool_new\n").unwrap();
    let v = c
        .call(
            2,
            "tools/call",
            json!({"name": "fx__churn", "arguments": {"count": 1}}),
        )
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "sent 1", "{v}");
    let deadline = Instant::now() + T;
    loop {
        let now = names(&c.call(3, "tools/list", json!({})).await);
        if now.iter().any(|n| n.ends_with("tool_new")) {
            break;
        }
        assert!(Instant::now() < deadline, "never re-listed: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What Gatehouse answers on its own and what it passes: a server's JSON-RPC error reaches the
/// client with its code and message unchanged; a body that is not JSON gets -32700; `start` of
/// a running server leaves it running, same process.
#[tokio::test]
async fn errors_pass_through_and_start_of_a_running_server_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    let c = Session::open(&s).await;
    let v = c
        .call(
            1,
            "tools/call",
            json!({"name": "fx__leak", "arguments": {"name": "GATEHOUSE_CONTRACTS_UNSET"}}),
        )
        .await;
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["error"]["code"], -32000, "{v}");
    assert_eq!(v["error"]["message"], "upstream rejected key ", "{v}");
    let (status, v) = c.raw("{\"jsonrpc\": \"2.0\", \"id\": 2, ".into()).await;
    assert_eq!(v["error"]["code"], -32700, "{status} {v}");
    assert!(v["id"].is_null(), "{v}");
    let pid = row(&s, home.path(), "fx")["pid"].clone();
    assert!(pid.is_u64());
    let out = gh(&s, home.path(), &["start", "fx"]);
    assert!(out.status.success(), "{}", text(&out));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = row(&s, home.path(), "fx");
    assert_eq!(r["state"], "running", "{r}");
    assert_eq!(r["pid"], pid, "{r}");
    assert_eq!(r["restarts"], 0, "{r}");
}

/// `validate_arguments`: where the person turned it on (the server, or one tool), a call whose
/// arguments do not match the tool's inputSchema is refused with -32602 naming the path, the
/// keyword and what the schema expects — before it is held for approval or forwarded; where
/// it is off (the default, or the tool's own `false`), the server gets the call as sent.
#[tokio::test]
async fn arguments_are_validated_only_where_asked_and_before_any_hold() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let strict = json!({"command": FIXTURE, "validate_arguments": true,
        "tools": {"echo": {"requires_approval": true}, "sleep": {"validate_arguments": false}}});
    let mut cfg: Value =
        serde_json::from_str(&config(&[("strict", strict), ("lenient", fixture(&[]))])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve(dir.path(), &cfg.to_string(), &["strict", "lenient"]).await;
    let c = Session::open(&s).await;
    let v = c
        .call(
            1,
            "tools/call",
            json!({"name": "strict__add", "arguments": {"a": "1", "b": 2}}),
        )
        .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["data"]["path"], "/a", "{v}");
    assert_eq!(v["error"]["data"]["keyword"], "type", "{v}");
    assert_eq!(v["error"]["data"]["expected"], "number", "{v}");
    let v = c
        .call(
            2,
            "tools/call",
            json!({"name": "strict__add", "arguments": {"a": 1}}),
        )
        .await;
    assert_eq!(v["error"]["data"]["keyword"], "required", "{v}");
    let v = c
        .call(
            3,
            "tools/call",
            json!({"name": "strict__add", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "3", "{v}");
    // A held tool: refused at once, nobody is asked.
    let v = c
        .call(
            4,
            "tools/call",
            json!({"name": "strict__echo", "arguments": {"text": 5}}),
        )
        .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let pending = gh(&s, home.path(), &["approvals", "--json"]);
    assert_eq!(String::from_utf8_lossy(&pending.stdout).trim(), "[]");
    // Off for one tool, and off by default: the server sees the call as sent.
    let v = c
        .call(
            5,
            "tools/call",
            json!({"name": "strict__sleep", "arguments": {"ms": "1"}}),
        )
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "slept 0 ms", "{v}");
    let v = c
        .call(
            6,
            "tools/call",
            json!({"name": "lenient__add", "arguments": {"a": "1", "b": 2}}),
        )
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "2", "{v}");
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

/// A client's `clientInfo` is kept bounded whatever it sends (a 1 MiB name and version with a
/// line break in them), and each activity row says who called on what: name, version and
/// protocol revision.
#[tokio::test]
async fn client_info_is_bounded_and_every_row_names_the_clients_version_and_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&config(&[("fx", fixture(&[]))])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let huge = format!("evil\n{}", "n".repeat(1 << 20));
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name": huge, "version": huge}}});
    let r = http
        .post(&s.info.url)
        .bearer_auth(&s.info.token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = r.text().await;
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"x"}}});
    let r = http
        .post(&s.info.url)
        .bearer_auth(&s.info.token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-06-18")
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    assert!(r.text().await.unwrap().contains("\"x\""));
    let deadline = Instant::now() + T;
    let row = loop {
        let out = gh(&s, home.path(), &["activity", "--json"]);
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(r) = rows.into_iter().next() {
            break r;
        }
        assert!(Instant::now() < deadline, "no activity row");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let name = row["client"].as_str().unwrap();
    assert!(
        name.starts_with("evil n") && name.chars().count() <= 128,
        "{name:.80}"
    );
    assert!(!name.contains('\n'));
    assert!(
        row["client_version"].as_str().unwrap().chars().count() <= 64,
        "{row}"
    );
    assert_eq!(row["client_protocol"], "2025-06-18", "{row}");
}

/// `GATEHOUSE_LOG=debug` says who connected, on what: each client's `initialize` and
/// `server/discover` with its name, version, protocol and capabilities — never arguments.
#[tokio::test]
async fn debug_logs_name_each_client_and_what_it_speaks() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&config(&[("fx", fixture(&[]))])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["fx"],
        &[],
        &[("GATEHOUSE_LOG", "debug")],
    )
    .await;
    let c = Session::open(&s).await;
    let v = c.call(1, "server/discover", json!({})).await;
    assert!(v["result"]["supportedVersions"].is_array(), "{v}");
    let secret_arg = "arg-canary-7f3e";
    c.call(
        2,
        "tools/call",
        json!({"name": "fx__echo", "arguments": {"text": secret_arg}}),
    )
    .await;
    let deadline = Instant::now() + T;
    let log = loop {
        let log = std::fs::read_to_string(&s.log).unwrap_or_default();
        if log.contains("client server/discover") || Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let hello = log
        .lines()
        .find(|l| l.contains("client initialize"))
        .unwrap_or_else(|| panic!("no initialize line in {log}"));
    assert!(
        hello.contains("contracts") && hello.contains("2025-11-25"),
        "{hello}"
    );
    assert!(log.contains("client server/discover"), "{log}");
    assert!(!log.contains(secret_arg), "arguments reached the log");
}

/// No server is handed one of Gatehouse's own tokens, whatever way the value comes: the
/// gateway's token as a plain env value (inside "Bearer …"), a client profile's added with
/// `gatehouse add`. Each server is refused at start, naming whose token it is; the token never
/// shows in the status.
#[tokio::test]
async fn no_server_is_handed_a_gatehouse_token() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let gateway_token = "gw-0123456789abcdef0123456789abcdef0123456789";
    let cfg = json!({
        "servers": {
            "fine": fixture(&[]),
            "leaky": {"command": FIXTURE, "env": {"T": format!("Bearer {gateway_token}")}}
        },
        "clients": {"cursor": {}}
    })
    .to_string();
    let s = serve_env(
        dir.path(),
        &cfg,
        &["fine"],
        &[],
        &[("GATEHOUSE_TOKEN", gateway_token)],
    )
    .await;
    let leaky = wait_row(&s, home.path(), "leaky", |r| r["state"] == "failed").await;
    let why = leaky["last_error"].as_str().unwrap();
    assert!(why.contains("T holds the gateway's token"), "{why}");
    assert!(!leaky.to_string().contains(gateway_token), "{leaky}");
    let profile_token = gatehouse::control::ControlClient::new(s.sock.clone())
        .request::<gatehouse::control::GatewayInfo>(&gatehouse::control::Request::Gateway {
            client: Some("cursor".into()),
        })
        .await
        .unwrap()
        .token;
    let env = format!("KEY={profile_token}");
    let out = gh(
        &s,
        home.path(),
        &["add", "sneaky", "--env", &env, "--", FIXTURE],
    );
    assert!(out.status.success(), "{}", text(&out));
    let sneaky = wait_row(&s, home.path(), "sneaky", |r| r["state"] == "failed").await;
    let why = sneaky["last_error"].as_str().unwrap();
    assert!(
        why.contains("holds the token of client profile \"cursor\""),
        "{why}"
    );
    assert_eq!(row(&s, home.path(), "fine")["state"], "running");
}

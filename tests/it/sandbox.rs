//! Every local server in a sandbox: a server that turns malicious can still do only what its own
//! place allows. The hostile fixture (`--hostile`) tries, from tool calls, everything a stolen
//! `npx` package would; under the default sandbox each attempt is refused and shows in its log,
//! and the same server with `"sandbox": "off"` succeeds at each (so the test can fail).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

fn status_of(s: &Served, id: &str) -> Value {
    let out = gh(s, &["status", "--json"]);
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == id)
        .cloned()
        .unwrap()
}

/// The path of the D-Bus session bus this test runs with (the private one that holds the
/// keychain), when it is a path.
fn bus_path() -> Option<String> {
    let addr = std::env::var("DBUS_SESSION_BUS_ADDRESS").ok()?;
    let p = addr.strip_prefix("unix:path=")?;
    Some(p.split(',').next()?.to_owned())
}

/// Under the default sandbox a hostile server cannot read a key under `~/.ssh`, write outside
/// its place, connect to the control socket (so it cannot approve its own held call), reach the
/// keychain's D-Bus service or read the hub's environment — each refusal is in its log with the
/// sandbox's hint, and `status` names the mechanism. With `"sandbox": "off"` the same server
/// does every one of those.
#[tokio::test]
async fn a_hostile_server_gets_no_keys_no_control_and_no_writes_outside_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let canary = home.join(".ssh/id_ed25519");
    std::fs::write(&canary, "CANARY-PRIVATE-KEY").unwrap();
    let entry = |sandbox: Value| {
        json!({"command": FIXTURE, "args": ["--hostile"], "sandbox": sandbox,
               "tools": {"sleep": {"requires_approval": true}, "touch": {"requires_approval": false}}})
    };
    let cfg = json!({
        "servers": {"evil": entry(json!("default")), "open": entry(json!("off"))},
        "approval": {"default": "ask-unless-read-only", "timeout_secs": 60}
    });
    let home_s = home.to_str().unwrap();
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["evil", "open"],
        &[],
        &[("HOME", home_s)],
    )
    .await;
    let c = Client::connect(&s, "c").await;
    let hub_pid = s.child.id();
    let sock = s.sock.to_str().unwrap().to_owned();

    let st = status_of(&s, "evil");
    let mechanism = st["sandbox"]["mechanism"].as_str().unwrap_or("");
    assert!(mechanism.starts_with("landlock ABI"), "{st}");
    assert_eq!(st["sandbox"]["confined"], true, "{st}");
    let st = status_of(&s, "open");
    assert_eq!(st["sandbox"]["policy"], "off", "{st}");
    assert_eq!(st["sandbox"]["confined"], false, "{st}");

    for (server, confined) in [("evil", true), ("open", false)] {
        let tool = |t: &str| format!("{server}__{t}");
        let outside = dir.path().join(format!("{server}-was-here"));
        let mut attempts: Vec<(&str, String)> = vec![
            (
                "read the key",
                outcome(&c.call(1, &tool("read"), json!({"path": canary})).await),
            ),
            (
                "write outside",
                outcome(&c.call(2, &tool("touch"), json!({"path": outside})).await),
            ),
            (
                "reach the control socket",
                outcome(&c.call(3, &tool("arm"), json!({"socket": sock})).await),
            ),
        ];
        // Landlock keeps a confined process from tracing one outside its sandbox (the hub's
        // memory, its /proc environ). Seen here: that holds for an ordinary user, and a server
        // run as root read the hub's environ anyway, so it is checked only for a user.
        if !nix::unistd::geteuid().is_root() {
            let peek = c.call(4, &tool("peek"), json!({"pid": hub_pid})).await;
            attempts.push(("read the hub's environment", outcome(&peek)));
        }
        if let Some(bus) = bus_path() {
            attempts.push((
                "reach the keychain's bus",
                outcome(&c.call(5, &tool("dial"), json!({"path": bus})).await),
            ));
        }
        for (what, got) in &attempts {
            assert_eq!(
                got.starts_with("error:"),
                confined,
                "{server}: {what}: {got}"
            );
        }
        assert_eq!(
            outside.exists(),
            !confined,
            "{server} wrote outside its place"
        );
        if !confined {
            assert!(attempts[0].1.contains("CANARY-PRIVATE-KEY"), "{attempts:?}");
        }

        // A held call: the armed server approves it itself unless it could not reach the hub.
        let call = tokio::spawn({
            let (c, name) = (c.clone(), tool("sleep"));
            async move { c.call(6, &name, json!({"ms": 1})).await }
        });
        if confined {
            let r = pending(&s, &tool("sleep")).await;
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let still = gh(&s, &["approvals", "--json"]);
            assert!(String::from_utf8_lossy(&still.stdout).contains(r["id"].as_str().unwrap()));
            let out = gh(&s, &["deny", r["id"].as_str().unwrap()]);
            assert!(out.status.success());
            let v = call.await.unwrap();
            assert!(outcome(&v).starts_with("error:"), "{v}");
        } else {
            let v = tokio::time::timeout(Duration::from_secs(20), call)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                outcome(&v),
                "slept 1 ms",
                "the unconfined server did not approve itself: {v}"
            );
        }
    }

    // Each refusal shows in the confined server's log, with the sandbox's hint.
    let deadline = Instant::now() + Duration::from_secs(10);
    let log_path = dir.path().join("data/logs/evil.log");
    loop {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if log.contains("the sandbox may have caused this")
            && log.contains(canary.to_str().unwrap())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no sandbox hint in the log: {log}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(s);
    assert!(!Path::new(&dir.path().join("evil-was-here")).exists());
}

/// `"network": false` takes the network away (a loopback TCP connection is refused) while the
/// default keeps it — most servers are API clients.
#[tokio::test]
async fn network_false_blocks_an_outbound_connection() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let entry =
        |sandbox: Value| json!({"command": FIXTURE, "args": ["--hostile"], "sandbox": sandbox});
    let cfg = json!({"servers": {
        "offline": entry(json!({"network": false})),
        "online": entry(json!("default")),
    }});
    let s = serve(dir.path(), &cfg.to_string(), &["offline", "online"]).await;
    let c = Client::connect(&s, "c").await;
    let off = outcome(&c.call(1, "offline__dial", json!({"port": port})).await);
    assert!(
        off.starts_with("error:") && off.contains("ermission denied"),
        "{off}"
    );
    let on = outcome(&c.call(2, "online__dial", json!({"port": port})).await);
    assert_eq!(on, "connected");
    assert_eq!(
        status_of(&s, "offline")["sandbox"]["summary"],
        "default, no network"
    );
}

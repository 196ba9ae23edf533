//! Secrets in the real OS keychain: a private D-Bus session with a fresh, unlocked gnome-keyring
//! (`scripts/with-keyring.sh`, which `make test` uses). Ignored under plain `cargo test`.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use gatehouse::secrets::{KeychainStore, SecretSource};
use serde_json::{json, Value};
use sha2::Digest;

use crate::support::*;

const T: Duration = Duration::from_secs(30);

fn require_keychain() {
    assert!(
        std::env::var_os("GATEHOUSE_TEST_KEYCHAIN").is_some()
            && std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "run inside scripts/with-keyring.sh (make test does)"
    );
}

fn sha(v: &str) -> String {
    sha2::Sha256::digest(v.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn gh(s: &Served, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", &s.sock)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

async fn status_of(s: &Served, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + T;
    loop {
        let out = gh(s, &["status", "--json"], None);
        if let Ok(all) = serde_json::from_slice::<Value>(&out.stdout) {
            if let Some(v) = all
                .as_array()
                .and_then(|a| a.iter().find(|v| v["id"] == id))
            {
                if pred(v) {
                    return v.clone();
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "{id} never reached the expected state: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Calls a tool over the served gateway and returns the first content text.
async fn call_text(s: &Served, tool: &str, args: Value) -> String {
    let v = Mcp::connect(s, "t").await.call(1, tool, args).await;
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn config_with_secret(name: &str) -> String {
    json!({
        "servers": {
            "fx": {"command": FIXTURE, "env": {"API_KEY": {"secret": name}, "PLAIN": "p"}},
            "plain": {"command": FIXTURE}
        },
        "approval": {"default": "flagged-only"}
    })
    .to_string()
}

#[tokio::test]
#[ignore = "needs a keychain: run `make test` (scripts/with-keyring.sh)"]
async fn keychain_secrets_reach_servers_restart_them_and_fail_clearly() {
    require_keychain();
    let name = format!("ci-key-{}", fastrand::u32(..));
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config_with_secret(&name), &["plain"]).await;

    // Not set yet: that server fails saying how to fix it; the other one runs.
    let fx = status_of(&s, "fx", |v| v["state"] == "failed").await;
    assert_eq!(
        fx["last_error"],
        format!("secret {name} is not set — set it in the app's Secrets view or run `gatehouse secret set {name}`")
    );

    // Set (value on stdin): the server restarts and sees it.
    let out = gh(&s, &["secret", "set", &name], Some("value-one\n"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("restarted: fx"));
    let first = status_of(&s, "fx", |v| v["state"] == "running").await;
    let reported: Value =
        serde_json::from_str(&call_text(&s, "fx__envhash", json!({"name": "API_KEY"})).await)
            .unwrap();
    assert_eq!(
        reported,
        json!({"present": true, "sha256": sha("value-one")})
    );

    // A new value restarts it with the new value.
    assert!(gh(&s, &["secret", "set", &name], Some("value-two"))
        .status
        .success());
    status_of(&s, "fx", |v| {
        v["state"] == "running" && v["pid"] != first["pid"]
    })
    .await;
    let reported: Value =
        serde_json::from_str(&call_text(&s, "fx__envhash", json!({"name": "API_KEY"})).await)
            .unwrap();
    assert_eq!(reported["sha256"], sha("value-two"));

    // ls: name, set, users; never the value.
    let out = gh(&s, &["secret", "ls", "--json"], None);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.contains("value-two"));
    let list: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        list,
        json!([{"name": name, "set": true, "servers": ["fx"]}])
    );

    // The gateway token lives in the keychain, not in a file.
    assert!(!dir.path().join("data/gateway-token").exists());
    let keychain = KeychainStore::start();
    let token = tokio::task::spawn_blocking(move || keychain.get("gateway-token"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(token, s.info.token);

    // The value survives a hub restart (the real store, not a mock).
    drop(s);
    let s = serve(dir.path(), &config_with_secret(&name), &["plain", "fx"]).await;
    let reported: Value =
        serde_json::from_str(&call_text(&s, "fx__envhash", json!({"name": "API_KEY"})).await)
            .unwrap();
    assert_eq!(reported["sha256"], sha("value-two"));
    assert_eq!(s.info.token, token, "the same token after a restart");

    // rm: the server fails with the promised message.
    let out = gh(&s, &["secret", "rm", &name], None);
    assert!(String::from_utf8_lossy(&out.stdout).contains("is removed"));
    let fx = status_of(&s, "fx", |v| v["state"] == "failed").await;
    assert_eq!(
        fx["last_error"],
        format!("secret {name} is not set — set it in the app's Secrets view or run `gatehouse secret set {name}`")
    );
}

#[tokio::test]
#[ignore = "needs a keychain: run `make test` (scripts/with-keyring.sh)"]
async fn without_a_keychain_secret_servers_fail_and_the_others_run() {
    require_keychain();
    let dir = tempfile::tempdir().unwrap();
    let s = serve_without_env(
        dir.path(),
        &config_with_secret("ci-none"),
        &["plain"],
        &["DBUS_SESSION_BUS_ADDRESS"],
    )
    .await;
    let fx = status_of(&s, "fx", |v| v["state"] == "failed").await;
    let err = fx["last_error"].as_str().unwrap();
    assert!(
        err.contains("no keychain is reachable") && err.contains("Secret Service"),
        "{err}"
    );
    // The gateway still works; its token falls back to a 0600 file, with a warning in the log.
    assert_eq!(
        call_text(&s, "plain__echo", json!({"text": "still here"})).await,
        "still here"
    );
    assert!(dir.path().join("data/gateway-token").exists());
    assert!(std::fs::read_to_string(&s.log)
        .unwrap()
        .contains("no keychain is reachable"));
}

/// A random value used as a secret, echoed by a careless server to stderr and into errors, sent
/// in arguments, present when the server crashes: afterwards no log file, activity row, status
/// or logs JSON, event or process command line holds it raw, base64, URL-encoded or JSON-escaped.
#[tokio::test]
#[ignore = "needs a keychain: run `make test` (scripts/with-keyring.sh)"]
async fn canary_secret_never_leaks() {
    use gatehouse::gateway::{Gateway, Out, Outcome};
    require_keychain();
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).unwrap();
    let b64 = base64_encode(&bytes);
    let canary = format!("{b64}\"\\/end");
    let forms = [
        canary.clone(),
        base64_encode(canary.as_bytes()),
        url_encode(&canary),
        serde_json::to_string(&canary)
            .unwrap()
            .trim_matches('"')
            .to_owned(),
    ];
    let name = format!("canary-{}", fastrand::u32(..));
    let keychain = KeychainStore::start();
    {
        let (k, n, c) = (keychain.clone(), name.clone(), canary.clone());
        tokio::task::spawn_blocking(move || k.set(&n, &c))
            .await
            .unwrap()
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let config = gatehouse::Config::parse(&config_with_secret(&name), "t".as_ref()).unwrap();
    let mut opts = gatehouse::HubOptions::new(dir.path().to_owned());
    opts.secrets = std::sync::Arc::new(keychain.clone());
    let hub = gatehouse::Hub::start(config, opts);
    let mut events = hub.events();
    let collected = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = collected.clone();
    let collector = tokio::spawn(async move {
        while let Ok(ev) = events.recv().await {
            sink.lock()
                .unwrap()
                .push(serde_json::to_string(&ev).unwrap());
        }
    });
    wait_state(&hub.server("fx").unwrap(), gatehouse::State::Running, T).await;
    let gw = Gateway::new(hub.clone());
    gw.refresh_catalog();
    let session = gw.open_session();
    for (i, (tool, args)) in [
        ("fx__leak", json!({"name": "API_KEY"})),
        ("fx__echo", json!({"text": format!("my key is {canary}")})),
        ("fx__crash", json!({"code": 9})),
    ]
    .into_iter()
    .enumerate()
    {
        let msg = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":tool,"arguments":args}}).to_string();
        if let Outcome::Stream(mut rx) = gw.handle_bytes(&session, msg.as_bytes()).await {
            while let Some(o) = rx.recv().await {
                if let Out::Final(_) = o {}
            }
        }
    }
    let fx = hub.server("fx").unwrap();
    wait_for(&fx, "restarted after the crash", T, |s| {
        s.restarts >= 1 && s.state == gatehouse::State::Running
    })
    .await;

    // Everything that could hold it.
    let mut haystacks: Vec<(String, String)> = Vec::new();
    haystacks.push((
        "status json".into(),
        serde_json::to_string(&hub.status()).unwrap(),
    ));
    haystacks.push((
        "logs json".into(),
        serde_json::to_string(&fx.logs().tail(None)).unwrap(),
    ));
    let rows = hub.activity().recent(100, None).await.unwrap();
    assert!(rows.len() >= 2);
    haystacks.push((
        "activity rows".into(),
        serde_json::to_string(&rows).unwrap(),
    ));
    let cmdlines = hub_cmdlines();
    haystacks.push(("/proc/*/cmdline".into(), cmdlines));
    gw.shutdown().await;
    hub.shutdown().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    collector.abort();
    haystacks.push(("events".into(), collected.lock().unwrap().join("\n")));
    for entry in walk(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        haystacks.push((
            entry.display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    // The scenario did put it where masking had to act.
    let logs = &haystacks[1].1;
    assert!(
        logs.contains(&format!("[secret:{name}]")),
        "stderr echo was not seen: {logs}"
    );
    for (place, text) in &haystacks {
        for form in &forms {
            assert!(
                !text.contains(form.as_str()),
                "the canary leaked into {place} (as {form:?})"
            );
        }
    }
    let _ = tokio::task::spawn_blocking(move || keychain.delete(&name)).await;
}

/// Command lines of every process on the machine (argv must never carry a secret).
fn hub_cmdlines() -> String {
    let mut out = String::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
                out.push_str(&String::from_utf8_lossy(&c));
                out.push('\n');
            }
        }
    }
    out
}

fn base64_encode(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs a Secret Service: run inside scripts/with-keyring.sh (make test does)"]
async fn import_moves_plaintext_tokens_into_the_keychain() {
    require_keychain();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("gatehouse.json");
    let out = Command::new(GATEHOUSE)
        .args(["--control"])
        .arg(dir.path().join("none.sock"))
        .args(["import", "--move-secrets", "--from"])
        .arg(format!(
            "{}/tests/fixtures/import/cursor_mcp.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .contains("SLACK_BOT_TOKEN: moved to the keychain as secret \"slack-slack-bot-token\""),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&cfg).unwrap();
    for plain in ["xoxb-plaintext-example", "docs-plaintext-example"] {
        assert!(!text.contains(plain), "{plain} left in the config:\n{text}");
    }
    let c: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        c["servers"]["slack"]["env"]["SLACK_BOT_TOKEN"],
        json!({"secret": "slack-slack-bot-token"})
    );
    assert_eq!(c["servers"]["slack"]["env"]["SLACK_TEAM_ID"], "T0123");
    assert_eq!(
        c["servers"]["docs"]["headers"]["Authorization"],
        json!({"secret": "docs-authorization", "prefix": "Bearer "})
    );
    let store = KeychainStore::start();
    assert_eq!(
        store.get("slack-slack-bot-token").unwrap(),
        "xoxb-plaintext-example"
    );
    assert_eq!(
        store.get("docs-authorization").unwrap(),
        "docs-plaintext-example"
    );
    store.delete("slack-slack-bot-token").unwrap();
    store.delete("docs-authorization").unwrap();
}

/// The shifted base64 cores of `value` (what it looks like inside any longer base64 text).
fn base64_cores(value: &str) -> Vec<String> {
    (0..3)
        .map(|shift| {
            let mut bytes = vec![0u8; shift];
            bytes.extend_from_slice(value.as_bytes());
            let enc = base64_encode(&bytes);
            let enc = enc.trim_end_matches('=');
            let skip = (shift * 8).div_ceil(6);
            let end = bytes.len() * 8 / 6;
            enc[skip..end].to_owned()
        })
        .collect()
}

/// A careless server that repeats a resolved secret — in its tool definitions, its serverInfo
/// and instructions, a non-JSON stdout line cut in a log note, base64 and URL-encoded on
/// stderr — never gets it into anything Gatehouse stores or shows: status, tools, approval
/// requests, remembered pins, logs (ring and file), events, the activity log.
#[tokio::test]
#[ignore = "needs a keychain: run `make test` (scripts/with-keyring.sh)"]
async fn what_a_careless_server_repeats_of_a_secret_is_masked_everywhere_it_is_kept() {
    use gatehouse::gateway::{Gateway, Out, Outcome};
    require_keychain();
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).unwrap();
    let canary: String = bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() + "/+=?&";
    let mut forms = vec![
        canary.clone(),
        url_encode(&canary),
        // Any 10 characters of it: a cut must never leave a piece of it behind.
        canary[..10].to_owned(),
        canary[canary.len() - 12..].to_owned(),
    ];
    forms.extend(base64_cores(&canary));
    let name = format!("careless-{}", fastrand::u32(..));
    let keychain = KeychainStore::start();
    {
        let (k, n, c) = (keychain.clone(), name.clone(), canary.clone());
        tokio::task::spawn_blocking(move || k.set(&n, &c))
            .await
            .unwrap()
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {"fx": {"command": FIXTURE, "args": ["--leak-env", "API_KEY"],
                           "env": {"API_KEY": {"secret": name}}}},
        "approval": {"default": "always", "timeout_secs": 30}
    });
    let config = gatehouse::Config::parse(&cfg.to_string(), "t".as_ref()).unwrap();
    let mut opts = gatehouse::HubOptions::new(dir.path().to_owned());
    opts.secrets = std::sync::Arc::new(keychain.clone());
    let hub = gatehouse::Hub::start(config, opts);
    let mut events = hub.events();
    let collected = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = collected.clone();
    let collector = tokio::spawn(async move {
        while let Ok(ev) = events.recv().await {
            sink.lock()
                .unwrap()
                .push(serde_json::to_string(&ev).unwrap());
        }
    });
    let fx = hub.server("fx").unwrap();
    wait_state(&fx, gatehouse::State::Running, T).await;
    let gw = Gateway::new(hub.clone());
    gw.refresh_catalog();
    let session = gw.open_session();
    // A held call: its approval request shows the tool's title and description.
    let msg = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"hi"}}}).to_string();
    let held = {
        let (gw, session) = (gw.clone(), session.clone());
        tokio::spawn(async move {
            if let Outcome::Stream(mut rx) = gw.handle_bytes(&session, msg.as_bytes()).await {
                while let Some(o) = rx.recv().await {
                    if let Out::Final(_) = o {
                        break;
                    }
                }
            }
        })
    };
    let deadline = Instant::now() + T;
    let pending = loop {
        let p = hub.approvals().pending();
        if !p.is_empty() {
            break p;
        }
        assert!(Instant::now() < deadline, "the call was never held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut haystacks: Vec<(String, String)> = vec![
        (
            "approval request".into(),
            serde_json::to_string(&pending).unwrap(),
        ),
        (
            "status".into(),
            serde_json::to_string(&hub.status()).unwrap(),
        ),
        (
            "tools".into(),
            serde_json::to_string(&hub.tools(None).unwrap()).unwrap(),
        ),
        (
            "log ring".into(),
            serde_json::to_string(&fx.logs().tail(None)).unwrap(),
        ),
    ];
    hub.approvals()
        .answer(
            &pending[0].id,
            gatehouse::approval::Answer::Allow(gatehouse::approval::Scope::Always),
            gatehouse::approval::Decider::Cli,
        )
        .unwrap();
    held.await.unwrap();
    // The scenario did reach every place masking had to act.
    let shown = &haystacks;
    assert!(
        shown[0].1.contains(&format!("[secret:{name}]")),
        "{}",
        shown[0].1
    );
    assert!(
        shown[1].1.contains(&format!("[secret:{name}]")),
        "{}",
        shown[1].1
    );
    assert!(
        shown[3].1.contains("dropped a non-JSON stdout line"),
        "the stdout note is missing: {}",
        shown[3].1
    );
    gw.shutdown().await;
    hub.shutdown().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    collector.abort();
    haystacks.push(("events".into(), collected.lock().unwrap().join("\n")));
    for entry in walk(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        haystacks.push((
            entry.display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    assert!(walk(dir.path())
        .iter()
        .any(|p| p.ends_with("approvals.json")));
    for (place, text) in &haystacks {
        for form in &forms {
            assert!(
                !text.contains(form.as_str()),
                "the secret leaked into {place} (as {form:?})"
            );
        }
    }
    let _ = tokio::task::spawn_blocking(move || keychain.delete(&name)).await;
}

/// A value too short to mask is refused when set, with the reason.
#[tokio::test]
#[ignore = "needs a keychain: run `make test` (scripts/with-keyring.sh)"]
async fn a_secret_too_short_to_mask_is_refused_when_set() {
    require_keychain();
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[]), &[]).await;
    let out = gh(&s, &["secret", "set", "short-one"], Some("1234567"));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("shorter than 8 characters"), "{err}");
    let out = gh(&s, &["secret", "ls", "--json"], None);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\"set\": true"));
}

/// A secret no server uses yet, set while Gatehouse runs, is listed (used by nobody) so it can
/// be seen, replaced and deleted; removed, it is listed no more. Only names are kept.
#[tokio::test]
#[ignore = "needs a keychain: run `make test` (scripts/with-keyring.sh)"]
async fn a_secret_no_server_uses_yet_is_listed_until_removed() {
    require_keychain();
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[]), &[]).await;
    let out = gh(
        &s,
        &["secret", "set", "unused-token"],
        Some("value-of-unused-1"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ls =
        String::from_utf8_lossy(&gh(&s, &["secret", "ls", "--json"], None).stdout).into_owned();
    let v: Value = serde_json::from_str(&ls).unwrap();
    let row = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "unused-token")
        .cloned()
        .unwrap_or_else(|| panic!("not listed: {ls}"));
    assert_eq!(row["servers"], json!([]), "{row}");
    assert_eq!(row["set"], true, "{row}");
    let index = std::fs::read_to_string(dir.path().join("data/secret-names.json")).unwrap();
    assert!(index.contains("unused-token") && !index.contains("value-of-unused-1"));
    assert!(gh(&s, &["secret", "rm", "unused-token"], None)
        .status
        .success());
    let ls =
        String::from_utf8_lossy(&gh(&s, &["secret", "ls", "--json"], None).stdout).into_owned();
    assert!(!ls.contains("unused-token"), "{ls}");
}

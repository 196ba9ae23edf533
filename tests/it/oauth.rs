//! Remote servers behind OAuth (the MCP authorization spec), with the Python SDK's own
//! authorization-server pieces (`tests/clients/oauth_server.py`), a stand-in browser that follows
//! the authorization URL (`tests/clients/browser.py`), and the real keychain (a private
//! gnome-keyring, `scripts/with-keyring.sh`). Ignored under plain `cargo test`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gatehouse::gateway::{Gateway, Out, Outcome};
use gatehouse::secrets::{KeychainStore, SecretSource};
use serde_json::{json, Value};

use crate::support::*;

const T: Duration = Duration::from_secs(30);

/// The OAuth-protected MCP server on a free port, killed when dropped.
struct AuthServer {
    child: Child,
    port: u16,
}

impl AuthServer {
    fn start(flags: &[&str]) -> AuthServer {
        let port = crate::support::free_port();
        let child = Command::new(python())
            .arg(clients_script("oauth_server.py"))
            .arg(port.to_string())
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_port(port, "the OAuth MCP server");
        AuthServer { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Its counters and every token it issued.
    fn stats(&self) -> Value {
        http_json("GET", &format!("http://127.0.0.1:{}/test/stats", self.port))
    }

    /// Every token it issued stops working (access and refresh).
    fn revoke_all(&self) {
        http_json(
            "POST",
            &format!("http://127.0.0.1:{}/test/revoke-all", self.port),
        );
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_json(method: &str, url: &str) -> Value {
    let out = Command::new(python())
        .args([
            "-c",
            "import sys,urllib.request;r=urllib.request.Request(sys.argv[2],method=sys.argv[1],data=b'' if sys.argv[1]=='POST' else None);print(urllib.request.urlopen(r,timeout=10).read().decode())",
            method,
            url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn require_keychain() {
    assert!(
        std::env::var_os("GATEHOUSE_TEST_KEYCHAIN").is_some()
            && std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "run inside scripts/with-keyring.sh (make test does)"
    );
}

fn browser() -> String {
    clients_script("browser.py")
}

fn status_of(s: &Served, id: &str) -> Value {
    let out = gh(s, &["status", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.into_iter().find(|r| r["id"] == id).unwrap()
}

async fn wait_status(s: &Served, id: &str, state: &str) -> Value {
    let deadline = Instant::now() + T;
    loop {
        let st = status_of(s, id);
        if st["state"] == state {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "{id} never reached {state}: {st}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn keychain_entry(id: &str) -> Option<String> {
    KeychainStore::start().get(&format!("oauth:{id}")).ok()
}

fn tokens_issued(server: &AuthServer) -> Vec<String> {
    server.stats()["issued"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect()
}

/// Command lines and environments of every process we can read.
fn proc_text() -> String {
    let mut out = String::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            for f in ["cmdline", "environ"] {
                if let Ok(c) = std::fs::read(e.path().join(f)) {
                    out.push_str(&String::from_utf8_lossy(&c));
                    out.push('\n');
                }
            }
        }
    }
    out
}

/// A server answering 401 with `WWW-Authenticate` waits in `needs_sign_in` (no restarts);
/// `gatehouse auth login` discovers, registers, sends the browser, redeems the code; the server
/// runs and calls pass through; the tokens are in the keychain and nowhere else (files, logs,
/// status, activity, argv, environments); `auth logout` deletes them and the server waits for a
/// sign-in again, its tools answered with a sentence that says so.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3 and a keychain: run `make test`"]
async fn signing_in_reaches_running_and_keeps_tokens_only_in_the_keychain() {
    require_keychain();
    let server = AuthServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg: Value =
        serde_json::from_str(&config(&[("web", json!({"url": server.url()}))])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &[],
        &[],
        &[("GATEHOUSE_BROWSER", &browser())],
    )
    .await;
    let st = wait_status(&s, "web", "needs_sign_in").await;
    assert!(
        st["last_error"]
            .as_str()
            .unwrap()
            .contains("gatehouse auth login web"),
        "{st}"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let st = status_of(&s, "web");
    assert_eq!(
        (st["state"].clone(), st["restarts"].clone()),
        (json!("needs_sign_in"), json!(0)),
        "no restart loop: {st}"
    );
    let table = String::from_utf8_lossy(&gh(&s, &["status"]).stdout).into_owned();
    assert!(table.contains("needs_sign_in"), "{table}");

    // Before the sign-in, a call is answered with what to do.
    let calls = json!([["web__echo", {"text": "hello"}]]);
    let out = run_json(&mut py(&s, &calls));
    let text = out["results"]["web__echo"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        out["results"]["web__echo"]["isError"] == json!(true)
            && text.contains("Sign in to web again"),
        "{out}"
    );

    let login = gh(&s, &["auth", "login", "web"]);
    let login_out = String::from_utf8_lossy(&login.stdout).into_owned();
    assert!(
        login.status.success(),
        "{login_out}{}",
        String::from_utf8_lossy(&login.stderr)
    );
    assert!(login_out.contains("Signed in to web."), "{login_out}");
    assert!(
        login_out.contains("code_challenge_method=S256"),
        "{login_out}"
    );
    wait_status(&s, "web", "running").await;
    let stats = server.stats();
    assert_eq!(
        (stats["registrations"].clone(), stats["codes"].clone()),
        (json!(1), json!(1)),
        "{stats}"
    );

    let calls = json!([["web__echo", {"text": "through the sign-in"}]]);
    let out = run_json(&mut py(&s, &calls));
    assert_eq!(
        out["results"]["web__echo"]["content"][0]["text"], "through the sign-in",
        "{out}"
    );

    // The tokens are in the keychain entry of this server…
    let tokens = tokens_issued(&server);
    assert!(tokens.len() >= 2, "{tokens:?}");
    let entry = keychain_entry("web").expect("the keychain holds the sign-in");
    assert!(
        entry.contains(&tokens[0]),
        "the access token is in the keychain entry"
    );
    let record: Value = serde_json::from_str(&entry).unwrap();
    assert_eq!(
        record["issuer"],
        format!("http://127.0.0.1:{}", server.port),
        "bound to its issuer"
    );
    // …and nowhere else.
    // The call's activity row is written in a batch: waited for, so the search covers it.
    let deadline = Instant::now() + T;
    while !String::from_utf8_lossy(&gh(&s, &["activity", "--json"]).stdout).contains("\"echo\"") {
        assert!(
            Instant::now() < deadline,
            "the call never reached the activity log"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut haystacks: Vec<(String, String)> = vec![
        (
            "status".into(),
            String::from_utf8_lossy(&gh(&s, &["status", "--json"]).stdout).into_owned(),
        ),
        (
            "logs".into(),
            String::from_utf8_lossy(&gh(&s, &["logs", "web"]).stdout).into_owned(),
        ),
        (
            "activity".into(),
            String::from_utf8_lossy(&gh(&s, &["activity", "--json"]).stdout).into_owned(),
        ),
        ("/proc".into(), proc_text()),
        ("login output".into(), login_out.clone()),
    ];
    for f in walk(dir.path()) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        haystacks.push((
            f.display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    assert!(haystacks[2].1.contains("\"echo\""), "the activity was read");
    for (place, text) in &haystacks {
        for t in &tokens {
            assert!(!text.contains(t.as_str()), "a token leaked into {place}");
        }
    }

    let logout = gh(&s, &["auth", "logout", "web"]);
    let logout_out = String::from_utf8_lossy(&logout.stdout).into_owned();
    assert!(
        logout.status.success(),
        "{logout_out}{}",
        String::from_utf8_lossy(&logout.stderr)
    );
    assert!(logout_out.contains("Signed out of web"), "{logout_out}");
    assert_eq!(keychain_entry("web"), None, "the tokens were deleted");
    wait_status(&s, "web", "needs_sign_in").await;
    let out = run_json(&mut py(&s, &calls));
    assert_eq!(out["results"]["web__echo"]["isError"], true, "{out}");
}

fn py(s: &Served, calls: &Value) -> Command {
    let mut cmd = Command::new(python());
    cmd.args([
        &clients_script("py_client.py"),
        "http",
        &s.info.url,
        &s.info.token,
        &calls.to_string(),
    ]);
    cmd
}

/// One `tools/call` through the gateway: the final line, parsed.
async fn call(
    gw: &Gateway,
    session: &std::sync::Arc<gatehouse::gateway::ClientSession>,
    id: u64,
    tool: &str,
    args: Value,
) -> Value {
    let msg = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}).to_string();
    match gw.handle_bytes(session, msg.as_bytes()).await {
        Outcome::Reply(line) | Outcome::Error(line, _) => serde_json::from_slice(&line).unwrap(),
        Outcome::Stream(mut rx) => loop {
            match rx.recv().await {
                Some(Out::Final(line)) => break serde_json::from_slice(&line).unwrap(),
                Some(Out::Event(_)) => continue,
                None => panic!("the call's stream ended without an answer"),
            }
        },
        Outcome::Accepted => panic!("a call was taken as a notification"),
    }
}

fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| answer.to_string())
}

/// (Each test signs in to a server id of its own: the keychain is shared by the tests.)
///
/// Access tokens that live 3 s are refreshed ahead of their expiry while calls are in flight,
/// and no call fails; when the authorization server revokes everything, the server goes to
/// `needs_sign_in` with a `SignInNeeded` event, and calls are answered saying so; signing in
/// again brings it back.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3 and a keychain: run `make test`"]
async fn short_lived_tokens_are_refreshed_under_load_and_a_revoked_sign_in_asks_again() {
    require_keychain();
    let server = AuthServer::start(&["--lifetime", "3"]);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&config(&[(
        "quick",
        json!({"url": server.url(), "auth": "oauth"}),
    )]))
    .unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let config = gatehouse::Config::parse(&cfg.to_string(), "t".as_ref()).unwrap();
    let keychain = KeychainStore::start();
    let mut opts = gatehouse::HubOptions::new(dir.path().to_owned());
    opts.secrets = std::sync::Arc::new(keychain.clone());
    opts.vault = std::sync::Arc::new(keychain.clone());
    opts.browser = Some(browser().into());
    opts.tuning = fast_tuning();
    let hub = gatehouse::Hub::start(config, opts);
    let web = hub.server("quick").unwrap();
    // `"auth": "oauth"` without tokens: waiting for a sign-in before any connection.
    wait_state(&web, gatehouse::State::NeedsSignIn, T).await;
    assert_eq!(server.stats()["codes"], 0);
    hub.sign_in("quick").await.unwrap();
    hub.sign_in_wait("quick").await.unwrap();
    wait_state(&web, gatehouse::State::Running, T).await;

    let gw = Gateway::new(hub.clone());
    gw.refresh_catalog();
    let session = gw.open_session();
    // 8 s of calls, four at a time, each 1.2 s long: every token is used past three quarters of
    // its life with calls in flight.
    let start = Instant::now();
    let mut id = 0;
    while start.elapsed() < Duration::from_secs(8) {
        let mut wave = Vec::new();
        for _ in 0..4 {
            id += 1;
            let (gw, session) = (gw.clone(), session.clone());
            let text = format!("call {id}");
            wave.push(tokio::spawn(async move {
                let answer = call(
                    &gw,
                    &session,
                    id,
                    "quick__slow",
                    json!({"ms": 1200, "text": text}),
                )
                .await;
                (text, answer)
            }));
        }
        for w in wave {
            let (text, answer) = w.await.unwrap();
            assert_eq!(
                text_of(&answer),
                text,
                "a call failed during refreshes: {answer}"
            );
        }
    }
    let stats = server.stats();
    assert!(
        stats["refreshes"].as_u64().unwrap() >= 2,
        "refreshed: {stats}"
    );
    assert_eq!(
        stats["expired_seen"], 0,
        "refreshed ahead of expiry, never after: {stats}"
    );
    assert_eq!(web.status().state, gatehouse::State::Running);

    // Everything revoked at the authorization server: the next call finds out.
    let mut events = hub.events();
    server.revoke_all();
    let answer = call(&gw, &session, 1000, "quick__echo", json!({"text": "after"})).await;
    assert!(
        answer.to_string().contains("sign-in"),
        "the call says why: {answer}"
    );
    wait_state(&web, gatehouse::State::NeedsSignIn, T).await;
    let deadline = Instant::now() + T;
    let reason = loop {
        match tokio::time::timeout_at(deadline.into(), events.recv()).await {
            Ok(Ok(gatehouse::events::Event::SignInNeeded { server, reason }))
                if server == "quick" =>
            {
                break reason
            }
            Ok(_) => continue,
            Err(_) => panic!("no SignInNeeded event"),
        }
    };
    assert!(reason.contains("no longer accepts"), "{reason}");
    gw.refresh_catalog();
    let answer = call(&gw, &session, 1001, "quick__echo", json!({"text": "after"})).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        text_of(&answer).contains("Sign in to quick again"),
        "{answer}"
    );

    hub.sign_in("quick").await.unwrap();
    hub.sign_in_wait("quick").await.unwrap();
    wait_state(&web, gatehouse::State::Running, T).await;
    gw.refresh_catalog();
    let answer = call(&gw, &session, 1002, "quick__echo", json!({"text": "back"})).await;
    assert_eq!(text_of(&answer), "back", "{answer}");
    gw.shutdown().await;
    hub.shutdown().await;
    let _ = tokio::task::spawn_blocking(move || keychain.delete("oauth:quick")).await;
}

/// An authorization answer naming another issuer (RFC 9207 mix-up) is refused before the code
/// is redeemed; metadata that sends Gatehouse to a private address is refused before anything is
/// fetched there. Neither leaves tokens behind; the server keeps waiting for a sign-in.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3 and a keychain: run `make test`"]
async fn a_wrong_issuer_or_a_private_address_is_refused() {
    require_keychain();
    let wrong = AuthServer::start(&["--wrong-iss"]);
    let private = AuthServer::start(&["--issuer", "https://10.255.255.1"]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&[
        ("mixup", json!({"url": wrong.url()})),
        ("inside", json!({"url": private.url()})),
    ]);
    let s = serve_env(
        dir.path(),
        &cfg,
        &[],
        &[],
        &[("GATEHOUSE_BROWSER", &browser())],
    )
    .await;
    wait_status(&s, "mixup", "needs_sign_in").await;
    wait_status(&s, "inside", "needs_sign_in").await;

    let login = gh(&s, &["auth", "login", "mixup"]);
    let err = String::from_utf8_lossy(&login.stderr).into_owned();
    assert!(!login.status.success(), "{err}");
    assert!(
        err.contains("https://attacker.example") && err.contains("RFC 9207"),
        "{err}"
    );
    let stats = wrong.stats();
    assert_eq!(stats["codes"], 1, "the browser went: {stats}");
    assert_eq!(
        stats["issued"],
        json!([]),
        "the code was never redeemed: {stats}"
    );
    assert_eq!(keychain_entry("mixup"), None);
    assert_eq!(status_of(&s, "mixup")["state"], "needs_sign_in");

    let login = gh(&s, &["auth", "login", "inside"]);
    let err = String::from_utf8_lossy(&login.stderr).into_owned();
    assert!(!login.status.success(), "{err}");
    assert!(
        err.contains("10.255.255.1") && err.contains("private network"),
        "{err}"
    );
    assert_eq!(private.stats()["registrations"], 0);
    assert_eq!(keychain_entry("inside"), None);
}

/// A client file's bare remote `url` (Claude Code `--transport http`, Cursor, VS Code) is imported
/// as an OAuth candidate and waits in `needs_sign_in` when the server asks for a sign-in.
#[tokio::test]
#[ignore = "needs the Python SDK 2.3 and a keychain: run `make test`"]
async fn an_imported_bare_url_waits_for_a_sign_in() {
    require_keychain();
    let server = AuthServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[]), &[]).await;
    let file = dir.path().join("claude.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"tracker": {"type": "http", "url": server.url()}}}).to_string(),
    )
    .unwrap();
    let cfg = dir.path().join("gatehouse.json");
    let out = gh(
        &s,
        &[
            "import",
            "--from",
            file.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("gatehouse auth login tracker"), "{text}");
    let st = wait_status(&s, "tracker", "needs_sign_in").await;
    assert_eq!(st["restarts"], 0, "{st}");
}

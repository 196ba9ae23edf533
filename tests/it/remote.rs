//! Remote upstreams against a real Python SDK (`mcp` 2.x) server: Streamable HTTP and the
//! 2024-11-05 HTTP+SSE fallback, a header secret the server checks, a connection lost mid-call.
//! Ignored under plain `cargo test`; `make test` runs them.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse::config::Config;
use gatehouse::secrets::MemorySecretStore;
use gatehouse::{Hub, HubOptions, State};
use serde_json::json;

use crate::support::*;

const TOKEN: &str = "remote-secret-4b1d7e0c9a";

struct RemoteServer {
    child: Child,
}

impl RemoteServer {
    fn start(port: u16, extra: &[&str]) -> RemoteServer {
        let child = Command::new(peer_bin("venv/bin/python"))
            .arg(repo_file("tests/clients/remote_server.py"))
            .arg(port.to_string())
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_port(port, "the remote test server");
        RemoteServer { child }
    }
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn repo_file(rel: &str) -> String {
    format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn hub_with_secret(server: serde_json::Value) -> TestHub {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::parse(
        &config(&[("docs", server)]),
        std::path::Path::new("test.json"),
    )
    .unwrap();
    let mut opts = HubOptions::new(dir.path().to_owned());
    opts.tuning = fast_tuning();
    let mut secrets = std::collections::HashMap::new();
    secrets.insert("docs-token".to_owned(), TOKEN.to_owned());
    opts.secrets = Arc::new(MemorySecretStore(secrets));
    TestHub {
        hub: Hub::start(config, opts),
        dir,
    }
}

fn sha256_hex(s: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn remote_streamable_http_server_with_a_header_secret_survives_losing_it() {
    let port = free_port();
    let mut server = RemoteServer::start(port, &["--token", TOKEN]);
    let th = hub_with_secret(json!({
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": { "Authorization": { "secret": "docs-token", "prefix": "Bearer " } }
    }));
    let h = th.server("docs");
    let s = wait_state(&h, State::Running, Duration::from_secs(30)).await;
    assert_eq!(s.tools, 3, "{s:?}");
    assert_eq!(s.transport, gatehouse::supervisor::TransportKind::Remote);
    assert_eq!(s.pid, None);

    // Calls pass through; the server saw exactly the header the secret makes.
    let r = call_tool(&h, "echo", json!({"text": "over http"}))
        .await
        .unwrap();
    assert!(r.contains("over http"), "{r}");
    let r = call_tool(&h, "auth_seen", json!({})).await.unwrap();
    assert!(r.contains(&sha256_hex(&format!("Bearer {TOKEN}"))), "{r}");

    // Through the gateway too, namespaced.
    let tools = th.hub.tools(Some("docs")).unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["docs__auth_seen", "docs__echo", "docs__slow"]);

    // Kill the server mid-call: the call is answered with an error within a second.
    let caller = {
        let h = h.clone();
        tokio::spawn(async move { call_tool(&h, "slow", json!({"ms": 20000})).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.kill();
    let killed = Instant::now();
    let res = tokio::time::timeout(Duration::from_secs(5), caller)
        .await
        .expect("the in-flight call was not answered")
        .unwrap();
    let waited = killed.elapsed();
    assert!(res.is_err(), "{res:?}");
    assert!(waited < Duration::from_secs(1), "answered after {waited:?}");
    let s = wait_for(&h, "restarting", Duration::from_secs(5), |s| {
        matches!(s.state, State::Restarting | State::Starting)
    })
    .await;
    assert!(
        s.last_error.as_deref().unwrap_or("").contains("connection"),
        "{s:?}"
    );

    // Bring it back: running again.
    let _server = RemoteServer::start(port, &["--token", TOKEN]);
    wait_state(&h, State::Running, Duration::from_secs(30)).await;
    let r = call_tool(&h, "echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert!(r.contains("again"), "{r}");

    // The secret never reached a log line.
    for line in h.logs().tail(None) {
        assert!(
            !line.line.contains(TOKEN),
            "secret in a log line: {}",
            line.line
        );
    }
    th.hub.shutdown().await;
}

#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn remote_sse_only_server_is_reached_through_the_fallback() {
    let port = free_port();
    let _server = RemoteServer::start(port, &["--sse"]);
    let th = TestHub::start(&config(&[(
        "old",
        json!({ "url": format!("http://127.0.0.1:{port}/sse") }),
    )]));
    let h = th.server("old");
    let s = wait_state(&h, State::Running, Duration::from_secs(30)).await;
    assert_eq!(s.tools, 3, "{s:?}");
    let r = call_tool(&h, "echo", json!({"text": "via sse"}))
        .await
        .unwrap();
    assert!(r.contains("via sse"), "{r}");
    th.hub.shutdown().await;
}

#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn remote_server_refusing_the_credentials_says_so() {
    let port = free_port();
    let _server = RemoteServer::start(port, &["--token", "another-token"]);
    let th = hub_with_secret(json!({
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": { "Authorization": { "secret": "docs-token", "prefix": "Bearer " } }
    }));
    let s = wait_for(
        &th.server("docs"),
        "an auth failure",
        Duration::from_secs(20),
        |s| {
            s.last_error
                .as_deref()
                .is_some_and(|e| e.contains("HTTP 401"))
        },
    )
    .await;
    let e = s.last_error.unwrap();
    assert!(e.contains("refused the credentials"), "{e}");
    assert!(!e.contains(TOKEN), "{e}");
    th.hub.shutdown().await;
}

/// A remote server's configured headers (credentials) never follow a redirect to another
/// origin: the server fails saying where it tried to send us, and the other host saw nothing.
#[tokio::test]
async fn configured_headers_never_follow_a_redirect_to_another_origin() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (free_port(), free_port());
    let seen = dir.path().join("seen.txt");
    let script = r#"
import http.server, sys, threading
a, b, seen = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
class Redirect(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.send_response(307); self.send_header("Location", f"http://127.0.0.1:{b}/mcp"); self.send_header("Content-Length", "0"); self.end_headers()
    do_GET = do_POST
    def log_message(self, *a): pass
class Record(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        with open(seen, "a") as f: f.write(str(dict(self.headers)) + "\n")
        self.send_response(500); self.send_header("Content-Length", "0"); self.end_headers()
    do_GET = do_POST
    def log_message(self, *a): pass
threading.Thread(target=http.server.HTTPServer(("127.0.0.1", b), Record).serve_forever, daemon=True).start()
print("ready", flush=True)
http.server.HTTPServer(("127.0.0.1", a), Redirect).serve_forever()
"#;
    let mut child = Reaped(
        std::process::Command::new("python3")
            .args([
                "-c",
                script,
                &a.to_string(),
                &b.to_string(),
                seen.to_str().unwrap(),
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let th = hub_with_secret(json!({
        "url": format!("http://127.0.0.1:{a}/mcp"),
        "headers": {"X-Api-Key": {"secret": "docs-token"}}
    }));
    let s = wait_state(&th.server("docs"), State::Failed, Duration::from_secs(20)).await;
    let err = s.last_error.unwrap_or_default();
    assert!(
        err.contains(&format!(
            "redirected to http://127.0.0.1:{b}/mcp, another origin"
        )),
        "{err}"
    );
    let reached = std::fs::read_to_string(&seen).unwrap_or_default();
    assert!(
        !reached.contains(TOKEN),
        "the credential reached the other origin: {reached}"
    );
    let _ = child.kill();
    let _ = child.wait();
    th.hub.shutdown().await;
}

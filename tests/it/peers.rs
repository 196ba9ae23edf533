//! Real third-party peers (PEERS.md), installed by `make test` (scripts/install-peers.sh).
//! Ignored under plain `cargo test`; `make test` runs them with `--include-ignored`.

use std::time::Duration;

use gatehouse::State;
use serde_json::json;

use crate::support::*;

#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn real_peers_reach_running_with_their_real_tool_counts() {
    let scratch = tempfile::tempdir().unwrap();
    let th = TestHub::start_with(
        &config(&[
            (
                "everything",
                json!({"command": peer_bin("npm/node_modules/.bin/mcp-server-everything"), "args": ["stdio"]}),
            ),
            (
                "fs",
                json!({"command": peer_bin("npm/node_modules/.bin/mcp-server-filesystem"), "args": [scratch.path()]}),
            ),
            (
                "time",
                json!({"command": peer_bin("venv/bin/mcp-server-time"), "args": ["--local-timezone", "UTC"]}),
            ),
        ]),
        gatehouse::Tuning::default(),
    );
    let limit = Duration::from_secs(60);
    // server-everything lists 16 tools to a client that declares roots, sampling and
    // elicitation, as Gatehouse does (it forwards those to the calling client).
    // Each runs and answers inside the default sandbox.
    for (id, tools) in [("everything", 16), ("fs", 14), ("time", 2)] {
        let h = th.server(id);
        let s = wait_state(&h, State::Running, limit).await;
        assert_eq!(s.tools, tools, "{id}: {s:?}");
        let sandbox = s.sandbox.as_ref().unwrap();
        assert!(
            sandbox.confined && sandbox.policy == "default",
            "{id}: {sandbox:?}"
        );
    }
    // One real call each, through the supervisor's raw path.
    let r = call_tool(
        &th.server("everything"),
        "echo",
        json!({"message": "hello"}),
    )
    .await
    .unwrap();
    assert!(r.contains("hello"), "{r}");
    let r = call_tool(
        &th.server("time"),
        "get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await
    .unwrap();
    assert!(r.contains("UTC"), "{r}");
    std::fs::write(scratch.path().join("note.txt"), "peer text").unwrap();
    let path = scratch.path().join("note.txt");
    let r = call_tool(&th.server("fs"), "read_text_file", json!({"path": path}))
        .await
        .unwrap();
    assert!(r.contains("peer text"), "{r}");
    // The directory it was given is its to write, confined or not.
    let made = scratch.path().join("made.txt");
    call_tool(
        &th.server("fs"),
        "write_file",
        json!({"path": made, "content": "written inside"}),
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "written inside");
    let pgids: Vec<u32> = th.hub.status().iter().filter_map(|s| s.pid).collect();
    th.hub.shutdown().await;
    for pgid in pgids {
        assert_eq!(
            group_members(pgid),
            Vec::<u32>::new(),
            "a peer's group survived shutdown"
        );
    }
}

#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn a_real_peer_recovers_from_kill_9() {
    let th = TestHub::start(&config(&[(
        "time",
        json!({"command": peer_bin("venv/bin/mcp-server-time"), "args": ["--local-timezone", "UTC"]}),
    )]));
    let h = th.server("time");
    let pid = wait_state(&h, State::Running, Duration::from_secs(60))
        .await
        .pid
        .unwrap();
    kill9(pid);
    let s = wait_for(&h, "running with a new pid", Duration::from_secs(60), |s| {
        s.state == State::Running && s.pid != Some(pid)
    })
    .await;
    assert_eq!(s.restarts, 1);
    assert_eq!(s.tools, 2);
    th.hub.shutdown().await;
}

/// Real npm peers added the way their READMEs say (`npx -y PKG`): Gatehouse pins each, installs
/// it with its whole tree from the index (a local stand-in serving the peers' real packages)
/// into its store, and runs it from there inside the default sandbox — server-everything with
/// its 16 tools; the memory server keeping its graph in the file its README's variable names.
#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn npx_peers_run_pinned_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let port_file = d.join("npm.port");
    let _index = Reaped(
        std::process::Command::new("python3")
            .arg(crate::support::clients_script("npm_index.py"))
            .arg(&port_file)
            .arg("--node-modules")
            .arg(peers_dir().join("npm/node_modules"))
            .spawn()
            .unwrap(),
    );
    for _ in 0..400 {
        if port_file.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let url = format!(
        "http://127.0.0.1:{}",
        std::fs::read_to_string(&port_file).unwrap()
    );
    let cfg = json!({"servers": {}, "approval": {"default": "flagged-only"}});
    let s = serve_env(
        &d,
        &cfg.to_string(),
        &[],
        &[],
        &[("npm_config_registry", &url)],
    )
    .await;
    let graph = d.join("memory/graph.jsonl");
    std::fs::create_dir_all(graph.parent().unwrap()).unwrap();
    let graph_env = format!("MEMORY_FILE_PATH={}", graph.display());
    for args in [
        &[
            "add",
            "npx",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-everything",
            "stdio",
        ][..],
        &[
            "add",
            "memory",
            "--env",
            &graph_env,
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-memory",
        ],
    ] {
        let out = std::process::Command::new(GATEHOUSE)
            .args(args)
            .env("GATEHOUSE_CONTROL", &s.sock)
            .env("npm_config_registry", &url)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.contains("in the store"),
            "{said}"
        );
    }
    let mcp = Mcp::connect(&s, "npx-peers").await;
    let mut tools = Vec::new();
    for _ in 0..600 {
        tools = mcp.tools().await;
        if tools.len() == 25 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Its 16 tools and the memory server's 9, each under its own name (none is shared).
    assert_eq!(tools.len(), 25, "{tools:?}");
    let status: serde_json::Value =
        serde_json::from_slice(&crate::support::gh(&s, &["status", "--json"]).stdout).unwrap();
    for e in status.as_array().unwrap() {
        assert_eq!(e["artifact"]["verified"], true, "{e}");
        assert_eq!(e["artifact"]["locked"], true, "{e}");
        assert_eq!(e["sandbox"]["confined"], true, "{e}");
    }
    let v = mcp
        .call(1, "echo", json!({"message": "from the store"}))
        .await;
    assert!(v.to_string().contains("from the store"), "{v}");
    let v = mcp
        .call(2, "create_entities", json!({"entities": [{"name": "gatehouse", "entityType": "app", "observations": ["sandboxed"]}]}))
        .await;
    assert!(v["result"]["isError"] != true, "{v}");
    let v = mcp.call(3, "read_graph", json!({})).await;
    assert!(v.to_string().contains("sandboxed"), "{v}");
    assert!(std::fs::read_to_string(&graph)
        .unwrap()
        .contains("sandboxed"));
}

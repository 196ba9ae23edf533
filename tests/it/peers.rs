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
            // Started the way READMEs say, by npx (its cache warmed by install-peers.sh).
            (
                "npx",
                json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]}),
            ),
            // Writes its knowledge graph next to its own code by default: in npx's cache.
            (
                "memory",
                json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]}),
            ),
        ]),
        gatehouse::Tuning::default(),
    );
    let limit = Duration::from_secs(60);
    // server-everything lists 16 tools to a client that declares roots, sampling and
    // elicitation, as Gatehouse does (it forwards those to the calling client).
    // Each runs and answers inside the default sandbox.
    for (id, tools) in [
        ("everything", 16),
        ("fs", 14),
        ("time", 2),
        ("npx", 16),
        ("memory", 9),
    ] {
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
    // The memory server keeps what it is told (it writes its file) and reads it back.
    call_tool(
        &th.server("memory"),
        "create_entities",
        json!({"entities": [{"name": "gatehouse", "entityType": "app", "observations": ["sandboxed"]}]}),
    )
    .await
    .unwrap();
    let r = call_tool(&th.server("memory"), "read_graph", json!({}))
        .await
        .unwrap();
    assert!(r.contains("sandboxed"), "{r}");

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

//! The servers and eras the tests stand up: a free port, the Python SDK's modern server over
//! HTTP, a config of both eras, the Python client run against a hub, a status row, real long
//! tool names (GitHub's) and a spec file that makes the fixture list them.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::{clients_script, config, fixture, gh, python, wait_for_port, with, Reaped, Served};

pub const MODERN: &str = "2026-07-28";

/// The fixture (a legacy server) and the SDK's modern-only server over stdio.
pub fn both_eras(extra: &[(&str, Value)]) -> String {
    let mut servers = vec![
        (
            "fx",
            with(
                fixture(&[]),
                "tools",
                json!({"echo": {"requires_approval": true}}),
            ),
        ),
        (
            "modern",
            json!({"command": python(), "args": [clients_script("modern_server.py"), "stdio"]}),
        ),
    ];
    servers.extend(extra.iter().cloned());
    config(&servers)
}

pub fn status_of(s: &Served, id: &str) -> Value {
    let out = gh(s, &["status", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.into_iter().find(|r| r["id"] == id).unwrap()
}

/// Runs the Python client in `mode` against the served gateway with `calls`.
pub fn py(s: &Served, mode: &str, calls: &Value) -> Command {
    let mut cmd = Command::new(python());
    cmd.args([
        &clients_script("py_client.py"),
        mode,
        &s.info.url,
        &s.info.token,
        &calls.to_string(),
    ]);
    cmd
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The Python SDK's 2026-07-28 server over HTTP on `port`, listening (killed when dropped).
pub fn modern_server(port: u16) -> Reaped {
    let child = Command::new(python())
        .args([
            &clients_script("modern_server.py"),
            "http",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_port(port, "the modern HTTP server");
    Reaped(child)
}

/// Real tool names of GitHub's official MCP server (github/github-mcp-server), among the longest
/// any public server lists, and one name two servers share.
pub const GITHUB: &[&str] = &[
    "add_pull_request_review_comment_to_pending_review",
    "create_pending_pull_request_review",
    "submit_pending_pull_request_review",
    "list_code_scanning_alerts",
    "get_secret_scanning_alert",
    "search_repositories",
];

pub fn spec(dir: &std::path::Path, name: &str, tools: &[&str]) -> String {
    let path = dir.join(format!("{name}.spec"));
    std::fs::write(&path, format!("Echoes\n{}\n", tools.join("\n"))).unwrap();
    path.to_string_lossy().into_owned()
}

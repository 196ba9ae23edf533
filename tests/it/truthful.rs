//! A hub that tells the truth about every server and forgives one bad entry: a config with one
//! broken entry runs the others and shows that one as `invalid` with its fix (`status`,
//! `status --json`, `reload`); a client's own `mcpServers` snippet works as the config;
//! `serve --stdio` answers what it was asked before it exits at the end of its input; every tool
//! a client sees says which server it comes from.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

fn statuses(s: &Served) -> Vec<Value> {
    let out = gh(s, &["status", "--json"]);
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// One broken entry among three: the two others run, the broken one is a row in state
/// `invalid` with its problem, line and fix in `last_error` (and `status` prints it); a reload
/// applies a valid change and reports the still broken entry; fixed, it runs.
#[tokio::test]
async fn one_broken_entry_costs_one_server() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{{\"servers\": {{\n  \"a\": {{\"command\": {f}}},\n  \"b\": {{\"comand\": {f}}},\n  \"c\": {{\"command\": {f}}},\n  \"x{rlo}txt.sh\": {{\"comand\": {f}}}\n}}}}",
        f = serde_json::to_string(FIXTURE).unwrap(),
        rlo = '\u{202e}'
    );
    let s = serve(dir.path(), &text, &["a", "c"]).await;
    let rows = statuses(&s);
    let b = rows.iter().find(|r| r["id"] == "b").unwrap();
    assert_eq!(b["state"], "invalid", "{b}");
    let err = b["last_error"].as_str().unwrap();
    assert!(
        err.contains("line 3")
            && err.contains("unknown setting `comand`")
            && err.contains("did you mean \"command\""),
        "{err}"
    );
    assert_eq!(b["start"], "at_launch");
    let table = String::from_utf8(gh(&s, &["status"]).stdout).unwrap();
    assert!(
        table.contains("invalid") && table.contains("comand"),
        "{table}"
    );
    // A broken entry's key is any text the file holds: its hidden characters are shown.
    assert!(
        table.contains("x⟨U+202E⟩txt.sh") && !table.contains('\u{202e}'),
        "{table}"
    );
    // Starting it says why not.
    let out = gh(&s, &["start", "b"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be read"));
    // A reload: a valid change applied, the broken entry reported.
    let text2 = text.replace("\"c\": {", "\"c\": {\"name\": \"Sea\", ");
    std::fs::write(dir.path().join("gatehouse.json"), &text2).unwrap();
    let out = gh(&s, &["reload"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("changed c: display name"), "{said}");
    // Fixed (and the entry whose key is no id taken out): it runs, the others untouched.
    let odd = format!(
        ",\n  \"x\u{202e}txt.sh\": {{\"command\": {}}}",
        serde_json::to_string(FIXTURE).unwrap()
    );
    std::fs::write(
        dir.path().join("gatehouse.json"),
        text2.replace("comand", "command").replace(&odd, ""),
    )
    .unwrap();
    let out = gh(&s, &["reload"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("added b"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let rows = statuses(&s);
        if rows.iter().all(|r| r["state"] == "running") {
            assert_eq!(rows.len(), 3);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A broken top level still refuses the whole file and keeps what runs.
    std::fs::write(
        dir.path().join("gatehouse.json"),
        "{\"servers\": {}, \"sevrers\": 1}",
    )
    .unwrap();
    let out = gh(&s, &["reload"]);
    assert!(!out.status.success());
    assert_eq!(statuses(&s).len(), 3);
}

/// A client's snippet pasted as the whole config (`mcpServers`, with a client's own settings)
/// runs as it is.
#[tokio::test]
async fn a_clients_snippet_is_a_config() {
    let dir = tempfile::tempdir().unwrap();
    let text = json!({"mcpServers": {"fx": {"command": FIXTURE, "args": [], "timeout": 30000, "trust": true}}});
    let s = serve(dir.path(), &text.to_string(), &["fx"]).await;
    let c = Client::connect(&s, "c").await;
    let v = c.call(1, "fx__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(text_of(&v), "3", "{v}");
}

/// The end of a stdio client's input is not the end of its calls: every request already read
/// is answered, then the hub exits.
#[tokio::test]
async fn serve_stdio_answers_what_it_was_asked_before_it_exits() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("gatehouse.json");
    std::fs::write(
        &cfg,
        json!({"servers": {"fx": {"command": FIXTURE}}, "approval": {"default": "flagged-only"}})
            .to_string(),
    )
    .unwrap();
    let mut child = Command::new(GATEHOUSE)
        .args(serve_stdio_args(
            &cfg,
            &dir.path().join("d"),
            &dir.path().join("c.sock"),
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "printf", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fx__sleep", "arguments": {"ms": 1500}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "fx__add", "arguments": {"a": 2, "b": 3}}}),
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect::<String>();
    // Written whole, then closed: `printf '…' | gatehouse serve --stdio`.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let answer = |id: u64| {
        lines
            .iter()
            .find(|l| l["id"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert!(
        answer(2)["result"]["isError"] != true && !answer(2)["result"].is_null(),
        "{lines:?}"
    );
    assert_eq!(text_of(&answer(3)), "5", "{lines:?}");
}

/// Where a tool comes from is in what the model reads: its description starts with the server's
/// tag, whether its name is its own or `server__tool`; the definition pins hash is the server's.
#[tokio::test]
async fn every_tool_says_which_server_it_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {"wiki": {"command": FIXTURE, "name": "Team wiki"}, "tracker": {"command": FIXTURE}}});
    let s = serve(dir.path(), &cfg.to_string(), &["wiki", "tracker"]).await;
    let c = Client::connect(&s, "c").await;
    let list = last_message(
        &c.post(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
            .await,
    );
    let tools = list["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!tools.is_empty(), "{list}");
    for t in &tools {
        let name = t["name"].as_str().unwrap();
        let d = t["description"].as_str().unwrap_or("");
        let server = if name.starts_with("wiki__") {
            "wiki"
        } else {
            "tracker"
        };
        assert!(d.starts_with(&format!("[{server}] ")), "{name}: {d}");
    }
}

//! What the person approves is what runs, through the real gateway and the CLI: hidden
//! characters in a hostile client's name, a hostile server's tool name and the arguments are
//! shown as `⟨U+XXXX⟩` by every CLI surface (and carried unchanged, flagged, in `--json`); a
//! look-alike of a known client's name is flagged; an answer with a stale digest is refused;
//! ids never repeat across hub restarts; a tool's own name never moves to another server.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// Every kind of hidden character the issue names, in one argument value.
const HIDDEN: &str = "\u{2066}a\u{2069}\u{2067}\u{2068}\u{200B}\u{200C}\u{200D}\u{FEFF}\u{E0041}\u{E007F}\u{0007}\u{001B}\u{0085}\u{009B}";

fn stdout(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// No character a terminal would interpret or hide reaches the output: only line feeds.
fn all_visible(what: &str, text: &str) {
    let raw: Vec<String> = text
        .chars()
        .filter(|c| *c != '\n' && gatehouse::text::is_hidden(*c))
        .map(|c| format!("U+{:04X}", c as u32))
        .collect();
    assert!(raw.is_empty(), "{what} printed {raw:?} raw:\n{text}");
}

/// A hostile client (its name a look-alike of "Claude Code" with a zero-width space) calls a
/// hostile server's tool (its name holding U+202E) with arguments full of hidden characters:
/// `approvals`, `activity` and `clients` show each as its code point with a warning, the profile
/// first; `--json` carries the text unchanged with `hidden_characters` and `imitates`; an answer
/// with a digest that is not the call's is refused and the call keeps waiting.
#[tokio::test]
async fn hidden_characters_and_borrowed_names_are_shown_for_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = d.join("spec.txt");
    std::fs::write(&spec, "\nwipe\u{202E}txt.sh\n").unwrap();
    let cfg = json!({
        "servers": {"a": fixture(&["--spec-file", spec.to_str().unwrap()])},
        "approval": {"default": "always", "timeout_secs": 30}
    });
    let s = serve(d, &cfg.to_string(), &["a"]).await;
    let name = "\u{0421}laude\u{200B} Code";
    let mcp = Mcp::open_with(
        &s.info.url,
        &s.info.token,
        json!({"name": name, "version": "1"}),
        "2025-11-25",
    )
    .await;
    let tools = mcp.tools().await;
    let wipe = tools
        .iter()
        .find(|t| t.contains("wipe"))
        .cloned()
        .unwrap_or_else(|| panic!("no wipe tool in {tools:?}"));
    let path = "/home/me/evil\u{202E}hs.txt";
    let args = json!({"path": path, "z": HIDDEN});
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name": wipe, "arguments": args}});
    let held = mcp.spawn_post(&s.info.token, call);
    let r: Value = pending(&s, &wipe).await;

    // --json: the text unchanged, flagged.
    assert_eq!(r["hidden_characters"], true, "{r}");
    assert_eq!(r["client"]["imitates"], "Claude Code", "{r}");
    assert_eq!(r["client"]["name"], name);
    assert_eq!(r["arguments"], args);
    assert_eq!(r["tool"], "wipe\u{202E}txt.sh");
    let digest = r["digest"].as_str().unwrap().to_owned();
    assert_eq!(digest.len(), 16);

    // The plain listing: the profile first, every hidden character as its code point.
    let plain = stdout(&gh(&s, &["approvals"]));
    all_visible("approvals", &plain);
    for want in [
        "client profile default — says \"Сlaude⟨U+200B⟩ Code\"",
        "imitates \"Claude Code\"",
        "contains hidden characters",
        "/home/me/evil⟨U+202E⟩hs.txt",
        "⟨U+2066⟩a⟨U+2069⟩⟨U+2067⟩⟨U+2068⟩⟨U+200B⟩⟨U+200C⟩⟨U+200D⟩⟨U+FEFF⟩⟨U+E0041⟩⟨U+E007F⟩",
        "⟨U+0085⟩⟨U+009B⟩",
    ] {
        assert!(plain.contains(want), "approvals lacks {want:?}:\n{plain}");
    }
    let clients = stdout(&gh(&s, &["clients"]));
    all_visible("clients", &clients);
    assert!(
        clients.contains("\"Сlaude⟨U+200B⟩ Code\"") && clients.contains("imitates \"Claude Code\""),
        "{clients}"
    );

    // An answer naming the call with another digest: refused, the call still waits.
    let id = r["id"].as_str().unwrap();
    let stale = gh(&s, &["approve", id, "--digest", "0123456789abcdef"]);
    assert_eq!(stale.status.code(), Some(1));
    let err = String::from_utf8_lossy(&stale.stderr);
    assert!(err.contains("not the one that was shown"), "{err}");
    assert_eq!(pending(&s, &wipe).await["id"], id);
    // With its own digest it is taken.
    let _ = stdout(&gh(&s, &["deny", id, "--digest", &digest]));
    assert!(held.await.unwrap().contains("isError"));

    // Activity: the row flagged, the text shown with code points.
    let rows: Value = serde_json::from_str(&stdout(&gh(&s, &["activity", "--json"]))).unwrap();
    let row = &rows[0];
    assert_eq!(row["hidden_characters"], true, "{row}");
    assert_eq!(row["imitates"], "Claude Code", "{row}");
    assert_eq!(row["client"], name);
    let activity = stdout(&gh(&s, &["activity"]));
    all_visible("activity", &activity);
    assert!(
        activity.contains("contains hidden characters")
            && activity.contains("evil⟨U+202E⟩hs.txt")
            && activity.contains("imitates \"Claude Code\""),
        "{activity}"
    );
}

/// An id read before a restart never names a call after it: the same data dir, a new run, a
/// new id; `approve OLD` says "no such call" and the new call keeps waiting.
#[tokio::test]
async fn approval_ids_never_repeat_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {"a": fixture(&[])},
        "approval": {"default": "always", "timeout_secs": 30}
    })
    .to_string();
    let s = serve(d, &cfg, &["a"]).await;
    let first = hold(&s.info).await;
    let old = pending(&s, "a__echo").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(s);
    let _ = first.await;
    let s = serve(d, &cfg, &["a"]).await;
    let second = hold(&s.info).await;
    let new = pending(&s, "a__echo").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(old, new, "an id repeated across a restart");
    let out = gh(&s, &["approve", &old]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no such call"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(pending(&s, "a__echo").await["id"], new.as_str());
    let _ = stdout(&gh(&s, &["deny", &new]));
    assert!(second.await.unwrap().contains("isError"));
}

/// Holds a call to `echo` from a client named "script"; its answer, when it comes.
async fn hold(info: &gatehouse::control::GatewayInfo) -> tokio::task::JoinHandle<String> {
    let mcp = Mcp::connect_to(info, "script").await;
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}});
    mcp.spawn_post(&info.token, call)
}

/// With `a.echo` (flagged) and `b.echo` both listed, `echo` is ambiguous; after `stop a` a call
/// to `echo` is still refused naming both — never run on `b` — and after `remove a` too.
#[tokio::test]
async fn an_own_name_never_moves_to_another_server() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {
            "a": {"command": FIXTURE, "tools": {"echo": {"requires_approval": true}}},
            "b": fixture(&[])
        },
        "approval": {"default": "flagged-only", "timeout_secs": 30}
    });
    let s = serve(d, &cfg.to_string(), &["a", "b"]).await;
    let mcp = Mcp::connect(&s, "model").await;
    let tools = mcp.tools().await;
    assert!(tools.contains(&"a__echo".to_owned()) && tools.contains(&"b__echo".to_owned()));
    let refused = |r: &Value| {
        let e = r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            e.contains("a__echo") && r["result"].is_null(),
            "a call to echo was not refused naming a__echo: {r}"
        );
        e
    };
    let e = refused(&mcp.call(2, "echo", json!({"text": "x"})).await);
    assert!(e.contains("b__echo"), "{e}");
    let _ = stdout(&gh(&s, &["stop", "a"]));
    let mut waited = 0;
    while gh(&s, &["status", "--json"])
        .stdout
        .windows(9)
        .all(|w| w != b"\"stopped\"")
    {
        waited += 1;
        assert!(waited < 200, "a never stopped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = mcp.call(3, "echo", json!({"text": "after stop"})).await;
    let e = refused(&r);
    assert!(e.contains("not here now"), "{e}");
    let _ = stdout(&gh(&s, &["remove", "a"]));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = mcp.call(4, "echo", json!({"text": "after remove"})).await;
    refused(&r);
    // b's own shown name still runs.
    let r = mcp.call(5, "b__echo", json!({"text": "b"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "b", "{r}");
}

/// Every CLI verb prints what a server wrote through the one terminal-safe printer: a server
/// whose stderr, tool title, description and results hold OSC 52, concealed text, erase-line and
/// C1 sequences, and one that dies quoting them in its handshake error, leave no raw control
/// character in `tools`, `status`, `logs`, `activity`, `approvals`, `clients` or `test` — on
/// stdout or stderr — while `--json` keeps the text unchanged.
#[tokio::test]
async fn no_verb_lets_a_servers_words_act_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = crate::support::clients_script("loud_server.py");
    let cfg = json!({
        "servers": {
            "loud": {"command": "python3", "args": [&script, "ok"], "sandbox": "off"},
            "dies": {"command": "python3", "args": [&script, "fail"], "sandbox": "off"}
        },
        "approval": {"default": "always", "timeout_secs": 30}
    });
    let s = serve(d, &cfg.to_string(), &["loud"]).await;
    let mcp = Mcp::open_with(
        &s.info.url,
        &s.info.token,
        json!({"name": "agent\u{1b}]52;c;eA==\u{7}", "version": "1\u{9b}2J"}),
        "2025-11-25",
    )
    .await;
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loud__act","arguments":{"text":"hi\u{1b}[8m"}}});
    let held = mcp.spawn_post(&s.info.token, call);
    let r = pending(&s, "loud__act").await;
    let printed = |args: &[&str]| {
        let o = gh(&s, args);
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let approvals = printed(&["approvals"]);
    all_visible("approvals", &approvals);
    assert!(approvals.contains("hi⟨U+001B⟩[8m"), "{approvals}");
    let _ = stdout(&gh(&s, &["approve", r["id"].as_str().unwrap()]));
    let _ = held.await.unwrap();
    for _ in 0..100 {
        if printed(&["status"]).contains("failed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Each verb with a word of the server's (or the client's) it prints.
    for (verb, word) in [
        (&["tools"][..], "⟨U+001B⟩"),
        (&["tools", "loud"], "⟨U+001B⟩"),
        (&["status"], "⟨U+"),
        (&["logs", "loud"], "⟨U+001B⟩]52"),
        (&["logs", "dies"], "⟨U+001B⟩]52"),
        (&["activity"], "⟨U+001B⟩[8m"),
        (&["clients"], "agent"),
        (&["test", "dies"], "⟨U+"),
        (&["test", "loud"], "⟨U+"),
    ] {
        let out = printed(verb);
        all_visible(&verb.join(" "), &out);
        assert!(out.contains(word), "{verb:?} printed no {word:?}:\n{out}");
    }
    // JSON keeps the text as the server wrote it (its own escapes guard the terminal).
    let tools: Value = serde_json::from_str(&stdout(&gh(&s, &["tools", "--json"]))).unwrap();
    assert!(
        tools.to_string().contains("read_file (read-only)"),
        "{tools}"
    );
    assert!(
        tools.to_string().contains("\\u001b[2K"),
        "the title unchanged, escaped by JSON: {tools}"
    );
}

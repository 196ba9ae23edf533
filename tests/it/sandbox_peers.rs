//! A sandbox people keep on: real servers from npm and PyPI, set up the way their own READMEs
//! say, run and do their job under the default sandbox in a scratch home — a memory server told
//! its file in an environment variable, a SQLite server given a database that does not exist
//! yet, a filesystem server given a folder and one given the whole home directory, a git server
//! on a repository, a fetch server — while nothing outside what they were given becomes
//! writable, and a refusal the sandbox caused says so where the person looks. Ignored under plain
//! `cargo test` (they need the peers); `make test` runs them.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

/// One page over HTTP on loopback, answered once (for the fetch server).
fn one_page() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten().take(4) {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = "<html><body><p>fetched through the sandbox</p></body></html>";
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn servers_set_up_as_their_readmes_say_work_under_the_default_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let home = scratch_home(dir.path());
    let h = |p: &str| home.join(p).to_string_lossy().into_owned();
    let fs = peer_bin("npm/node_modules/.bin/mcp-server-filesystem");
    let cfg = json!({"servers": {
        "memory": {"command": peer_bin("npm/node_modules/.bin/mcp-server-memory"),
                   "env": {"MEMORY_FILE_PATH": "~/data/memory.json"}},
        "sqlite": {"command": peer_bin("venv-sqlite/bin/mcp-server-sqlite"),
                   "args": ["--db-path", "~/data/new.db"]},
        "notes": {"command": fs, "args": ["~/notes"]},
        "home": {"command": fs, "args": ["~"]},
        "git": {"command": peer_bin("venv/bin/mcp-server-git"), "args": ["--repository", "~/repo"]},
        "fetch": {"command": peer_bin("venv/bin/mcp-server-fetch"),
                  "args": ["--ignore-robots-txt", "--allow-private-ips"]}
    }, "approval": {"default": "flagged-only"}});
    let home_var = home.to_string_lossy().into_owned();
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["memory", "sqlite", "notes", "home", "git", "fetch"],
        &[],
        &[("HOME", &home_var)],
    )
    .await;
    for st in status_json(&s) {
        assert_eq!(st["sandbox"]["confined"], true, "{st}");
    }
    let mcp = Mcp::connect(&s, "readme").await;
    let ok = |v: Value, what: &str| {
        let (failed, text) = said(&v);
        assert!(!failed, "{what} failed: {text}");
        text
    };
    // Memory: its file, named in the environment and not there yet, is written.
    ok(
        mcp.call(1, "create_entities", json!({"entities": [{"name": "gatehouse", "entityType": "app", "observations": ["sandboxed"]}]}))
            .await,
        "memory's create_entities",
    );
    let memory = std::fs::read_to_string(home.join("data/memory.json")).unwrap_or_default();
    assert!(memory.contains("gatehouse"), "memory file: {memory:?}");
    // SQLite: a database that did not exist, created, written and read.
    ok(
        mcp.call(
            2,
            "create_table",
            json!({"query": "CREATE TABLE t (x TEXT)"}),
        )
        .await,
        "create_table",
    );
    ok(
        mcp.call(
            3,
            "write_query",
            json!({"query": "INSERT INTO t VALUES ('kept')"}),
        )
        .await,
        "write_query",
    );
    let rows = ok(
        mcp.call(4, "read_query", json!({"query": "SELECT x FROM t"}))
            .await,
        "read_query",
    );
    assert!(rows.contains("kept"), "{rows}");
    assert!(home.join("data/new.db").exists());
    // Filesystem, given a folder: writes in it.
    ok(
        mcp.call(
            5,
            "notes__write_file",
            json!({"path": h("notes/new.md"), "content": "n"}),
        )
        .await,
        "notes__write_file",
    );
    assert!(home.join("notes/new.md").exists());
    // Filesystem, given the home directory: ordinary files read and written; the person's
    // settings and keys not.
    let todo = ok(
        mcp.call(
            6,
            "home__read_text_file",
            json!({"path": h("notes/todo.md")}),
        )
        .await,
        "home__read_text_file",
    );
    assert!(todo.contains("buy milk"));
    ok(
        mcp.call(
            7,
            "home__write_file",
            json!({"path": h("notes/from-home.md"), "content": "h"}),
        )
        .await,
        "home__write_file in a folder",
    );
    for (n, path) in [(8, ".bashrc"), (9, ".ssh/authorized_keys"), (10, "top.txt")] {
        let v = mcp
            .call(
                n,
                "home__write_file",
                json!({"path": h(path), "content": "evil"}),
            )
            .await;
        let (failed, text) = said(&v);
        assert!(failed, "writing ~/{path} was allowed: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        "# the person's shell\n"
    );
    assert!(!home.join(".ssh/authorized_keys").exists() && !home.join("top.txt").exists());
    let key = mcp
        .call(
            11,
            "home__read_text_file",
            json!({"path": h(".ssh/id_ed25519")}),
        )
        .await;
    let (failed, text) = said(&key);
    assert!(failed && !text.contains("CANARY"), "{text}");
    // Git, on its repository.
    let log = ok(
        mcp.call(12, "git_log", json!({"repo_path": h("repo")}))
            .await,
        "git_log",
    );
    assert!(log.contains("first"), "{log}");
    // Fetch, over the network.
    let port = one_page();
    let page = ok(
        mcp.call(
            13,
            "fetch",
            json!({"url": format!("http://127.0.0.1:{port}/")}),
        )
        .await,
        "fetch",
    );
    assert!(page.contains("fetched through the sandbox"), "{page}");
    // The home server says what its sandbox did with "~".
    let home_row = status_json(&s)
        .into_iter()
        .find(|v| v["id"] == "home")
        .unwrap();
    assert_eq!(home_row["sandbox"]["left_out"], json!(["~"]), "{home_row}");
}

/// A refusal the sandbox caused is said where the person looks: a call's error (to the client)
/// and its Activity row name the sandbox and the path; a server that cannot start because of
/// it has `sandbox` and the path in its last error, `status`, `gatehouse test`; and `test
/// --compare` runs it both ways and says the sandbox stops it.
#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn a_refusal_the_sandbox_caused_says_so_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let home = scratch_home(dir.path());
    let fs = peer_bin("npm/node_modules/.bin/mcp-server-filesystem");
    let cfg = json!({"servers": {
        "home": {"command": fs, "args": ["~"]},
        // A database directly in the home directory, not there yet: the folder is not opened.
        "db": {"command": peer_bin("venv-sqlite/bin/mcp-server-sqlite"), "args": ["--db-path", "~/new.db"]}
    }, "approval": {"default": "flagged-only"}});
    let home_var = home.to_string_lossy().into_owned();
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["home"],
        &[],
        &[("HOME", &home_var)],
    )
    .await;
    let mcp = Mcp::connect(&s, "c").await;
    let bashrc = home.join(".bashrc").to_string_lossy().into_owned();
    let v = mcp
        .call(1, "write_file", json!({"path": bashrc, "content": "evil"}))
        .await;
    let (failed, text) = said(&v);
    assert!(
        failed && text.contains("sandbox") && text.contains(".bashrc"),
        "the call's error: {text}"
    );
    let rows: Value = serde_json::from_slice(&gh(&s, &["activity", "--json"]).stdout).unwrap();
    let err = rows[0]["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("sandbox") && err.contains(".bashrc"),
        "{}",
        rows[0]
    );

    // The database server fails at start; its last error says the sandbox may be why.
    let deadline = Instant::now() + Duration::from_secs(60);
    let db = loop {
        let row = status_json(&s)
            .into_iter()
            .find(|v| v["id"] == "db")
            .unwrap();
        let e = row["last_error"].as_str().unwrap_or_default();
        if e.contains("sandbox") {
            break row;
        }
        assert!(
            Instant::now() < deadline,
            "no sandbox in db's last error: {row}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let e = db["last_error"].as_str().unwrap();
    assert!(e.contains("~/new.db"), "{e}");
    assert_eq!(db["sandbox"]["left_out"], json!(["~/new.db"]), "{db}");
    let plain = String::from_utf8(gh(&s, &["status"]).stdout).unwrap();
    assert!(
        plain.contains("sandbox") && plain.contains("~/new.db"),
        "{plain}"
    );
    let cfg_path = dir.path().join("gatehouse.json");
    let cfg_arg = cfg_path.to_string_lossy().into_owned();
    let test = std::process::Command::new(GATEHOUSE)
        .args(["test", "db", "--config", &cfg_arg, "--timeout", "20"])
        .env("HOME", &home_var)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&test.stdout);
    assert_eq!(test.status.code(), Some(1), "{out}");
    assert!(out.contains("sandbox") && out.contains("~/new.db"), "{out}");
    let compare = std::process::Command::new(GATEHOUSE)
        .args([
            "test",
            "db",
            "--compare",
            "--config",
            &cfg_arg,
            "--timeout",
            "20",
        ])
        .env("HOME", &home_var)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&compare.stdout);
    assert_eq!(compare.status.code(), Some(1), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines.iter().any(|l| l.starts_with("confined: failed")),
        "{out}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("unconfined: ready")),
        "{out}"
    );
    assert!(out.contains("The sandbox stops it"), "{out}");
}

/// Advice that works when followed: a server whose file is named in a shared system folder
/// (`/var/tmp`) — the real memory server, and one that saves as careful programs do (a temporary
/// copy beside the file, renamed over it) —, one given `/` as its root, and the real SQLite
/// server told to make a new database directly in the home (as its README does) fail a call (or
/// their start) with the sandbox's fix line; that line (and the new name, where the path cannot
/// open where it is), put in the entry exactly as written and the config reloaded, makes the same
/// call succeed — without opening the whole home.
#[tokio::test]
#[ignore = "needs the real peers: run `make test`"]
async fn the_sandboxs_fix_line_works_when_followed() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let home = scratch_home(&d);
    let stamp = format!("{}-{}", std::process::id(), gatehouse::logs::now_ms());
    let (memory_file, atomic_file, root_file) = (
        format!("/var/tmp/gatehouse-fix-{stamp}.json"),
        format!("/var/tmp/gatehouse-fix-{stamp}.txt"),
        format!("var/tmp/gatehouse-fix-root-{stamp}.txt"),
    );
    let atomic = crate::support::clients_script("atomic_server.py");
    let cfg = json!({"servers": {
        "memory": {"command": peer_bin("npm/node_modules/.bin/mcp-server-memory"),
                   "env": {"MEMORY_FILE_PATH": memory_file}},
        "atomic": {"command": "python3", "args": [atomic],
                   "env": {"SAVE_FILE": atomic_file}},
        "rooted": {"command": "python3", "args": [atomic, "/", root_file]},
        "db": {"command": peer_bin("venv-sqlite/bin/mcp-server-sqlite"), "args": ["--db-path", "~/new.db"]}
    }, "approval": {"default": "flagged-only"}});
    let home_var = home.to_string_lossy().into_owned();
    let ids = ["memory", "atomic", "rooted"];
    let s = serve_env(&d, &cfg.to_string(), &ids, &[], &[("HOME", &home_var)]).await;
    let mcp = Mcp::connect(&s, "fix").await;
    let entities = json!({"entities": [{"name": "gatehouse", "entityType": "app", "observations": ["fixed"]}]});
    let table = json!({"query": "CREATE TABLE kept (x TEXT)"});
    let cases = [
        ("memory", "create_entities", entities),
        ("atomic", "atomic__save", json!({"text": "kept"})),
        ("rooted", "rooted__save", json!({"text": "kept"})),
        ("db", "create_table", table),
    ];
    let mut n = 1;
    for (id, tool, args) in cases {
        let (failed, text) = said(&mcp.call(n, tool, args.clone()).await);
        n += 1;
        // The fix line where the person meets the failure: the call's error, or (a server that
        // could not start) its row's last error.
        let row = status_json(&s).into_iter().find(|v| v["id"] == id).unwrap();
        let told = if text.contains("\"sandbox\": ") {
            text.clone()
        } else {
            row["last_error"].as_str().unwrap_or_default().to_owned()
        };
        assert!(
            failed && told.contains("sandbox"),
            "{id}: {text} / {told} / {row}"
        );
        // The line as the error gives it: `"sandbox": {...}` — parsed and put in the entry.
        let at = told.find("\"sandbox\": ").expect("a fix line") + "\"sandbox\": ".len();
        let mut de = serde_json::Deserializer::from_str(&told[at..]).into_iter::<Value>();
        let fix = de.next().unwrap().unwrap();
        let path = d.join("gatehouse.json");
        let mut saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // `name "NEW" in place of "OLD"`, where no line opens the path where it is: done too.
        if let Some(at) = told.find("; to allow it, name ") {
            let rest = &told[at + "; to allow it, name ".len()..];
            let mut de = serde_json::Deserializer::from_str(rest).into_iter::<String>();
            let new = de.next().unwrap().unwrap();
            let rest = rest[de.byte_offset()..]
                .strip_prefix(" in place of ")
                .unwrap();
            let old = serde_json::Deserializer::from_str(rest)
                .into_iter::<String>()
                .next()
                .unwrap()
                .unwrap();
            let text = saved["servers"][id].to_string();
            let moved = text.replace(&Value::from(old).to_string(), &Value::from(new).to_string());
            saved["servers"][id] = serde_json::from_str(&moved).unwrap();
            assert_ne!(text, moved, "{id}: {told}");
        }
        saved["servers"][id]["sandbox"] = fix.clone();
        std::fs::write(&path, saved.to_string()).unwrap();
        assert!(gh(&s, &["reload"]).status.success());
        let mut last = String::new();
        let mut done = false;
        for _ in 0..150 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let (failed, text) = said(&mcp.call(n, tool, args.clone()).await);
            n += 1;
            if !failed {
                done = true;
                break;
            }
            last = text;
        }
        for f in [&memory_file, &atomic_file, &format!("/{root_file}")] {
            let _ = std::fs::remove_file(f);
        }
        assert!(done, "{id}: followed {fix}, still: {last}");
        assert_ne!(fix, json!({"write": ["~"]}), "{id}: the whole home opened");
    }
    assert!(
        home.join("new/new.db").is_file(),
        "the database made where the advice said"
    );
}

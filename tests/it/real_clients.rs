//! The real AI clients writing their own config files — Claude Code's three scopes, Gemini
//! CLI's user and project settings — and Gatehouse reading them (`import`), writing itself into
//! them (`client-config --write`) in each client's own format, and connected over HTTP and stdio.

use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;

/// The real Claude Code writes its three scopes (`claude mcp add` to the default local scope,
/// `-s user`, `-s project`); `gatehouse import --from claude-code` finds every server, says which
/// scope each came from, and leaves the name defined differently in two scopes to the person —
/// who imports both with `NAME@SCOPE` renames.
#[tokio::test]
#[ignore = "needs the real Claude Code: run `make test`"]
async fn claude_codes_own_scopes_are_all_imported_and_labelled() {
    let claude = peer_bin("claude-code/node_modules/.bin/claude");
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    let add = |args: &[&str]| {
        let out = Command::new(&claude)
            .args(["mcp", "add"])
            .args(args)
            .current_dir(&proj)
            .env("HOME", dir.path())
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "claude mcp add {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    add(&["-s", "user", "docs", "--", "npx", "-y", "server-docs"]);
    add(&[
        "local-db",
        "-e",
        "DB_HOST=db.internal",
        "--",
        "uvx",
        "server-db",
        "--read-only",
    ]);
    add(&[
        "-s",
        "project",
        "--transport",
        "http",
        "tracker",
        "https://mcp.example.com/mcp",
    ]);
    add(&[
        "-s",
        "project",
        "docs",
        "--",
        "npx",
        "-y",
        "server-docs-fork",
    ]);
    let cfg = dir.path().join("gatehouse.json");
    let import = |extra: &[&str]| {
        let out = Command::new(GATEHOUSE)
            .args(["--control"])
            .arg(dir.path().join("no-hub.sock"))
            .args([
                "import",
                "--from",
                "claude-code",
                "--config",
                cfg.to_str().unwrap(),
            ])
            .args(extra)
            .current_dir(&proj)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = import(&[]);
    assert_eq!(code, Some(0), "{out}{err}");
    // Each server's line names its client, scope and file; the files are listed first.
    let proj_dir = proj.display().to_string();
    let user_file = dir.path().join(".claude.json").display().to_string();
    assert!(
        out.contains(&format!(
            "local-db ← \"local-db\" (Claude Code, local {proj_dir} scope, {user_file}): uvx server-db --read-only"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "tracker ← \"tracker\" (Claude Code, project {proj_dir} scope, {proj_dir}/.mcp.json): https://mcp.example.com/mcp"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "docs ← \"docs\" (Claude Code, user scope, {user_file}): npx -y server-docs"
        )),
        "{out}"
    );
    assert!(
        out.find("server(s) in") < out.find(" ← "),
        "the file summary comes first: {out}"
    );
    assert!(
        out.contains(&format!(
            "defined differently in the project {proj_dir} and user scopes"
        )),
        "{out}"
    );
    // `claude mcp add -s project` writes .mcp.json without approving it: Claude Code itself would
    // ask before running it, so the import lists it and leaves it out until it is named.
    assert!(
        out.contains("not approved in Claude Code: not imported (its client never ran it); pass --include tracker"),
        "{out}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let ids: Vec<&String> = c["servers"].as_object().unwrap().keys().collect();
    assert_eq!(ids, ["local-db"], "{c}");
    let (code, out, err) = import(&["--include", "tracker"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("imported because --include names it"), "{out}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let ids: Vec<&String> = c["servers"].as_object().unwrap().keys().collect();
    assert_eq!(ids, ["local-db", "tracker"], "{c}");
    assert_eq!(
        c["servers"]["local-db"]["env"]["DB_HOST"], "db.internal",
        "{c}"
    );
    // Both `docs`, each named for its scope.
    let project = format!("docs@project {proj_dir}=docs-fork");
    let (code, out, err) = import(&[
        "--include",
        "docs",
        "--rename",
        "docs@user=docs",
        "--rename",
        &project,
    ]);
    assert_eq!(code, 0.into(), "{out}{err}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(
        c["servers"]["docs"]["args"],
        json!(["-y", "server-docs"]),
        "{c}"
    );
    assert_eq!(
        c["servers"]["docs-fork"]["args"],
        json!(["-y", "server-docs-fork"]),
        "{c}"
    );

    // Connected: `client-config claude-code --write` gives it a profile of its own in its user
    // scope, and Claude Code's own health check reaches the hub through that entry.
    let served = serve(
        dir.path(),
        &json!({"servers": {"fx": fixture(&[])}}).to_string(),
        &["fx"],
    )
    .await;
    let out = Command::new(GATEHOUSE)
        .arg("--control")
        .arg(&served.sock)
        .args(["client-config", "claude-code", "--write"])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Claude Code run from the test directory (its project), with its output and errors.
    let claude_run = |args: &[&str]| {
        let out = Command::new(&claude)
            .args(args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let got = claude_run(&["mcp", "get", "gatehouse"]);
    assert!(
        got.contains("Status: ✔ Connected") && got.contains(&served.info.url),
        "{got}"
    );
    assert!(
        got.contains("User config") && !got.contains(&served.info.token),
        "{got}"
    );
    // Over stdio too: Claude Code's own `mcp add` of the bridge, as the claude-code profile.
    let sock = served.sock.to_string_lossy().into_owned();
    claude_run(&[
        "mcp",
        "add",
        "-s",
        "user",
        "gatehouse-stdio",
        "--",
        GATEHOUSE,
        "--control",
        &sock,
        "connect",
        "--client",
        "claude-code",
    ]);
    let got = claude_run(&["mcp", "get", "gatehouse-stdio"]);
    assert!(
        got.contains("Status: ✔ Connected") && got.contains("Type: stdio"),
        "{got}"
    );
}

/// The real Gemini CLI writes its user and project settings (`gemini mcp add`, `-s user`, an
/// HTTP server with a placeholder header); `gatehouse import --from gemini` finds every server
/// with its scope; `client-config gemini --write` adds an HTTP entry with the `gemini` profile's
/// token, keeping Gemini's other servers, and `gemini mcp list` shows Gatehouse connected.
#[tokio::test]
#[ignore = "needs the real Gemini CLI: run `make test`"]
async fn gemini_cli_is_imported_and_connected_in_its_own_settings() {
    let gemini = peer_bin("gemini/node_modules/.bin/gemini");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let proj = dir.path().join("proj");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::create_dir_all(&proj).unwrap();
    // Gemini CLI runs no server of an untrusted folder: this one is the person's own.
    std::fs::write(
        home.join(".gemini/trustedFolders.json"),
        json!({ proj.to_str().unwrap(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    let run_gemini = |args: &[&str]| {
        let out = Command::new(&gemini)
            .args(args)
            .current_dir(&proj)
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "gemini {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    run_gemini(&[
        "mcp",
        "add",
        "-s",
        "user",
        "fs",
        "npx",
        "-y",
        "server-fs",
        "/srv/notes",
        "-e",
        "LOG=1",
    ]);
    run_gemini(&[
        "mcp",
        "add",
        "-s",
        "user",
        "-t",
        "http",
        "docs",
        "https://mcp.example.com/mcp",
        "-H",
        "X-Api-Key: ${DOCS_KEY}",
    ]);
    run_gemini(&["mcp", "add", "notes", "node", "notes.js"]);
    let cfg = dir.path().join("gatehouse.json");
    let gh = |args: &[&str], sock: &std::path::Path| {
        let out = Command::new(GATEHOUSE)
            .arg("--control")
            .arg(sock)
            .args(args)
            .current_dir(&proj)
            .env("HOME", &home)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let no_hub = dir.path().join("no-hub.sock");
    let (code, out, err) = gh(
        &[
            "import",
            "--from",
            "gemini",
            "--config",
            cfg.to_str().unwrap(),
        ],
        &no_hub,
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let proj_dir = proj.display().to_string();
    let home_dir = home.display().to_string();
    assert!(
        out.contains(&format!(
            "fs ← \"fs\" (Gemini CLI, user scope, {home_dir}/.gemini/settings.json): npx -y server-fs /srv/notes"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "notes ← \"notes\" (Gemini CLI, project {proj_dir} scope, {proj_dir}/.gemini/settings.json): node notes.js"
        )),
        "{out}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let s = &c["servers"];
    assert_eq!(s["fs"]["env"]["LOG"], "1", "{c}");
    assert_eq!(s["docs"]["url"], "https://mcp.example.com/mcp", "{c}");
    assert_eq!(
        s["docs"]["headers"]["X-Api-Key"],
        json!({"env": "DOCS_KEY"}),
        "{c}"
    );

    // Connected to a running hub as a profile of its own, through the entry Gemini reads.
    let hub = json!({"servers": {"fx": fixture(&[])}});
    let served = serve(dir.path(), &hub.to_string(), &["fx"]).await;
    let (code, out, err) = gh(&["client-config", "gemini", "--write"], &served.sock);
    assert_eq!(code, Some(0), "{out}{err}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".gemini/settings.json")).unwrap())
            .unwrap();
    let entry = &written["mcpServers"]["gatehouse"];
    assert_eq!(entry["url"], served.info.url.as_str(), "{written}");
    let bearer = entry["headers"]["Authorization"].as_str().unwrap_or("");
    assert!(
        bearer.starts_with("Bearer ") && !bearer.contains(&served.info.token),
        "{written}"
    );
    assert!(
        written["mcpServers"]["fs"].is_object() && written["mcpServers"]["docs"].is_object(),
        "{written}"
    );
    // Over stdio too: Gemini's own `mcp add` of the bridge, as the gemini profile.
    let sock = served.sock.to_string_lossy().into_owned();
    run_gemini(&[
        "mcp",
        "add",
        "-s",
        "user",
        "gatehouse-stdio",
        GATEHOUSE,
        "--control",
        &sock,
        "connect",
        "--client",
        "gemini",
    ]);
    let listed = run_gemini(&["mcp", "list"]);
    assert!(
        listed.contains(&format!(
            "✓ gatehouse: {} (http) - Connected",
            served.info.url
        )),
        "{listed}"
    );
    assert!(
        listed
            .lines()
            .any(|l| l.contains("✓ gatehouse-stdio:") && l.contains("(stdio) - Connected")),
        "{listed}"
    );
}

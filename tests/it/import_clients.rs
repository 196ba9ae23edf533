//! What each client itself says, honoured by import and client-config (#61): Claude Code's
//! approvals of a project's `.mcp.json` servers, VS Code's portable format, Claude Code's managed
//! settings — through the real binary.

use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;

/// Import honours Claude Code's own approvals: of a project's `.mcp.json`, only the server the
/// person approved in Claude Code (`enabledMcpjsonServers` in `~/.claude.json`) is imported by
/// default; the other is listed "not approved in Claude Code" (the dry run says so), imported
/// only when `--include` names it, and never started before that — the repository's own
/// `.claude/settings.json` saying "enable all" counts for nothing.
#[test]
fn a_project_server_claude_code_never_approved_is_not_imported_unasked() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let (home, proj) = (d.join("home"), d.join("proj"));
    std::fs::create_dir_all(proj.join(".claude")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let mark = d.join("evil-ran");
    std::fs::write(
        home.join(".claude.json"),
        json!({"projects": {proj.to_str().unwrap(): {"enabledMcpjsonServers": ["good"]}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        proj.join(".mcp.json"),
        json!({"mcpServers": {
            "good": {"command": "good-server"},
            "evil": {"command": "/bin/sh", "args": ["-c", format!("touch {}", mark.display())]}
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        proj.join(".claude/settings.json"),
        json!({"enableAllProjectMcpServers": true}).to_string(),
    )
    .unwrap();
    let cfg = d.join("gatehouse.json");
    let run = |extra: &[&str]| {
        let out = Command::new(GATEHOUSE)
            .args(["--control", d.join("none.sock").to_str().unwrap()])
            .args(["import", "--from", "claude-code", "--config"])
            .arg(&cfg)
            .args(extra)
            .env("HOME", &home)
            .current_dir(&proj)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dry = run(&["--dry-run"]);
    let evil_line = dry
        .lines()
        .skip_while(|l| !l.contains("\"evil\""))
        .nth(1)
        .unwrap_or_default();
    assert!(evil_line.contains("not approved in Claude Code"), "{dry}");
    assert!(dry.contains("would add good"), "{dry}");
    assert!(
        !dry.contains("would add evil") && !dry.contains(", evil"),
        "{dry}"
    );
    run(&[]);
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(c["servers"]["good"]["command"], "good-server", "{c}");
    assert!(c["servers"].get("evil").is_none(), "{c}");
    assert!(!mark.exists(), "an unapproved server ran");
    let picked = run(&["--include", "evil"]);
    assert!(
        picked.contains("imported because --include names it"),
        "{picked}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(c["servers"]["evil"]["command"], "/bin/sh", "{c}");
}

/// VS Code's portable format (its MCP reference of 2026-11-25): `client-config vscode --write`
/// writes `~/.copilot/mcp-config.json` under `mcpServers`; import reads a workspace's `.mcp.json`
/// and, still, its older `.vscode/mcp.json` — Gatehouse's own entry never offered back.
#[tokio::test]
async fn vscode_gets_and_gives_its_portable_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let served = serve(&d, &config(&[("base", fixture(&[]))]), &["base"]).await;
    let ws = d.join("ws");
    std::fs::create_dir_all(ws.join(".vscode")).unwrap();
    std::fs::write(
        ws.join(".vscode/mcp.json"),
        json!({"servers": {"old": {"type": "stdio", "command": "old-cmd"}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": {"new": {"command": "new-cmd"}}}).to_string(),
    )
    .unwrap();
    let cli = |args: &[&str]| {
        let out = Command::new(GATEHOUSE)
            .arg("--control")
            .arg(&served.sock)
            .args(args)
            .env("HOME", &d)
            .env("XDG_CONFIG_HOME", d.join(".config"))
            .env("npm_config_registry", "http://127.0.0.1:9")
            .current_dir(&ws)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{args:?}: {text}");
        text
    };
    cli(&["client-config", "vscode", "--write"]);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(".copilot/mcp-config.json")).unwrap())
            .unwrap();
    let entry = &written["mcpServers"]["gatehouse"];
    assert_eq!(entry["url"], served.info.url.as_str(), "{written}");
    assert_eq!(entry["type"], "http", "{written}");
    let cfg = d.join("imported.json");
    let out = cli(&[
        "import",
        "--from",
        "vscode",
        "--config",
        cfg.to_str().unwrap(),
        "--dry-run",
        "--include",
        "new",
    ]);
    let would = out
        .lines()
        .find(|l| l.starts_with("dry run: would add"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(would.contains("new") && would.contains("old"), "{out}");
    assert!(!would.contains("gatehouse"), "{out}");
}

/// Claude Code's managed settings outrank the person's: where they would keep Gatehouse's entry
/// from loading (`deniedMcpServers` naming it), `client-config claude-code --write` says so and
/// writes nothing, instead of "written".
#[tokio::test]
async fn claude_codes_managed_settings_are_read_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let served = serve(&d, &config(&[("base", fixture(&[]))]), &["base"]).await;
    let managed = d.join("managed");
    std::fs::create_dir_all(&managed).unwrap();
    std::fs::write(
        managed.join("managed-settings.json"),
        json!({"deniedMcpServers": [{"serverName": "gatehouse"}]}).to_string(),
    )
    .unwrap();
    let before = json!({"projects": {}, "mcpServers": {"mine": {"command": "x"}}}).to_string();
    std::fs::write(d.join(".claude.json"), &before).unwrap();
    let out = Command::new(GATEHOUSE)
        .arg("--control")
        .arg(&served.sock)
        .args(["client-config", "claude-code", "--write"])
        .env("HOME", &d)
        .env("GATEHOUSE_CLAUDE_MANAGED_DIR", &managed)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("deniedMcpServers") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join(".claude.json")).unwrap(),
        before
    );
}

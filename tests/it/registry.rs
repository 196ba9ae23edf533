//! The MCP Registry as the catalog, against a local stand-in that speaks its published v0.1 API
//! with real entries' facts (`tests/clients/registry_server.py`) — never the internet: search
//! with pages, show, add by name pinned to the exact version (a real npm package that reaches
//! `running`), a secret asked for and kept in the keychain only, a required variable refused, a
//! remote, and registries that answer garbage, too much, or nothing.

use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use crate::support::*;

const EVERYTHING: &str = "io.github.modelcontextprotocol/server-everything";

/// Search (a page, then every page), show (the exact command it would run), and add by name:
/// pinned to the exact version, running, its secret in the keychain and nowhere else; a server
/// whose required variable is missing is refused naming it; a remote entry becomes a URL.
#[tokio::test]
#[ignore = "needs the npm cache of the real peers: run `make test`"]
async fn servers_are_found_shown_and_added_pinned_from_the_registry() {
    let reg = registry_stand_in("ok");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The hub checks a pinned artifact against the same index the pin came from.
    let s = serve_env(
        d,
        &json!({"servers": {}}).to_string(),
        &[],
        &[],
        &[("npm_config_registry", &reg.1)],
    )
    .await;
    let out = gh_registry(d, &reg.1, &["registry", "search", "everything"], "");
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        output_text(&out).contains(&format!("{EVERYTHING}  2026.8.31  [npm]")),
        "{}",
        output_text(&out)
    );
    let out = gh_registry(d, &reg.1, &["registry", "search", "filler"], "");
    assert!(
        output_text(&out).contains("(more results: pass --all)"),
        "{}",
        output_text(&out)
    );
    let out = gh_registry(
        d,
        &reg.1,
        &["registry", "search", "filler", "--all", "--json"],
        "",
    );
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all.len(), 35, "every page");
    let out = gh_registry(d, &reg.1, &["registry", "show", EVERYTHING], "");
    assert!(
        output_text(&out)
            .contains("would run: npx -y @modelcontextprotocol/server-everything@2026.8.31 stdio"),
        "{}",
        output_text(&out)
    );
    assert!(
        output_text(&out).contains("EVERYTHING_API_KEY (required, secret)"),
        "{}",
        output_text(&out)
    );

    // Added by name: the secret comes on stdin (a prompt on a terminal), never in argv.
    let secret_value = "sk-registry-canary-6d1f";
    let out = gh_registry(
        d,
        &reg.1,
        &["add", "--registry", &format!("{EVERYTHING}@2026.8.31")],
        &format!("{secret_value}\n"),
    );
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("pinned to @modelcontextprotocol/server-everything@2026.8.31"),
        "{}",
        output_text(&out)
    );
    let cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("gatehouse.json")).unwrap()).unwrap();
    let e = &cfg["servers"]["everything"];
    assert_eq!(
        e["args"],
        json!([
            "-y",
            "@modelcontextprotocol/server-everything@2026.8.31",
            "stdio"
        ]),
        "{cfg}"
    );
    assert_eq!(
        e["env"]["EVERYTHING_API_KEY"],
        json!({"secret": "everything-everything-api-key"}),
        "{cfg}"
    );
    let deadline = Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let st: Vec<Value> =
            serde_json::from_slice(&gh_registry(d, &reg.1, &["status", "--json"], "").stdout)
                .unwrap();
        if st
            .iter()
            .any(|v| v["id"] == "everything" && v["state"] == "running")
        {
            break;
        }
        assert!(Instant::now() < deadline, "never running: {st:?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let secrets: Vec<Value> =
        serde_json::from_slice(&gh_registry(d, &reg.1, &["secret", "ls", "--json"], "").stdout)
            .unwrap();
    assert!(
        secrets
            .iter()
            .any(|v| v["name"] == "everything-everything-api-key" && v["set"] == true),
        "{secrets:?}"
    );
    for f in walk(d) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret_value),
            "the secret is in {}",
            f.display()
        );
    }

    // A required variable that was not given: refused, naming it; nothing added.
    let out = gh_registry(d, &reg.1, &["add", "db", "--registry", "io.example/db"], "");
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    assert!(
        output_text(&out)
            .contains("DB_URL is required (where the database is): pass --env DB_URL=VALUE"),
        "{}",
        output_text(&out)
    );
    // A remote entry.
    let out = gh_registry(
        d,
        &reg.1,
        &["add", "--registry", "io.example/remote-docs"],
        "",
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("gatehouse.json")).unwrap()).unwrap();
    assert_eq!(
        cfg["servers"]["remote-docs"]["url"], "https://docs.example.com/mcp",
        "{cfg}"
    );
    assert!(cfg["servers"].get("db").is_none(), "{cfg}");
    drop(s);
}

/// A registry that answers garbage, too much, or nothing gets a clear error — within its
/// deadline, never a hang.
#[tokio::test]
async fn a_broken_registry_gets_a_clear_error_never_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, says) in [
        ("garbage", "answered something its API does not describe"),
        ("huge", "sent more than 4 MiB"),
        ("silent", "did not answer within 15 s"),
    ] {
        let reg = registry_stand_in(mode);
        let started = Instant::now();
        let out = gh_registry(dir.path(), &reg.1, &["registry", "search", "x"], "");
        assert_eq!(out.status.code(), Some(1), "{mode}: {}", output_text(&out));
        assert!(
            output_text(&out).contains(says),
            "{mode}: {}",
            output_text(&out)
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(25),
            "{mode} took {:?}",
            started.elapsed()
        );
    }
    let out = gh_registry(
        dir.path(),
        "http://127.0.0.1:9",
        &["registry", "search", "x"],
        "",
    );
    assert!(
        output_text(&out).contains("cannot reach the registry at http://127.0.0.1:9"),
        "{}",
        output_text(&out)
    );
}

/// A pasted `npx -y PACKAGE` is recorded with the exact version the index serves; a release
/// published later is shown ("update available"), never taken; `--update` takes it and says the
/// change; an entry already in the config is pinned only when asked (`gatehouse pin ID`).
#[tokio::test]
async fn pasted_npx_commands_are_pinned_and_updates_are_shown_never_taken() {
    let reg = registry_stand_in("ok");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = d.join("gatehouse.json");
    std::fs::write(
        &cfg,
        json!({"servers": {"old": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything", "stdio"], "enabled": false}}}).to_string(),
    )
    .unwrap();
    let cfg_s = cfg.to_str().unwrap();
    let pin_cmd = |args: &[&str]| {
        let mut c = Command::new(GATEHOUSE);
        c.args(args)
            .env("GATEHOUSE_CONTROL", d.join("no-hub.sock"))
            .env("npm_config_registry", &reg.1)
            // With no hub, the CLI installs into the platform's data directory: one of its own.
            .env("XDG_DATA_HOME", d.join("xdg"));
        c.output().unwrap()
    };
    let args_of = |id: &str| -> Value {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
        v["servers"][id]["args"].clone()
    };
    let out = pin_cmd(&[
        "add",
        "ev",
        "--config",
        cfg_s,
        "--",
        "npx",
        "-y",
        "@modelcontextprotocol/server-everything",
        "stdio",
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(output_text(&out).contains("pinned @modelcontextprotocol/server-everything to @modelcontextprotocol/server-everything@2026.8.31"), "{}", output_text(&out));
    assert_eq!(
        args_of("ev"),
        json!([
            "-y",
            "@modelcontextprotocol/server-everything@2026.8.31",
            "stdio"
        ])
    );
    // The entry that was there before is left as it was until the person pins it.
    assert_eq!(
        args_of("old"),
        json!(["-y", "@modelcontextprotocol/server-everything", "stdio"])
    );
    let out = pin_cmd(&["pin", "old", "--config", cfg_s]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert_eq!(
        args_of("old")[1],
        "@modelcontextprotocol/server-everything@2026.8.31"
    );
    // A newer release: shown, not taken.
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let published = http
        .get(format!(
            "{}/_publish?name=@modelcontextprotocol/server-everything&version=2026.9.1&days_ago=30",
            reg.1
        ))
        .send()
        .await
        .unwrap();
    assert!(published.status().is_success());
    let out = pin_cmd(&["pin", "ev", "--config", cfg_s]);
    assert!(
        output_text(&out).contains("update available: 2026.9.1"),
        "{}",
        output_text(&out)
    );
    assert_eq!(
        args_of("ev")[1],
        "@modelcontextprotocol/server-everything@2026.8.31"
    );
    // `--update` shows each package that would change, with its age, and writes nothing.
    let out = pin_cmd(&["pin", "ev", "--update", "--config", cfg_s]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        output_text(&out)
            .contains("@modelcontextprotocol/server-everything: 2026.8.31 → 2026.9.1, 30 days old"),
        "{}",
        output_text(&out)
    );
    assert!(
        output_text(&out).contains("nothing was written"),
        "{}",
        output_text(&out)
    );
    assert_eq!(
        args_of("ev")[1],
        "@modelcontextprotocol/server-everything@2026.8.31"
    );
    let out = pin_cmd(&["pin", "ev", "--update", "--yes", "--config", cfg_s]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        output_text(&out)
            .contains("ev: @modelcontextprotocol/server-everything 2026.8.31 → 2026.9.1"),
        "{}",
        output_text(&out)
    );
    assert_eq!(
        args_of("ev")[1],
        "@modelcontextprotocol/server-everything@2026.9.1"
    );
    // Not a runner's package: nothing to pin, said so.
    std::fs::write(
        &cfg,
        json!({"servers": {"fx": {"command": FIXTURE}}}).to_string(),
    )
    .unwrap();
    let out = pin_cmd(&["pin", "fx", "--config", cfg_s]);
    assert!(
        output_text(&out).contains("runs no npx or uvx package"),
        "{}",
        output_text(&out)
    );
}

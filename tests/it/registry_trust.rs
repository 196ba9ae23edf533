//! The registry is a trust boundary, against a hostile local registry and package index
//! (`tests/clients/registry_server.py`: the published v0.1 API, npm's packuments and PyPI's
//! JSON): every bad version, name, runner option and variable an entry holds is refused by
//! `add --registry` with the reason, the config byte-identical afterwards; escape sequences in a
//! description are shown, never sent to the terminal; a metadata address is refused; a release
//! younger than the cool-down is shown, never taken without `--now`; a pin records the
//! artifact's integrity, and a start that would run another artifact is refused naming both.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

fn config_bytes(d: &Path) -> Vec<u8> {
    std::fs::read(d.join("gatehouse.json")).unwrap()
}

#[tokio::test]
async fn a_hostile_registry_entry_is_refused_and_the_config_left_as_it_was() {
    let reg = registry_stand_in("ok");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _s = serve(d, &json!({"servers": {}}).to_string(), &[]).await;
    let before = config_bytes(d);
    for (entry, says) in [
        ("range", "not an exact npm version"),
        ("star", "not an exact npm version"),
        ("gte", "not an exact npm version"),
        ("path", "not an npm package name"),
        ("flag", "not an npm package name"),
        ("git", "not an npm package name"),
        ("npx-c", "\"-c\" for npx is refused"),
        ("npx-package", "\"--package\" for npx is refused"),
        ("preload", "--allow-env LD_PRELOAD"),
        ("node-options", "--allow-env NODE_OPTIONS"),
        ("npmrc", "--allow-env npm_config_registry"),
        (
            "reads-env",
            "would read a variable of Gatehouse's own environment",
        ),
        ("uv-index", "\"--index-url\" for uvx is refused"),
        ("metadata", "cloud metadata"),
    ] {
        let name = format!("io.evil/{entry}");
        let out = gh_registry(d, &reg.1, &["add", "x", "--registry", &name], "");
        assert_eq!(out.status.code(), Some(1), "{entry}: {}", output_text(&out));
        assert!(
            output_text(&out).contains(says),
            "{entry}: expected {says:?}: {}",
            output_text(&out)
        );
        assert_eq!(config_bytes(d), before, "{entry} changed the config");
    }
    // Allowed by name, a risky variable is shown with its value and written.
    let out = gh_registry(
        d,
        &reg.1,
        &[
            "add",
            "fast",
            "--registry",
            "io.evil/preload",
            "--allow-env",
            "LD_PRELOAD",
            "--no-pin",
        ],
        "",
    );
    let said = output_text(&out);
    assert!(said.contains("LD_PRELOAD = /tmp/evil.so"), "{said}");
    let cfg: Value = serde_json::from_slice(&config_bytes(d)).unwrap();
    assert_eq!(
        cfg["servers"]["fast"]["env"]["LD_PRELOAD"], "/tmp/evil.so",
        "{cfg}"
    );
}

/// A description full of escape sequences (line erase, a clipboard write, concealed text) is
/// printed with each shown as its code point: nothing reaches the terminal raw, so nothing can
/// fake the "would run" line.
#[tokio::test]
async fn registry_text_is_shown_never_interpreted() {
    let reg = registry_stand_in("ok");
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["registry", "search", "escape"][..],
        &["registry", "show", "io.evil/escape"][..],
    ] {
        let out = gh_registry(dir.path(), &reg.1, args, "");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !said.contains('\u{1b}'),
            "{args:?} printed an escape raw: {said:?}"
        );
        assert!(
            said.contains("⟨U+001B⟩[2K") && said.contains("⟨U+001B⟩]52;c;"),
            "{args:?}: {said}"
        );
    }
    // show --json: the exact command and every variable it would set.
    let out = gh_registry(
        dir.path(),
        &reg.1,
        &[
            "registry",
            "show",
            "io.github.modelcontextprotocol/server-everything",
            "--json",
        ],
        "",
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["command"],
        json!([
            "npx",
            "-y",
            "@modelcontextprotocol/server-everything@2026.8.31",
            "stdio"
        ]),
        "{v}"
    );
    assert_eq!(v["env"], json!({"EVERYTHING_API_KEY": "(secret)"}), "{v}");
}

/// A release younger than the cool-down (7 days by default) is shown with its age and never
/// taken by `pin --update`; `--update --now` shows every package it changes and writes nothing;
/// `--yes` takes it; the pin records the artifact's integrity, and Gatehouse installs that
/// artifact into its store; an artifact the index changed under the same version never runs:
/// the verified one in the store does, and installing it again refuses the index's, naming both.
#[tokio::test]
async fn a_young_release_waits_and_a_changed_artifact_does_not_start() {
    let reg = registry_stand_in("ok");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = d.join("gatehouse.json");
    std::fs::write(&cfg, json!({"servers": {}}).to_string()).unwrap();
    let cfg_s = cfg.to_str().unwrap().to_owned();
    // With no hub, the CLI installs into the data directory a hub would use (the platform's,
    // under XDG_DATA_HOME): here the one `serve` gets below.
    std::fs::create_dir_all(d.join("data")).unwrap();
    std::fs::create_dir_all(d.join("xdg")).unwrap();
    std::os::unix::fs::symlink(d.join("data"), d.join("xdg/gatehouse")).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(GATEHOUSE)
            .args(args)
            .env("GATEHOUSE_CONTROL", d.join("no-hub.sock"))
            .env("npm_config_registry", &reg.1)
            .env("XDG_DATA_HOME", d.join("xdg"))
            .output()
            .unwrap();
        output_text(&out)
    };
    let entry = |id: &str| -> Value {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
        v["servers"][id].clone()
    };
    let said = run(&[
        "add",
        "ev",
        "--config",
        &cfg_s,
        "--",
        "npx",
        "-y",
        "@modelcontextprotocol/server-everything",
        "stdio",
    ]);
    assert!(
        said.contains("to @modelcontextprotocol/server-everything@2026.8.31"),
        "{said}"
    );
    let pinned = entry("ev")["pin"].clone();
    assert_eq!(pinned["version"], "2026.8.31", "{pinned}");
    let integrity = pinned["integrity"].as_str().unwrap_or_default().to_owned();
    assert!(
        integrity.starts_with("sha512-") && integrity.len() > 80,
        "{pinned}"
    );
    assert!(
        said.contains("installed:") && said.contains("checked against the pin"),
        "{said}"
    );
    // Published yesterday: shown, not taken.
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let publish = format!(
        "{}/_publish?name=@modelcontextprotocol/server-everything&version=2026.11.27&days_ago=1",
        reg.1
    );
    assert!(http
        .get(publish)
        .send()
        .await
        .unwrap()
        .status()
        .is_success());
    let said = run(&["pin", "ev", "--config", &cfg_s]);
    assert!(
        said.contains("newer version 2026.11.27 is 1 day old; updates wait 7 days"),
        "{said}"
    );
    let said = run(&["pin", "ev", "--update", "--config", &cfg_s]);
    assert!(said.contains("stays at 2026.8.31"), "{said}");
    assert_eq!(entry("ev")["pin"]["version"], "2026.8.31");
    let said = run(&["pin", "ev", "--update", "--now", "--config", &cfg_s]);
    assert!(
        said.contains("@modelcontextprotocol/server-everything: 2026.8.31 → 2026.11.27, 1 day old"),
        "{said}"
    );
    assert!(said.contains("nothing was written"), "{said}");
    assert_eq!(entry("ev")["pin"]["version"], "2026.8.31");
    let said = run(&[
        "pin", "ev", "--update", "--now", "--yes", "--config", &cfg_s,
    ]);
    assert!(said.contains("2026.8.31 → 2026.11.27"), "{said}");
    assert_eq!(entry("ev")["pin"]["version"], "2026.11.27");
    assert_eq!(
        entry("ev")["args"][1],
        "@modelcontextprotocol/server-everything@2026.11.27"
    );
    // An index's answer that is not a version is never taken.
    let evil = format!(
        "{}/_publish?name=@modelcontextprotocol/server-everything&version=npm:evil-pkg@6.6.6&days_ago=30",
        reg.1
    );
    assert!(http.get(evil).send().await.unwrap().status().is_success());
    let said = run(&["pin", "ev", "--update", "--now", "--config", &cfg_s]);
    assert!(said.contains("not an exact npm version"), "{said}");
    assert_eq!(entry("ev")["pin"]["version"], "2026.11.27");

    // A package whose artifact the index changes under its pinned version: what runs is the
    // verified one in the store; installing it again refuses the index's, naming both.
    std::fs::write(
        &cfg,
        json!({"servers": {"tool": {"command": "npx", "args": ["-y", "@gatehouse-test/tool"]}}})
            .to_string(),
    )
    .unwrap();
    let said = run(&["pin", "tool", "--config", &cfg_s]);
    assert!(
        said.contains("1.0.0") && said.contains("installed:"),
        "{said}"
    );
    let pinned = entry("tool")["pin"]["integrity"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let republish = format!(
        "{}/_republish?name=@gatehouse-test/tool&version=1.0.0",
        reg.1
    );
    assert!(http
        .get(republish)
        .send()
        .await
        .unwrap()
        .status()
        .is_success());
    let cfg_text = std::fs::read_to_string(&cfg).unwrap();
    let s = serve_env(
        d,
        &cfg_text,
        &["tool"],
        &[],
        &[("npm_config_registry", &reg.1)],
    )
    .await;
    let c = crate::support::Mcp::connect(&s, "trust").await;
    let v = c.call(1, "tool__hello", json!({})).await;
    assert_eq!(crate::support::text_of(&v), "hello from 1.0.0", "{v}");
    let st: Vec<Value> =
        serde_json::from_slice(&crate::support::gh(&s, &["status", "--json"]).stdout).unwrap();
    let store = st[0]["artifact"]["store"].as_str().unwrap().to_owned();
    std::fs::remove_dir_all(&store).unwrap();
    let out = std::process::Command::new(GATEHOUSE)
        .args(["pin", "tool"])
        .env("GATEHOUSE_CONTROL", &s.sock)
        .env("npm_config_registry", &reg.1)
        .output()
        .unwrap();
    let said = output_text(&out);
    assert!(
        said.contains("another artifact") && said.contains(&pinned) && said.contains("refused"),
        "{said}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let _ = crate::support::gh(&s, &["restart", "tool"]);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let st: Vec<Value> =
            serde_json::from_slice(&crate::support::gh(&s, &["status", "--json"]).stdout).unwrap();
        if st[0]["state"] == "failed" {
            assert_eq!(st[0]["artifact"]["verified"], false, "{:?}", st[0]);
            return;
        }
    }
    panic!("the changed artifact was run");
}

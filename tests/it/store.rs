//! Gatehouse installs what runs (#59): a pinned `npx` entry is installed by Gatehouse into its
//! store — the package and its whole tree, resolved under the cool-down, checked against the
//! pin and locked — and runs from there, offline. Against `tests/clients/npm_index.py`, a local
//! stand-in speaking npm's registry API (packuments and tarballs), with tiny real packages
//! made here: a server that says which version of its dependency it runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

const DAY_MS: u64 = 24 * 3600 * 1000;

/// An ISO time `days` ago.
fn ago(days: u64) -> String {
    let ms = gatehouse::logs::now_ms() - days * DAY_MS;
    jiff::Timestamp::from_millisecond(ms as i64)
        .unwrap()
        .to_string()
}

/// A package folder: its manifest and files.
fn package(dir: &Path, manifest: Value, files: &[(&str, &str)]) -> PathBuf {
    let name = format!(
        "{}-{}",
        manifest["name"].as_str().unwrap(),
        manifest["version"].as_str().unwrap()
    );
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("package.json"), manifest.to_string()).unwrap();
    for (f, text) in files {
        std::fs::write(d.join(f), text).unwrap();
    }
    d
}

/// A tiny MCP server (stdio, no SDK) whose one tool says what runs: `WHO with dep-b VERSION`.
fn server_js(who: &str) -> String {
    format!(
        r#"#!/usr/bin/env node
const dep = require('dep-b');
const send = (o) => process.stdout.write(JSON.stringify(o) + "\n");
require('readline').createInterface({{ input: process.stdin }}).on('line', (l) => {{
  const m = JSON.parse(l);
  if (m.method === 'initialize') send({{ jsonrpc: '2.0', id: m.id, result: {{ protocolVersion: m.params.protocolVersion, capabilities: {{ tools: {{}} }}, serverInfo: {{ name: 'srv', version: '1' }} }} }});
  else if (m.method === 'tools/list') send({{ jsonrpc: '2.0', id: m.id, result: {{ tools: [{{ name: 'which', description: 'Says what runs', inputSchema: {{ type: 'object' }}, annotations: {{ readOnlyHint: true }} }}] }} }});
  else if (m.method === 'tools/call') send({{ jsonrpc: '2.0', id: m.id, result: {{ content: [{{ type: 'text', text: '{who} with dep-b ' + dep }}] }} }});
  else if (m.id !== undefined) send({{ jsonrpc: '2.0', id: m.id, error: {{ code: -32601, message: 'no such method' }} }});
}});
"#
    )
}

struct Index {
    _proc: Reaped,
    url: String,
    catalog: PathBuf,
    base: Value,
}

impl Index {
    /// The stand-in, serving `catalog`.
    fn start(dir: &Path, catalog: Value) -> Index {
        let file = dir.join("catalog.json");
        std::fs::write(&file, catalog.to_string()).unwrap();
        let port_file = dir.join("index.port");
        let proc = Reaped(
            Command::new("python3")
                .arg(crate::support::clients_script("npm_index.py"))
                .arg(&port_file)
                .arg(&file)
                .spawn()
                .unwrap(),
        );
        for _ in 0..200 {
            if port_file.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let port = std::fs::read_to_string(&port_file).unwrap();
        Index {
            _proc: proc,
            url: format!("http://127.0.0.1:{port}"),
            catalog: file,
            base: catalog,
        }
    }

    /// The same catalog with `hostile` switches.
    fn hostile(&self, hostile: Value) {
        let mut c = self.base.clone();
        c["_hostile"] = hostile;
        std::fs::write(&self.catalog, c.to_string()).unwrap();
    }
}

/// The CLI against the served hub, with the stand-in as npm's registry.
fn cli(s: &Served, index: &Index, args: &[&str]) -> Output {
    Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", &s.sock)
        .env("npm_config_registry", &index.url)
        .output()
        .unwrap()
}

fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn status_of(s: &Served, index: &Index, id: &str) -> Value {
    let out = cli(s, index, &["status", "--json"]);
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    all.as_array()
        .and_then(|a| a.iter().find(|e| e["id"] == id).cloned())
        .unwrap_or_default()
}

async fn wait_state(s: &Served, index: &Index, id: &str, state: &str) -> Value {
    for _ in 0..600 {
        let st = status_of(s, index, id);
        if st["state"] == state {
            return st;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{id} never {state}: {}", status_of(s, index, id));
}

/// A pinned server is installed by Gatehouse when it is added and runs from the store: its
/// dependency resolved under the cool-down (the release of a day ago not taken), every package
/// locked; with the index down it starts again; a hostile index that answers npm with another
/// tarball than it answered Gatehouse's pin changes nothing that runs; an update shows every
/// package it changes, with its age, before anything is written, and `--yes` takes it. Test
/// runs what Save would run (pinned, from the store), and the Save after it downloads nothing.
#[tokio::test]
#[ignore = "needs npm and Node.js: run `make test`"]
async fn a_pinned_server_runs_what_gatehouse_installed_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let pkgs = d.join("packages");
    let dep = |v: &str| {
        package(
            &pkgs,
            json!({"name": "dep-b", "version": v, "main": "index.js"}),
            &[("index.js", &format!("module.exports = '{v}';"))],
        )
    };
    let srv_in = |base: &Path, name: &str, v: &str, who: &str, range: &str| {
        package(
            base,
            json!({"name": name, "version": v, "bin": {name: "server.js"}, "dependencies": {"dep-b": range}}),
            &[("server.js", &server_js(who))],
        )
    };
    let srv = |name: &str, v: &str, who: &str, range: &str| srv_in(&pkgs, name, v, who, range);
    let index = Index::start(
        &d,
        json!({
            "dep-b": {
                "1.0.0": {"dir": dep("1.0.0"), "published": ago(30)},
                "1.1.0": {"dir": dep("1.1.0"), "published": ago(1)}
            },
            "srv-a": {
                "1.0.0": {"dir": srv("srv-a", "1.0.0", "srv-a 1.0.0", "^1.0.0"), "published": ago(30)},
                "1.2.0": {"dir": srv("srv-a", "1.2.0", "srv-a 1.2.0", "^1.0.0"), "published": ago(10)}
            },
            "srv-h": {"1.0.0": {"dir": srv("srv-h", "1.0.0", "genuine", "^1.0.0"), "published": ago(30)}}
        }),
    );
    let evil = srv_in(&pkgs.join("evil"), "srv-h", "1.0.0", "EVIL", "^1.0.0");
    let cfg = json!({"servers": {}, "registry": {"min_age_days": 7}});
    let s = serve_env(
        &d,
        &cfg.to_string(),
        &[],
        &[],
        &[("npm_config_registry", &index.url)],
    )
    .await;

    // Added with a version given: pinned with its integrity, installed, running from the store.
    let out = cli(&s, &index, &["add", "a", "--", "npx", "-y", "srv-a@1.0.0"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("integrity"), "{}", said(&out));
    let st = wait_state(&s, &index, "a", "running").await;
    let art = &st["artifact"];
    assert_eq!(art["verified"], true, "{st}");
    assert_eq!(art["packages"], 2, "{st}");
    assert_eq!(art["locked"], true, "{st}");
    let store = PathBuf::from(art["store"].as_str().unwrap());
    assert!(
        store.starts_with(d.join("data/store")),
        "{}",
        store.display()
    );
    let c = Mcp::connect(&s, "store-test").await;
    let v = c.call(1, "a__which", json!({})).await;
    assert_eq!(
        text_of(&v),
        "srv-a 1.0.0 with dep-b 1.0.0",
        "the release of a day ago is not taken: {v}"
    );
    // The index down: it starts again from the store, asking nothing.
    index.hostile(json!({"down": true}));
    let out = cli(&s, &index, &["restart", "a"]);
    assert!(out.status.success(), "{}", said(&out));
    wait_state(&s, &index, "a", "running").await;
    let v = c.call(2, "a__which", json!({})).await;
    assert_eq!(text_of(&v), "srv-a 1.0.0 with dep-b 1.0.0", "{v}");

    // Test runs what Save would: the unpinned command pinned under the cool-down (1.2.0, ten
    // days old), installed into the store and run from there, its version named; the Save
    // that follows installs nothing more. A pinned entry of the config is tested from the store.
    index.hostile(json!({}));
    let out = cli(&s, &index, &["test", "--", "npx", "-y", "srv-a"]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("package: srv-a@1.2.0"), "{text}");
    assert!(
        text.contains("tested srv-a@1.2.0 — the version saving it pins"),
        "{text}"
    );
    let out = cli(&s, &index, &["add", "b", "--", "npx", "-y", "srv-a"]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("its artifact is in the store") && !text.contains("installing"),
        "Save after Test downloads again: {text}"
    );
    let out = cli(&s, &index, &["test", "a"]);
    let text = said(&out);
    assert!(
        out.status.success() && text.contains("package: srv-a@1.0.0"),
        "{text}"
    );
    assert!(cli(&s, &index, &["remove", "b"]).status.success());

    // A hostile index: the genuine tarball to Gatehouse's pin, another one to npm.
    index.hostile(json!({"npm_gets": {"srv-h@1.0.0": evil}}));
    let out = cli(&s, &index, &["add", "h", "--", "npx", "-y", "srv-h@1.0.0"]);
    let st = wait_state(&s, &index, "h", "failed").await;
    assert_eq!(st["artifact"]["verified"], false, "{st}");
    let why = st["last_error"].as_str().unwrap_or("");
    assert!(
        why.contains("integrity") && why.contains("refused"),
        "{why}\n{}",
        said(&out)
    );
    assert!(!d.join("data/store").to_string_lossy().is_empty());

    // An update: every package that would change, with its age, and nothing written.
    index.hostile(json!({}));
    let before = std::fs::read_to_string(d.join("gatehouse.json")).unwrap();
    let out = cli(&s, &index, &["pin", "a", "--update"]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("srv-a: 1.0.0 → 1.2.0, 10 days old"), "{text}");
    assert!(text.contains("nothing was written"), "{text}");
    assert_eq!(
        std::fs::read_to_string(d.join("gatehouse.json")).unwrap(),
        before
    );
    let out = cli(&s, &index, &["pin", "a", "--update", "--yes"]);
    assert!(out.status.success(), "{}", said(&out));
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("gatehouse.json")).unwrap()).unwrap();
    assert_eq!(saved["servers"]["a"]["args"][1], "srv-a@1.2.0", "{saved}");
    for _ in 0..200 {
        let v = c.call(3, "a__which", json!({})).await;
        if text_of(&v) == "srv-a 1.2.0 with dep-b 1.0.0" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the update never ran");
}

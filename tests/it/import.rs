//! `gatehouse import` and `gatehouse client-config` through the real binary: each client's file
//! format, duplicate ids, plaintext tokens, a broken file, backups, a Gremia manifest checked
//! against a running hub, and the snippets each client reads.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;

fn fixture_file(name: &str) -> String {
    format!(
        "{}/tests/fixtures/import/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `client-config cursor --write --file FILE` (and `extra`) against the hub at `sock`.
fn write_cursor(dir: &Path, sock: &Path, file: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["client-config", "cursor", "--write", "--file"];
    args.push(file.to_str().unwrap());
    args.extend_from_slice(extra);
    run_import(dir, Some(sock), &args)
}

fn backups(dir: &Path, stem: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(stem) && n.ends_with(".bak") && n != &format!("{stem}.bak"))
        .collect()
}

#[test]
fn import_maps_each_client_format_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("gatehouse.json");
    std::fs::write(&cfg, config(&[("fs", json!({"command": "existing"}))])).unwrap();
    let cfg_s = cfg.to_str().unwrap();

    // Claude Desktop: both servers, the exact command lines shown, the token flagged.
    let (code, out, err) = run_import(
        dir.path(),
        None,
        &[
            "import",
            "--from",
            &fixture_file("claude_desktop_config.json"),
            "--config",
            cfg_s,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let file = fixture_file("claude_desktop_config.json");
    assert!(out.contains(&format!("filesystem ← \"filesystem\" (file, {file}): npx -y @modelcontextprotocol/server-filesystem /Users/me/Desktop")), "{out}");
    assert!(out.contains("github ← \"GitHub\" (file, "), "{out}");
    assert!(
        out.contains("GITHUB_PERSONAL_ACCESS_TOKEN looks like a credential"),
        "{out}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(c["servers"]["fs"]["command"], "existing");
    assert_eq!(
        c["servers"]["github"]["args"],
        json!(["-y", "@modelcontextprotocol/server-github"])
    );
    assert_eq!(c["servers"]["github"]["env"]["LOG_LEVEL"], "info");
    assert_eq!(
        backups(dir.path(), "gatehouse.json").len(),
        1,
        "a timestamped backup"
    );

    // Cursor: "fs" exists → skipped with the fix; renamed → imported; remote entry kept as url.
    let (code, out, _) = run_import(
        dir.path(),
        None,
        &[
            "import",
            "--from",
            &fixture_file("cursor_mcp.json"),
            "--config",
            cfg_s,
        ],
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("a server \"fs\" already exists; pass --rename fs=NEW-ID"),
        "{out}"
    );
    assert!(
        out.contains("SLACK_BOT_TOKEN looks like a credential"),
        "{out}"
    );
    assert!(
        out.contains("Authorization looks like a credential"),
        "{out}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(
        c["servers"]["fs"]["command"], "existing",
        "an existing id is never overwritten"
    );
    assert_eq!(c["servers"]["docs"]["url"], "https://docs.example.com/mcp");
    let (code, out, _) = run_import(
        dir.path(),
        None,
        &[
            "import",
            "--from",
            &fixture_file("cursor_mcp.json"),
            "--config",
            cfg_s,
            "--rename",
            "fs=cursor-fs",
        ],
    );
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!(
            "cursor-fs ← \"fs\" (file, {}): uvx mcp-server-fs --root '/home/me/my notes'",
            fixture_file("cursor_mcp.json")
        )),
        "{out}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(c["servers"]["cursor-fs"]["args"][2], "/home/me/my notes");

    // VS Code's "servers" key.
    let (code, out, _) = run_import(
        dir.path(),
        None,
        &[
            "import",
            "--from",
            &fixture_file("vscode_mcp.json"),
            "--config",
            cfg_s,
            "--dry-run",
        ],
    );
    assert_eq!(code, 0);
    assert!(out.contains("dry run: would add remote-api, time"), "{out}");
    let before = std::fs::read(&cfg).unwrap();

    // A broken file: a precise error, nothing written, no new backup.
    let n_backups = backups(dir.path(), "gatehouse.json").len();
    let (code, out, err) = run_import(
        dir.path(),
        None,
        &[
            "import",
            "--from",
            &fixture_file("broken.json"),
            "--config",
            cfg_s,
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("broken.json:3:10: not valid JSON (expected `:`)"),
        "{err}"
    );
    assert!(err.contains("nothing was imported"), "{err}");
    assert_eq!(std::fs::read(&cfg).unwrap(), before);
    assert_eq!(backups(dir.path(), "gatehouse.json").len(), n_backups);
    // The dry run wrote nothing either.
    assert!(!String::from_utf8_lossy(&before).contains("remote-api"));
}

#[tokio::test]
async fn gremia_manifest_tools_used_are_checked_against_the_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), &config(&[("base", fixture(&[]))]), &["base"]).await;
    let manifest = dir.path().join("workflow.json");
    std::fs::write(
        &manifest,
        json!({"name": "triage", "mcp_requirements": [{
            "server_id": "helper", "name": "Helper", "transport": "stdio",
            "command": FIXTURE, "args": [],
            "tools_used": ["helper:echo", "helper:add", "helper:summarize"]
        }]})
        .to_string(),
    )
    .unwrap();
    let cfg = dir.path().join("gatehouse.json");
    let (code, out, err) = run_import(
        dir.path(),
        Some(&served.sock),
        &[
            "import",
            "--from",
            manifest.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("the running hub reloaded its config"), "{out}");
    assert!(
        out.contains("helper: missing tool(s) the manifest uses: summarize"),
        "{out}"
    );
    // The entry keeps the display name and the expected tools: the check is made at every
    // start, not only at import (a warning in status and the server's log).
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(saved["servers"]["helper"]["name"], "Helper", "{saved}");
    assert_eq!(
        saved["servers"]["helper"]["tools_used"],
        json!(["echo", "add", "summarize"])
    );
    let (_, restarted, err) = run_import(dir.path(), Some(&served.sock), &["restart", "helper"]);
    assert!(err.is_empty(), "{restarted}{err}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let row = loop {
        let (_, st, _) = run_import(dir.path(), Some(&served.sock), &["status", "--json"]);
        let rows: Vec<Value> = serde_json::from_str(&st).unwrap();
        let row = rows.into_iter().find(|r| r["id"] == "helper").unwrap();
        if row["state"] == "running" && !row["warnings"].as_array().unwrap().is_empty() {
            break row;
        }
        assert!(std::time::Instant::now() < deadline, "{row}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(row["name"], "Helper", "{row}");
    let warning = row["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("\"tools_used\" expects \"summarize\""),
        "{warning}"
    );
}

#[tokio::test]
async fn client_config_snippets_parse_and_write_keeps_other_entries() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), &config(&[("base", fixture(&[]))]), &["base"]).await;
    for target in ["claude-desktop", "claude-code", "cursor", "vscode"] {
        let (code, out, err) =
            run_import(dir.path(), Some(&served.sock), &["client-config", target]);
        assert_eq!(code, 0, "{target}: {err}");
        let v: Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{target}: {e}\n{out}"));
        // Every one in `mcpServers` now: VS Code's portable format too.
        let entry = &v["mcpServers"]["gatehouse"];
        if target == "claude-desktop" {
            // The hub runs on a socket of its own (named with --control): the entry carries it.
            assert_eq!(
                entry["args"],
                json!(["--control", served.sock, "connect"]),
                "{v}"
            );
        } else {
            assert_eq!(entry["url"], served.info.url.as_str(), "{v}");
            assert_eq!(
                entry["headers"]["Authorization"],
                format!("Bearer {}", served.info.token),
                "{v}"
            );
        }
        assert!(!err.is_empty(), "explanations go to stderr");
        if target == "vscode" {
            // Which file VS Code reads now is said.
            assert!(
                err.contains(".copilot/mcp-config.json") && err.contains(".mcp.json"),
                "{err}"
            );
        }
    }

    // --write merges into the client's file, keeps its other entries and settings, backs it up.
    let file = dir.path().join("cursor.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"base": {"command": "old"}, "other": {"command": "keep-me"}}, "theme": "dark"})
            .to_string(),
    )
    .unwrap();
    let (code, _, err) = write_cursor(dir.path(), &served.sock, &file, &[]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(v["mcpServers"]["other"]["command"], "keep-me");
    assert_eq!(v["mcpServers"]["base"]["command"], "old");
    assert_eq!(
        v["mcpServers"]["gatehouse"]["url"],
        served.info.url.as_str()
    );
    assert_eq!(backups(dir.path(), "cursor.json").len(), 1);

    // A broken client file is left alone.
    std::fs::write(&file, "{ not json").unwrap();
    let (code, _, err) = write_cursor(dir.path(), &served.sock, &file, &[]);
    assert_eq!(code, 1);
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
}

#[test]
fn import_on_a_terminal_asks_for_another_id() {
    // `script` gives the CLI a terminal; the answers arrive on it as typed lines.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("gatehouse.json");
    std::fs::write(&cfg, config(&[("fs", json!({"command": "existing"}))])).unwrap();
    let cmd = format!(
        "{GATEHOUSE} --control {} import --from {} --config {}",
        dir.path().join("none.sock").display(),
        fixture_file("cursor_mcp.json"),
        cfg.display()
    );
    let mut child = Command::new("script")
        .args(["-qc", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"Bad Id\nfs\nfs-cursor\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("invalid server id \"Bad Id\""), "{text}");
    assert!(text.contains("\"fs\" is taken too"), "{text}");
    assert!(text.contains("importing as fs-cursor"), "{text}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(c["servers"]["fs"]["command"], "existing");
    assert_eq!(c["servers"]["fs-cursor"]["command"], "uvx");
}

/// Two imports at once (from two shells) both land, each with its own backup, every time; at
/// most `KEEP` copies stay.
#[test]
fn concurrent_imports_lose_nothing_and_keep_every_backup() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("gatehouse.json");
    std::fs::write(&cfg, config(&[])).unwrap();
    let cfg_s = cfg.to_str().unwrap().to_owned();
    let rounds = 6;
    let mut made = std::collections::BTreeSet::new();
    for round in 0..rounds {
        let handles: Vec<_> = (0..2)
            .map(|k| {
                let src = dir.path().join(format!("src-{round}-{k}.json"));
                std::fs::write(
                    &src,
                    json!({"mcpServers": {format!("s{round}x{k}"): {"command": "x"}}}).to_string(),
                )
                .unwrap();
                let (dir, cfg_s) = (dir.path().to_owned(), cfg_s.clone());
                std::thread::spawn(move || {
                    run_import(
                        &dir,
                        None,
                        &[
                            "import",
                            "--from",
                            src.to_str().unwrap(),
                            "--config",
                            &cfg_s,
                        ],
                    )
                })
            })
            .collect();
        for h in handles {
            let (code, out, err) = h.join().unwrap();
            assert_eq!(code, 0, "{out}{err}");
            let said = out
                .lines()
                .find_map(|l| l.strip_prefix("backup: "))
                .unwrap_or_else(|| panic!("no backup named: {out}"));
            assert!(
                made.insert(said.split(' ').next().unwrap().to_owned()),
                "{out}"
            );
        }
    }
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let ids: Vec<&String> = c["servers"].as_object().unwrap().keys().collect();
    assert_eq!(ids.len(), 2 * rounds, "an import was lost: {ids:?}");
    // Each import kept its own timestamped backup, even within one second; the oldest went.
    assert_eq!(made.len(), 2 * rounds);
    assert_eq!(
        backups(dir.path(), "gatehouse.json").len(),
        gatehouse::client_file::backup::KEEP
    );
}

/// A config that is a symlink (dotfiles managers) stays one: the edit goes to its target.
#[test]
fn a_symlinked_config_is_written_through_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles").join("gatehouse.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, config(&[])).unwrap();
    let link = dir.path().join("gatehouse.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, out, err) = run_import(
        dir.path(),
        None,
        &[
            "import",
            "--from",
            &fixture_file("cursor_mcp.json"),
            "--config",
            link.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced by a file"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
    assert!(!c["servers"].as_object().unwrap().is_empty(), "{c}");
}

/// Temp files of a writer killed mid-write (kill -9 during an import) are gone after the next
/// start; the config is untouched.
#[tokio::test]
async fn temp_files_of_an_interrupted_write_are_removed_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let stale = [
        dir.path().join(".gatehouse.json.tmp-2147483646-1"),
        dir.path().join(".gatehouse.json.bak.tmp-2147483646-2"),
    ];
    for f in &stale {
        std::fs::write(f, "half a config").unwrap();
    }
    let served = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    for f in &stale {
        assert!(!f.exists(), "{} survived the start", f.display());
    }
    drop(served);
}

/// A client file that now holds the gateway's bearer token is readable by the person only: a
/// looser mode becomes 0600, a stricter one is kept, and the person is told.
#[tokio::test]
async fn a_client_file_holding_the_token_is_readable_by_its_owner_only_and_holds_its_own_profiles()
{
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), &config(&[]), &[]).await;
    for (before, after) in [(0o644, 0o600), (0o660, 0o600), (0o400, 0o400)] {
        let file = dir.path().join(format!("cursor-{before:o}.json"));
        std::fs::write(&file, "{}").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(before)).unwrap();
        let (code, _, err) = write_cursor(dir.path(), &served.sock, &file, &[]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("readable by you only"), "{err}");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, after, "{before:o}");
        // Cursor's own profile's token, not the gateway's: an "always" for Cursor is Cursor's.
        let own = gatehouse::control::ControlClient::new(served.sock.clone())
            .request::<gatehouse::control::GatewayInfo>(&gatehouse::control::Request::Gateway {
                client: Some("cursor".into()),
            })
            .await
            .unwrap()
            .token;
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains(&own), "{written}");
        assert!(!written.contains(&served.info.token), "{written}");
        assert!(err.contains("Cursor"), "{err}");
    }
    // `--client default` shares the gateway token, as before profiles.
    let file = dir.path().join("shared.json");
    let (code, _, err) = write_cursor(dir.path(), &served.sock, &file, &["--client", "default"]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains(&served.info.token));
}

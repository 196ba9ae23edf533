//! A client's own file, edited by Gatehouse while its owner keeps saving it: no save lost, no
//! moved credential left in a copy — with a busy writer doing atomic saves, and with the real
//! Claude Code under its own lock.

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::support::*;

/// The client's key: moved to the keychain by the removal, never in a copy afterwards.
const SECRET: &str = "sk-busy-writer-0123456789";

/// Runs `gatehouse client-config claude-desktop --write --replace-imported` on `file`, with
/// Gatehouse's config (in `config_home`) running `helper`: Gatehouse's entry added, `helper`
/// removed. Returns (success, stderr).
fn write_and_remove(file: &Path, config_home: &Path) -> (bool, String) {
    let out = Command::new(GATEHOUSE)
        .arg("--control")
        .arg(config_home.join("no-hub.sock"))
        .args([
            "client-config",
            "claude-desktop",
            "--write",
            "--client",
            "default",
            "--replace-imported",
            "--file",
        ])
        .arg(file)
        .env("XDG_CONFIG_HOME", config_home)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A client's file of `keys` KB of other keys (`claude_desktop_config.json` in `dir`, Gatehouse's
/// config running `helper` in `dir/config`) and its busy writer (`tests/clients/busy_writer.py`
/// with `extra` arguments) saving it until `stop` exists; the thread collecting its saves.
fn busy_client(
    dir: &Path,
    keys: usize,
    extra: &[&str],
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
    std::process::Child,
    std::thread::JoinHandle<Vec<String>>,
) {
    let config_home = dir.join("config");
    std::fs::create_dir_all(config_home.join("gatehouse")).unwrap();
    std::fs::write(
        config_home.join("gatehouse/gatehouse.json"),
        json!({"servers": {"helper": {"command": "helper-mcp"}}}).to_string(),
    )
    .unwrap();
    let file = dir.join("claude_desktop_config.json");
    let history: serde_json::Map<String, Value> = (0..keys)
        .map(|i| (format!("h{i}"), json!("x".repeat(1000))))
        .collect();
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&json!({"mcpServers": {}, "history": history})).unwrap(),
    )
    .unwrap();
    let stop = dir.join("stop");
    let mut writer = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/clients/busy_writer.py"
        ))
        .arg(&file)
        .arg(SECRET)
        .arg(&stop)
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = writer.stdout.take().unwrap();
    let saves = std::thread::spawn(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    (config_home, file, stop, writer, saves)
}

/// A 4 MB client file rewritten in a tight loop by its client (atomic saves, each adding a key
/// and putting back its own server with a plain-text key) while Gatehouse writes its entry and
/// removes that server 200 times: every save the client made is in the file at the end,
/// Gatehouse's entry is there, and no copy Gatehouse kept holds the key it removed.
#[test]
fn a_clients_saves_are_never_lost_while_gatehouse_edits_its_file() {
    let dir = tempfile::tempdir().unwrap();
    // A client's history: 4 MB of other keys.
    let (config_home, file, stop, mut writer, saves) = busy_client(dir.path(), 4000, &[]);
    let (mut wrote, mut refused) = (0, Vec::new());
    for _ in 0..200 {
        match write_and_remove(&file, &config_home) {
            (true, _) => wrote += 1,
            (false, err) => refused.push(err),
        }
    }
    std::fs::write(&stop, "").unwrap();
    assert!(writer.wait().unwrap().success());
    let saves = saves.join().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let lost: Vec<&String> = saves
        .iter()
        .filter(|n| v["saves"].get(format!("s{n}")).is_none())
        .collect();
    eprintln!(
        "{} client saves, {wrote} Gatehouse edits written, {} refused as the file kept changing; {} saves lost",
        saves.len(),
        refused.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "client saves lost: {lost:?}");
    assert!(saves.len() > 20, "the client hardly saved: {}", saves.len());
    // A refusal says why and that nothing was written; most edits land.
    for err in &refused {
        assert!(
            err.contains("kept changing") && err.contains("nothing was written"),
            "{err}"
        );
    }
    assert!(
        wrote >= 100,
        "only {wrote} of 200 edits landed: {:?}",
        refused.first()
    );
    // Gatehouse's entry went in, and stays: the client's later saves were made on top of it.
    assert!(v["mcpServers"].get("gatehouse").is_some(), "no entry");
    // No copy holds the key that was moved out of the file.
    let copies = gatehouse::client_file::backup::copies(&file);
    assert!(!copies.is_empty() && copies.len() <= gatehouse::client_file::backup::KEEP);
    for c in &copies {
        let copy = std::fs::read_to_string(c).unwrap();
        assert!(
            !copy.contains(SECRET),
            "{} holds the moved key",
            c.display()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(c).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", c.display());
        }
    }
}

/// A client that saves its 3.5 MB file on a timer, every 200 ms (as Cursor saves its state):
/// most of Gatehouse's writes land — it waits for a save and writes right after it, rather
/// than losing every race to the next one — and none of the client's saves is lost.
#[test]
fn writes_land_beside_a_client_saving_every_200_ms() {
    let dir = tempfile::tempdir().unwrap();
    let (config_home, file, stop, mut writer, saves) =
        busy_client(dir.path(), 3500, &["200", "inplace"]);
    let runs = 40;
    let mut wrote = 0;
    for _ in 0..runs {
        if write_and_remove(&file, &config_home).0 {
            wrote += 1;
        }
    }
    std::fs::write(&stop, "").unwrap();
    assert!(writer.wait().unwrap().success());
    let saves = saves.join().unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let lost = saves
        .iter()
        .filter(|n| v["saves"].get(format!("s{n}")).is_none())
        .count();
    eprintln!(
        "{} client saves, {wrote} of {runs} Gatehouse writes landed, {lost} saves lost",
        saves.len()
    );
    assert_eq!(lost, 0, "client saves lost");
    assert!(saves.len() > 5, "the client hardly saved: {}", saves.len());
    assert!(
        wrote * 4 >= runs * 3,
        "only {wrote} of {runs} writes landed"
    );
}

/// The real Claude Code adding servers to its `~/.claude.json` (under its own lock) while
/// Gatehouse writes its entry there again and again: every server Claude Code added is there,
/// and so is Gatehouse's entry.
#[tokio::test]
#[ignore = "needs the real Claude Code: run `make test`"]
async fn claude_codes_saves_and_gatehouses_entry_both_land() {
    let claude = peer_bin("claude-code/node_modules/.bin/claude");
    let dir = tempfile::tempdir().unwrap();
    let served = serve(
        dir.path(),
        &json!({"servers": {"fx": fixture(&[])}}).to_string(),
        &["fx"],
    )
    .await;
    let home = dir.path().to_owned();
    let adds = 10;
    let claude_home = home.clone();
    let adder = std::thread::spawn(move || {
        for n in 0..adds {
            let out = Command::new(&claude)
                .args([
                    "mcp",
                    "add",
                    "-s",
                    "user",
                    &format!("added-{n}"),
                    "--",
                    "srv",
                ])
                .current_dir(&claude_home)
                .env("HOME", &claude_home)
                .env("DISABLE_AUTOUPDATER", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    let mut written = 0;
    while !adder.is_finished() {
        let out = Command::new(GATEHOUSE)
            .arg("--control")
            .arg(&served.sock)
            .args(["client-config", "claude-code", "--write"])
            .env("HOME", &home)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() || err.contains("nothing was written"),
            "{err}"
        );
        written += usize::from(out.status.success());
    }
    adder.join().unwrap();
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude.json")).unwrap()).unwrap();
    let servers = &v["mcpServers"];
    for n in 0..adds {
        assert!(
            servers.get(format!("added-{n}")).is_some(),
            "Claude Code's added-{n} was lost: {servers}"
        );
    }
    assert!(written > 0);
    assert!(servers.get("gatehouse").is_some(), "{servers}");
    assert!(
        !home.join(".claude.json.lock").exists(),
        "a lock was left behind"
    );
}

//! Other local users: the control socket lives only in a directory of our own, the CLI trusts only
//! a hub of our own user, and everything Gatehouse keeps is private (0700/0600) whatever the umask.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::*;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

fn is_root() -> bool {
    nix::unistd::getuid().is_root()
}

fn serve_cmd(dir: &std::path::Path, control: &std::path::Path) -> std::process::Output {
    let mut child = serve_command(dir, &config(&[]))
        .env("GATEHOUSE_CONTROL", control)
        .env("GATEHOUSE_TOKEN", "t".repeat(64))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A refused start exits at once; a start that is not refused is stopped after a moment.
    for _ in 0..100 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

#[test]
fn the_control_socket_is_refused_in_a_directory_others_can_use() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = serve_cmd(dir.path(), &shared.join("control.sock"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("writable by other users") && err.contains("chmod 700"),
        "{err}"
    );
    assert!(!shared.join("control.sock").exists());

    if is_root() {
        // A directory another user prepared, even closed to others, is theirs.
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let out = serve_cmd(dir.path(), &theirs.join("control.sock"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("belongs to uid 65534"), "{err}");
    }
}

#[test]
fn the_cli_trusts_only_a_hub_of_its_own_user() {
    if !is_root() {
        eprintln!("skipped: needs root to run the impostor as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = theirs.join("control.sock");
    // Another user's process on the socket, answering every request with a fake gateway.
    let impostor = r#"
import os, socket, sys
os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen()
print("ready", flush=True)
while True:
    c, _ = s.accept()
    try:
        c.recv(65536)
        c.sendall(b'{"ok":true,"result":{"url":"http://127.0.0.1:9/mcp","token":"stolen"}}\n')
    except OSError:
        pass
    c.close()
"#;
    let mut child = Reaped(
        Command::new("python3")
            .args(["-c", impostor, sock.to_str().unwrap()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    for args in [
        &["connect"][..],
        &["status"][..],
        &["client-config", "cursor"][..],
    ] {
        let out = Command::new(GATEHOUSE)
            .args(args)
            .env("GATEHOUSE_CONTROL", &sock)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("served by uid 65534"), "{args:?}: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("stolen"));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn everything_gatehouse_keeps_is_private_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    // A data dir left open by an older version, with a readable activity log in it.
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(data.join("notes.txt"), "kept").unwrap();
    std::fs::set_permissions(
        data.join("notes.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let cfg = config(&[("fx", fixture(&[]))]);
    let served = serve(dir.path(), &cfg, &["fx"]).await;
    // A call, so the activity log and its WAL exist.
    let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = http
        .post(&served.info.url)
        .bearer_auth(&served.info.token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"x"}}});
    http.post(&served.info.url)
        .bearer_auth(&served.info.token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &sid)
        .header("content-type", "application/json")
        .body(call.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !data.join("activity.db-wal").exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(mode(&data), 0o700, "data dir");
    for f in [
        "notes.txt",
        "activity.db",
        "activity.db-wal",
        "approvals.json",
        "logs/fx.log",
    ] {
        assert_eq!(mode(&data.join(f)), 0o600, "{f}");
    }
    assert_eq!(mode(&data.join("logs")), 0o700, "logs dir");
    assert_eq!(
        mode(&dir.path().join("gatehouse.json.bak")),
        0o600,
        "config backup"
    );
    let log = std::fs::read_to_string(&served.log).unwrap();
    assert!(log.contains("they are private now"), "{log}");
}

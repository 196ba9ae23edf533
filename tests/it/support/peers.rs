//! The real peers and clients the tests run: a peer's Python, a script of `tests/clients`, a
//! client's last JSON line, a client profile's token, a scratch home with something to protect.

use std::path::{Path, PathBuf};
use std::process::Command;

use gatehouse::control::{ControlClient, GatewayInfo, Request};
use serde_json::Value;

use super::peer_bin;

pub fn python() -> String {
    peer_bin("venv/bin/python")
}

pub fn clients_script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

pub fn run_json(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

pub async fn token_of(dir: &Path, client: &str) -> String {
    ControlClient::new(dir.join("control.sock"))
        .request::<GatewayInfo>(&Request::Gateway {
            client: Some(client.into()),
        })
        .await
        .unwrap()
        .token
}

/// A scratch home: a credential store, a startup file, notes, an empty data folder and a git
/// repository with one commit.
pub fn scratch_home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    for d in [".ssh", "notes", "data", "repo"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "CANARY-PRIVATE-KEY").unwrap();
    std::fs::write(home.join(".bashrc"), "# the person's shell\n").unwrap();
    std::fs::write(home.join("notes/todo.md"), "buy milk\n").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(home.join("repo"))
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(home.join("repo/README.md"), "hello\n").unwrap();
    git(&["add", "README.md"]);
    git(&["commit", "-qm", "first"]);
    home
}

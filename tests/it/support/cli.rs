//! The CLI run as people run it, away from the tests' usual environment: with a home of its own
//! (`gh_home`, its status rows), against the MCP Registry's stand-in (`gh_registry`,
//! `registry_stand_in`), or with no hub at all (`run_import`); and its output as one text.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Served, GATEHOUSE};

/// The CLI against the hub `s`, with a HOME and config dir of its own (so the default config
/// path exists nowhere: whatever a verb reads, it found through the hub or its flags).
pub fn gh_home(s: &Served, home: &Path, args: &[&str]) -> Output {
    Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", &s.sock)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("COLUMNS", "200")
        .output()
        .unwrap()
}

pub fn output_text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn home_status(s: &Served, home: &Path) -> Vec<Value> {
    let out = gh_home(s, home, &["status", "--json"]);
    assert!(out.status.success(), "{}", output_text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn row(s: &Served, home: &Path, id: &str) -> Value {
    home_status(s, home)
        .into_iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

pub async fn wait_row(s: &Served, home: &Path, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = row(s, home, id);
        if pred(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "{id}: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub struct Stand(Child, pub String);

impl Drop for Stand {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn registry_stand_in(mode: &str) -> Stand {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/registry_server.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(mode)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = format!("http://127.0.0.1:{}", line.trim());
    Stand(child, url)
}

/// The CLI with the stand-in as its MCP Registry and its npm index.
pub fn gh_registry(dir: &Path, registry: &str, args: &[&str], stdin: &str) -> Output {
    let mut c = Command::new(GATEHOUSE)
        .args(args)
        .env("GATEHOUSE_CONTROL", dir.join("control.sock"))
        .env("GATEHOUSE_REGISTRY_URL", registry)
        .env("npm_config_registry", registry)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

/// Runs `gatehouse ARGS` with a control socket that has no hub (unless `sock` is given).
pub fn run_import(dir: &Path, sock: Option<&Path>, args: &[&str]) -> (i32, String, String) {
    let none = dir.join("no-hub.sock");
    // No package index reachable (as `make test` runs everything): nothing here is pinned, so
    // the entries read as the client's file wrote them, with `cargo test` alone too.
    let dead = "http://127.0.0.1:9";
    let out = Command::new(GATEHOUSE)
        .arg("--control")
        .arg(sock.unwrap_or(&none))
        .args(args)
        .env(
            "npm_config_registry",
            std::env::var("npm_config_registry").unwrap_or(dead.into()),
        )
        .env(
            "GATEHOUSE_PYPI_URL",
            std::env::var("GATEHOUSE_PYPI_URL").unwrap_or(dead.into()),
        )
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

//! A secret Gatehouse hands a server (from the keychain, into its environment) never comes back
//! to a client through that server's results — unless the entry names it in
//! `unmasked_secrets`, a secret it is meant to hand over.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

fn set_secret(s: &Served, name: &str, value: &str) {
    use std::io::Write;
    let mut child = Command::new(GATEHOUSE)
        .args(["secret", "set", name])
        .env("GATEHOUSE_CONTROL", &s.sock)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(value.as_bytes())
        .unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `getenv` puts the server's environment value in its result: the keychain secret comes back
/// to the client as `[secret:NAME]`, in the text and in `structuredContent` alike; a secret the
/// entry hands over (`unmasked_secrets`) comes back as it is.
#[tokio::test]
#[ignore = "needs a keychain: run `make test` (scripts/with-keyring.sh)"]
async fn a_servers_keychain_secret_never_reaches_the_client_in_a_result() {
    let (key, link) = (
        format!("mask-key-{}", fastrand::u32(..)),
        format!("mask-link-{}", fastrand::u32(..)),
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {
            "fx": {"command": FIXTURE, "env": {"API_KEY": {"secret": key}}},
            "share": {"command": FIXTURE, "env": {"LINK": {"secret": link}}, "unmasked_secrets": [link]},
            "plain": {"command": FIXTURE}
        },
        "approval": {"default": "flagged-only"}
    });
    let s = serve(dir.path(), &cfg.to_string(), &["plain"]).await;
    set_secret(&s, &key, "sk-live-masked-0123456789");
    set_secret(&s, &link, "https://share.example/handed-over-42");
    let c = Client::connect(&s, "c").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let (secret, handed) = loop {
        let a = c.call(1, "fx__getenv", json!({"name": "API_KEY"})).await;
        let b = c.call(2, "share__getenv", json!({"name": "LINK"})).await;
        if a["result"]["isError"] != true && b["result"]["isError"] != true {
            break (a, b);
        }
        assert!(Instant::now() < deadline, "{a} {b}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let whole = secret.to_string();
    assert!(
        !whole.contains("sk-live-masked"),
        "the secret reached the client: {whole}"
    );
    assert!(
        text_of(&secret).contains(&format!("[secret:{key}]")),
        "{whole}"
    );
    assert_eq!(
        text_of(&handed),
        "\"https://share.example/handed-over-42\"",
        "{handed}"
    );
}

//! The watch on the clients' files, in the app: a server entry written into `~/.cursor/mcp.json`
//! by something else is shown in Servers (what was added, the diff, Put it back), on the tray's
//! menu and in a notification; Put it back restores the file byte for byte and every trace of
//! the alert goes.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::lock;
use crate::support::*;

const ORIGINAL: &[u8] = b"{\n  \"mcpServers\": {\"notes\": {\"command\": \"notes-mcp\"}}\n}\n";

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn a_client_file_changed_outside_gatehouse_is_shown_and_put_back() {
    let _serial = lock().await;
    let notices = crate::notices::Notices::start().await;
    let d = Desktop::launch_with(json!({ "alpha": fixture() }), |home| {
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::fs::write(home.join(".cursor/mcp.json"), ORIGINAL).unwrap();
    })
    .await;
    d.wait_state("alpha", "running").await;
    let cursor = d.dir.path().join(".cursor/mcp.json");
    let index = d.dir.path().join("data/client-files/index.json");
    let shown = cursor.display().to_string();
    until("the watch's first look", || {
        std::fs::read_to_string(&index).is_ok_and(|t| t.contains(&shown))
    })
    .await;
    // Something else adds a server to Cursor's file.
    std::fs::write(
        &cursor,
        r#"{"mcpServers": {"notes": {"command": "notes-mcp"}, "helper": {"command": "npx", "args": ["-y", "evil-helper"]}}}"#,
    )
    .unwrap();
    d.view("servers").await;
    let card = d
        .wait_js(
            "the change in Servers",
            "const c = document.querySelector('#client-files .client-file'); return c && !c.parentElement.hidden ? c.textContent : null;",
        )
        .await;
    let card = card.as_str().unwrap_or_default().to_owned();
    assert!(card.contains(&shown), "{card}");
    assert!(card.contains("server \"helper\" added"), "{card}");
    assert!(card.contains("evil-helper"), "the diff: {card}");
    let tray = d.dir.path().join("tray.txt");
    until("the tray's line", || {
        std::fs::read_to_string(&tray)
            .is_ok_and(|t| t.contains("⚠ A client's file changed outside Gatehouse…"))
    })
    .await;
    let notice = notices.wait_for("server \"helper\" added").await;
    assert_eq!(notice.summary, "A client's file changed outside Gatehouse");
    assert!(notice.body.contains(&shown), "{}", notice.body);

    d.click("#client-files .client-file button.primary").await;
    until("the file put back", || {
        std::fs::read(&cursor).is_ok_and(|b| b == ORIGINAL)
    })
    .await;
    d.wait_js(
        "the change gone from Servers",
        "return document.getElementById('client-files').hidden;",
    )
    .await;
    until("the tray's line gone", || {
        std::fs::read_to_string(&tray).is_ok_and(|t| !t.contains("changed outside Gatehouse"))
    })
    .await;
    d.quit().await;
}

//! Pins of what a server says, in the app: a real MCP client (the Python SDK) reads an app's
//! `ui://` resource; the server then changes the HTML. The client keeps getting the approved
//! HTML, Servers shows the change (sizes, hashes, the new HTML as text — never rendered) and a
//! notification says so; "Approve the change" makes the new HTML what the client gets.

use serde_json::json;

use crate::lock;
use crate::notices::Notices;
use crate::support::*;

fn read_html(d: &Desktop) -> String {
    let out = d
        .client_call(json!([["@read", {"uri": "ui://said/app.html"}]]))
        .finish();
    out["results"]["@read"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no HTML: {out}"))
        .to_owned()
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn a_changed_app_is_held_shown_and_served_only_once_approved() {
    let _serial = lock().await;
    let notices = Notices::start().await;
    let said_dir = tempfile::tempdir().unwrap();
    let said = said_dir.path().join("said.json");
    std::fs::write(&said, json!({"ui": "<p>approved</p>"}).to_string()).unwrap();
    let mut fx = fixture();
    fx["args"] = json!(["--said-file", said]);
    fx["sandbox"] = json!({"read": [said_dir.path()]});
    let d = Desktop::launch(json!({ "said": fx })).await;
    d.wait_state("said", "running").await;
    assert_eq!(read_html(&d), "<p>approved</p>");

    std::fs::write(
        &said,
        json!({"ui": "<p>new</p><img src=x onerror=alert(1)>"}).to_string(),
    )
    .unwrap();
    assert_eq!(
        read_html(&d),
        "<p>approved</p>",
        "the unapproved HTML was served"
    );
    d.view("servers").await;
    let card = d
        .wait_js(
            "the held change in Servers",
            "const c = document.querySelector('#held-changes .held-change'); return c && !c.parentElement.hidden ? c.textContent : null;",
        )
        .await;
    let card = card.as_str().unwrap_or_default().to_owned();
    assert!(
        card.contains("said changed the app at ui://said/app.html"),
        "{card}"
    );
    assert!(
        card.contains("<img src=x onerror=alert(1)>"),
        "the new HTML as text: {card}"
    );
    let rendered = d
        .js("return document.querySelectorAll('#held-changes img').length;")
        .await;
    assert_eq!(rendered, json!(0), "the new HTML was rendered");
    let notice = notices
        .wait_for("changed the app at ui://said/app.html")
        .await;
    assert_eq!(notice.summary, "A server changed what it says");

    d.click("#held-changes .held-change button.primary").await;
    d.wait_js(
        "the change gone from Servers",
        "return document.getElementById('held-changes').hidden;",
    )
    .await;
    assert_eq!(read_html(&d), "<p>new</p><img src=x onerror=alert(1)>");
    d.quit().await;
}

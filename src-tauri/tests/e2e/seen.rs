//! What the person approves is what runs, where they decide: hidden characters and a borrowed
//! client name read back off the modal and the native prompt as a person sees them (`⟨U+XXXX⟩`,
//! the profile first, the flags); a call that replaces the one shown is guarded, so a click or a
//! key on its way answers nothing; "Allow all like this" covers one client profile only.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;
use crate::{is_error, lock};

/// A look-alike of "Claude Code" (a Cyrillic С and a zero-width space).
const BORROWED: &str = "\u{0421}laude\u{200B} Code";

/// The requests `approvals --json` lists now.
fn waiting(d: &Desktop) -> Vec<Value> {
    let (code, out, err) = d.cli(&["approvals", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Value>(&out)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

async fn wait_waiting(d: &Desktop, n: usize) {
    for _ in 0..200 {
        if waiting(d).len() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never {n} calls waiting: {:?}", waiting(d));
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn the_modal_shows_hidden_characters_and_guards_a_swapped_call() {
    let _serial = lock().await;
    let mut files = fixture();
    files["sandbox"] = json!("off");
    let d = Desktop::launch(json!({ "files": files })).await;
    d.wait_state("files", "running").await;
    let path = |n: &str| d.dir.path().join(n).to_string_lossy().into_owned();
    let evil = format!("{}/evil\u{202E}hs.txt", d.dir.path().display());

    // A hostile client's call: its name, and the path, shown as they are.
    let first = d.client_call_named(TOKEN, BORROWED, json!([["files__touch", { "path": evil }]]));
    d.wait_js(
        "the modal",
        "return document.getElementById('approval-dialog').open;",
    )
    .await;
    assert_eq!(
        d.text("#approval-client").await,
        "client profile default — says “Сlaude⟨U+200B⟩ Code”"
    );
    let imitates = d.text("#approval-imitates").await;
    assert!(imitates.contains("imitates “Claude Code”"), "{imitates}");
    assert!(d
        .text("#approval-hidden")
        .await
        .contains("Contains hidden characters"));
    let args = d.text("#approval-arguments").await;
    assert!(args.contains("evil⟨U+202E⟩hs.txt"), "{args}");
    assert!(
        !args
            .chars()
            .any(|c| c != '\n' && gatehouse::text::is_hidden(c)),
        "the modal showed a hidden character raw: {args:?}"
    );

    // A second client's call waits behind it; the first gives up (its call is withdrawn) and
    // the second takes its place — a click already on its way lands on nothing.
    let second = d.client_call_named(
        TOKEN,
        "second",
        json!([["files__touch", { "path": path("second") }]]),
    );
    wait_waiting(&d, 2).await;
    d.wait_js(
        "the modal's answers live",
        "return !document.getElementById('approval-once').disabled;",
    )
    .await;
    drop(first);
    let second_path = path("second");
    d.wait_js(
        "the second call in the modal",
        &format!(
            "return document.getElementById('approval-arguments').textContent.includes({second_path:?});"
        ),
    )
    .await;
    d.click_now("#approval-once").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let left = waiting(&d);
    assert_eq!(
        left.len(),
        1,
        "the click answered the swapped call: {left:?}"
    );
    assert_eq!(left[0]["client"]["name"], "second");
    assert!(!d.dir.path().join("second").exists());
    assert!(d.text("#approval-swapped").await.contains("different call"));
    // Once live, the person's answer is taken.
    d.click("#approval-deny").await;
    assert!(is_error(&second.finish(), "files__touch"));
    // The borrowed name is marked in Activity's list too, not only in the prompt.
    d.view("activity").await;
    d.wait_js(
        "the borrowed name marked in Activity's list",
        "return [...document.querySelectorAll('#activity-table tbody tr[data-key]')]
           .some((r) => r.textContent.includes('Сlaude⟨U+200B⟩ Code ⚠ imitates “Claude Code”'));",
    )
    .await;
    d.quit().await;
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn allow_all_like_this_answers_one_client_profile_only() {
    let _serial = lock().await;
    let mut files = fixture();
    files["sandbox"] = json!("off");
    let d = Desktop::launch(json!({ "files": files })).await;
    d.wait_state("files", "running").await;
    let (code, _, err) = d.cli(&["clients", "add", "work"]);
    assert_eq!(code, 0, "{err}");
    let work = d.profile_token("work");
    let path = |n: &str| d.dir.path().join(n).to_string_lossy().into_owned();
    let a = d.client_call(json!([["files__touch", { "path": path("a") }]]));
    d.wait_js(
        "the modal",
        "return document.getElementById('approval-dialog').open;",
    )
    .await;
    let b = d.client_call(json!([["files__touch", { "path": path("b") }]]));
    let other = d.client_call_as(&work, json!([["files__touch", { "path": path("w") }]]));
    wait_waiting(&d, 3).await;
    let label = d
        .wait_js(
            "Allow all like this, for this profile's two calls",
            "const b = document.getElementById('approval-allow-like');
             return !b.hidden && document.querySelectorAll('#approval-waiting li').length === 2
                    ? b.textContent : null;",
        )
        .await;
    assert_eq!(label, "Allow all 2 like this, once each");
    d.click("#approval-allow-like").await;
    d.answer_native_dialog("Allow all", "Return").await;
    assert!(!is_error(&a.finish(), "files__touch"));
    assert!(!is_error(&b.finish(), "files__touch"));
    // The other profile's call was not answered.
    let left = waiting(&d);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["client"]["profile"], "work");
    assert!(!d.dir.path().join("w").exists());
    d.click("#approval-deny").await;
    assert!(is_error(&other.finish(), "files__touch"));
    d.quit().await;
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn the_native_prompt_shows_hidden_characters_and_guards_a_swapped_call() {
    let _serial = lock().await;
    let mut files = fixture();
    files["sandbox"] = json!("off");
    let d = Desktop::launch(json!({ "files": files })).await;
    d.wait_state("files", "running").await;
    d.close_window();
    let dump = d.dir.path().join("prompt.txt");
    let path = |n: &str| d.dir.path().join(n).to_string_lossy().into_owned();
    let evil = format!("{}/evil\u{202E}hs.txt", d.dir.path().display());
    let first = d.client_call_named(
        TOKEN,
        BORROWED,
        json!([["files__touch", { "path": evil, "note": "line one\nline two" }]]),
    );
    let shown = wait_dump(&dump, "evil").await;
    for want in [
        "client profile default — says \"Сlaude⟨U+200B⟩ Code\"",
        "imitates \"Claude Code\"",
        "Contains hidden characters",
        "evil⟨U+202E⟩hs.txt",
        "2 arguments",
        "line one\nline two",
    ] {
        assert!(shown.contains(want), "the prompt lacks {want:?}:\n{shown}");
    }
    assert!(
        !shown
            .chars()
            .any(|c| c != '\n' && gatehouse::text::is_hidden(c)),
        "the prompt showed a hidden character raw: {shown:?}"
    );
    // The call shown is withdrawn and the next takes its place: a key already on its way
    // (Alt+O, allow once) answers nothing; the prompt says it is another call.
    let second = d.client_call_named(
        TOKEN,
        "second",
        json!([["files__touch", { "path": path("second") }]]),
    );
    wait_waiting(&d, 2).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let _ = std::fs::remove_file(&dump);
    drop(first);
    wait_dump(&dump, "second").await;
    answer_native(PROMPT, "alt+o").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let left = waiting(&d);
    assert_eq!(left.len(), 1, "the key answered the swapped call: {left:?}");
    assert!(!d.dir.path().join("second").exists());
    let shown = std::fs::read_to_string(&dump).unwrap_or_default();
    assert!(shown.contains("different call"), "{shown}");
    answer_prompt("Escape").await;
    assert!(is_error(&second.finish(), "files__touch"));
    d.quit().await;
}

/// Waits until the prompt has written what it shows, holding `part`; returns it.
async fn wait_dump(dump: &std::path::Path, part: &str) -> String {
    for _ in 0..200 {
        if let Ok(t) = std::fs::read_to_string(dump) {
            if t.contains(part) {
                return t;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the prompt never showed {part:?}: {:?}",
        std::fs::read_to_string(dump)
    );
}

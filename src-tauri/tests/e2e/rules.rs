//! Asking less without being less exact, in the window: the modal offers a rule prefilled from
//! the call (its path argument's folder) and the exact-call answers; the rule, once added, runs
//! the next call in that folder without asking; Permissions lists it and tests the rules against
//! the recorded calls; "this exact call" covers the same arguments and nothing else.

use serde_json::{json, Value};

use crate::support::*;
use crate::{is_error, lock};

fn activity(d: &Desktop) -> Vec<Value> {
    let (code, out, err) = d.cli(&["activity", "--json", "--limit", "20"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_default()
}

async fn modal_open(d: &Desktop) {
    d.wait_js(
        "the modal",
        "return document.getElementById('approval-dialog').open;",
    )
    .await;
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn the_modal_offers_a_rule_and_the_exact_call() {
    let _serial = lock().await;
    let mut files = fixture();
    files["sandbox"] = json!("off");
    let d = Desktop::launch(json!({ "files": files })).await;
    d.wait_state("files", "running").await;
    let notes = d.dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let at = |n: &str| notes.join(n).to_string_lossy().into_owned();

    // The offer is the path's folder; adding it allows this call once and saves the rule.
    let first = d.client_call(json!([["files__touch", { "path": at("a.txt") }]]));
    modal_open(&d).await;
    let offer = d.text("#approval-rule-text").await;
    assert_eq!(
        offer,
        format!(
            "Always allow touch when path is under {}, and allow this call?",
            notes.display()
        )
    );
    for b in ["#approval-exact", "#approval-exact-always"] {
        assert!(!d.text(b).await.is_empty(), "{b} is offered");
    }
    d.click("#approval-rule-add").await;
    assert!(!is_error(&first.finish(), "files__touch"));
    assert!(notes.join("a.txt").exists());
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(&d.config_path).unwrap()).unwrap();
    assert_eq!(
        config["servers"]["files"]["tools"]["touch"]["rules"],
        json!([{ "allow": { "path": { "under": notes } } }])
    );

    // The next call in that folder is not asked: the rule decides, and its row says so.
    let second = d.client_call(json!([["files__touch", { "path": at("b.txt") }]]));
    assert!(!is_error(&second.finish(), "files__touch"));
    let rows = activity(&d);
    assert_eq!(rows[0]["decided_by"], "rule", "{:?}", rows[0]);
    assert_eq!(rows[0]["rule"], "servers.files.tools.touch.rules[0]");

    // The server's tools table says the rule decides, and for whom — not a bare "asks you".
    d.view("servers").await;
    d.click("article.server[data-id=files] .expand").await;
    let flag = d
        .wait_js(
            "touch's flags",
            "const r = document.querySelector('article.server[data-id=files] .tools tbody tr[data-tool=touch]');
             const f = r && r.querySelector('.flag-rule');
             return f && f.textContent;",
        )
        .await;
    let flag = flag.as_str().unwrap_or("");
    assert!(
        flag.starts_with("unless a rule decides: allow when path is under")
            && flag.ends_with("(every client)"),
        "{flag}"
    );
    d.click("article.server[data-id=files] .expand").await;

    // Permissions lists the rule by its name and tests the rules on the recorded calls.
    d.view("permissions").await;
    d.wait_js(
        "the rule's row",
        "return !!document.querySelector('#rules-table tr[data-at=\"servers.files.tools.touch.rules[0]\"]');",
    )
    .await;
    d.click("#rules-test").await;
    d.wait_js(
        "the test's result",
        "return document.getElementById('rules-test-result').textContent.includes('otherwise');",
    )
    .await;
    let said = d.text("#rules-test-result").await;
    assert!(said.contains("2 would be allowed"), "{said}");
    // Not only totals: the call that would go otherwise (asked then, the rule's now), by name.
    assert!(
        said.contains("1 would go otherwise than they did:"),
        "{said}"
    );
    let changed = d.text("#rules-test-changes").await;
    assert!(
        changed.contains(
            "files__touch: approved once, would be allowed by servers.files.tools.touch.rules[0]"
        ),
        "{changed}"
    );
    assert_eq!(changed.lines().count(), 1, "{changed}");

    // "This exact call": the same call again in the session is not asked (it would wait here
    // for an answer nobody gives); the activity says which grant decided it.
    let outside = d.dir.path().join("out.txt").to_string_lossy().into_owned();
    let twice = json!([
        ["files__touch", { "path": outside }],
        ["files__touch", { "path": outside }]
    ]);
    let third = d.client_call(twice);
    modal_open(&d).await;
    d.click("#approval-exact").await;
    assert!(!is_error(&third.finish(), "files__touch"));
    let rows = activity(&d);
    let by: Vec<(&str, &str)> = rows[..2]
        .iter()
        .map(|r| {
            (
                r["decision"].as_str().unwrap(),
                r["decided_by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [("remembered_exact", "exact"), ("approved_exact", "person")],
        "{rows:?}"
    );

    // A rule offered from a profile's call, taken "for that profile only": it decides that
    // profile's next call there, never another client's.
    let (code, _, err) = d.cli(&["clients", "add", "work"]);
    assert_eq!(code, 0, "{err}");
    let work = d.profile_token("work");
    let shared = d.dir.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let in_shared = |n: &str| shared.join(n).to_string_lossy().into_owned();
    let call = d.client_call_as(
        &work,
        json!([["files__touch", { "path": in_shared("w1") }]]),
    );
    modal_open(&d).await;
    assert_eq!(
        d.text("#approval-rule-add-profile").await,
        "For client profile work only"
    );
    d.click("#approval-rule-add-profile").await;
    assert!(!is_error(&call.finish(), "files__touch"));
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(&d.config_path).unwrap()).unwrap();
    assert_eq!(
        config["clients"]["work"]["tools"]["files__touch"]["rules"],
        json!([{ "allow": { "path": { "under": shared } } }])
    );
    let again = d.client_call_as(
        &work,
        json!([["files__touch", { "path": in_shared("w2") }]]),
    );
    assert!(!is_error(&again.finish(), "files__touch"));
    assert_eq!(
        activity(&d)[0]["rule"],
        "clients.work.tools.files__touch.rules[0]"
    );
    // Another client (the gateway token) is asked, not allowed by it.
    let other = d.client_call(json!([["files__touch", { "path": in_shared("o1") }]]));
    modal_open(&d).await;
    d.click("#approval-deny").await;
    assert!(is_error(&other.finish(), "files__touch"));
    assert!(!shared.join("o1").exists());
    d.view("permissions").await;
    d.wait_js(
        "the profile's rule says whom it covers",
        "const r = document.querySelector('#rules-table tr[data-at=\"clients.work.tools.files__touch.rules[0]\"]');
         return r && r.textContent.includes('client profile work only');",
    )
    .await;
}

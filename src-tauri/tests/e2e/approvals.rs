//! The approval modal (allow, deny, remember; the Permissions view), the queue, and a client's
//! patience named where the person decides.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;
use crate::{is_error, lock, text_of};

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn approval_modal_allows_denies_and_remembers() {
    let _serial = lock().await;
    // Its calls leave files in the test's directory, outside any sandbox's places.
    let mut files = fixture();
    files["sandbox"] = json!("off");
    let d = Desktop::launch(json!({ "files": files })).await;
    d.wait_state("files", "running").await;
    let target = |n: u32| d.dir.path().join(format!("touched-{n}"));
    let call = |n: u32| {
        d.client_call(json!([[
            "files__touch",
            { "path": target(n).to_string_lossy() }
        ]]))
    };
    let modal_for = |n: u32| {
        let path = target(n).to_string_lossy().into_owned();
        format!(
            "const d = document.getElementById('approval-dialog');
             return d.open && document.getElementById('approval-arguments').textContent.includes({path:?});"
        )
    };

    // 1. Allow once: the modal shows server, tool and the exact arguments; the call runs.
    let c1 = call(1);
    d.wait_js("the modal for call 1", &modal_for(1)).await;
    d.wait_js(
        "the modal's answers live",
        "return !document.getElementById('approval-deny').disabled;",
    )
    .await;
    let shown = d
        .js(
            "return { server: document.getElementById('approval-server').textContent,
                      goes: document.getElementById('approval-goes').textContent,
                      tool: document.getElementById('approval-tool').textContent,
                      args: document.getElementById('approval-arguments').textContent,
                      reason: document.getElementById('approval-reason').textContent,
                      focused: document.activeElement.id };",
        )
        .await;
    assert!(
        shown["reason"]
            .as_str()
            .unwrap_or("")
            .contains("does not declare itself read-only"),
        "the modal says why it asks: {shown}"
    );
    assert_eq!(shown["server"], "files");
    assert!(
        shown["goes"]
            .as_str()
            .unwrap_or("")
            .starts_with("runs on this computer as "),
        "the modal says where the call goes: {shown}"
    );
    assert!(
        shown["tool"]
            .as_str()
            .unwrap_or("")
            .contains("files__touch"),
        "{shown}"
    );
    let args: Value =
        serde_json::from_str(shown["args"].as_str().unwrap_or("")).expect("args json");
    assert_eq!(args, json!({ "path": target(1).to_string_lossy() }));
    assert_eq!(shown["focused"], "approval-deny", "Deny has the focus");
    d.shot("approval").await;
    d.click("#approval-once").await;
    let out = c1.finish();
    assert!(!is_error(&out, "files__touch"), "{out}");
    assert!(target(1).exists(), "the approved call ran");

    // 2. Deny: the client gets isError, nothing runs. A call behind it waits its turn: its
    // countdown starts when it reaches the front, with the whole timeout (60 s), however long
    // the person looked at the one in front.
    let c2 = call(2);
    d.wait_js("the modal for call 2", &modal_for(2)).await;
    let c20 = call(20);
    d.wait_js(
        "call 20 waiting its turn",
        "return document.getElementById('approval-waiting').textContent.includes('waits its turn');",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    d.click("#approval-deny").await;
    let out = c2.finish();
    assert!(is_error(&out, "files__touch"), "{out}");
    assert!(!target(2).exists());
    d.wait_js("the modal for call 20", &modal_for(20)).await;
    // (Read until it says so: the modal may show the call a moment before its new deadline.)
    d.wait_js(
        "call 20's countdown at its whole timeout, not run while it waited",
        "const m = document.getElementById('approval-countdown').textContent.match(/in (\\d+) s/);
         return !!m && Number(m[1]) >= 58;",
    )
    .await;
    d.click("#approval-deny").await;
    assert!(is_error(&c20.finish(), "files__touch"));
    // The person's own Deny is no news to them: no "denied" toast follows it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let toast = d
        .js("const t = document.getElementById('toast'); return t.hidden ? '' : t.textContent;")
        .await;
    assert!(
        !toast.as_str().unwrap_or("").contains("denied"),
        "a toast after the person's own Deny: {toast}"
    );

    // 3. Esc denies.
    let c3 = call(3);
    d.wait_js("the modal for call 3", &modal_for(3)).await;
    // Its answers come alive a moment after it shows (a key meant for what was there is not
    // taken): then Esc denies.
    d.wait_js(
        "the modal's answers live",
        "return !document.getElementById('approval-deny').disabled;",
    )
    .await;
    d.press_on_focused("\u{E00C}").await;
    let out = c3.finish();
    assert!(is_error(&out, "files__touch"), "{out}");
    assert!(text_of(&out, "files__touch").contains("denied"), "{out}");
    assert!(!target(3).exists());

    // 3b. Two waiting for the same tool: the modal lists the other one with its arguments (its
    // countdown not started: it waits its turn), and
    // "Allow all like this" (confirmed) runs both, once each.
    let c7 = call(7);
    d.wait_js("the modal for call 7", &modal_for(7)).await;
    let c8 = call(8);
    let eight = target(8).to_string_lossy().into_owned();
    d.wait_js(
        "the second call listed as also waiting, with its arguments",
        &format!(
            "const o = document.getElementById('approval-others');
             const w = document.getElementById('approval-waiting');
             return !o.hidden && w.querySelectorAll('li').length === 1 && w.textContent.includes('files__touch')
                    && w.textContent.includes('waits its turn') && w.querySelector('.waiting-args').textContent.includes({eight:?})
                    && !document.getElementById('approval-allow-like').hidden;"
        ),
    )
    .await;
    d.shot("approval-queue").await;
    d.click("#approval-allow-like").await;
    d.answer_native_dialog("Allow all", "Return").await;
    assert!(!is_error(&c7.finish(), "files__touch"));
    assert!(!is_error(&c8.finish(), "files__touch"));
    assert!(target(7).exists() && target(8).exists());

    // 3c. Two from this client and one from another (the real Inspector CLI): "Deny all from"
    // this client denies its two only; the other is then decided on its own.
    let c11 = call(11);
    d.wait_js("the modal for call 11", &modal_for(11)).await;
    let c12 = call(12);
    let mut other = inspector_call(&d, &target(13));
    d.wait_js(
        "three waiting, two of them from this client",
        "const b = document.getElementById('approval-deny-from');
         return document.querySelectorAll('#approval-waiting li').length === 2 && !b.hidden
                && b.textContent.startsWith('Deny all 2 from ');",
    )
    .await;
    d.click("#approval-deny-from").await;
    d.answer_native_dialog("Deny all", "Return").await;
    assert!(is_error(&c11.finish(), "files__touch"));
    assert!(is_error(&c12.finish(), "files__touch"));
    let inspected = target(13).to_string_lossy().into_owned();
    d.wait_js(
        "the Inspector's call shown on its own",
        &format!(
            "const d = document.getElementById('approval-dialog');
             return d.open && document.getElementById('approval-client').textContent.includes('says “inspector-cli”')
                    && document.getElementById('approval-arguments').textContent.includes({inspected:?});"
        ),
    )
    .await;
    d.click("#approval-deny").await;
    let _ = other.wait();
    assert!(!target(11).exists() && !target(12).exists() && !target(13).exists());
    d.wait_js(
        "the modal closed",
        "return !document.getElementById('approval-dialog').open;",
    )
    .await;

    // 3d. Deny all (confirmed) denies every waiting call.
    let c9 = call(9);
    d.wait_js("the modal for call 9", &modal_for(9)).await;
    let c10 = call(10);
    d.wait_js(
        "the second call listed",
        "return document.querySelectorAll('#approval-waiting li').length === 1;",
    )
    .await;
    d.click("#approval-deny-all").await;
    d.answer_native_dialog("Deny all", "Return").await;
    assert!(is_error(&c9.finish(), "files__touch"));
    assert!(is_error(&c10.finish(), "files__touch"));
    assert!(!target(9).exists() && !target(10).exists());
    d.wait_js(
        "the modal closed",
        "return !document.getElementById('approval-dialog').open;",
    )
    .await;

    // 4. Always: runs, and the next call runs without asking.
    let c4 = call(4);
    d.wait_js("the modal for call 4", &modal_for(4)).await;
    d.click("#approval-always").await;
    assert!(!is_error(&c4.finish(), "files__touch"));
    d.wait_js(
        "the modal closed",
        "return !document.getElementById('approval-dialog').open;",
    )
    .await;
    let out = call(5).finish();
    assert!(!is_error(&out, "files__touch"), "{out}");
    assert!(target(5).exists());
    let opened = d
        .js("return document.getElementById('approval-dialog').open")
        .await;
    assert_eq!(opened, json!(false), "the remembered call did not ask");
    let (_, activity, _) = d.cli(&["activity", "--json"]);
    assert!(activity.contains("remembered_always"), "{activity}");
    assert!(activity.contains("approved_always"), "{activity}");
    d.view("activity").await;
    d.wait_js(
        "the calls in the Activity view",
        "return document.querySelectorAll('#activity-table tbody tr').length >= 5;",
    )
    .await;
    // At the app's default size (1040 px), the calls are a table: cards only where the columns
    // would not fit.
    d.resize(1040, 720).await;
    let stacked = d
        .wait_js(
            "Activity measured at 1040 px",
            "const t = document.getElementById('activity-table');
             return window.innerWidth <= 1040 ? String(t.classList.contains('stacked')) : null;",
        )
        .await;
    assert_eq!(
        stacked,
        json!("false"),
        "Activity is cards at the default size"
    );
    // A row opens its detail: where the time went (waiting for you, the server's own).
    // (Clicked from the page: the list re-renders every few seconds under the pointer.)
    d.js("document.querySelector('#activity-table tbody tr[data-key]').click(); return true;")
        .await;
    let detail = d
        .wait_js(
            "the detail pane",
            "const t = document.querySelector('#activity-table .activity-detail');
             return t && t.textContent;",
        )
        .await;
    let detail = detail.as_str().unwrap_or("");
    assert!(
        detail.contains("Waiting for you") && detail.contains("Server") && detail.contains(" ms"),
        "{detail}"
    );
    d.shot("activity").await;
    // Export: every call matching the filters, in a new file in the Downloads folder (here
    // HOME/Downloads), the toast saying where. Filtered to the calls approved now: 3 (calls 2,
    // 4 and the session one) of the 5+ rows.
    let downloads = d.dir.path().join("Downloads");
    std::fs::create_dir_all(&downloads).expect("Downloads");
    let approved = activity.matches("\"approved_").count();
    d.select("#activity-decision", "approved").await;
    d.click("#activity-export-csv").await;
    let toast = d
        .wait_js(
            "the export toast",
            "const t = document.getElementById('toast'); return !t.hidden && t.textContent.startsWith('Exported') && t.textContent;",
        )
        .await;
    let exported: Vec<_> = std::fs::read_dir(&downloads)
        .expect("read Downloads")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(exported.len(), 1, "{exported:?}");
    let path = &exported[0];
    assert!(
        toast
            .as_str()
            .unwrap_or("")
            .contains(&path.display().to_string()),
        "{toast}"
    );
    let csv = std::fs::read_to_string(path).expect("the export");
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("time,time_ms,client"), "{csv}");
    assert_eq!(lines.len() - 1, approved, "{csv}");
    assert!(lines[1..].iter().all(|l| l.contains(",approved_")), "{csv}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).expect("meta").permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "the export is readable by its owner only"
        );
    }
    d.select("#activity-decision", "").await;

    // The tool's row in Servers says it is always allowed, and since when.
    d.view("servers").await;
    d.click("article.server[data-id=files] .expand").await;
    d.wait_js(
        "the always flag on the tool row",
        "const r = document.querySelector('article.server[data-id=files] .tools tr[data-tool=touch]');
         return !!r && r.textContent.includes('always allowed (default) since');",
    )
    .await;

    // 5. The Permissions view shows the "always" answer; revoking it makes the next call ask.
    d.view("permissions").await;
    d.wait_js(
        "the always answer listed",
        "return !!document.querySelector('#grants-table tr[data-tool=files__touch][data-scope=always]');",
    )
    .await;
    // It says whom it covers: every client of its profile, naming the one seen calling.
    d.wait_js(
        "the answer's covers line",
        "const c = document.querySelector('#grants-table tr[data-tool=files__touch][data-scope=always] .covers');
         return !!c && c.textContent.startsWith(\"every client with this profile's token — lately \");",
    )
    .await;
    d.shot("permissions").await;
    // Revoked from the tools table, where the answer shows (never "asks you" beside it): the tool
    // asks again, and the Permissions view no longer lists it.
    d.view("servers").await;
    d.wait_js(
        "the always answer with its Revoke, and no 'asks you' beside it",
        "const r = document.querySelector('article.server[data-id=files] .tools tr[data-tool=touch]');
         return !!r && !!r.querySelector('.flag-always [data-act=revoke]') && !r.querySelector('.flag-ask');",
    )
    .await;
    d.click(
        "article.server[data-id=files] .tools tr[data-tool=touch] .flag-always [data-act=revoke]",
    )
    .await;
    d.wait_js(
        "the tool asks again",
        "const r = document.querySelector('article.server[data-id=files] .tools tr[data-tool=touch]');
         return !!r && !!r.querySelector('.flag-ask') && !r.querySelector('.flag-always');",
    )
    .await;
    d.view("permissions").await;
    d.wait_js(
        "the answer gone",
        "return !document.querySelector('#grants-table tr[data-tool=files__touch]');",
    )
    .await;
    let c6 = call(6);
    d.wait_js("the modal for call 6 (asked again)", &modal_for(6))
        .await;
    d.click("#approval-deny").await;
    assert!(is_error(&c6.finish(), "files__touch"));
    assert!(!target(6).exists());
    d.quit().await;
}

/// A client that gives up sooner than the approval timeout is named where the person decides:
/// with the timeout raised to 90 s in Settings, a call from the real MCP Inspector CLI (a
/// TypeScript-SDK client that gives up after 60 s) opens the modal saying so, and Settings then
/// warns under the timeout, naming it and its profile.
#[tokio::test]
#[ignore = "needs a display, tauri-driver, WebKitWebDriver and the Inspector CLI; run by make test"]
async fn the_modal_and_settings_name_a_client_that_gives_up_sooner() {
    let _serial = lock().await;
    let mut files = fixture();
    files["sandbox"] = json!("off");
    let d = Desktop::launch(json!({ "files": files })).await;
    d.wait_state("files", "running").await;
    d.view("settings").await;
    d.wait_js(
        "the settings filled in",
        "return document.querySelector('#settings-form').elements.approval_timeout_secs.value === '60';",
    )
    .await;
    d.js("const f = document.querySelector('#settings-form').elements; f.approval_timeout_secs.value = '90'; return true;")
        .await;
    d.click("#settings-save").await;
    d.wait_js(
        "the timeout saved",
        "return document.querySelector('#settings-form').elements.approval_timeout_secs.value === '90'
                && document.querySelector('#settings-form-error').hidden;",
    )
    .await;
    let target = d.dir.path().join("inspected");
    let mut call = inspector_call(&d, &target);
    let said = d
        .wait_js(
            "the modal naming the client's patience",
            "const d = document.getElementById('approval-dialog');
             const p = document.getElementById('approval-patience');
             return d.open && !p.hidden && p.textContent.length > 0 ? p.textContent : null;",
        )
        .await;
    assert_eq!(
        said,
        json!("the client gives up after 60 s — answer before then, or it will have left")
    );
    d.click("#approval-once").await;
    let status = call.wait().expect("the Inspector CLI ends");
    assert!(status.success() && target.exists(), "the allowed call ran");
    d.view("settings").await;
    let note = d
        .wait_js(
            "Settings warning under the timeout",
            "const n = document.getElementById('settings-patience');
             return !n.hidden && n.textContent.length > 0 ? n.textContent : null;",
        )
        .await;
    assert!(
        note.as_str()
            .unwrap_or("")
            .starts_with("inspector-cli (profile default) gives up after 60 s"),
        "{note}"
    );

    // A call nobody answers in time is counted in a note that stays, not a passing toast; the
    // note leads to Activity showing what timed out.
    d.js("const f = document.querySelector('#settings-form').elements; f.approval_timeout_secs.value = '2'; return true;")
        .await;
    d.click("#settings-save").await;
    d.wait_js(
        "the 2 s timeout saved",
        "return document.querySelector('#settings-form').elements.approval_timeout_secs.value === '2';",
    )
    .await;
    let late = d.client_call(
        json!([["files__touch", { "path": d.dir.path().join("late").to_string_lossy() }]]),
    );
    assert!(
        is_error(&late.finish(), "files__touch"),
        "denied when nobody answered"
    );
    d.wait_js(
        "the lasting note",
        "const n = document.getElementById('away-note');
         return !n.hidden && n.textContent === '1 call was denied while you were away';",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let still = d
        .js("return !document.getElementById('away-note').hidden;")
        .await;
    assert_eq!(still, json!(true), "the note outlasts a toast");
    d.click("#away-note").await;
    d.wait_js(
        "Activity showing the timed-out call",
        "return document.getElementById('activity-decision').value === 'timed_out'
                && !!document.querySelector('#view-activity tr.decision-timed_out')
                && document.getElementById('away-note').hidden;",
    )
    .await;
}

/// The real MCP Inspector CLI calling `files__touch` on `path` through `gatehouse connect` to
/// the app's hub (its client name is `inspector-cli`).
fn inspector_call(d: &Desktop, path: &std::path::Path) -> std::process::Child {
    let inspector = peers_dir().join("clients/node_modules/.bin/mcp-inspector");
    std::process::Command::new(inspector)
        .args(["--cli", &bin("gatehouse").to_string_lossy(), "--control"])
        .arg(d.dir.path().join("control.sock"))
        .args([
            "connect",
            "--method",
            "tools/call",
            "--tool-name",
            "files__touch",
            "--tool-arg",
        ])
        .arg(format!("path={}", path.to_string_lossy()))
        .env("HOME", d.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the Inspector CLI (make peers installs it)")
}

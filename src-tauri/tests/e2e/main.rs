//! End-to-end tests of the desktop app: the real `gatehouse-app` in a real WebKitGTK window under
//! Xvfb, driven by tauri-driver; real fixture servers, a real MCP client (Python SDK) through the
//! gateway, the real keychain (gnome-keyring in the test's D-Bus session). `make test` runs them:
//! `scripts/with-keyring.sh xvfb-run -a cargo test -p gatehouse-app --test e2e -- --include-ignored`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and the fixture may panic

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::*;

async fn lock() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

fn is_error(out: &Value, tool: &str) -> bool {
    out["results"][tool]["isError"] == json!(true)
}

fn text_of(out: &Value, tool: &str) -> String {
    out["results"][tool]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn servers_panel_shows_live_status_and_its_buttons_work() {
    let _serial = lock().await;
    let d = Desktop::launch(json!({ "alpha": fixture(), "beta": fixture() })).await;

    let alpha = d.wait_state("alpha", "running").await;
    let beta = d.wait_state("beta", "running").await;
    assert_eq!(alpha["tools"], json!(13), "{alpha}");
    assert_eq!(beta["tools"], json!(13), "{beta}");
    d.shot("servers").await;
    // Every local server's row carries its sandbox: a shield naming what enforces it.
    let shield = d
        .wait_js(
            "alpha's shield",
            "const s = document.querySelector('article.server[data-id=alpha] .shield');
             return s && !s.hidden && s.getAttribute('aria-label');",
        )
        .await;
    assert!(
        shield
            .as_str()
            .unwrap_or("")
            .starts_with("Sandboxed: default (landlock ABI"),
        "{shield}"
    );

    // The CLI works against the app exactly as against a headless hub.
    let (code, out, err) = d.cli(&["status", "--json"]);
    assert_eq!(code, 0, "{err}");
    let status: Value = serde_json::from_str(&out).expect("status json");
    let cli_pid = status
        .as_array()
        .and_then(|a| a.iter().find(|s| s["id"] == "alpha"))
        .map(|s| s["pid"].to_string())
        .unwrap_or_default();
    assert_eq!(cli_pid, alpha["pid"].as_str().unwrap_or("-"));

    // Restart: a new pid and one more restart.
    d.click("article.server[data-id=alpha] [data-act=restart]")
        .await;
    let old_pid = alpha["pid"].as_str().unwrap_or_default().to_owned();
    d.wait_js(
        "a new pid for alpha",
        &format!(
            "const r = document.querySelector('article.server[data-id=alpha]');
             return r.dataset.state === 'running' && r.querySelector('.pid').dataset.pid !== '{old_pid}'
                    && r.querySelector('.pid').dataset.pid !== '';"
        ),
    )
    .await;
    let after = d.row("alpha").await;
    assert_eq!(
        after["restarts"].as_u64(),
        alpha["restarts"].as_u64().map(|r| r + 1),
        "{after}"
    );

    // Stop, then Start.
    d.click("article.server[data-id=beta] [data-act=stop]")
        .await;
    let stopped = d.wait_state("beta", "stopped").await;
    assert_eq!(stopped["pid"], json!(""), "{stopped}");
    let old: u32 = beta["pid"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    assert!(
        !alive(old),
        "the stopped server's process {old} is still alive"
    );
    d.click("article.server[data-id=beta] [data-act=start]")
        .await;
    d.wait_state("beta", "running").await;

    // A crash shows `restarting`, then `running` again (recorded by an observer on the row).
    d.js("window.__states = [];
          const row = document.querySelector('article.server[data-id=alpha]');
          new MutationObserver(() => window.__states.push(row.dataset.state))
            .observe(row, { attributes: true, attributeFilter: ['data-state'] });
          return true;")
        .await;
    let pid: u32 = d.row("alpha").await["pid"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .expect("alpha pid");
    assert!(nix_kill(pid, 9), "kill -9 {pid}");
    d.wait_js(
        "alpha restarting then running",
        "const s = window.__states; const i = s.indexOf('restarting');
         return i >= 0 && s.slice(i).includes('running');",
    )
    .await;
    let crashed = d.row("alpha").await;
    assert_ne!(crashed["pid"], json!(pid.to_string()));
    // The crash it recovered from stays visible, and the summary counts what runs.
    let recovered = d
        .wait_js(
            "the recovered line",
            "const p = document.querySelector('article.server[data-id=alpha] .recovered');
             return p && !p.hidden && p.textContent;",
        )
        .await;
    assert!(
        recovered
            .as_str()
            .unwrap_or("")
            .contains("killed by signal 9"),
        "{recovered}"
    );
    let summary = d
        .wait_js(
            "the summary line",
            "const t = document.getElementById('servers-summary').textContent;
             return t.startsWith('2 running') && t;",
        )
        .await;
    assert!(
        summary.as_str().unwrap_or("").contains("26 tools exposed"),
        "{summary}"
    );
    // The enable toggle: off stops the server and keeps `enabled: false` in the config.
    d.click("article.server[data-id=beta] .enabled-toggle")
        .await;
    d.wait_state("beta", "stopped").await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&d.config_path).expect("config"))
            .expect("json");
    assert_eq!(saved["servers"]["beta"]["enabled"], json!(false), "{saved}");
    d.click("article.server[data-id=beta] .enabled-toggle")
        .await;
    d.wait_state("beta", "running").await;

    // Expanded: the tools with their approval flags and the live log.
    d.click("article.server[data-id=alpha] .expand").await;
    let flags = d
        .wait_js(
            "alpha's tools",
            "const rows = document.querySelectorAll('article.server[data-id=alpha] .tools tbody tr');
             if (rows.length < 13) return null;
             const f = {}; rows.forEach(r => f[r.dataset.tool] = r.querySelector('.flag').className);
             return f;",
        )
        .await;
    assert!(
        flags["touch"].as_str().unwrap_or("").contains("flag-ask"),
        "{flags}"
    );
    assert!(
        flags["echo"].as_str().unwrap_or("").contains("flag-allow"),
        "{flags}"
    );
    d.wait_js(
        "alpha's log tail",
        "return document.querySelector('article.server[data-id=alpha] .log').textContent.includes('killed by signal 9');",
    )
    .await;
    d.shot("servers-expanded").await;

    // A tool's flag set from the panel lands in the config and changes what the tool does.
    d.select(
        "article.server[data-id=alpha] tr[data-tool=echo] select.tool-policy",
        "ask",
    )
    .await;
    d.wait_js(
        "echo now asks",
        "return document.querySelector('article.server[data-id=alpha] tr[data-tool=echo] .flag')
                 ?.classList.contains('flag-ask');",
    )
    .await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&d.config_path).expect("config"))
            .expect("json");
    assert_eq!(
        saved["servers"]["alpha"]["tools"]["echo"],
        json!({ "requires_approval": true }),
        "{saved}"
    );

    // Add a server through the form: the core's validation message first, then success.
    d.click("#add-server").await;
    d.type_into("#server-form [name=id]", "Bad Id").await;
    // A whole command line pasted into Command: split into program and arguments.
    d.type_into(
        "#server-form [name=command]",
        &format!("{} --tools 2", bin("gatehouse-fixture").to_string_lossy()),
    )
    .await;
    d.click("#server-save").await;
    // Each refusal is shown next to its field (the input marked invalid), not in the box below.
    let field_error = |field: &str| {
        format!(
            "const e = document.getElementById('field-error-{field}');
             const i = document.querySelector('#server-form [name={field}]');
             return e && !e.hidden && i.getAttribute('aria-invalid') === 'true'
               && document.getElementById('server-form-error').hidden
               && e.previousElementSibling === i && e.textContent;"
        )
    };
    let message = d.wait_js("the id error", &field_error("id")).await;
    assert!(
        message.as_str().unwrap_or("").contains("invalid server id"),
        "{message}"
    );
    d.shot("server-form").await;
    d.js("document.querySelector('#server-form [name=id]').value = ''; return true;")
        .await;
    d.type_into("#server-form [name=id]", "gamma").await;
    // Typing in the field clears its error.
    d.wait_js(
        "the id error cleared",
        "return document.getElementById('field-error-id').hidden;",
    )
    .await;
    // A malformed environment line: refused by the form next to Environment.
    d.type_into("#server-form [name=env]", "NO_EQUALS_SIGN")
        .await;
    d.click("#server-save").await;
    let message = d.wait_js("the env error", &field_error("env")).await;
    assert!(
        message
            .as_str()
            .unwrap_or("")
            .contains("Environment line 1"),
        "{message}"
    );
    d.js("document.querySelector('#server-form [name=env]').value = ''; return true;")
        .await;
    // Refused by the core, which names the field: Gatehouse as its own server.
    let command = d
        .js("const f = document.querySelector('#server-form').elements; const v = [f.command.value, f.args.value];
              f.command.value = 'gatehouse'; f.args.value = 'connect'; return v;")
        .await;
    d.click("#server-save").await;
    let message = d
        .wait_js("the command error", &field_error("command"))
        .await;
    assert!(
        message
            .as_str()
            .unwrap_or("")
            .contains("is Gatehouse itself"),
        "{message}"
    );
    d.js(&format!(
        "const f = document.querySelector('#server-form');
         f.elements.command.value = {}; f.elements.args.value = {}; return true;",
        command[0], command[1]
    ))
    .await;
    // Test before saving: the entry is started on its own and reported on; nothing is saved.
    d.click("#server-test").await;
    let report = d
        .wait_js(
            "the test report",
            "const e = document.getElementById('server-test-report'); return !e.hidden && e.textContent.startsWith('Ready in') && e.textContent;",
        )
        .await;
    let report = report.as_str().unwrap_or("");
    assert!(
        report.contains("Server: gatehouse-fixture") && report.contains("envhash (read-only)"),
        "{report}"
    );
    let saved = std::fs::read_to_string(&d.config_path).expect("config");
    assert!(
        !saved.contains("\"gamma\""),
        "a test saved the server: {saved}"
    );
    d.click("#server-save").await;
    d.wait_state("gamma", "running").await;
    let saved = std::fs::read_to_string(&d.config_path).expect("config");
    assert!(saved.contains("\"gamma\""), "{saved}");
    let gamma: Value = serde_json::from_str(&saved).expect("json");
    assert_eq!(
        gamma["servers"]["gamma"]["command"],
        bin("gatehouse-fixture").to_string_lossy().as_ref()
    );
    assert_eq!(gamma["servers"]["gamma"]["args"], json!(["--tools", "2"]));
    let bak = std::fs::read_to_string(d.config_path.with_extension("json.bak")).expect(".bak");
    assert!(
        bak.contains("\"alpha\"") && !bak.contains("\"gamma\""),
        "the previous config is kept as .bak: {bak}"
    );
    // The save says what really happened, not a bare "Server added".
    let said = d
        .wait_js(
            "the outcome toast",
            "const t = document.getElementById('toast'); return !t.hidden && t.textContent.startsWith('gamma added') && t.textContent;",
        )
        .await;
    assert!(said.as_str().unwrap_or("").contains("running"), "{said}");

    // What READMEs give: an `mcpServers` snippet pasted into Command fills the form; two
    // servers are sent to Import instead of becoming a program called `{`.
    let fixture_bin = bin("gatehouse-fixture").to_string_lossy().into_owned();
    let paste = |snippet: Value| {
        format!(
            "const f = document.querySelector('#server-form').elements;
             f.command.value = {}; f.command.dispatchEvent(new Event('change')); return true;",
            serde_json::to_string(&snippet.to_string()).unwrap_or_default()
        )
    };
    d.click("#add-server").await;
    d.js(&paste(json!({"mcpServers": {
        "one": {"command": fixture_bin, "args": []},
        "two": {"command": fixture_bin, "args": []}
    }})))
    .await;
    d.click("#server-save").await;
    let message = d
        .wait_js("the two-servers error", &field_error("command"))
        .await;
    assert!(
        message.as_str().unwrap_or("").contains("Import"),
        "{message}"
    );
    d.js(&paste(
        json!({"mcpServers": {"delta": {"command": fixture_bin, "args": ["--tools", "1"]}}}),
    ))
    .await;
    d.wait_js(
        "the form filled from the snippet",
        "const f = document.querySelector('#server-form').elements; return f.id.value === 'delta' && f.args.value === '--tools\\n1';",
    )
    .await;
    d.click("#server-save").await;
    d.wait_state("delta", "running").await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&d.config_path).expect("config"))
            .expect("json");
    assert_eq!(
        saved["servers"]["delta"]["args"],
        json!(["--tools", "1"]),
        "{saved}"
    );

    // Remove, confirmed in the native dialog: gone from the panel and the config, process stopped.
    let gamma_pid: u32 = d.row("gamma").await["pid"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .expect("gamma pid");
    d.click("article.server[data-id=gamma] [data-act=edit]")
        .await;
    d.click("#server-remove").await;
    d.answer_native_dialog("Remove server", "Return").await;
    d.wait_js(
        "gamma gone",
        "return !document.querySelector('article.server[data-id=gamma]');",
    )
    .await;
    let saved = std::fs::read_to_string(&d.config_path).expect("config");
    assert!(!saved.contains("\"gamma\""), "{saved}");
    assert!(
        !alive(gamma_pid),
        "the removed server's process is still alive"
    );

    d.view("connect").await;
    d.wait_js(
        "the client snippets",
        "return document.querySelectorAll('#client-snippets .snippet').length === 14;",
    )
    .await;
    let page = d.js("return document.documentElement.outerHTML").await;
    assert!(
        !page.as_str().unwrap_or("").contains(TOKEN),
        "the gateway token is on the page"
    );
    d.shot("connect").await;
    d.quit().await;
}

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
    let shown = d
        .js(
            "return { server: document.getElementById('approval-server').textContent,
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

    // 2. Deny: the client gets isError, nothing runs.
    let c2 = call(2);
    d.wait_js("the modal for call 2", &modal_for(2)).await;
    d.click("#approval-deny").await;
    let out = c2.finish();
    assert!(is_error(&out, "files__touch"), "{out}");
    assert!(!target(2).exists());
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
    d.press_on_focused("\u{E00C}").await;
    let out = c3.finish();
    assert!(is_error(&out, "files__touch"), "{out}");
    assert!(text_of(&out, "files__touch").contains("denied"), "{out}");
    assert!(!target(3).exists());

    // 3b. Two waiting: the modal lists the other one; Deny all (confirmed) denies both.
    let c7 = call(7);
    d.wait_js("the modal for call 7", &modal_for(7)).await;
    let c8 = call(8);
    d.wait_js(
        "the second call listed as also waiting",
        "const o = document.getElementById('approval-others');
         return !o.hidden && document.querySelectorAll('#approval-waiting li').length === 1
                && document.getElementById('approval-waiting').textContent.includes('files__touch')
                && document.getElementById('approval-waiting').textContent.includes('s left');",
    )
    .await;
    d.shot("approval-queue").await;
    d.click("#approval-deny-all").await;
    d.answer_native_dialog("Deny all", "Return").await;
    assert!(is_error(&c7.finish(), "files__touch"));
    assert!(is_error(&c8.finish(), "files__touch"));
    assert!(!target(7).exists() && !target(8).exists());
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
    d.shot("permissions").await;
    d.click("#grants-table tr[data-tool=files__touch][data-scope=always] [data-act=revoke]")
        .await;
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

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn closing_hides_the_window_and_calls_keep_flowing() {
    let _serial = lock().await;
    let mut gh = fixture();
    gh["env"] = json!({ "GH_TOKEN": { "secret": "e2e-gh-token" } });
    let d = Desktop::launch(json!({ "files": fixture(), "gh": gh })).await;
    d.wait_state("files", "running").await;
    assert!(!d.visible_windows().is_empty(), "the window starts visible");
    let app = d.app_pid().expect("the app's pid");
    assert!(
        !descendants_named(app, "WebKitWebProces").is_empty(),
        "the shown window has its web process"
    );

    d.close_window();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !d.visible_windows().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(d.visible_windows().is_empty(), "closing hides the window");
    assert!(alive(app), "closing the window does not quit the app");
    // Closed to the tray, the webview is destroyed: WebKit's web process (the page, ~200 MiB)
    // exits with it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !descendants_named(app, "WebKitWebProces").is_empty()
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        descendants_named(app, "WebKitWebProces"),
        Vec::<u32>::new(),
        "a WebKit web process outlived the closed window"
    );

    // Calls still flow while hidden.
    let out = d
        .client_call(json!([["files__echo", { "text": "still here" }]]))
        .finish();
    assert_eq!(text_of(&out, "files__echo"), "still here", "{out}");

    // Watch the session bus for the OS notification the app posts (there is no notification
    // daemon under Xvfb; the call itself is what we check).
    let mut monitor = std::process::Command::new("dbus-monitor")
        .args([
            "--session",
            "interface='org.freedesktop.Notifications',member='Notify'",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("dbus-monitor (dbus-bin)");
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A call that needs approval brings the window back with the modal.
    let held = d.client_call(
        json!([["files__touch", { "path": d.dir.path().join("x").to_string_lossy() }]]),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while d.visible_windows().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !d.visible_windows().is_empty(),
        "an approval request shows the window"
    );
    d.follow_new_window().await;
    d.wait_js(
        "the modal",
        "return document.getElementById('approval-dialog').open;",
    )
    .await;
    let _ = monitor.kill();
    let seen = monitor.wait_with_output().expect("dbus-monitor output");
    let seen = String::from_utf8_lossy(&seen.stdout);
    assert!(
        seen.contains("Approval needed") && seen.contains("touch"),
        "no notification was posted:\n{seen}"
    );
    d.click("#approval-deny").await;
    assert!(is_error(&held.finish(), "files__touch"));

    // Secrets: the server waits for its secret; setting it in the view restarts the server with it.
    d.wait_state("gh", "failed").await;
    d.view("secrets").await;
    d.wait_js(
        "the secret row",
        "return document.querySelector('tr[data-secret=\"e2e-gh-token\"] .badge')?.textContent === 'not set';",
    )
    .await;
    d.shot("secrets").await;
    let value = "e2e-secret-value-7f3a9c";
    d.click("tr[data-secret=\"e2e-gh-token\"] [data-act=set]")
        .await;
    d.type_into("#secret-form [name=value]", value).await;
    d.click("#secret-save").await;
    d.wait_js(
        "the secret set",
        "return document.querySelector('tr[data-secret=\"e2e-gh-token\"] .badge')?.textContent === 'set';",
    )
    .await;
    d.view("servers").await;
    let gh = d.wait_state("gh", "running").await;
    assert_ne!(gh["pid"], json!(""), "{gh}");
    let out = d
        .client_call(json!([["gh__envhash", { "name": "GH_TOKEN" }]]))
        .finish();
    let hash: Value = serde_json::from_str(&text_of(&out, "gh__envhash")).expect("envhash json");
    assert_eq!(hash["present"], json!(true), "{out}");
    let in_dom = d
        .js(&format!(
            "return document.documentElement.outerHTML.includes('{value}') ||
                    [...document.querySelectorAll('input, textarea')].some(i => i.value.includes('{value}'));"
        ))
        .await;
    assert_eq!(in_dom, json!(false), "the secret value is in the DOM");
    d.quit().await;
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn one_instance_and_quit_stops_every_server() {
    let _serial = lock().await;
    let d = Desktop::launch(json!({ "a": fixture(), "b": fixture() })).await;
    let a: u32 = d.wait_state("a", "running").await["pid"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .expect("pid a");
    let b: u32 = d.wait_state("b", "running").await["pid"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .expect("pid b");
    let app = d.app_pid().expect("the app's pid");

    // A second launch hands over to the first and exits.
    let second = std::process::Command::new(bin("gatehouse-app"))
        .env("GATEHOUSE_CONFIG", &d.config_path)
        .env("GATEHOUSE_CONTROL", &d.control)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("second instance");
    let mut second = second;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Ok(Some(s)) = second.try_wait() {
            break Some(s);
        }
        if std::time::Instant::now() > deadline {
            let _ = second.kill();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        status.map(|s| s.success()) == Some(true),
        "the second instance kept running or failed: {status:?}"
    );
    assert!(alive(app), "the first instance is still running");

    // Quit (SIGTERM takes the same path as the tray's Quit): every server is stopped first.
    let groups = [a, b];
    assert!(nix_kill(app, 15));
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while alive(app) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(app), "the app did not exit");
    for pgid in groups {
        let left = gatehouse::supervisor::process::group_members(pgid);
        assert!(left.is_empty(), "server group {pgid} left {left:?} behind");
    }
    d.quit().await;
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn import_view_reviews_and_imports_a_clients_servers() {
    let _serial = lock().await;
    let fixture_cmd = bin("gatehouse-fixture").to_string_lossy().into_owned();
    let d = Desktop::launch_with(json!({ "base": fixture() }), |home| {
        let cursor = home.join(".cursor");
        std::fs::create_dir_all(&cursor).expect("cursor dir");
        std::fs::write(
            cursor.join("mcp.json"),
            json!({ "mcpServers": {
                "base": { "command": "taken-id" },
                "Helper": { "command": fixture_cmd, "args": [], "env": { "HELPER_API_KEY": "plain-e2e-key" } }
            }})
            .to_string(),
        )
        .expect("cursor config");
    })
    .await;
    d.wait_state("base", "running").await;
    d.view("import").await;
    let rows = d
        .wait_js(
            "the Cursor servers",
            "const rows = [...document.querySelectorAll('.import-source tbody tr')];
             if (rows.length < 2) return null;
             return rows.map(r => ({ name: r.dataset.name, text: r.textContent,
                                     disabled: r.querySelector('input').disabled }));",
        )
        .await;
    let rows = rows.as_array().cloned().unwrap_or_default();
    let helper = rows
        .iter()
        .find(|r| r["name"] == "Helper")
        .expect("Helper row");
    assert!(
        helper["text"].as_str().unwrap_or("").contains(&fixture_cmd),
        "{helper}"
    );
    assert!(
        helper["text"]
            .as_str()
            .unwrap_or("")
            .contains("HELPER_API_KEY"),
        "{helper}"
    );
    let taken = rows.iter().find(|r| r["name"] == "base").expect("base row");
    assert_eq!(
        taken["disabled"],
        json!(true),
        "an existing id cannot be imported over"
    );
    d.shot("import").await;
    d.click(".import-source .import-actions button").await;
    d.view("servers").await;
    d.wait_state("helper", "running").await;
    let saved = std::fs::read_to_string(&d.config_path).expect("config");
    assert!(saved.contains("\"helper\""), "{saved}");
    assert!(
        !saved.contains("plain-e2e-key"),
        "the key stayed in plain text: {saved}"
    );
    assert!(saved.contains("helper-helper-api-key"), "{saved}");
    let out = d
        .client_call(json!([["helper__envhash", { "name": "HELPER_API_KEY" }]]))
        .finish();
    assert!(
        text_of(&out, "helper__envhash").contains("\"present\":true"),
        "{out}"
    );

    // Connect → "Write to Cursor's config": confirmed in the native dialog, merged into the file,
    // as Cursor's own client profile.
    d.view("connect").await;
    d.click(".snippet[data-client=cursor] [data-act=write]")
        .await;
    d.answer_native_dialog("Write to Cursor", "Return").await;
    let cursor_file = d.dir.path().join(".cursor/mcp.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let written = loop {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&cursor_file).expect("cursor file"))
                .expect("cursor json");
        if v["mcpServers"].get("gatehouse").is_some() || std::time::Instant::now() > deadline {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        written["mcpServers"]["gatehouse"]["url"],
        d.url.as_str(),
        "{written}"
    );
    assert_eq!(
        written["mcpServers"]["Helper"]["env"]["HELPER_API_KEY"],
        "plain-e2e-key"
    );
    // No profile chosen: Cursor got one of its own, and its token — not the gateway's.
    // The card says what the file says now: configured, as the profile it was written for; a
    // client that is nowhere on this machine says so.
    d.wait_js(
        "Cursor's card configured",
        "const p = document.querySelector('.snippet[data-client=cursor] .setup');
         return !!p && p.textContent.startsWith('Configured') && p.textContent.includes('profile cursor');",
    )
    .await;
    let zed = d
        .js("return document.querySelector('.snippet[data-client=zed] .setup').textContent;")
        .await;
    assert!(
        zed.as_str().unwrap_or("").starts_with("Not installed"),
        "{zed}"
    );
    let auth = written["mcpServers"]["gatehouse"]["headers"]["Authorization"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        auth.starts_with("Bearer ") && !auth.contains(TOKEN),
        "{written}"
    );
    d.quit().await;
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn connect_view_gives_a_client_its_own_profile_and_token() {
    let _serial = lock().await;
    let d = Desktop::launch_with(json!({ "alpha": fixture(), "beta": fixture() }), |home| {
        std::fs::create_dir_all(home.join(".cursor")).expect("cursor dir");
    })
    .await;
    d.wait_state("alpha", "running").await;
    d.wait_state("beta", "running").await;

    // Create the profile, keep only alpha.
    d.view("connect").await;
    d.click("#profile-new").await;
    d.type_into("#profile-new-form [name=id]", "cursor").await;
    d.click("#profile-new-form button[type=submit]").await;
    d.wait_js(
        "the profile's servers",
        "return document.querySelectorAll('#profile-servers input').length === 2;",
    )
    .await;
    let both = d
        .wait_js(
            "the meter with every tool",
            "const m = document.getElementById('profile-meter'); return m.dataset.tools && Number(m.dataset.tools);",
        )
        .await;
    d.click("#profile-servers input[value=beta]").await;
    d.click("#profile-save").await;
    let one = d
        .wait_js(
            "the meter with alpha's tools",
            &format!(
                "const m = document.getElementById('profile-meter'); const n = Number(m.dataset.tools); return n && n < {both} && n;"
            ),
        )
        .await;
    assert_eq!(one.as_u64().unwrap_or(0) * 2, both.as_u64().unwrap_or(1));
    assert!(
        d.js("return document.getElementById('profile-meter').textContent")
            .await
            .as_str()
            .unwrap_or("")
            .contains("handles 40 well"),
        "Cursor's known limit is shown"
    );
    d.shot("connect-profile").await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&d.config_path).expect("config"))
            .expect("json");
    assert_eq!(saved["clients"]["cursor"]["servers"], json!(["alpha"]));

    // Write Cursor's config for this profile: its own token, not the gateway's. The snippets
    // are the profile's once the stdio one launches `connect --client cursor`.
    d.wait_js(
        "the profile's snippets",
        "const p = document.querySelector('.snippet[data-client=claude-desktop] pre'); return !!p && p.textContent.includes('--client');",
    )
    .await;
    // A toast may cover the card's button: clicked from the page (the native dialog still asks).
    d.js("document.querySelector('.snippet[data-client=cursor] [data-act=write]').click(); return true;")
        .await;
    d.answer_native_dialog("Write to Cursor", "Return").await;
    let cursor_file = d.dir.path().join(".cursor/mcp.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let written = loop {
        let v: Value = std::fs::read_to_string(&cursor_file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        if v["mcpServers"].get("gatehouse").is_some() || std::time::Instant::now() > deadline {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let auth = written["mcpServers"]["gatehouse"]["headers"]["Authorization"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let token = auth.strip_prefix("Bearer ").unwrap_or("").to_owned();
    assert!(token.len() >= 32 && token != TOKEN, "{written}");
    // A real client with that token sees alpha's tools only.
    let out = d
        .client_call_as(&token, json!([["alpha__echo", { "text": "profiled" }]]))
        .finish();
    let tools = out["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(tools.len() as u64, one.as_u64().unwrap_or(0), "{out}");
    // One server in the profile: its tools under their own names.
    assert!(
        tools.contains(&json!("echo"))
            && tools
                .iter()
                .all(|t| !t.as_str().unwrap_or("").contains("__")),
        "{out}"
    );
    assert_eq!(text_of(&out, "alpha__echo"), "profiled");
    // Connect says Cursor's file now reaches this Gatehouse as that profile, and that a client
    // of that profile was here just now, with the protocol it speaks.
    d.view("servers").await;
    d.view("connect").await;
    let seen = d
        .wait_js(
            "the setup line and the connected client",
            "const s = document.querySelector('.snippet[data-client=cursor] .setup');
             const c = document.getElementById('connected-list').textContent;
             return !!s && s.textContent.includes('profile cursor') && c.includes('— profile cursor, protocol 20');",
        )
        .await;
    assert_eq!(seen, json!(true));
    d.quit().await;
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn the_window_fits_at_800_by_600() {
    let _serial = lock().await;
    let d = Desktop::launch(json!({
        "alpha": fixture(), "beta-with-a-longer-name": fixture(), "gamma": fixture()
    }))
    .await;
    d.wait_state("alpha", "running").await;
    d.client
        .set_window_size(800, 600)
        .await
        .expect("resize the window");
    // Give the page a moment to lay out at the new size.
    d.wait_js("the new size", "return window.innerWidth <= 800;")
        .await;
    let fits = d
        .js(
            "const w = window.innerWidth;
             const cards = [...document.querySelectorAll('article.server')];
             return { page: document.documentElement.scrollWidth <= w,
                      cards: cards.length > 0 && cards.every(c => c.getBoundingClientRect().right <= w + 0.5),
                      buttons: [...document.querySelectorAll('article.server .actions button')]
                                 .every(b => b.getBoundingClientRect().right <= w + 0.5) };",
        )
        .await;
    assert_eq!(
        fits,
        json!({ "page": true, "cards": true, "buttons": true }),
        "something spills sideways at 800×600"
    );
    d.shot("servers-800x600").await;
    // A server row never cuts text, at every width from 720 px, in either theme: nothing of a
    // row lies outside its card, and no part of it holds more than it shows (checked from the
    // elements' boxes, not by eye).
    for width in [720u32, 800, 1040, 1280] {
        d.client
            .set_window_size(width, 700)
            .await
            .expect("resize the window");
        d.wait_js(
            "the new width",
            &format!("return window.innerWidth <= {width} && window.innerWidth > {width} - 40;"),
        )
        .await;
        for theme in ["light", "dark"] {
            let cut = d
                .js(&format!(
                    "document.documentElement.dataset.theme = '{theme}';
                     const bad = [];
                     for (const card of document.querySelectorAll('article.server')) {{
                       const c = card.getBoundingClientRect();
                       for (const e of card.querySelectorAll('*')) {{
                         if (!e.getClientRects().length || e.closest('[hidden]') || e.closest('.details')) continue;
                         const r = e.getBoundingClientRect();
                         if (r.right > c.right + 0.5 || r.left < c.left - 0.5) bad.push('outside its card: ' + (e.className || e.tagName) + ' ' + e.textContent.trim().slice(0, 20));
                       }}
                       for (const e of card.querySelectorAll('.server-head, .meta, .actions, .actions > *, .badge, .target')) {{
                         if (e.getClientRects().length && e.scrollWidth > e.clientWidth + 1) bad.push('cut: ' + e.className + ' ' + e.textContent.trim().slice(0, 20));
                       }}
                     }}
                     return bad;"
                ))
                .await;
            assert_eq!(cut, json!([]), "a server row at {width} px, {theme} theme");
        }
    }
    d.js("delete document.documentElement.dataset.theme; return true;")
        .await;
    d.client
        .set_window_size(800, 600)
        .await
        .expect("resize the window");
    d.wait_js("back to 800", "return window.innerWidth <= 800;")
        .await;
    // The Add-server dialog: its title and its Save button are in view.
    d.click("#add-server").await;
    let dialog = d
        .wait_js(
            "the dialog laid out",
            "const d = document.getElementById('server-dialog');
             if (!d.open) return null;
             const save = document.getElementById('server-save').getBoundingClientRect();
             const title = document.getElementById('server-dialog-title').getBoundingClientRect();
             return { save: save.bottom <= window.innerHeight && save.top >= 0 && save.right <= window.innerWidth,
                      title: title.top >= 0 };",
        )
        .await;
    assert_eq!(dialog, json!({ "save": true, "title": true }), "{dialog}");
    d.shot("add-server-800x600").await;
    d.click("#server-cancel").await;
    // Every view: nothing clipped at the right edge (main hides what overflows sideways, so
    // a control past its edge would be cut off, as Activity's export buttons once were).
    for view in [
        "servers",
        "activity",
        "permissions",
        "secrets",
        "connect",
        "import",
        "settings",
    ] {
        d.view(view).await;
        let spilled = d
            .js(&format!(
                "const main = document.querySelector('main').getBoundingClientRect();
                 const view = document.getElementById('view-{view}');
                 return [...view.querySelectorAll('button, select, input, textarea, th, h1, label')]
                   .filter(e => e.getClientRects().length > 0)
                   .filter(e => e.getBoundingClientRect().right > main.right + 0.5)
                   .map(e => e.id || e.textContent.trim().slice(0, 30));"
            ))
            .await;
        assert_eq!(spilled, json!([]), "cut off at 800×600 in {view}");
    }
    d.view("servers").await;

    // Settings: the approval default and timeout are saved in the config; a gateway address
    // that is not loopback is refused with the reason; the theme applies at once.
    d.view("settings").await;
    d.wait_js(
        "the settings loaded",
        "return document.querySelector('#settings-form [name=approval_timeout_secs]').value === '60';",
    )
    .await;
    d.select("#settings-form [name=approval_default]", "always")
        .await;
    d.js("const t = document.querySelector('#settings-form [name=approval_timeout_secs]'); t.value = '30'; return true;")
        .await;
    d.click("#settings-save").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&d.config_path).expect("config"))
                .expect("json");
        if saved["approval"]["default"] == "always" && saved["approval"]["timeout_secs"] == 30 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not saved: {saved}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    d.js("const l = document.querySelector('#settings-form [name=listen]'); l.value = '0.0.0.0:9999'; return true;")
        .await;
    d.click("#settings-save").await;
    let err = d
        .wait_js(
            "the address refused",
            "const e = document.getElementById('settings-form-error'); return !e.hidden && e.textContent;",
        )
        .await;
    assert!(err.as_str().unwrap_or("").contains("loopback"), "{err}");
    d.select("#theme", "dark").await;
    let theme = d
        .js("return [document.documentElement.dataset.theme, getComputedStyle(document.body).backgroundColor];")
        .await;
    assert_eq!(theme[0], "dark", "{theme}");
    assert_eq!(theme[1], "rgb(27, 29, 28)", "the dark background: {theme}");
    d.shot("settings").await;
    d.quit().await;
}

/// A remote server behind OAuth (the Python SDK's own authorization server) waits in
/// `needs_sign_in` with a Sign in button on its row; clicking it sends the (stand-in) browser
/// through the authorization page and back, and the row turns running; the CLI signs out
/// through the app's hub and the row waits for a sign-in again.
#[tokio::test]
#[ignore = "needs a display, tauri-driver, WebKitWebDriver and the Python SDK; run by make test"]
async fn a_server_waiting_for_a_sign_in_is_signed_in_from_its_row() {
    let _serial = lock().await;
    let port = free_port();
    let mut server = std::process::Command::new(peers_dir().join("venv/bin/python"))
        .arg(repo().join("tests/clients/oauth_server.py"))
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the OAuth MCP server");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the OAuth server did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let d =
        Desktop::launch(json!({ "web": { "url": format!("http://127.0.0.1:{port}/mcp") } })).await;
    let row = d.wait_state("web", "needs_sign_in").await;
    assert!(
        row["error"]
            .as_str()
            .unwrap_or("")
            .contains("gatehouse auth login web"),
        "{row}"
    );
    let button = "article.server[data-id=\"web\"] [data-act=sign-in]";
    let visible = d
        .js(&format!(
            "return !document.querySelector('{button}').hidden;"
        ))
        .await;
    assert_eq!(visible, json!(true), "the Sign in button is shown");
    d.click(button).await;
    let row = d.wait_state("web", "running").await;
    assert_eq!(row["tools"], 2, "{row}");
    let hidden = d
        .js(&format!(
            "return document.querySelector('{button}').hidden;"
        ))
        .await;
    assert_eq!(hidden, json!(true), "no Sign in button on a running server");
    let (code, out, err) = d.cli(&["auth", "logout", "web"]);
    assert_eq!(code, 0, "{out}{err}");
    d.wait_state("web", "needs_sign_in").await;
    let _ = server.kill();
    let _ = server.wait();
}

/// A newcomer with nothing configured: the empty state offers Import first and the registry
/// second; "Find in the registry" searches as they type (a local stand-in speaking the MCP
/// Registry's API), shows what a server needs and the version it is pinned to, and adds it —
/// the secret typed into a password field goes to the keychain — running.
#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn a_server_is_found_in_the_registry_and_added_pinned() {
    let _serial = lock().await;
    let mut registry = std::process::Command::new("python3")
        .arg(repo().join("tests/clients/registry_server.py"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("registry stand-in");
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(registry.stdout.take().expect("stdout")),
        &mut port,
    )
    .expect("port");
    // The app's HOME is the test's: npm's cache (where install-peers put the package) is lent.
    let d = Desktop::launch_with(json!({}), |home| {
        let cache =
            std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".npm");
        let _ = std::os::unix::fs::symlink(cache, home.join(".npm"));
    })
    .await;
    // Point the running app at the stand-in, as a company points it at its own registry.
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(&d.config_path).expect("config"))
            .expect("json");
    cfg["registry"] = json!({ "url": format!("http://127.0.0.1:{}", port.trim()) });
    std::fs::write(&d.config_path, cfg.to_string()).expect("config");
    let (code, out, err) = d.cli(&["reload"]);
    assert_eq!(code, 0, "{out}{err}");
    let offers = d
        .wait_js(
            "the empty state's offers",
            "const e = document.getElementById('servers-empty');
             return !e.hidden && [...e.querySelectorAll('button')].map(b => b.textContent);",
        )
        .await;
    assert_eq!(
        offers,
        json!([
            "Import from your AI clients",
            "Find in the registry",
            "Add a command"
        ])
    );
    // Add server → "Find it in the MCP Registry".
    d.click("#add-server").await;
    d.click("#find-server-form").await;
    d.wait_js(
        "the registry dialog",
        "return document.getElementById('registry-dialog').open && !document.getElementById('server-dialog').open;",
    )
    .await;
    d.type_into("#registry-form input[name=q]", "everything")
        .await;
    let name = "io.github.modelcontextprotocol/server-everything";
    d.wait_js(
        "the search result",
        &format!("return !!document.querySelector('.registry-pick[data-name=\"{name}\"]');"),
    )
    .await;
    d.click(&format!(".registry-pick[data-name=\"{name}\"]"))
        .await;
    let runs = d
        .wait_js(
            "what it runs",
            "const p = document.getElementById('registry-runs'); return !p.closest('[hidden]') && p.textContent;",
        )
        .await;
    assert!(
        runs.as_str()
            .unwrap_or("")
            .contains("pinned to @modelcontextprotocol/server-everything@2026.8.31"),
        "{runs}"
    );
    d.type_into(
        "#registry-secrets input[name=EVERYTHING_API_KEY]",
        "sk-e2e-canary",
    )
    .await;
    d.shot("registry-find").await;
    d.click("#registry-add").await;
    // npx starts it from the cache: allow it a minute.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let row = loop {
        let row = d.row("everything").await;
        if row["state"] == "running" || std::time::Instant::now() > deadline {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(row["state"], "running", "{row}");
    let (code, out, _) = d.cli(&["secret", "ls", "--json"]);
    assert_eq!(code, 0);
    let secrets: Value = serde_json::from_str(&out).expect("json");
    assert!(
        secrets.as_array().is_some_and(|a| a
            .iter()
            .any(|s| s["name"] == "everything-everything-api-key" && s["set"] == true)),
        "{secrets}"
    );
    let saved = std::fs::read_to_string(&d.config_path).expect("config");
    assert!(
        !saved.contains("sk-e2e-canary") && saved.contains("server-everything@2026.8.31"),
        "{saved}"
    );
    let _ = registry.kill();
    let _ = registry.wait();
}

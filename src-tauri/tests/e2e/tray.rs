//! The window closed to the tray: calls keep flowing, an approval shows the native prompt (no
//! webview made for it), and no WebKit process is left running — checked with WebDriver, and
//! once without (the app started directly, as a person starts it).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;
use crate::{is_error, lock, text_of};

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn closing_hides_the_window_and_calls_keep_flowing() {
    let _serial = lock().await;
    let mut gh = fixture();
    gh["env"] = json!({ "GH_TOKEN": { "secret": "e2e-gh-token" } });
    // Its allowed call leaves a file in the test's directory, outside any sandbox's places.
    let mut files = fixture();
    files["sandbox"] = json!("off");
    let d = Desktop::launch(json!({ "files": files, "gh": gh })).await;
    d.wait_state("files", "running").await;
    assert!(!d.visible_windows().is_empty(), "the window starts visible");
    let app = d.app_pid().expect("the app's pid");
    assert!(
        !descendants_named(app, "WebKitWebProces").is_empty(),
        "the shown window has its web process"
    );
    // The person sizes the window; closed to the tray, its size is kept (on disk, for the
    // next start too), and the window that opens again has it.
    d.client
        .set_window_size(900, 640)
        .await
        .expect("resize the window");
    tokio::time::sleep(Duration::from_millis(500)).await;

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
    // (WebKit's network process is kept while WebDriver drives the app: ending it would end the
    // automation session. `the_tray_holds_no_webkit_process` checks it without a driver.)

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

    // A call that needs approval, with the window closed: the native prompt shows it — no
    // window, no webview made for it — and a notification is posted.
    let path = |n: &str| d.dir.path().join(n).to_string_lossy().into_owned();
    let held = d.client_call(json!([["files__touch", { "path": path("allowed") }]]));
    let prompt = wait_native(PROMPT).await;
    assert!(d.visible_windows().is_empty(), "the window stays closed");
    assert_eq!(
        descendants_named(app, "WebKitWebProces"),
        Vec::<u32>::new(),
        "a webview was made for the prompt"
    );
    // A second call waits behind it.
    let second = d.client_call(json!([["files__touch", { "path": path("escaped") }]]));
    let waiting = || {
        let (_, listed, _) = d.cli(&["approvals", "--json"]);
        serde_json::from_str::<Value>(&listed).expect("approvals --json")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while waiting().as_array().map_or(0, Vec::len) < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the second call never waited"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    shot_native(&prompt, "approval-prompt");
    // Allow once, from the keyboard (Alt+O): the first call runs; the prompt stays, on the
    // second.
    answer_prompt("alt+o").await;
    ran(&held.finish(), &d.dir.path().join("allowed"));
    assert_eq!(waiting().as_array().map(Vec::len), Some(1));
    assert!(
        native_shown(&prompt),
        "the prompt went with a call still waiting"
    );
    // Esc denies, and with nothing left the prompt goes.
    answer_prompt("Escape").await;
    assert!(is_error(&second.finish(), "files__touch"));
    assert!(!d.dir.path().join("escaped").exists());
    wait_native_gone(&prompt).await;

    // Enter denies once the guard is over: the focus is back on Deny, not in the arguments.
    let held = d.client_call(json!([["files__touch", { "path": path("entered") }]]));
    let prompt = wait_native(PROMPT).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    answer_prompt("Return").await;
    assert!(is_error(&held.finish(), "files__touch"));
    assert!(!d.dir.path().join("entered").exists());
    wait_native_gone(&prompt).await;

    // A call answered elsewhere (the CLI) leaves the prompt at once.
    let held = d.client_call(json!([["files__touch", { "path": path("cli") }]]));
    let prompt = wait_native(PROMPT).await;
    let id = waiting()[0]["id"]
        .as_str()
        .expect("a waiting call")
        .to_owned();
    let (code, _, err) = d.cli(&["deny", &id]);
    assert_eq!(code, 0, "{err}");
    wait_native_gone(&prompt).await;
    assert!(is_error(&held.finish(), "files__touch"));

    // "Open Gatehouse…" (Alt+G) opens the window on the same call, in its modal.
    let held = d.client_call(json!([["files__touch", { "path": path("x") }]]));
    let prompt = wait_native(PROMPT).await;
    answer_prompt("alt+g").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while d.visible_windows().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !d.visible_windows().is_empty(),
        "Open Gatehouse… shows the window"
    );
    wait_native_gone(&prompt).await;
    d.follow_new_window().await;
    d.wait_js(
        "the modal",
        "return document.getElementById('approval-dialog').open;",
    )
    .await;
    let (w, h) = d.client.get_window_size().await.expect("the window's size");
    assert!(
        w.abs_diff(900) <= 40 && h.abs_diff(640) <= 60,
        "the window came back at {w}×{h}, not the 900×640 it was given"
    );
    let kept: Value = serde_json::from_str(
        &std::fs::read_to_string(
            d.dir
                .path()
                .join(".config/dev.gatehouse.app/.window-state.json"),
        )
        .expect("the window's state kept on disk when it closed"),
    )
    .expect("json");
    assert_eq!(kept["main"]["width"], json!(w), "{kept}");
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

/// An allowed `files__touch` call's answer, and the file it made.
fn ran(out: &Value, file: &std::path::Path) {
    assert!(
        out["results"]["files__touch"].is_object() && !is_error(out, "files__touch"),
        "{out}"
    );
    assert!(file.exists(), "the allowed call ran");
}

/// With no driver attached, the tray holds no WebKit process: closing the window ends its web
/// process and WebKit's network process (which WebKit itself keeps, ~35 MiB); an approval then
/// shows the native prompt without starting either; "Open Gatehouse…" brings the window back,
/// its page loaded with a new network process.
#[tokio::test]
#[ignore = "needs a display and the built app; run by make test"]
async fn the_tray_holds_no_webkit_process() {
    let _serial = lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let mut files = fixture();
    files["tools"] = json!({ "echo": { "requires_approval": true } });
    let config = json!({
        "servers": { "files": files },
        "approval": { "timeout_secs": 60 },
        "gateway": { "listen": format!("127.0.0.1:{port}") }
    });
    let config_path = dir.path().join("gatehouse.json");
    std::fs::write(&config_path, config.to_string()).expect("config");
    let control = dir.path().join("control.sock");
    let mut app = Command::new(bin("gatehouse-app"))
        .env("GATEHOUSE_CONFIG", &config_path)
        .env("GATEHOUSE_DATA_DIR", dir.path().join("data"))
        .env("GATEHOUSE_CONTROL", &control)
        .env("GATEHOUSE_TOKEN", TOKEN)
        .env("GATEHOUSE_LOG", "info")
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join(".config"))
        .env("NO_COLOR", "1")
        .env_remove("TAURI_WEBVIEW_AUTOMATION")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gatehouse-app");
    let pid = app.id();
    let (tx, lines) = mpsc::channel::<String>();
    let stderr = app.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let painted = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(l) if l.contains("servers panel painted") => return,
                Ok(_) => {}
                Err(_) => panic!("{what}: the page never painted"),
            }
        }
    };
    let webkit = || {
        (
            descendants_named(pid, "WebKitWebProces").len(),
            descendants_named(pid, "WebKitNetworkP").len(),
        )
    };
    painted("at start");
    assert_eq!(
        webkit(),
        (1, 1),
        "the shown window's web and network processes"
    );
    let ids = native_windows(MAIN_WINDOW);
    assert!(!ids.is_empty(), "the window is on screen");
    close_windows(&ids);
    let deadline = Instant::now() + Duration::from_secs(10);
    while webkit() != (0, 0) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        webkit(),
        (0, 0),
        "WebKit processes outlived the closed window"
    );

    let url = format!("http://127.0.0.1:{port}/mcp");
    let held = mcp_client(&url, TOKEN, json!([["files__echo", { "text": "held" }]]));
    let prompt = wait_native(PROMPT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(webkit(), (0, 0), "the prompt started WebKit");
    answer_prompt("alt+g").await;
    painted("after Open Gatehouse…");
    assert_eq!(
        webkit(),
        (1, 1),
        "the window again, with a new network process"
    );
    wait_native_gone(&prompt).await;
    let waiting = Command::new(bin("gatehouse"))
        .arg("--control")
        .arg(&control)
        .args(["approvals", "--json"])
        .output()
        .expect("gatehouse approvals");
    let waiting: Value = serde_json::from_slice(&waiting.stdout).expect("approvals json");
    let id = waiting[0]["id"]
        .as_str()
        .expect("the call still waits")
        .to_owned();
    let denied = Command::new(bin("gatehouse"))
        .arg("--control")
        .arg(&control)
        .args(["deny", &id])
        .status()
        .expect("gatehouse deny");
    assert!(denied.success());
    assert!(is_error(&held.finish(), "files__echo"));
    let _ = nix_kill(pid, 15);
    let _ = app.wait();
}

/// A call held when the window closes moves to the prompt. With the window closed, a held call's
/// notification carries Allow once and Deny where the notification service offers actions (a
/// stand-in speaking the freedesktop API here): each answers that call, and the prompt goes with
/// it; a call answered in the prompt takes its notification away.
#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn the_notification_allows_or_denies_a_held_call() {
    let _serial = lock().await;
    let notices = crate::notices::Notices::start().await;
    let mut files = fixture();
    files["sandbox"] = json!("off");
    let d = Desktop::launch(json!({ "files": files })).await;
    d.wait_state("files", "running").await;
    let path = |n: &str| d.dir.path().join(n).to_string_lossy().into_owned();
    let says = "wants to run files__touch on files";
    // A call held while the window is shown is in its modal; closing the window answers
    // nothing: the call is then in the prompt.
    let held = d.client_call(json!([["files__touch", { "path": path("closed-on") }]]));
    d.wait_js(
        "the modal",
        "return document.getElementById('approval-dialog').open;",
    )
    .await;
    d.close_window();
    let prompt = wait_native(PROMPT).await;
    assert!(d.visible_windows().is_empty());
    answer_prompt("Escape").await;
    assert!(is_error(&held.finish(), "files__touch"));
    wait_native_gone(&prompt).await;

    // Allow once, on the notification: the call runs, the prompt goes.
    let held = d.client_call(json!([["files__touch", { "path": path("allowed") }]]));
    let n = notices.wait_for(says).await;
    assert_eq!(n.summary, "Approval needed");
    assert_eq!(n.actions, ["allow", "Allow once", "deny", "Deny"]);
    let prompt = wait_native(PROMPT).await;
    notices.click(n.id, "allow").await;
    ran(&held.finish(), &d.dir.path().join("allowed"));
    wait_native_gone(&prompt).await;

    // Deny, on the notification.
    let held = d.client_call(json!([["files__touch", { "path": path("denied") }]]));
    let n = notices.wait_for(says).await;
    notices.click(n.id, "deny").await;
    assert!(is_error(&held.finish(), "files__touch"));
    assert!(!d.dir.path().join("denied").exists());

    // Answered in the prompt (Esc denies): the notification is taken away.
    let held = d.client_call(json!([["files__touch", { "path": path("escaped") }]]));
    let n = notices.wait_for(says).await;
    answer_prompt("Escape").await;
    assert!(is_error(&held.finish(), "files__touch"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while notices.open(n.id) {
        assert!(
            Instant::now() < deadline,
            "the notification outlived its call"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    d.quit().await;
}

/// The tray says how things are in one line and puts what needs the person first, in words —
/// and what a server warns of (a place its sandbox left out) on its line and in its menu:
/// a summary ("1 running · 1 failed · 1 cannot be read"), the failed server and the unreadable
/// entry above the running one, never a raw state name.
#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn the_tray_summarises_and_puts_what_needs_you_first() {
    let _serial = lock().await;
    let mut leaky = fixture();
    leaky["env"] = json!({"STATE_FILE": "/var/tmp/gatehouse-e2e-left-out.json"});
    let d = Desktop::launch(json!({
        "alpha": fixture(),
        "leaky": leaky,
        "zulu": { "command": "/nonexistent/server" },
        "oops": { "comand": "x" }
    }))
    .await;
    d.wait_state("alpha", "running").await;
    d.wait_state("leaky", "running").await;
    d.wait_state("zulu", "failed").await;
    let tray = d.dir.path().join("tray.txt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let text = loop {
        let t = std::fs::read_to_string(&tray).unwrap_or_default();
        let settled = t.contains("1 failed") && t.contains("⚠ the sandbox left out");
        if settled || std::time::Instant::now() > deadline {
            break t;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&"2 running · 1 failed · 1 cannot be read"),
        "{text}"
    );
    // A place its sandbox left out is said on the server's line and inside its menu, with the
    // line that opens it, before any call fails.
    assert!(lines.contains(&"● leaky — running · ⚠ 1 warning"), "{text}");
    let note = lines
        .iter()
        .find(|l| l.starts_with("  ⚠ the sandbox left out"))
        .unwrap_or_else(|| panic!("no warning in leaky's menu: {text}"));
    assert!(
        note.contains("/var/tmp/gatehouse-e2e-left-out.json"),
        "{text}"
    );
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or(usize::MAX)
    };
    assert!(at("zulu — failed") < at("alpha — running"), "{text}");
    assert!(
        at("oops — its entry cannot be read") < at("alpha — running"),
        "{text}"
    );
    assert!(
        !text.contains("needs_sign_in") && !text.contains("invalid"),
        "{text}"
    );
    d.quit().await;
}

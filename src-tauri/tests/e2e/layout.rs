//! The window at small sizes, a sign-in from a server's row, and a server added from the registry.

use std::time::Duration;

use serde_json::{json, Value};

use crate::lock;
use crate::registry::RegistryStandIn;
use crate::support::*;

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn the_window_fits_at_800_by_600() {
    let _serial = lock().await;
    let d = Desktop::launch(json!({
        "alpha": fixture(), "beta-with-a-longer-name": fixture(), "gamma": fixture()
    }))
    .await;
    d.wait_state("alpha", "running").await;
    d.resize(800, 600).await;
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
        d.resize(width, 700).await;
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
    d.resize(800, 600).await;
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
    // Scrolled to its end, the dialog still shows its title (a fixed header) and its actions.
    let sticky = d
        .js("const d = document.getElementById('server-dialog');
             const scrolls = d.scrollHeight > d.clientHeight + 20;
             d.scrollTop = d.scrollHeight;
             const box = d.getBoundingClientRect();
             const t = document.getElementById('server-dialog-title').getBoundingClientRect();
             const s = document.getElementById('server-save').getBoundingClientRect();
             const seen = t.top >= box.top - 0.5 && t.bottom <= box.bottom && s.bottom <= box.bottom + 0.5;
             d.scrollTop = 0;
             return { scrolls, seen };")
        .await;
    assert_eq!(sticky, json!({ "scrolls": true, "seen": true }), "{sticky}");
    d.click("#server-cancel").await;
    // The Edit form at the smallest window: its buttons may wrap, Save never alone (it stays
    // beside Cancel, on the right).
    d.resize(720, 600).await;
    d.row_action("alpha", "edit").await;
    let paired = d
        .wait_js(
            "the Edit form's buttons",
            "const d = document.getElementById('server-dialog');
             if (!d.open || document.getElementById('server-remove').hidden) return null;
             const s = document.getElementById('server-save').getBoundingClientRect();
             const c = document.getElementById('server-cancel').getBoundingClientRect();
             return Math.abs(s.top - c.top) < 2 && c.right <= s.left;",
        )
        .await;
    assert_eq!(paired, json!(true), "Save wraps away from Cancel");
    d.click("#server-cancel").await;
    d.resize(800, 600).await;
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
    // The app's own words beside its own button: no CLI advice, not in error red.
    let said = row["error"].as_str().unwrap_or("");
    assert!(
        said.starts_with("Waiting for you to sign in: press Sign in")
            && !said.contains("gatehouse auth"),
        "{row}"
    );
    let calm = d
        .js("return document.querySelector('article.server[data-id=\"web\"] .last-error').classList.contains('waiting');")
        .await;
    assert_eq!(calm, json!(true), "a sign-in row is not shown as an error");
    let button = "article.server[data-id=\"web\"] .primary-act[data-act=sign-in]";
    let visible = d
        .js(&format!(
            "return !document.querySelector('{button}').hidden;"
        ))
        .await;
    assert_eq!(visible, json!(true), "the Sign in button is shown");
    d.click(button).await;
    let row = d.wait_state("web", "running").await;
    assert_eq!(row["tools"], 2, "{row}");
    let gone = d
        .js(&format!("return !document.querySelector('{button}');"))
        .await;
    assert_eq!(gone, json!(true), "no Sign in action on a running server");
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
    let registry = RegistryStandIn::start();
    // The app's HOME is the test's: npm's cache (where install-peers put the package) is lent.
    let d = Desktop::launch_with(json!({}), |home| {
        let cache =
            std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".npm");
        let _ = std::os::unix::fs::symlink(cache, home.join(".npm"));
    })
    .await;
    // Point the running app at the stand-in, as a company points it at its own registry.
    d.point_at(&registry);
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
    drop(registry);
}

/// Settings says where the gateway listens now and why that is not the address in the config
/// when the app was started with `--listen`.
#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn settings_says_when_listen_is_overridden() {
    let _serial = lock().await;
    let port = free_port();
    let d = Desktop::launch_full(
        json!({}),
        |_| {},
        &["--listen".into(), format!("127.0.0.1:{port}")],
    )
    .await;
    d.view("settings").await;
    let said = d
        .wait_js(
            "where it listens, and why",
            "const t = document.getElementById('settings-running').textContent;
             return t.length ? t : null;",
        )
        .await;
    assert_eq!(
        said,
        json!(format!(
            "Listening now on http://127.0.0.1:{port}/mcp — given with --listen when Gatehouse started, which overrides the address above for this run."
        ))
    );
    d.quit().await;
}

/// A hostile registry's entries in the app's "Find in the registry": a range for a version is
/// refused with the reason and nothing can be added; a description's escape sequences are shown
/// as code points; a variable that changes how a runtime loads code is shown with its value and
/// a box to tick, and Add refuses it unticked — the config unchanged.
#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn a_hostile_registry_entry_is_refused_in_the_app() {
    let _serial = lock().await;
    let registry = RegistryStandIn::start();
    let d = Desktop::launch(json!({})).await;
    d.point_at(&registry);
    let before = std::fs::read(&d.config_path).expect("config");
    d.click("#find-server-empty").await;
    d.type_into("#registry-form input[name=q]", "io.evil").await;
    let pick = |name: &str| format!(".registry-pick[data-name=\"io.evil/{name}\"]");
    d.wait_js(
        "the hostile entries listed",
        &format!(
            "return !!document.querySelector('{}');",
            pick("escape").replace('\'', "\\'")
        ),
    )
    .await;
    let listed = d.text("#registry-results").await;
    assert!(listed.contains("⟨U+001B⟩[2K"), "{listed}");
    assert!(!listed.contains('\u{1b}'), "an escape reached the page raw");
    d.click(&pick("range")).await;
    let runs = d
        .wait_js(
            "the refusal",
            "const p = document.getElementById('registry-runs'); return !p.closest('[hidden]') && p.textContent.includes('not an exact npm version') && p.textContent;",
        )
        .await;
    assert!(runs.as_str().unwrap_or("").contains("\"^1\""), "{runs}");
    assert_eq!(
        d.js("return document.getElementById('registry-add').disabled")
            .await,
        json!(true)
    );
    d.click(&pick("preload")).await;
    d.wait_js(
        "the risky variable with its value and a box",
        "const r = document.getElementById('registry-risky');
         return !!r.querySelector('input[name=LD_PRELOAD]') && r.textContent.includes('Allow LD_PRELOAD = /tmp/evil.so');",
    )
    .await;
    assert!(d
        .text("#registry-env")
        .await
        .contains("LD_PRELOAD = /tmp/evil.so"));
    d.click("#registry-add").await;
    let refused = d
        .wait_js(
            "Add refused unticked",
            "const e = document.getElementById('registry-error'); return !e.hidden && e.textContent;",
        )
        .await;
    assert!(
        refused.as_str().unwrap_or("").contains("LD_PRELOAD"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read(&d.config_path).expect("config"),
        before,
        "the config changed"
    );
    drop(registry);
    d.quit().await;
}

//! One instance and Quit; the Import and Connect views.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;
use crate::{lock, text_of};

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
                "Helper": { "command": fixture_cmd, "args": [], "env": { "HELPER_API_KEY": "plain-e2e-key" } },
                "Spare": { "command": "spare-cmd" }
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
             if (rows.length < 3) return null;
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
    // An id that is taken is never imported over: the row offers another id, typed in place.
    let offered = d
        .js("const r = document.querySelector('.import-source tr[data-name=base]');
             const i = r.querySelector('.rename');
             return { state: r.dataset.state, checked: r.querySelector('input[type=checkbox]').checked, id: i && i.value };")
        .await;
    assert_eq!(
        offered,
        json!({ "state": "taken", "checked": false, "id": "base-2" })
    );
    d.js(
        "const i = document.querySelector('.import-source tr[data-name=base] .rename');
          i.value = 'base-copy'; i.dispatchEvent(new Event('input')); return true;",
    )
    .await;
    // A row the person unchecks is not imported, and stays unchecked when the view is drawn
    // again; a row renamed in review is reported under the id it went in as.
    d.click(".import-source tr[data-name=Spare] input[type=checkbox]")
        .await;
    d.shot("import").await;
    d.click(".import-source .import-actions button").await;
    let after = d
        .wait_js(
            "both chosen rows imported",
            "const row = (n) => document.querySelector(`.import-source tr[data-name=${n}]`);
             const s = ['base', 'Helper'].map(n => row(n)?.dataset.state);
             if (!s.every(x => x === 'imported')) return null;
             return { helper: row('Helper').textContent.includes('Imported ✓'),
                      base: row('base').querySelector('td:nth-child(3)').textContent.includes('Imported as base-copy ✓'),
                      base_id: row('base').querySelector('strong').textContent,
                      spare: row('Spare').dataset.state,
                      spare_checked: row('Spare').querySelector('input[type=checkbox]').checked };",
        )
        .await;
    assert_eq!(
        after,
        json!({ "helper": true, "base": true, "base_id": "base-copy", "spare": "", "spare_checked": false })
    );
    // Imported servers start when a call needs them: idle once their tools are learned.
    d.view("servers").await;
    d.wait_state("helper", "idle").await;
    let saved = std::fs::read_to_string(&d.config_path).expect("config");
    assert!(saved.contains("\"helper\""), "{saved}");
    let config: Value = serde_json::from_str(&saved).expect("config json");
    assert_eq!(
        config["servers"]["base-copy"]["command"], "taken-id",
        "imported under the id typed: {saved}"
    );
    assert_ne!(config["servers"]["base"]["command"], "taken-id", "{saved}");
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
    // Import again: Gatehouse's own entry is Gatehouse itself — its token never flagged as a
    // plain-text credential — and the servers brought over before say so.
    d.view("import").await;
    let again = d
        .wait_js(
            "the file as it is now",
            "const g = document.querySelector('.import-source tr[data-name=gatehouse]');
             if (!g) return null;
             return { state: g.dataset.state, warned: !!g.querySelector('.warn'), box: g.querySelector('input[type=checkbox]').disabled,
                      helper: document.querySelector('.import-source tr[data-name=Helper]').dataset.state };",
        )
        .await;
    assert_eq!(
        again,
        json!({ "state": "itself", "warned": false, "box": true, "helper": "imported" })
    );
    // The key Gatehouse moved into the keychain is still in Cursor's file in plain text: the
    // card offers to take Helper out of it (Cursor reaches it through Gatehouse).
    let offer = d
        .wait_js(
            "the offer to remove the plain-text key",
            "const o = document.querySelector('.import-source .leak-offer');
             return o && o.textContent;",
        )
        .await;
    assert!(
        offer
            .as_str()
            .unwrap_or("")
            .contains("HELPER_API_KEY (Helper)"),
        "{offer}"
    );
    let backups = || {
        let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(d.dir.path().join(".cursor"))
            .expect("cursor dir")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".bak"))
            .map(|e| e.path())
            .collect();
        found.sort();
        found
    };
    let backups_before = backups();
    d.click(".import-source .leak-offer button").await;
    d.answer_native_dialog("Remove from the file", "Return")
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let text = loop {
        let t = std::fs::read_to_string(&cursor_file).expect("cursor file");
        if !t.contains("plain-e2e-key") || std::time::Instant::now() > deadline {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        !text.contains("plain-e2e-key"),
        "the key is still there: {text}"
    );
    let after: Value = serde_json::from_str(&text).expect("cursor json");
    assert!(after["mcpServers"].get("Helper").is_none(), "{after}");
    assert_eq!(after["mcpServers"]["gatehouse"]["url"], d.url.as_str());
    assert_eq!(
        after["mcpServers"]["base"]["command"], "taken-id",
        "an entry Gatehouse does not run is kept: {after}"
    );
    // The copy kept of the file before the removal holds no moved secret. It is written just
    // after the file is replaced (a file that was not replaced gets no copy): looked for until
    // it is there.
    let new: Vec<_> = loop {
        let new: Vec<_> = backups()
            .into_iter()
            .filter(|b| !backups_before.contains(b))
            .collect();
        if !new.is_empty() || std::time::Instant::now() > deadline {
            break new;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(new.len(), 1, "no backup of the file was kept: {new:?}");
    let copy = std::fs::read_to_string(&new[0]).expect("backup");
    assert!(
        !copy.contains("plain-e2e-key") && copy.contains("HELPER_API_KEY"),
        "the moved key stayed in the backup: {copy}"
    );
    d.wait_js(
        "the offer gone with the entry",
        "return !document.querySelector('.import-source .leak-offer')
                && !document.querySelector('.import-source tr[data-name=Helper]');",
    )
    .await;
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
             return !!s && s.textContent.includes('profile cursor') && c.includes('profile cursor — says') && c.includes(', protocol 20');",
        )
        .await;
    assert_eq!(seen, json!(true));
    // "Last seen" keeps ticking while the view is open.
    let first = d
        .js("return document.querySelector('#connected-list li[data-seen] .seen').textContent;")
        .await;
    d.wait_js(
        "last seen ticking",
        &format!(
            "const t = document.querySelector('#connected-list li[data-seen] .seen')?.textContent;
             return !!t && t !== {first} && t.endsWith(' s ago');"
        ),
    )
    .await;
    d.quit().await;
}

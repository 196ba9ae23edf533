//! The window people leave open all day: every view, at every width from 720 to 1600 px and in
//! both themes, shows every word — a text fits, wraps at a word boundary, or is cut with an
//! ellipsis and its whole text one hover away; tables reflow instead of spilling; a failed
//! call's outcome reads in words with its error.

use serde_json::{json, Value};

use crate::lock;
use crate::registry::RegistryStandIn;
use crate::support::*;

/// Installed in the page: the texts of `scope` that are cut (measured from element boxes and
/// scroll widths), each named; empty when every word can be read.
const CUTS: &str = r#"
window.__cuts = (scope) => {
  const W = document.documentElement.clientWidth;
  const bad = [];
  const name = (e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.classList.length ? '.' + [...e.classList].join('.') : ''} “${(e.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 48)}”`;
  if (document.documentElement.scrollWidth > W + 1) bad.push(`the page scrolls sideways (${document.documentElement.scrollWidth} > ${W})`);
  for (const root of document.querySelectorAll(scope)) {
    for (const e of [root, ...root.querySelectorAll('*')]) {
      if (!e.getClientRects().length || e.closest('[hidden]') || e.closest('.menu')) continue;
      const cs = getComputedStyle(e);
      if (cs.visibility === 'hidden' || ['OPTION', 'SCRIPT', 'svg'].includes(e.tagName)) continue;
      const r = e.getBoundingClientRect();
      if (r.width < 1 || r.height < 1) continue;
      if (r.right > W + 1) bad.push(`past the window's edge: ${name(e)}`);
      // Holds more than it shows sideways: fine only as a scroll area (a log, code), or cut
      // with an ellipsis and the whole text one hover away.
      if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1) {
        const scrolls = ['auto', 'scroll'].includes(cs.overflowX) && ['PRE', 'CODE', 'TEXTAREA'].includes(e.tagName);
        const ellipsis = cs.textOverflow === 'ellipsis' && !!(e.title || e.getAttribute('aria-label'));
        if (!scrolls && !ellipsis && !['INPUT', 'SELECT', 'TEXTAREA'].includes(e.tagName)) {
          bad.push(`cut (${e.scrollWidth} > ${e.clientWidth}): ${name(e)}`);
        }
      }
    }
  }
  return [...new Set(bad)];
};
/* An exposed tool name never breaks inside a word: only after an underscore. */
window.__midword = (scope) => {
  const bad = [];
  for (const code of document.querySelectorAll(scope)) {
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    let text = '';
    let top = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.textContent.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (rect && top !== null && rect.top > top + 2 && !text.endsWith('_')) bad.push(`${code.textContent} breaks after “${text}”`);
        if (rect) top = rect.top;
        text += node.textContent[i];
      }
    }
  }
  return bad;
};
return true;
"#;

/// A path no line can break at a space, 200 characters long (what a deep checkout or a long
/// home directory gives a command): a layout that fits only short paths is cut by it.
fn long_path() -> String {
    let mut p = String::from("/home/someone-with-a-long-login");
    while p.len() < 188 {
        p.push_str("/a-deeply-nested-folder");
    }
    p.truncate(188);
    p.push_str("/server.bin");
    p
}

/// A name with no space at all, 120 characters long.
fn long_word(stem: &str, len: usize) -> String {
    let mut w = String::from(stem);
    while w.len() < len {
        w.push_str("AndMore");
    }
    w.truncate(len);
    w
}

/// Every view at 720, 800, 1024, 1280 and 1600 px, light and dark, at 100 % and 125 % text
/// scale, with what makes texts long — deliberately longer than any machine's paths: a
/// 200-character command path and a 120-character server name in a client's file, a client
/// name with no space, long ids and tool names, a failed server's multi-line error, calls in
/// Activity (one whose tool reported an error), Permissions with an "always" answer, an exact
/// grant and two rules, a secret. A layout that fits only with one machine's paths and fonts
/// fails here on every machine.
#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; run by make test"]
async fn nothing_is_cut_in_any_view_at_any_width() {
    let _serial = lock().await;
    let fixture_cmd = fixture()["command"].clone();
    let specs = tempfile::tempdir().expect("tempdir");
    let spec = specs.path().join("long.spec");
    std::fs::write(
        &spec,
        "Echoes the text\nadd_pull_request_review_comment_to_pending_review\nget_code_scanning_alert_instances_for_repository\n",
    )
    .expect("spec");
    let d = Desktop::launch_with(
        json!({
            "alpha": { "command": fixture_cmd, "requires_approval": false },
            "github-enterprise-server-mirror": { "command": fixture_cmd, "args": ["--spec-file", spec], "sandbox": "off", "tools": { "echo": { "requires_approval": true }, "add": { "requires_approval": true } }, "name": "GitHub Enterprise (the company's own mirror, read-only)" },
            "crashes": { "command": "sh", "args": ["-c", "echo 'error: cannot open /home/someone/projects/a-rather-long-folder-name/and/a/deeper/one/with/a/very-long-file-name-without-spaces.json: permission denied' >&2; printf '%s\\n' /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin /usr/games /usr/local/games /snap/bin >&2; exit 3"] }
        }),
        |home| {
            let cursor = home.join(".cursor");
            std::fs::create_dir_all(&cursor).expect("cursor dir");
            std::fs::write(
                cursor.join("mcp.json"),
                json!({ "mcpServers": {
                    "filesystem-with-a-long-name": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/someone/Documents/a-very-long-folder-name-that-keeps-going"], "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_not_a_real_token_000000000000" } },
                    "spec": { "command": fixture_cmd, "args": ["--spec-file", spec] },
                    long_word("a-server-whose-name-never-ends-", 120): { "command": long_path(), "args": [long_path()] }
                }})
                .to_string(),
            )
            .expect("cursor config");
            // A project whose folder path is longer than any checkout's: Claude Code knows it,
            // and Import shows its `.mcp.json` by that path.
            let mut project = home.join("work");
            for part in ["a-client-project-with-a-rather-long-name", "and-its-subfolder-for-the-mcp-servers", "nested-once-more-because-monorepos-do-this", "packages-and-more-packages-and-tools"] {
                project.push(part);
            }
            std::fs::create_dir_all(&project).expect("project dir");
            std::fs::write(project.join(".mcp.json"), json!({ "mcpServers": { "proj": { "command": "echo" } } }).to_string())
                .expect("project .mcp.json");
            std::fs::write(
                home.join(".claude.json"),
                json!({ "projects": { project.to_string_lossy(): { "enabledMcpjsonServers": ["proj"] } } }).to_string(),
            )
            .expect("claude.json");
        },
    )
    .await;
    d.wait_state("alpha", "running").await;
    d.wait_js(
        "crashes failing",
        "const r = document.querySelector('article.server[data-id=crashes]');
         return r && ['restarting', 'failed'].includes(r.dataset.state) && !r.querySelector('.last-error').hidden;",
    )
    .await;
    // Activity: answered calls, one whose tool reported an error, one with long arguments, from
    // a client whose name has no space.
    let out = d
        .client_call_named(TOKEN, &long_word("AnAIClientWhoseNameHasNoSpaces", 64), json!([
            ["alpha__echo", { "text": "a short one" }],
            ["alpha__exotic", { "raw": "{\"content\":[{\"type\":\"text\",\"text\":\"disk full: could not write /var/lib/something/that/is/quite/deep/and/long/cache.db\"}],\"isError\":true}" }],
            ["alpha__echo", { "text": "x".repeat(300) }]
        ]))
        .finish();
    assert!(crate::is_error(&out, "alpha__exotic"), "{out}");
    // A secret with a long name.
    let (code, _, err) = d.cli_stdin(
        &[
            "secret",
            "set",
            "a-rather-long-secret-name-for-the-enterprise-mirror",
        ],
        "s3cret-value-0123456789",
    );
    assert_eq!(code, 0, "{err}");
    // Permissions: an "always" answer, an exact grant and two rules.
    d.wait_state("github-enterprise-server-mirror", "running")
        .await;
    for (scope, call) in [
        (
            "exact-always",
            json!(["github-enterprise-server-mirror__echo", { "text": "this exact call" }]),
        ),
        (
            "always",
            json!(["github-enterprise-server-mirror__add", { "a": 1, "b": 2 }]),
        ),
    ] {
        let held = d.client_call(json!([call]));
        let id = first_waiting(&d).await;
        let (code, _, err) = d.cli(&["approve", &id, "--scope", scope]);
        assert_eq!(code, 0, "{err}");
        let _ = held.finish();
    }
    for rule in [
        json!({"allow": {"text": {"glob": "a short one*"}}}),
        json!({"deny": {"text": {"one_of": [long_word("NoSpaceInThisValueAtAll", 90), "rm -rf /"]}}}),
    ] {
        let (code, _, err) = d.cli(&["rules", "add", "alpha", "echo", &rule.to_string()]);
        assert_eq!(code, 0, "{err}");
    }
    d.js(CUTS).await;
    // Each view, made to show what it holds (a row expanded, a call's detail opened).
    let views: &[(&str, &str)] = &[
        ("servers", "document.querySelector('article.server[data-id=github-enterprise-server-mirror] .expand').click();"),
        ("activity", "const r = [...document.querySelectorAll('#activity-table tbody tr[data-key]')].find(r => r.textContent.includes('exotic')); if (!r) return null; if (!document.querySelector('#activity-table .activity-detail')) r.click();"),
        ("permissions", ""),
        ("secrets", ""),
        ("connect", ""),
        // A file named by the person, at the long project path: its card shows that path.
        ("import", "const f = document.getElementById('import-other'); if (!document.querySelector('.import-source[data-path$=\"packages-and-more-packages-and-tools/.mcp.json\"]')) { f.elements.path.value = document.querySelector('#import-sources td .hint')?.textContent.replace(/^project (.*) scope$/, '$1/.mcp.json') ?? ''; f.requestSubmit(); return null; }"),
        ("settings", ""),
    ];
    let mut found: Vec<String> = Vec::new();
    for (view, open) in views {
        // After a sweep the page is at 1600 px in the dark theme: the view is picked as a
        // keyboard user would, through the button's own click.
        d.js(&format!(
            "document.querySelector('.nav[data-view={view}]').click(); return true;"
        ))
        .await;
        d.wait_js(
            &format!("the {view} view"),
            &format!("return !document.getElementById('view-{view}').hidden"),
        )
        .await;
        if !open.is_empty() {
            d.wait_js(&format!("{view} opened"), &format!("{open} return true;"))
                .await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        found.extend(sweep(&d, &format!("#view-{view}"), view).await);
    }
    // The dialogs: the approval modal over a held call, the server form, the registry browser.
    let held = d.client_call(json!([["github-enterprise-server-mirror__echo", { "text": "a call waiting for you, with an argument long enough to wrap ".repeat(4) }]]));
    d.wait_js(
        "the approval modal",
        "return document.getElementById('approval-dialog').open;",
    )
    .await;
    found.extend(sweep(&d, "#approval-dialog", "approval").await);
    d.click("#approval-deny").await;
    let _ = held.finish();
    d.view("servers").await;
    d.row_action("alpha", "edit").await;
    d.wait_js(
        "the server form",
        "return document.getElementById('server-dialog').open;",
    )
    .await;
    found.extend(sweep(&d, "#server-dialog", "server form").await);
    d.click("#server-cancel").await;
    let registry = RegistryStandIn::start();
    d.point_at(&registry);
    d.click("#add-server").await;
    d.click("#find-server-form").await;
    d.type_into("#registry-form input[name=q]", "e").await;
    d.wait_js(
        "registry results",
        "return document.querySelectorAll('#registry-results li').length > 2;",
    )
    .await;
    found.extend(sweep(&d, "#registry-dialog", "registry").await);
    drop(registry);
    d.js("document.getElementById('registry-dialog').close(); return true;")
        .await;
    assert!(
        found.is_empty(),
        "{} cut text(s):\n{}",
        found.len(),
        found.join("\n")
    );
    // An exact grant says in words the call it covers — its tool and arguments — not a hash.
    d.view("permissions").await;
    d.wait_js(
        "the exact grant's call",
        "const r = document.querySelector('#grants-table tr[data-scope=\"exact-always\"]');
         return r && r.textContent.includes('this call: github-enterprise-server-mirror__echo with {\"text\":\"this exact call\"}');",
    )
    .await;
    // A call whose tool reported an error reads as such, with its error, in Activity's detail
    // (opened above, kept open across the view's refreshes).
    d.view("activity").await;
    let detail = d
        .wait_js(
            "the failed call's detail",
            "const t = document.querySelector('#activity-table .activity-detail');
             return t && t.textContent;",
        )
        .await;
    let detail: String = serde_json::from_value::<Value>(detail)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    assert!(detail.contains("the tool reported an error"), "{detail}");
    assert!(detail.contains("disk full: could not write"), "{detail}");
    // A window left open keeps its memory: a refresh (every 4 s while shown) keeps the rows it
    // already made and makes only the new call's.
    d.js("for (const r of document.querySelectorAll('#activity-table tbody tr')) r.__kept = true; return true;")
        .await;
    let out = d
        .client_call(json!([["alpha__echo", { "text": "one more" }]]))
        .finish();
    assert!(!crate::is_error(&out, "alpha__echo"), "{out}");
    let kept = d
        .wait_js(
            "the new call's row",
            "const rows = [...document.querySelectorAll('#activity-table tbody tr')];
             const fresh = rows.filter((r) => !r.__kept);
             if (fresh.length === 0) return null;
             return { fresh: fresh.length, kept: rows.length - fresh.length };",
        )
        .await;
    assert_eq!(
        kept["fresh"],
        json!(1),
        "only the new call's row is made: {kept}"
    );
    d.quit().await;
}

/// The id of the call waiting for an answer (within 15 s).
async fn first_waiting(d: &Desktop) -> String {
    for _ in 0..300 {
        let (_, out, _) = d.cli(&["approvals", "--json"]);
        let listed: Value = serde_json::from_str(&out).unwrap_or_default();
        if let Some(id) = listed[0]["id"].as_str() {
            return id.to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no call waiting for an answer");
}

/// The cut texts of `scope` at every width and in both themes, each named with where.
async fn sweep(d: &Desktop, scope: &str, what: &str) -> Vec<String> {
    let mut found = Vec::new();
    for width in [720u32, 800, 1024, 1280, 1600] {
        d.resize(width, 760).await;
        for zoom in ["1", "1.25"] {
            text_size(d, zoom).await;
            for theme in ["light", "dark"] {
                d.js(&format!(
                    "document.documentElement.dataset.theme = '{theme}'; return true;"
                ))
                .await;
                // Two frames: the page laid out again, its tables measured again.
                tokio::time::sleep(std::time::Duration::from_millis(150)).await;
                let bad = d
                    .js(&format!(
                        "return [...window.__cuts('{scope}'), ...window.__midword('{scope} table.tools code')];"
                    ))
                    .await;
                for b in bad.as_array().cloned().unwrap_or_default() {
                    found.push(format!(
                        "{what} at {width} px, {zoom}×, {theme}: {}",
                        b.as_str().unwrap_or("")
                    ));
                }
            }
        }
        text_size(d, "1").await;
    }
    found
}

/// Sets the text size as a person does in Settings (the webview's zoom: every length of the
/// page scaled, so the same window holds less), and waits until the page has it.
async fn text_size(d: &Desktop, zoom: &str) {
    d.js(&format!(
        "const s = document.getElementById('text-size');
         s.value = '{zoom}';
         s.dispatchEvent(new Event('change'));
         return true;"
    ))
    .await;
    d.wait_js(
        "the text size",
        &format!("return Math.abs(window.outerWidth / window.innerWidth - {zoom}) < 0.05;"),
    )
    .await;
}

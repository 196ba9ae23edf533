//! The tray icon and its menu: Open, the approvals waiting, each server with its status and
//! Restart, Quit. The menu is a pure model (`model`) rendered by `refresh` on every change; a
//! click becomes a [`TrayAction`] that the app's `dispatch` carries out.

use std::sync::Arc;

use tauri::image::Image;
use tauri::menu::{IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

use crate::state::AppState;

const TRAY_ID: &str = "gatehouse";
const ICON_IDLE: &[u8] = include_bytes!("../../icons/tray.png");
const ICON_PENDING: &[u8] = include_bytes!("../../icons/tray-pending.png");

/// One entry of the tray menu, independent of the toolkit.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Item {
        id: String,
        text: String,
        enabled: bool,
    },
    Server {
        id: String,
        text: String,
        /// Its warnings, each a line of its own above the actions (not clickable).
        notes: Vec<String>,
        /// The actions that fit its state: (verb, label).
        actions: Vec<(&'static str, &'static str)>,
    },
    Separator,
}

/// One server as the tray shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    pub id: String,
    pub state: String,
    /// What its status warns of (a place its sandbox left out, a stale rule, …).
    pub warnings: Vec<String>,
}

impl Row {
    #[cfg(test)]
    fn new(id: &str, state: &str) -> Self {
        Row {
            id: id.to_owned(),
            state: state.to_owned(),
            warnings: Vec::new(),
        }
    }
}

/// The longest a warning's line in the menu grows before it is cut (the window shows it whole).
const NOTE_CHARS: usize = 110;

/// The menu for `pending` approvals and these servers, in order.
pub fn model(pending: usize, servers: &[Row], phase_error: bool) -> Vec<Entry> {
    let mut out = vec![Entry::Item {
        id: "open".into(),
        text: "Open Gatehouse".into(),
        enabled: true,
    }];
    out.push(Entry::Item {
        id: "approvals".into(),
        text: match pending {
            0 => "No approvals waiting".into(),
            1 => "1 approval waiting".into(),
            n => format!("{n} approvals waiting"),
        },
        enabled: pending > 0,
    });
    out.push(Entry::Separator);
    if phase_error {
        out.push(Entry::Item {
            id: "open-error".into(),
            text: "Not running: open to see why".into(),
            enabled: true,
        });
    } else if servers.is_empty() {
        out.push(Entry::Item {
            id: "none".into(),
            text: "No servers configured".into(),
            enabled: false,
        });
    }
    if !servers.is_empty() {
        out.push(Entry::Item {
            id: "summary".into(),
            text: summary(servers),
            enabled: false,
        });
    }
    // The ones that need the person first (cannot be read, failed, waiting for a sign-in),
    // then the rest, each group by id.
    let mut ordered: Vec<&Row> = servers.iter().collect();
    ordered.sort_by_key(|r| (!needs_you(&r.state), r.id.clone()));
    for Row {
        id,
        state,
        warnings,
    } in ordered
    {
        // Menus cannot colour text: the state leads with a mark of its own, said in words.
        let (mark, actions): (&str, Vec<(&'static str, &'static str)>) = match state.as_str() {
            "running" => ("●", vec![("restart", "Restart"), ("stop", "Stop")]),
            "idle" => ("○", vec![("start", "Start now")]),
            "failed" => ("✕", vec![("start", "Start again")]),
            "needs_sign_in" => ("⚠", vec![("sign-in", "Sign in…")]),
            "invalid" => ("✕", vec![("fix", "Fix in Gatehouse…")]),
            "stopped" => ("○", vec![("start", "Start")]),
            _ => ("◌", vec![("stop", "Stop")]),
        };
        // A warning is said on the server's own line and, each, inside its menu.
        let warned = match warnings.len() {
            0 => String::new(),
            1 => " · ⚠ 1 warning".to_owned(),
            n => format!(" · ⚠ {n} warnings"),
        };
        out.push(Entry::Server {
            id: id.clone(),
            // An entry that cannot be read may have any key: shown as code points where hidden.
            text: format!(
                "{mark} {} — {}{warned}",
                gatehouse::text::reveal(id),
                words(state)
            ),
            notes: warnings.iter().map(|w| note(w)).collect(),
            actions,
        });
    }
    out.push(Entry::Separator);
    out.push(Entry::Item {
        id: "quit".into(),
        text: "Quit Gatehouse".into(),
        enabled: true,
    });
    out
}

/// A warning as one menu line: hidden characters shown, cut where it would widen the menu.
fn note(warning: &str) -> String {
    let shown = gatehouse::text::reveal(warning);
    if shown.chars().count() <= NOTE_CHARS {
        return format!("⚠ {shown}");
    }
    let cut: String = shown.chars().take(NOTE_CHARS - 1).collect();
    format!("⚠ {cut}… (open Gatehouse to read it all)")
}

/// Whether a server in `state` needs the person.
fn needs_you(state: &str) -> bool {
    matches!(state, "failed" | "needs_sign_in" | "invalid")
}

/// A state as the app says it.
fn words(state: &str) -> &str {
    match state {
        "needs_sign_in" => "waiting for you to sign in",
        "idle" => "idle, starts when called",
        "invalid" => "its entry cannot be read",
        "failed" => "failed",
        other => other,
    }
}

/// One line on every server: how many run, and how many need the person, in words.
fn summary(servers: &[Row]) -> String {
    let count = |st: &str| servers.iter().filter(|r| r.state == st).count();
    let mut parts = vec![format!("{} running", count("running"))];
    for (state, text) in [
        ("idle", "idle"),
        ("failed", "failed"),
        ("needs_sign_in", "waiting for a sign-in"),
        ("invalid", "cannot be read"),
        ("restarting", "restarting"),
        ("stopped", "stopped"),
    ] {
        let n = count(state);
        if n > 0 {
            parts.push(format!("{n} {text}"));
        }
    }
    parts.join(" · ")
}

/// What a click in the tray menu asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrayAction {
    /// Show the window (Open, the approvals entry, the error entry).
    Open,
    /// Quit, asking first if calls are waiting.
    Quit,
    /// Restart this server.
    Restart(String),
    /// Start this server.
    Start(String),
    /// Stop this server.
    Stop(String),
    /// Sign in to this (remote) server: its authorization page opens in the browser.
    SignIn(String),
}

/// The action behind a menu item's id (`None` for the inert ones).
pub fn action(id: &str) -> Option<TrayAction> {
    match id {
        "open" | "approvals" | "open-error" | "client-files" => Some(TrayAction::Open),
        "quit" => Some(TrayAction::Quit),
        other => {
            let (verb, id) = other.split_once(':')?;
            let id = id.to_owned();
            match verb {
                "restart" => Some(TrayAction::Restart(id)),
                "start" => Some(TrayAction::Start(id)),
                "stop" => Some(TrayAction::Stop(id)),
                "sign-in" => Some(TrayAction::SignIn(id)),
                // An entry that cannot be read is fixed in the app's form.
                "fix" => Some(TrayAction::Open),
                _ => None,
            }
        }
    }
}

/// Creates the tray icon; each click's action goes to `on_action`.
pub fn create<R: Runtime>(
    app: &AppHandle<R>,
    on_action: fn(&AppHandle<R>, TrayAction),
) -> tauri::Result<()> {
    let menu = render(app, &current_model(app))?;
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(Image::from_bytes(ICON_IDLE)?)
        .tooltip("Gatehouse")
        .menu(&menu)
        .on_menu_event(move |app, event| {
            if let Some(a) = action(event.id().as_ref()) {
                on_action(app, a);
            }
        })
        .build(app)?;
    Ok(())
}

/// Re-renders the menu, icon and tooltip from the current state.
pub fn refresh<R: Runtime>(app: &AppHandle<R>) {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return;
    };
    let model = current_model(app);
    let pending = pending_count(app);
    match render(app, &model) {
        Ok(menu) => {
            dump(&menu);
            let _ = tray.set_menu(Some(menu));
        }
        Err(e) => tracing::warn!(error = %e, "cannot update the tray menu"),
    }
    let icon = if pending > 0 { ICON_PENDING } else { ICON_IDLE };
    if let Ok(image) = Image::from_bytes(icon) {
        let _ = tray.set_icon(Some(image));
    }
    let tip = match pending {
        0 => "Gatehouse".to_owned(),
        n => format!("Gatehouse — {n} waiting for approval"),
    };
    let _ = tray.set_tooltip(Some(tip));
}

pub fn pending_count<R: Runtime>(app: &AppHandle<R>) -> usize {
    let state = app.state::<Arc<AppState>>();
    state
        .hub()
        .map(|h| h.approvals().pending().len())
        .unwrap_or(0)
}

fn current_model<R: Runtime>(app: &AppHandle<R>) -> Vec<Entry> {
    let state = app.state::<Arc<AppState>>();
    let failed = state.view().phase == crate::state::PhaseName::Failed;
    let (pending, servers) = match state.hub() {
        Ok(hub) => {
            let mut servers: Vec<Row> = hub
                .status()
                .into_iter()
                .map(|s| Row {
                    id: s.id,
                    state: s.state.to_string(),
                    warnings: s.warnings,
                })
                .collect();
            servers.sort();
            (hub.approvals().pending().len(), servers)
        }
        Err(_) => (0, Vec::new()),
    };
    let changed = state
        .hub()
        .map(|h| h.client_file_alerts().len())
        .unwrap_or(0);
    with_client_files(model(pending, &servers, failed), changed)
}

/// The menu with a line for the clients' files changed outside Gatehouse, under the approvals
/// (a click opens the window, where Servers lists them with their diffs).
pub fn with_client_files(mut entries: Vec<Entry>, changed: usize) -> Vec<Entry> {
    if changed > 0 {
        let at = entries.len().min(2);
        entries.insert(
            at,
            Entry::Item {
                id: "client-files".into(),
                text: match changed {
                    1 => "⚠ A client's file changed outside Gatehouse…".into(),
                    n => format!("⚠ {n} client files changed outside Gatehouse…"),
                },
                enabled: true,
            },
        );
    }
    entries
}

/// For the desktop e2e tests (`GATEHOUSE_E2E_TRAY_TEXT=FILE`): the menu's entries as the
/// toolkit holds them, one per line (a submenu's own entries indented), written on every refresh.
fn dump<R: Runtime>(menu: &Menu<R>) {
    let Some(path) = std::env::var_os("GATEHOUSE_E2E_TRAY_TEXT") else {
        return;
    };
    let mut out = Vec::new();
    for item in menu.items().unwrap_or_default() {
        if let Some(i) = item.as_menuitem() {
            out.push(i.text().unwrap_or_default());
        } else if let Some(sub) = item.as_submenu() {
            out.push(sub.text().unwrap_or_default());
            for inner in sub.items().unwrap_or_default() {
                if let Some(i) = inner.as_menuitem() {
                    out.push(format!("  {}", i.text().unwrap_or_default()));
                }
            }
        } else {
            out.push("---".into());
        }
    }
    if let Err(e) = std::fs::write(&path, out.join("\n")) {
        tracing::warn!(error = %e, "the tray's text was not written");
    }
}

fn render<R: Runtime>(app: &AppHandle<R>, model: &[Entry]) -> tauri::Result<Menu<R>> {
    let menu = Menu::new(app)?;
    for entry in model {
        match entry {
            Entry::Item { id, text, enabled } => {
                menu.append(&MenuItem::with_id(app, id, text, *enabled, None::<&str>)?)?
            }
            Entry::Separator => menu.append(&PredefinedMenuItem::separator(app)?)?,
            Entry::Server {
                id,
                text,
                notes,
                actions,
            } => {
                let mut items = Vec::new();
                for (i, line) in notes.iter().enumerate() {
                    let note_id = format!("note-{i}:{id}");
                    items.push(MenuItem::with_id(app, note_id, line, false, None::<&str>)?);
                }
                for (verb, label) in actions {
                    let item_id = format!("{verb}:{id}");
                    items.push(MenuItem::with_id(app, item_id, *label, true, None::<&str>)?);
                }
                let refs: Vec<&dyn IsMenuItem<R>> =
                    items.iter().map(|i| i as &dyn IsMenuItem<R>).collect();
                menu.append(&Submenu::with_items(app, text, true, &refs)?)?
            }
        }
    }
    Ok(menu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn menu_lists_approvals_and_each_server_with_its_state() {
        let servers = vec![Row::new("fs", "running"), Row::new("time", "restarting")];
        let m = model(2, &servers, false);
        assert!(m.contains(&Entry::Item {
            id: "approvals".into(),
            text: "2 approvals waiting".into(),
            enabled: true
        }));
        assert!(m.contains(&Entry::Server {
            id: "time".into(),
            text: "◌ time — restarting".into(),
            notes: vec![],
            actions: vec![("stop", "Stop")],
        }));
        assert!(m.contains(&Entry::Item {
            id: "summary".into(),
            text: "1 running · 1 restarting".into(),
            enabled: false
        }));
        assert_eq!(
            m.last(),
            Some(&Entry::Item {
                id: "quit".into(),
                text: "Quit Gatehouse".into(),
                enabled: true
            })
        );
        let empty = model(0, &[], false);
        assert!(empty
            .iter()
            .any(|e| matches!(e, Entry::Item { id, enabled: false, .. } if id == "approvals")));
        assert!(empty
            .iter()
            .any(|e| matches!(e, Entry::Item { id, .. } if id == "none")));
        let failed = model(0, &[], true);
        assert!(failed
            .iter()
            .any(|e| matches!(e, Entry::Item { id, .. } if id == "open-error")));
    }

    #[test]
    fn every_clickable_entry_has_an_action() {
        let m = model(1, &[Row::new("fs", "running")], true);
        for e in &m {
            match e {
                Entry::Item {
                    id, enabled: true, ..
                } => assert!(action(id).is_some(), "{id}"),
                Entry::Server { id, actions, .. } => {
                    for (verb, _) in actions {
                        assert!(action(&format!("{verb}:{id}")).is_some(), "{verb}:{id}");
                    }
                }
                _ => {}
            }
        }
        assert_eq!(action("quit"), Some(TrayAction::Quit));
        assert_eq!(action("none"), None);
    }

    /// Each server offers what fits its state: a running one Restart and Stop, a stopped or
    /// failed one Start, one waiting for a sign-in Sign in, one on its way Stop; its state is
    /// marked at the front.
    #[test]
    fn each_server_offers_the_actions_that_fit_its_state() {
        let servers: Vec<Row> = [
            "running",
            "stopped",
            "failed",
            "starting",
            "needs_sign_in",
            "idle",
            "invalid",
        ]
        .iter()
        .map(|s| Row::new(&format!("s-{s}"), s))
        .collect();
        let m = model(0, &servers, false);
        let of = |id: &str| {
            m.iter()
                .find_map(|e| match e {
                    Entry::Server {
                        id: i,
                        text,
                        actions,
                        ..
                    } if i == id => Some((text.clone(), actions.clone())),
                    _ => None,
                })
                .unwrap()
        };
        assert_eq!(
            of("s-running").1,
            vec![("restart", "Restart"), ("stop", "Stop")]
        );
        assert!(of("s-running").0.starts_with('●'));
        assert_eq!(of("s-stopped").1, vec![("start", "Start")]);
        assert_eq!(of("s-failed").1, vec![("start", "Start again")]);
        assert_eq!(of("s-idle").1, vec![("start", "Start now")]);
        assert_eq!(of("s-invalid").1, vec![("fix", "Fix in Gatehouse…")]);
        assert_eq!(action("fix:s-invalid"), Some(TrayAction::Open));
        // An unreadable entry's key is any text its file holds: hidden characters as code points.
        let odd = model(0, &[Row::new("x\u{202e}hs.txt", "invalid")], false);
        assert!(odd.iter().any(|e| matches!(e, Entry::Server { text, .. }
            if text == "✕ x⟨U+202E⟩hs.txt — its entry cannot be read")));
        // Words, not state names.
        assert_eq!(
            of("s-needs_sign_in").0,
            "⚠ s-needs_sign_in — waiting for you to sign in"
        );
        assert!(m
            .iter()
            .all(|e| !matches!(e, Entry::Server { text, .. } if text.ends_with("needs_sign_in"))));
        // Those that need the person first, then the others by id.
        let order: Vec<&str> = m
            .iter()
            .filter_map(|e| match e {
                Entry::Server { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            order,
            [
                "s-failed",
                "s-invalid",
                "s-needs_sign_in",
                "s-idle",
                "s-running",
                "s-starting",
                "s-stopped"
            ]
        );
        assert!(m.contains(&Entry::Item {
            id: "summary".into(),
            text: "1 running · 1 idle · 1 failed · 1 waiting for a sign-in · 1 cannot be read · 1 stopped".into(),
            enabled: false
        }));
        assert!(of("s-failed").0.starts_with('✕'));
        assert_eq!(of("s-starting").1, vec![("stop", "Stop")]);
        assert_eq!(
            action("start:s-failed"),
            Some(TrayAction::Start("s-failed".into()))
        );
        assert_eq!(action("stop:x"), Some(TrayAction::Stop("x".into())));
        // A server waiting for a sign-in offers the sign-in, nothing that would only fail again.
        assert_eq!(of("s-needs_sign_in").1, vec![("sign-in", "Sign in…")]);
        assert_eq!(
            action("sign-in:web"),
            Some(TrayAction::SignIn("web".into()))
        );
        assert_eq!(action("explode:x"), None);
    }

    /// A server whose status warns (a place its sandbox left out) says so on its own line, and
    /// each warning is a line of its menu, with the line that fixes it, before any call fails.
    #[test]
    fn a_changed_client_file_is_a_line_of_its_own_that_opens_the_window() {
        let m = with_client_files(model(0, &[Row::new("fs", "running")], false), 2);
        assert_eq!(
            m[2],
            Entry::Item {
                id: "client-files".into(),
                text: "⚠ 2 client files changed outside Gatehouse…".into(),
                enabled: true,
            }
        );
        assert_eq!(action("client-files"), Some(TrayAction::Open));
        let quiet = with_client_files(model(0, &[Row::new("fs", "running")], false), 0);
        assert!(!quiet
            .iter()
            .any(|e| matches!(e, Entry::Item { id, .. } if id == "client-files")));
    }

    #[test]
    fn a_servers_warnings_show_in_the_tray() {
        let left =
            "the sandbox left out what the entry names — /var/tmp/x.json (MEMORY_FILE_PATH): \
                    a system folder; add \"sandbox\": {\"write\": [\"/var/tmp\"]}";
        let mut warned = Row::new("memory", "running");
        warned.warnings = vec![left.to_owned(), "rule\u{202e} stale".to_owned()];
        let m = model(0, &[warned, Row::new("fs", "running")], false);
        let (text, notes) = m
            .iter()
            .find_map(|e| match e {
                Entry::Server {
                    id, text, notes, ..
                } if id == "memory" => Some((text.clone(), notes.clone())),
                _ => None,
            })
            .unwrap();
        assert_eq!(text, "● memory — running · ⚠ 2 warnings");
        assert_eq!(notes.len(), 2);
        assert!(
            notes[0].starts_with("⚠ the sandbox left out"),
            "{}",
            notes[0]
        );
        assert!(notes[0].chars().count() < 160, "{}", notes[0]);
        assert!(notes[0].ends_with("(open Gatehouse to read it all)"));
        assert_eq!(notes[1], "⚠ rule⟨U+202E⟩ stale");
        assert!(m
            .iter()
            .any(|e| matches!(e, Entry::Server { id, text, notes, .. }
            if id == "fs" && text == "● fs — running" && notes.is_empty())));
    }
}

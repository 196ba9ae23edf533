//! OS notifications: a held call while the window is closed ("Client profile cursor (says
//! "claude-code") wants to run files__write on files: {"path":"/tmp/x"}"), with **Allow once** and
//! **Deny** where the notification service offers actions (its `GetCapabilities` says `actions`)
//! and the notification shows the whole decision — the client, the tool and arguments short
//! enough to read, with nothing hidden in them and no borrowed name; otherwise **Open
//! Gatehouse** and **Deny** (the prompt shows the whole call). A click answers that call (the
//! answer carries its digest); a call answered elsewhere takes its notification away. A sign-in
//! a remote server needs. Never a token: arguments are shown with secret values masked.
//!
//! On Linux this speaks the freedesktop notification service (`notify-rust`; `zbus` to close a
//! notification by its id); elsewhere the notification plugin posts a plain one.

use tauri::{AppHandle, Runtime};

/// Held calls whose notification carries actions at once, at most: each waits for its click on a
/// thread of its own; more are posted without actions.
pub const MAX_ACTIONABLE: usize = 8;

/// Arguments shown in a notification at most (characters, as JSON on one line): longer ones
/// are not shown there, and the notification then offers no "Allow".
pub const ARGS_IN_NOTICE: usize = 160;

/// A held call waits and the window is closed: post its notification.
pub fn approval<R: Runtime>(app: &AppHandle<R>, req: &gatehouse::approval::ApprovalRequest) {
    let notice = approval_notice(req);
    #[cfg(target_os = "linux")]
    linux::approval(app, &req.id, &req.digest, notice);
    #[cfg(not(target_os = "linux"))]
    plain(app, "Approval needed", &notice.body);
}

/// What an approval notification says, and whether it says all a person needs to allow it.
pub struct Notice {
    pub body: String,
    /// The body shows the whole decision: who (the profile, and a name that imitates no one),
    /// the tool and server, and the whole arguments, with no hidden character. Only then does
    /// the notification offer "Allow once".
    pub whole: bool,
}

/// The notification for a held call. The client's name is the client's own word (`clientInfo`):
/// it is cut to 64 characters, shown with hidden characters as code points and, like every
/// other text in it, escaped — a service with body markup would otherwise show a link or markup
/// a client put there.
pub fn approval_notice(req: &gatehouse::approval::ApprovalRequest) -> Notice {
    use gatehouse::text::reveal;
    let profile = req.client.profile.as_deref().unwrap_or("default");
    let who = match req.client.name.as_deref() {
        Some(name) => {
            let name: String = name.chars().take(64).collect();
            let said = gatehouse::text::imitation::marked(&name, req.client.imitates.as_deref());
            format!("Client profile {profile} (says \"{said}\")")
        }
        None => format!("Client profile {profile}"),
    };
    let args: String = serde_json::from_str::<serde_json::Value>(req.arguments.get())
        .map(|v| v.to_string())
        .unwrap_or_else(|_| req.arguments.get().to_owned());
    let fits = args.chars().count() <= ARGS_IN_NOTICE;
    let what = if fits {
        reveal(&args).into_owned()
    } else {
        format!(
            "{} characters of arguments — open Gatehouse to read them",
            args.chars().count()
        )
    };
    let body = format!(
        "{} wants to run {} on {}: {}",
        escape(&who),
        escape(&reveal(&req.exposed)),
        escape(&reveal(&req.server)),
        escape(&what)
    );
    Notice {
        body,
        whole: fits && !req.hidden_characters && req.client.imitates.is_none(),
    }
}

/// Text safe in a notification body that may be read as markup.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A held call left the queue: its notification, if any, goes.
pub fn resolved(id: &str) {
    #[cfg(target_os = "linux")]
    linux::close(id);
    #[cfg(not(target_os = "linux"))]
    let _ = id;
}

/// A notification without actions, through the notification plugin.
pub fn plain<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    use tauri_plugin_notification::NotificationExt;
    let shown = app.notification().builder().title(title).body(body).show();
    if let Err(e) = shown {
        tracing::debug!(error = %e, "no OS notification (is a notification service running?)");
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use notify_rust::{Notification, Timeout};
    use tauri::{AppHandle, Manager, Runtime};

    use crate::state::Choice;

    use super::MAX_ACTIONABLE;
    use crate::state::AppState;

    /// Held calls with a notification waiting for its click: approval id → notification id (0
    /// while it is being posted).
    /// Guards one insert, removal or lookup.
    static OPEN: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

    fn with_open<T>(f: impl FnOnce(&mut HashMap<String, u32>) -> T) -> T {
        let mut guard = gatehouse::sync::lock(&OPEN);
        f(guard.get_or_insert_with(HashMap::new))
    }

    pub fn approval<R: Runtime>(app: &AppHandle<R>, id: &str, digest: &str, notice: super::Notice) {
        let (app, id, digest) = (app.clone(), id.to_owned(), digest.to_owned());
        // Off the caller's thread: asking the service and waiting for a click both block.
        let spawned = std::thread::Builder::new()
            .name("approval-notification".into())
            .spawn(move || post(&app, &id, &digest, &notice));
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "cannot post the approval notification");
        }
    }

    fn post<R: Runtime>(app: &AppHandle<R>, id: &str, digest: &str, notice: &super::Notice) {
        let actions = notify_rust::get_capabilities()
            .map(|c| c.iter().any(|c| c == "actions"))
            .unwrap_or(false);
        let mut n = Notification::new();
        n.appname("Gatehouse")
            .summary("Approval needed")
            .body(&notice.body)
            .icon("dialog-question");
        // A place among the actionable ones is taken before posting (counted and taken under one
        // lock), so posts at the same moment never make more than MAX_ACTIONABLE.
        let actionable = actions
            && with_open(|o| {
                let free = o.len() < MAX_ACTIONABLE;
                if free {
                    o.insert(id.to_owned(), 0);
                }
                free
            });
        if actionable {
            // "Allow" only where the notification shows the whole decision; else it opens the
            // prompt's whole call in the window.
            if notice.whole {
                n.action("allow", "Allow once");
            } else {
                n.action("open", "Open Gatehouse");
            }
            n.action("deny", "Deny").timeout(Timeout::Never);
        }
        let handle = match n.show() {
            Ok(h) => h,
            Err(e) => {
                tracing::debug!(error = %e, "no OS notification (is a notification service running?)");
                with_open(|o| o.remove(id));
                return;
            }
        };
        if !actionable {
            return;
        }
        with_open(|o| o.insert(id.to_owned(), handle.id()));
        // Answered while it was being posted: it goes at once.
        let waiting = app
            .state::<Arc<AppState>>()
            .hub()
            .is_ok_and(|h| h.approvals().pending().iter().any(|r| r.id == id));
        if !waiting {
            close_now(handle.id());
        }
        let whole = notice.whole;
        handle.wait_for_action(|action| {
            let decision = match action {
                "allow" if whole => Choice::Once,
                "deny" => Choice::Deny,
                "open" => {
                    crate::window::show_main(app);
                    return;
                }
                _ => return, // closed, dismissed, or the default action
            };
            if let Err(e) = app
                .state::<Arc<AppState>>()
                .answer(id, digest, decision, None)
            {
                tracing::debug!(error = %e, "the notification's answer came too late");
            }
        });
        with_open(|o| o.remove(id));
    }

    /// Closes the notification of held call `id` (its waiting thread then ends).
    pub fn close(id: &str) {
        let Some(nid) = with_open(|o| o.get(id).copied()).filter(|n| *n != 0) else {
            return;
        };
        // A blocking D-Bus call: never on the caller's (async) thread.
        let spawned = std::thread::Builder::new()
            .name("approval-notification-close".into())
            .spawn(move || close_now(nid));
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "cannot close the approval notification");
        }
    }

    fn close_now(nid: u32) {
        let closed = zbus::blocking::Connection::session().and_then(|c| {
            c.call_method(
                Some("org.freedesktop.Notifications"),
                "/org/freedesktop/Notifications",
                Some("org.freedesktop.Notifications"),
                "CloseNotification",
                &(nid,),
            )
        });
        if let Err(e) = closed {
            tracing::debug!(error = %e, "cannot close the approval notification");
        }
    }
}

#[cfg(test)]
mod tests {
    fn request(client: &str, args: &str) -> gatehouse::approval::ApprovalRequest {
        let req: gatehouse::approval::ApprovalRequest = serde_json::from_value(serde_json::json!({
            "id": "apr-1-1", "client": { "name": client, "session": "s", "profile": "cursor" },
            "server": "files", "tool": "write", "exposed": "files__write",
            "arguments": serde_json::from_str::<serde_json::Value>(args).unwrap(),
            "requested_at": 0, "expires_at": 0
        }))
        .unwrap();
        req.seal()
    }

    /// A client's name cannot put markup or a link into the notification, nor run on; the
    /// profile comes first, the name is what the client says.
    #[test]
    fn the_body_escapes_and_bounds_what_a_client_said() {
        let req = request("<a href=\"https://evil\">x</a>", "{}");
        let n = super::approval_notice(&req);
        assert_eq!(
            n.body,
            "Client profile cursor (says \"&lt;a href=\"https://evil\"&gt;x&lt;/a&gt;\") wants to run files__write on files: {}"
        );
        assert!(n.whole);
        let n = super::approval_notice(&request(&"n".repeat(500), "{}"));
        assert!(n.body.contains(&format!("says \"{}\")", "n".repeat(64))));
    }

    /// "Allow once" only where the notification shows the whole decision: short arguments, no
    /// hidden character, no borrowed name.
    #[test]
    fn allow_is_offered_only_for_the_whole_decision() {
        let short = super::approval_notice(&request("claude-code", r#"{"path":"/tmp/x"}"#));
        assert!(
            short.whole && short.body.ends_with(r#": {"path":"/tmp/x"}"#),
            "{}",
            short.body
        );
        let long = format!(r#"{{"text":"{}"}}"#, "x".repeat(200));
        let n = super::approval_notice(&request("claude-code", &long));
        assert!(
            !n.whole && n.body.contains("open Gatehouse to read them"),
            "{}",
            n.body
        );
        let n = super::approval_notice(&request("claude-code", r#"{"path":"a\u202ehs.txt"}"#));
        assert!(!n.whole && n.body.contains("⟨U+202E⟩"), "{}", n.body);
        let mut r = request("Claude Code\u{200b}", "{}");
        r.client.imitates = Some("Claude Code".into());
        let n = super::approval_notice(&r.seal());
        assert!(!n.whole && n.body.contains("⟨U+200B⟩"), "{}", n.body);
        // A borrowed name is marked in the notification's text, as on every surface.
        assert!(n.body.contains("⚠ imitates “Claude Code”"), "{}", n.body);
    }
}

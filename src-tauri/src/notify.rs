//! OS notifications: a held call while the window is closed ("claude-code wants to run
//! files__write on files"), with **Allow once** and **Deny** where the notification service
//! offers actions (its `GetCapabilities` says `actions`) — a click answers that call; a call
//! answered elsewhere takes its notification away. A sign-in a remote server needs. Never a
//! token or an argument: the prompt and the window show those.
//!
//! On Linux this speaks the freedesktop notification service (`notify-rust`; `zbus` to close a
//! notification by its id); elsewhere the notification plugin posts a plain one.

use tauri::{AppHandle, Runtime};

/// Held calls whose notification carries actions at once, at most: each waits for its click on a
/// thread of its own; more are posted without actions.
pub const MAX_ACTIONABLE: usize = 8;

/// A held call waits and the window is closed: post its notification.
pub fn approval<R: Runtime>(app: &AppHandle<R>, req: &gatehouse::approval::ApprovalRequest) {
    let body = approval_body(req);
    #[cfg(target_os = "linux")]
    linux::approval(app, &req.id, &body);
    #[cfg(not(target_os = "linux"))]
    plain(app, "Approval needed", &body);
}

/// What an approval notification says. The client's name is the client's own word
/// (`clientInfo`): it is cut to 64 characters and, like the tool's name, escaped — a service with
/// body markup would otherwise show a link or markup a client put there.
pub fn approval_body(req: &gatehouse::approval::ApprovalRequest) -> String {
    let who: String = req
        .client
        .name
        .as_deref()
        .unwrap_or("An AI client")
        .chars()
        .take(64)
        .collect();
    format!(
        "{} wants to run {} on {}",
        escape(&who),
        escape(&req.tool),
        escape(&req.server)
    )
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

    use super::MAX_ACTIONABLE;
    use crate::state::AppState;

    /// Held calls with a notification waiting for its click: approval id → notification id (0
    /// while it is being posted).
    /// Guards one insert, removal or lookup.
    static OPEN: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

    fn with_open<T>(f: impl FnOnce(&mut HashMap<String, u32>) -> T) -> T {
        let mut guard = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        f(guard.get_or_insert_with(HashMap::new))
    }

    pub fn approval<R: Runtime>(app: &AppHandle<R>, id: &str, body: &str) {
        let (app, id, body) = (app.clone(), id.to_owned(), body.to_owned());
        // Off the caller's thread: asking the service and waiting for a click both block.
        let spawned = std::thread::Builder::new()
            .name("approval-notification".into())
            .spawn(move || post(&app, &id, &body));
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "cannot post the approval notification");
        }
    }

    fn post<R: Runtime>(app: &AppHandle<R>, id: &str, body: &str) {
        let actions = notify_rust::get_capabilities()
            .map(|c| c.iter().any(|c| c == "actions"))
            .unwrap_or(false);
        let mut n = Notification::new();
        n.appname("Gatehouse")
            .summary("Approval needed")
            .body(body)
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
            n.action("allow", "Allow once")
                .action("deny", "Deny")
                .timeout(Timeout::Never);
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
        handle.wait_for_action(|action| {
            let decision = match action {
                "allow" => "once",
                "deny" => "deny",
                _ => return, // closed, dismissed, or the default action
            };
            if let Err(e) = app.state::<Arc<AppState>>().answer(id, decision, None) {
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
    /// A client's name cannot put markup or a link into the notification, nor run on.
    #[test]
    fn the_body_escapes_and_bounds_what_a_client_said() {
        let mut req: gatehouse::approval::ApprovalRequest = serde_json::from_value(serde_json::json!({
            "id": "apr-1", "client": { "name": "<a href=\"https://evil\">x</a>", "session": "s" },
            "server": "files", "tool": "write", "exposed": "files__write",
            "arguments": {}, "requested_at": 0, "expires_at": 0
        }))
        .unwrap();
        let body = super::approval_body(&req);
        assert_eq!(
            body,
            "&lt;a href=\"https://evil\"&gt;x&lt;/a&gt; wants to run write on files"
        );
        req.client.name = Some("n".repeat(500));
        assert!(super::approval_body(&req).starts_with(&format!("{} wants", "n".repeat(64))));
    }
}

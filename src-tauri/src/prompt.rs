//! The approval prompt while the window is closed: a small native dialog, painted in a few
//! milliseconds, instead of a new webview (hundreds of milliseconds, and WebKit's processes back
//! in memory). It shows the call at the front of the queue — client, server, tool, why it asks,
//! its arguments, the countdown — and answers it (Deny, Allow once, for this session, always),
//! or opens the window for the whole queue. Esc and the close button deny, as in the window's
//! modal. A call answered elsewhere (the window, the CLI, a timeout) leaves the prompt at once:
//! it moves to the next waiting call, or closes.
//!
//! On Linux this is GTK, which the desktop shell already runs on; elsewhere an approval opens the
//! window, as before.

use tauri::{AppHandle, Runtime};

/// A call waits and the window is not on screen: show (or move) the prompt.
pub fn request<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(target_os = "linux")]
    {
        let handle = app.clone();
        let _ = app.run_on_main_thread(move || native::refresh(&handle, true));
    }
    #[cfg(not(target_os = "linux"))]
    crate::window::show_main(app);
}

/// A call left the queue: the prompt moves to the next one, or closes.
pub fn resolved<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(target_os = "linux")]
    {
        let handle = app.clone();
        let _ = app.run_on_main_thread(move || native::refresh(&handle, false));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = app;
}

/// The window opened: its modal shows the queue; the prompt goes.
pub fn close<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(target_os = "linux")]
    {
        let _ = app.run_on_main_thread(native::close);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = app;
}

/// The facts the prompt shows for one request, as text (independent of the toolkit).
pub struct Facts {
    pub client: String,
    pub patience: Option<String>,
    pub server: String,
    pub tool: String,
    pub reason: String,
    pub description: Option<String>,
    pub changed: Option<String>,
    pub arguments: String,
    pub always_scope: String,
}

/// Arguments shown at most (characters); the window has the rest.
const ARGS_SHOWN: usize = 4000;

impl Facts {
    pub fn of(req: &gatehouse::approval::ApprovalRequest) -> Facts {
        let name = req.client.name.as_deref().unwrap_or("Unknown client");
        let client = match &req.client.profile {
            Some(p) => format!("{name} (profile {p})"),
            None => name.to_owned(),
        };
        let waits = req.expires_at.saturating_sub(req.requested_at) / 1000;
        let patience = req
            .client
            .gives_up_after_secs
            .filter(|p| waits > *p)
            .map(|p| {
                format!("{name} gives up after {p} s — answer before then, or it will have left")
            });
        let tool = match &req.title {
            Some(t) if t != &req.tool => format!("{t} — {}", req.exposed),
            _ => req.exposed.clone(),
        };
        let mut arguments = serde_json::from_str::<serde_json::Value>(req.arguments.get())
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| req.arguments.get().to_owned());
        if arguments.chars().count() > ARGS_SHOWN {
            arguments = arguments.chars().take(ARGS_SHOWN).collect::<String>()
                + "\n… (open Gatehouse for the rest)";
        }
        let profile = req.client.profile.as_deref().unwrap_or("default");
        let always_scope = if req.client.covers.is_empty() {
            format!("Always: this tool with this exact definition, for client profile {profile}, until you revoke it.")
        } else {
            format!(
                "Always: this tool with this exact definition, for client profile {profile} — which {} also use{} — until you revoke it.",
                req.client.covers.join(", "),
                if req.client.covers.len() == 1 { "s" } else { "" }
            )
        };
        Facts {
            client,
            patience,
            server: req.server.clone(),
            tool,
            reason: format!(
                "Asking because {}.",
                if req.reason_text.is_empty() {
                    "the policy asks for this call"
                } else {
                    &req.reason_text
                }
            ),
            description: req.description.clone().filter(|d| !d.trim().is_empty()),
            changed: req.changed.as_ref().map(|c| {
                format!(
                    "Its definition changed since it was pinned: {}. Open Gatehouse to compare.",
                    c.fields.join(", ")
                )
            }),
            arguments,
            always_scope,
        }
    }
}

/// "Denied automatically in N s", from the request's expiry and the time now (ms).
pub fn countdown(expires_at: u64, now_ms: u64) -> String {
    let left = expires_at.saturating_sub(now_ms).div_ceil(1000);
    format!("Denied automatically in {left} s")
}

#[cfg(target_os = "linux")]
mod native;

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse::approval::{ApprovalRequest, ClientRef};

    fn request(args: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: "apr-1".into(),
            client: ClientRef {
                name: Some("claude-code".into()),
                session: "s".into(),
                profile: Some("cli".into()),
                session_ends_ms: None,
                covers: vec!["codex".into()],
                gives_up_after_secs: Some(60),
            },
            server: "files".into(),
            tool: "write".into(),
            exposed: "files__write".into(),
            title: None,
            description: Some("Writes a file".into()),
            annotations: None,
            arguments: serde_json::value::RawValue::from_string(args.to_owned()).unwrap(),
            requested_at: 1_000,
            expires_at: 121_000,
            queued: false,
            changed: None,
            reason: Default::default(),
            reason_text: "fs__write may change things".into(),
        }
    }

    /// The prompt says what the window's modal says: who, where, what, why, and whom an
    /// "always" covers; a client that gives up before the timeout is named with its patience.
    #[test]
    fn the_prompt_names_the_client_tool_reason_and_scope() {
        let f = Facts::of(&request(r#"{"path":"/tmp/x"}"#));
        assert_eq!(f.client, "claude-code (profile cli)");
        assert_eq!(f.tool, "files__write");
        assert_eq!(f.reason, "Asking because fs__write may change things.");
        assert!(
            f.arguments.contains("\"path\": \"/tmp/x\""),
            "{}",
            f.arguments
        );
        assert!(f
            .always_scope
            .contains("profile cli — which codex also uses"));
        assert!(f
            .patience
            .as_deref()
            .unwrap()
            .contains("gives up after 60 s"));
        assert_eq!(countdown(121_000, 60_500), "Denied automatically in 61 s");
        assert_eq!(countdown(121_000, 200_000), "Denied automatically in 0 s");
    }

    /// Huge arguments are cut for the prompt (the window shows them whole).
    #[test]
    fn long_arguments_are_cut() {
        let big = format!(r#"{{"text":"{}"}}"#, "x".repeat(10_000));
        let f = Facts::of(&request(&big));
        assert!(f.arguments.chars().count() < ARGS_SHOWN + 50);
        assert!(f.arguments.ends_with("(open Gatehouse for the rest)"));
    }
}

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

/// How long a prompt's answers stay inert after its call appears — alone or in place of
/// another: one second. Long enough that a click or a key already on its way (a double click's
/// second click comes within ~0.5 s, a person reacts to a change in ~0.25 s) lands on nothing,
/// as Firefox's dialog-enable delay (also 1 s) does for the same reason; short enough not to slow
/// a person who reads the call before answering. The window's modal uses the same figure.
pub const GUARD: std::time::Duration = std::time::Duration::from_secs(1);

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

/// The facts the prompt shows for one request, as text (independent of the toolkit). Every text
/// a client or a server wrote is shown through `gatehouse::text` (hidden characters as
/// `⟨U+XXXX⟩`); who asks is the token's profile, the client's name only what it says.
pub struct Facts {
    pub client: String,
    /// What the person must know before reading on: a client name that imitates another's,
    /// hidden characters in the call.
    pub warnings: Vec<String>,
    pub patience: Option<String>,
    pub server: String,
    /// Where the call goes (`runs on this computer as …`, `sends to …`).
    pub goes_to: String,
    pub tool: String,
    pub reason: String,
    pub description: Option<String>,
    pub changed: Option<String>,
    /// Each argument's key and value (a string as its text, line breaks kept; anything else as
    /// JSON), each value cut at `ARGS_SHOWN` characters.
    pub arguments: Vec<(String, String)>,
    /// "3 arguments, 6.1 KB: path, content, mode".
    pub size: String,
    pub always_scope: String,
}

/// One argument's value shown at most (characters); the window has the rest.
pub const ARGS_SHOWN: usize = 4000;

/// Argument names listed in the size line at most (every one is in the list below it).
const KEYS_LISTED: usize = 12;

impl Facts {
    pub fn of(req: &gatehouse::approval::ApprovalRequest) -> Facts {
        use gatehouse::text::{reveal, reveal_lines};
        let profile = req.client.profile.as_deref().unwrap_or("default");
        let client = match req.client.name.as_deref() {
            Some(name) => format!("client profile {profile} — says \"{}\"", reveal(name)),
            None => format!("client profile {profile} — gives no name"),
        };
        let mut warnings = Vec::new();
        if let Some(like) = &req.client.imitates {
            warnings.push(format!(
                "⚠ Its name imitates \"{}\": it is not that client. The token is client profile {profile}'s.",
                reveal(like)
            ));
        }
        if req.hidden_characters {
            warnings.push(
                "⚠ Contains hidden characters, shown as ⟨U+XXXX⟩: read the call as shown here."
                    .to_owned(),
            );
        }
        let waits = req.expires_at.saturating_sub(req.requested_at) / 1000;
        let patience = req
            .client
            .gives_up_after_secs
            .filter(|p| waits > *p)
            .map(|p| {
                format!(
                    "the client gives up after {p} s — answer before then, or it will have left"
                )
            });
        let tool = match &req.title {
            Some(t) if t != &req.tool => format!("{} — {}", reveal(t), reveal(&req.exposed)),
            _ => reveal(&req.exposed).into_owned(),
        };
        let (arguments, size) = arguments(req.arguments.get());
        let covers: Vec<String> = req
            .client
            .covers
            .iter()
            .map(|c| reveal(c).into_owned())
            .collect();
        let always_scope = if covers.is_empty() {
            format!("Always: this tool with this exact definition, for client profile {profile}, until you revoke it.")
        } else {
            format!(
                "Always: this tool with this exact definition, for client profile {profile} — which {} also use{} — until you revoke it.",
                covers.join(", "),
                if covers.len() == 1 { "s" } else { "" }
            )
        };
        Facts {
            client,
            warnings,
            patience,
            server: reveal(&req.server).into_owned(),
            goes_to: reveal(&req.goes_to).into_owned(),
            tool,
            reason: format!(
                "Asking because {}.",
                if req.reason_text.is_empty() {
                    "the policy asks for this call"
                } else {
                    &req.reason_text
                }
            ),
            description: req
                .description
                .as_deref()
                .filter(|d| !d.trim().is_empty())
                .map(|d| reveal_lines(d).into_owned()),
            changed: req.changed.as_ref().map(|c| {
                format!(
                    "Its definition changed since it was pinned: {}. Open Gatehouse to compare.",
                    c.fields.join(", ")
                )
            }),
            arguments,
            size,
            always_scope,
        }
    }
}

/// A call's arguments as rows (key, value) and the size line.
fn arguments(raw: &str) -> (Vec<(String, String)>, String) {
    use gatehouse::text::{reveal, reveal_lines};
    let value = |v: &serde_json::Value| {
        let text = match v {
            serde_json::Value::String(s) => reveal_lines(s).into_owned(),
            other => {
                reveal_lines(&serde_json::to_string_pretty(other).unwrap_or_default()).into_owned()
            }
        };
        if text.chars().count() > ARGS_SHOWN {
            text.chars().take(ARGS_SHOWN).collect::<String>() + "\n… (open Gatehouse for the rest)"
        } else {
            text
        }
    };
    let rows: Vec<(String, String)> = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Object(map)) => map
            .iter()
            .map(|(k, v)| (reveal(k).into_owned(), value(v)))
            .collect(),
        Ok(other) => vec![("(arguments)".to_owned(), value(&other))],
        Err(_) => vec![(
            "(arguments)".to_owned(),
            value(&serde_json::Value::String(raw.to_owned())),
        )],
    };
    let n = rows.len();
    let mut size = format!(
        "{n} argument{}, {}",
        if n == 1 { "" } else { "s" },
        human_size(raw.len())
    );
    if n > 0 {
        let keys: Vec<&str> = rows
            .iter()
            .take(KEYS_LISTED)
            .map(|(k, _)| k.as_str())
            .collect();
        size.push_str(": ");
        size.push_str(&keys.join(", "));
        if n > KEYS_LISTED {
            size.push_str(&format!(" and {} more", n - KEYS_LISTED));
        }
    }
    (rows, size)
}

fn human_size(bytes: usize) -> String {
    if bytes < 1000 {
        format!("{bytes} bytes")
    } else if bytes < 1_000_000 {
        format!("{:.1} KB", bytes as f64 / 1000.0)
    } else {
        format!("{:.1} MB", bytes as f64 / 1_000_000.0)
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
#[path = "prompt_tests.rs"]
mod tests;

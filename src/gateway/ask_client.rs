//! A held call asked through the client's own UI (`"approve_via": "client"` on its profile, no
//! desktop attached): an `elicitation/create` request on the call's own stream, with the tool,
//! the server and the exact arguments in its message, Allow once or Deny only. The answer goes to
//! the broker bound to the digest of the call that was shown, like any other surface's; the
//! person may still answer from the CLI meanwhile (the first answer wins).
//!
//! What this trusts: the client's host shows the message and reports the person's choice — not
//! Gatehouse's own UI. Only 2025-era sessions (a stream to send the request on) that declared
//! the `elicitation` capability are asked; a call whose arguments are too long to show whole is
//! not (the answer would cover what was not seen).

use serde_json::Value;
use tokio::sync::mpsc;

use super::context::Cx;
use super::outcome::Out;
use super::session::{lock, ClientSession, Forwarded};
use crate::approval::{Answer, ApprovalRequest, Scope};
use crate::config::ApproveVia;
use crate::jsonrpc;
use crate::protocol::Era;

/// Arguments longer than this (as shown) are not put to the client: nothing is cut from what an
/// answer covers.
pub const MAX_SHOWN_ARGUMENTS: usize = 16 * 1024;

/// Whether this held call is asked through the client: its profile opts in, no desktop is
/// attached, and the session can be asked (2025 era, `elicitation` declared).
pub(super) fn wanted(cx: &Cx, request: &ApprovalRequest) -> bool {
    let s = &cx.session;
    let opted = cx
        .profile()
        .is_some_and(|p| p.approve_via == Some(ApproveVia::Client));
    opted
        && !cx.hub.approvals().desktop_attached()
        && s.era() == Era::Legacy
        && declares_elicitation(s.info().capabilities.as_deref())
        && shown_arguments(request).len() <= MAX_SHOWN_ARGUMENTS
}

fn declares_elicitation(capabilities: Option<&str>) -> bool {
    capabilities
        .and_then(|c| serde_json::from_str::<Value>(c).ok())
        .is_some_and(|c| c.get("elicitation").is_some_and(Value::is_object))
}

fn shown_arguments(request: &ApprovalRequest) -> String {
    let args = serde_json::from_str::<Value>(request.arguments.get())
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| request.arguments.get().to_owned());
    crate::text::reveal_lines(&args).into_owned()
}

/// The form's message: who asks, what would run, with which arguments, and why it asks.
pub fn message(request: &ApprovalRequest) -> String {
    use crate::text::reveal;
    let who = match &request.client.name {
        Some(n) => format!(
            "profile {} (the client calls itself “{}”)",
            request.client.profile.as_deref().unwrap_or("default"),
            reveal(n)
        ),
        None => format!(
            "profile {}",
            request.client.profile.as_deref().unwrap_or("default")
        ),
    };
    let hidden = if request.hidden_characters {
        "\nContains hidden characters, shown as ⟨U+XXXX⟩."
    } else {
        ""
    };
    format!(
        "Gatehouse is holding a tool call for your approval.\nClient: {who}\nServer: {}\nTool: {} ({})\nArguments:\n{}\nWhy it asks: {}.{hidden}\nCall {} (digest {}).\nAllow once or deny. No Gatehouse window is open, so this question comes through your client.",
        reveal(&request.server),
        reveal(&request.tool),
        reveal(&request.exposed),
        shown_arguments(request),
        request.reason_text,
        request.id,
        request.digest,
    )
}

/// Sends the question on the call's stream and waits for the client's answer: `None` when it
/// gives none (it went away, its session ended, it answered with an error). Dropped, it takes
/// its request out of the session's table.
pub(super) async fn ask(
    cx: &Cx,
    tx: &mpsc::Sender<Out>,
    request: &ApprovalRequest,
) -> Option<Answer> {
    let s = &cx.session;
    let ours = format!("\"gatehouse-approval-{}\"", cx.next_id());
    let (answer_tx, answer_rx) = tokio::sync::oneshot::channel();
    {
        let mut forwarded = lock(&s.forwarded);
        if forwarded.len() >= super::session::MAX_FORWARDED {
            return None;
        }
        forwarded.insert(ours.clone(), Forwarded::Input(answer_tx));
    }
    let _cleanup = Cleanup {
        session: s,
        id: &ours,
    };
    let params = serde_json::json!({
        "message": message(request),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Run this call?",
                    "description": "allow_once runs this one call; deny refuses it",
                    "enum": ["allow_once", "deny"]
                }
            },
            "required": ["decision"]
        }
    });
    let params = serde_json::value::to_raw_value(&params).ok()?;
    let line = jsonrpc::request_line_with_id(&ours, "elicitation/create", Some(&params));
    tx.send(Out::Event(line)).await.ok()?;
    let result = answer_rx.await.ok()?.ok()?;
    let v: Value = serde_json::from_str(result.get()).ok()?;
    let accepted = v.get("action").and_then(Value::as_str) == Some("accept")
        && v.pointer("/content/decision").and_then(Value::as_str) == Some("allow_once");
    Some(if accepted {
        Answer::Allow(Scope::Once)
    } else {
        let reason = match v.get("action").and_then(Value::as_str) {
            Some("accept") => "denied in the client",
            Some("decline") => "declined in the client",
            _ => "cancelled in the client",
        };
        Answer::Deny(Some(reason.to_owned()))
    })
}

/// Takes the question out of the session's table however the wait ends.
struct Cleanup<'a> {
    session: &'a ClientSession,
    id: &'a str,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        lock(&self.session.forwarded).remove(self.id);
    }
}

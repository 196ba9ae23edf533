//! The approval phase of a held call: waiting for the person's answer (or the timeout, or the
//! client going away), with progress notifications keeping the client's request alive, and the
//! verdict turned into what the call does next — the texts say who decided.

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::admission::{Gate, Recheck};
use super::context::Cx;
use super::outcome::Out;
use crate::activity::Decision;
use crate::approval::{Decider, Verdict};
use crate::jsonrpc;
use crate::supervisor::ServerHandle;

/// Times one held call is asked about at most when its tool's definition keeps changing.
const MAX_ASKS: usize = 3;

/// What the hold ended with.
pub(super) enum Held {
    Allowed(Decision, Decider, Option<String>),
    /// Denied or timed out: the text for the isError result (the tool named), the
    /// decision for the activity log, and who decided.
    Refused(String, Decision, Decider, Option<String>),
    ClientGone,
}

/// The approval phase: asks the person about the call to `name` and, once allowed, checks the
/// tool again as it stands at that moment — asking again (at most [`MAX_ASKS`] times in all)
/// when its definition changed meanwhile.
pub(super) async fn approve(
    cx: &Cx,
    server: &ServerHandle,
    name: &str,
    mut gate: Gate,
    tx: &mpsc::Sender<Out>,
    client_token: Option<&str>,
) -> Held {
    let mut asked = 1;
    loop {
        let (hash, arguments) = (gate.hash.clone(), gate.arguments.clone());
        let value = gate.value.clone();
        let held = hold(cx, gate, tx, client_token, name).await;
        let Held::Allowed(_, _, via) = &held else {
            return held;
        };
        // The answer covers what the person saw, as things stand now: the tool is checked
        // again at the moment it would run.
        match super::admission::recheck(cx, server, name, &hash, (&arguments, value.as_ref())) {
            Recheck::Go => return held,
            Recheck::AskAgain(g) if asked < MAX_ASKS => {
                asked += 1;
                gate = *g;
            }
            Recheck::AskAgain(_) => {
                return Held::Refused(
                    format!("The definition of {name} changed each time the person answered ({MAX_ASKS} times), so it was not run."),
                    Decision::Denied,
                    Decider::Policy,
                    via.clone(),
                )
            }
            Recheck::Refused(text, decision) => {
                return Held::Refused(text, decision, Decider::Policy, via.clone())
            }
        }
    }
}

/// Waits for the person's answer. Progress notifications keep the client's request alive when
/// it sent a progress token; a client that goes away withdraws the request.
async fn hold(
    cx: &Cx,
    mut gate: Gate,
    tx: &mpsc::Sender<Out>,
    client_token: Option<&str>,
    tool: &str,
) -> Held {
    let broker = cx.hub.approvals().clone();
    // With no desktop attached, a profile that opts in is asked through its client too.
    gate.request.asked_in_client = super::ask_client::wanted(cx, &gate.request);
    let shown = gate.request.clone();
    let in_client = super::ask_client::ask(cx, tx, &shown);
    tokio::pin!(in_client);
    let mut client_asked = shown.asked_in_client;
    let ask = broker.ask(gate.request, gate.hash, gate.timeout);
    tokio::pin!(ask);
    let every = cx.keepalive();
    let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut beats: u64 = 0;
    let verdict = loop {
        tokio::select! {
            v = &mut ask => break v,
            answer = &mut in_client, if client_asked => {
                client_asked = false;
                // Bound to the call that was shown; the broker refuses it for any other.
                if let Some(answer) = answer {
                    let via = Some("the client's own UI (approve_via: client)".to_owned());
                    let _ = broker.answer_via(&shown.id, Some(&shown.digest), answer, Decider::ClientUi, via);
                }
            }
            _ = keepalive.tick(), if client_token.is_some() => {
                beats += 1;
                let params = format!(
                    "{{\"progressToken\":{},\"progress\":{beats},\"message\":\"Waiting for approval in Gatehouse\"}}",
                    client_token.unwrap_or("null")
                );
                if let Ok(p) = RawValue::from_string(params) {
                    let line = jsonrpc::notification_line("notifications/progress", Some(&p));
                    if tx.send(Out::Event(line)).await.is_err() {
                        return Held::ClientGone;
                    }
                }
            }
            _ = tx.closed() => return Held::ClientGone,
        }
    };
    match verdict {
        Verdict::Allowed { scope, by, via } => Held::Allowed(Decision::approved(scope), by, via),
        Verdict::Denied { reason, by, via } => Held::Refused(
            match (by, reason) {
                // Nobody was asked (--deny-unattended, a full queue): never "the user".
                (Decider::Policy, r) => format!(
                    "Gatehouse did not run {tool}: {}.",
                    r.as_deref().unwrap_or("no one answered")
                ),
                (Decider::ClientUi, r) => format!(
                    "Denied by the user in the client: {tool} was not run ({}).",
                    r.as_deref().unwrap_or("denied")
                ),
                (_, Some(r)) if !r.trim().is_empty() => {
                    format!("Denied by the user in Gatehouse: {r}")
                }
                _ => format!("Denied by the user in Gatehouse: {tool} was not run."),
            },
            Decision::Denied,
            by,
            via,
        ),
        Verdict::TimedOut { secs } => Held::Refused(
            format!(
                "Gatehouse asked the user to approve {tool}, but no one answered in {secs} s; the call was not run (denied by timeout)."
            ),
            Decision::TimedOut,
            Decider::Policy,
            None,
        ),
    }
}

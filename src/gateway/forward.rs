//! One forwarded request as a task with named phases: approve (`approve.rs`: the hold, the
//! recheck, asking again) → call (`call.rs`: rounds, relay, park) → answer (`answer.rs`: one
//! pure function for the outcome and the reply line) → audit (`audit.rs`: the one activity row).
//! This file only runs them in order.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::admission::Gate;
use super::answer::{answer, refused, Ending};
use super::approve::{approve, Held};
use super::audit::{Audit, CallMeta};
use super::call::{call, Upstream, CLIENT_STALL};
use super::context::Cx;
use super::outcome::{Out, Outcome};
use super::park::Attach;
use super::session::{lock, OUT_QUEUE};
use crate::activity::{CallOutcome, Decision};
use crate::approval::Decider;
use crate::jsonrpc::{self, set_member, ErrorCode};
use crate::protocol::Era;
use crate::supervisor::ServerHandle;

/// The tool-call specifics of a forwarded request.
pub(super) struct ToolCall {
    /// The exposed name (for error texts).
    pub name: String,
    pub pass: Pass,
    pub meta: CallMeta,
}

/// How a tool call got through the policy.
pub(super) enum Pass {
    /// Without asking; the decision for the activity log.
    Free(Decision),
    /// Only after the person's answer.
    Held(Box<Gate>),
}

/// Forwards a request to `server` and streams what it says about it back to the client.
// An exception to the 100-line limit: the call's four phases (approve, call, answer,
// audit) read top to bottom in the one task each call runs as; cutting it moves awaits and
// the audit guard across functions on the hot path (#48 measures that path first).
#[allow(clippy::too_many_lines)]
pub(super) fn forward(
    cx: &Cx,
    id: &RawValue,
    server: ServerHandle,
    method: &'static str,
    mut params: BTreeMap<String, Box<RawValue>>,
    tool: Option<ToolCall>,
) -> Outcome {
    // The client's progress token is replaced by one of ours, unique across clients.
    let client_token = params.get("_meta").and_then(|m| {
        let text = m.get();
        match jsonrpc::scan::top_level(text.as_bytes(), [b"progressToken"]) {
            Some([token]) => token.map(|r| text[r].to_owned()),
            None => serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(text)
                .ok()
                .and_then(|m| m.get("progressToken").map(|t| t.get().to_owned())),
        }
    });
    let our_token = client_token
        .as_ref()
        .map(|_| format!("\"gatehouse-{}\"", cx.next_id()));
    if let (Some(ours), Some(meta)) = (&our_token, params.get("_meta")) {
        if let Some(new_meta) = set_member(meta.get(), "progressToken", ours) {
            if let Ok(raw) = RawValue::from_string(new_meta) {
                params.insert("_meta".into(), raw);
            }
        }
    }
    // Serialised straight into a RawValue: the members are raw already, no re-validation.
    let params = match serde_json::value::to_raw_value(&params).ok() {
        Some(p) => p,
        None => return Outcome::error(id.get(), ErrorCode::InvalidParams, "Invalid params"),
    };
    let (tx, rx) = mpsc::channel::<Out>(OUT_QUEUE);
    let (sink, mut events) = crate::supervisor::rpc::route_channel();
    let client_id = id.get().to_owned();
    let task = tokio::spawn({
        let (cx, client_id) = (cx.clone(), client_id.clone());
        async move {
            let session = cx.session.clone();
            let (exposed, pass, meta) = match tool {
                Some(ToolCall { name, pass, meta }) => (Some(name), Some(pass), Some(meta)),
                None => (None, None, None),
            };
            // Audit: the call's one activity row, written with the outcome at the end, or
            // by the guard if the task is dropped first (the client cancelled or left).
            let mut audit = Audit::new(cx.hub.activity(), &session, meta);
            // Approve: a held call waits for the person's answer.
            let (decision, by) = match pass {
                None => (Decision::Allowed, Decider::Policy),
                Some(Pass::Free(d)) => (d, Decider::Policy),
                Some(Pass::Held(gate)) => {
                    let name = exposed.as_deref().unwrap_or_default();
                    let started = std::time::Instant::now();
                    let held =
                        approve(&cx, &server, name, *gate, &tx, client_token.as_deref()).await;
                    if let Some(m) = audit.meta.as_mut() {
                        m.waited = Some(started.elapsed());
                    }
                    match held {
                        Held::Allowed(d, by, via) => {
                            audit.via = via;
                            (d, by)
                        }
                        Held::Refused(text, decision, by, via) => {
                            audit.via = via;
                            audit.error = Some(text.clone());
                            audit.finish(decision, by, CallOutcome::NotRun);
                            lock(&session.inflight).remove(&client_id);
                            let line = refused(&client_id, &text, session.era());
                            let _ = tx.send(Out::Final(line)).await;
                            return;
                        }
                        Held::ClientGone => {
                            // Withdrawn: the request is gone from the broker and the call
                            // never runs.
                            lock(&session.inflight).remove(&client_id);
                            return;
                        }
                    }
                }
            };
            audit.sent(decision, by);
            // Call: the rounds, the relay, a parked call's retry taking it over.
            let keep = cx
                .hub
                .config()
                .servers
                .get(server.id())
                .map(|c| c.unmasked_secrets.clone())
                .unwrap_or_default();
            let up = Upstream {
                server: &server,
                method,
                sink,
                our_token,
                client_token: client_token.as_deref(),
                keep: &keep,
            };
            let mut to = Attach { client_id, tx };
            let called_at = crate::logs::now_ms();
            let called = call(&cx, &up, params, &mut events, &mut to).await;
            lock(&session.inflight).remove(&to.client_id);
            // The client went away: dropping the call cancelled it upstream.
            let Some(called) = called else { return };
            // Answer: the outcome and the client's line, chosen together.
            let caps = match session.era() {
                Era::Modern => session.info().capabilities,
                Era::Legacy => None,
            };
            let server_id = server.id().to_string();
            let (outcome, line) = answer(Ending {
                result: called.result,
                view: called.view,
                era: session.era(),
                client_id: &to.client_id,
                server: &server_id,
                method,
                exposed: exposed.as_deref(),
                input_failure: called.input_failure.as_deref(),
                client_capabilities: caps.as_deref(),
            });
            // A failure explained: its text for Activity, the sandbox named where it may be
            // the cause.
            let (line, error) = super::failure::explain(
                line,
                outcome,
                server.confined().as_deref(),
                &server_id,
                || server.logs().stderr_since(40, called_at),
            );
            audit.error = error;
            // A secret Gatehouse handed the server never reaches the client in its answer.
            let line = cx.hub.redactions().mask_line(line, &keep);
            let _ = tokio::time::timeout(CLIENT_STALL, to.tx.send(Out::Final(line))).await;
            // After the answer is on its way: logging never delays a call.
            audit.finish(decision, by, outcome);
        }
    });
    {
        let mut inflight = lock(&cx.session.inflight);
        if !task.is_finished() {
            inflight.insert(client_id, task.abort_handle());
        }
    }
    Outcome::Stream(rx)
}

//! One forwarded request: the approval hold (if any), the upstream call with the client's
//! progress token swapped for one of ours, the relay of what the server says about the call
//! (progress, log messages, server→client requests), the final answer, and the activity row.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::approve::{hold, Gate, Held};
use super::input::{Parked, Relayed};
use super::session::{lock, ClientSession, Forwarded};
use super::session::{MAX_FORWARDED, OUT_QUEUE};
use super::{Gateway, Out, Outcome};
use crate::activity::{CallOutcome, CallRecord, Decision};
use crate::approval::Decider;
use crate::jsonrpc::{self, set_member, ErrorCode};
use crate::protocol::{Era, ResultKind};
use crate::supervisor::rpc::{CallError, CallEvent, CallRoute, ResponseBody};
use crate::supervisor::{Reply, ServerHandle};

/// Times one held call is asked about at most when its tool's definition keeps changing.
const MAX_ASKS: usize = 3;
/// How long a client may leave its call's stream unread before the call is dropped.
const CLIENT_STALL: std::time::Duration = std::time::Duration::from_secs(10);

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

/// What the activity log needs of a tool call.
pub(super) struct CallMeta {
    server: String,
    tool: String,
    arguments: String,
    started: std::time::Instant,
    /// How long the call waited for the person (held calls).
    waited: Option<std::time::Duration>,
}

impl CallMeta {
    pub fn new(server: &ServerHandle, tool: &str, arguments: String) -> CallMeta {
        CallMeta {
            server: server.id().to_string(),
            tool: tool.to_owned(),
            arguments,
            started: std::time::Instant::now(),
            waited: None,
        }
    }
}

/// Writes a tool call's one activity row. [`Audit::finish`] records the outcome; dropped without
/// it (the task aborted by a client's cancel or disconnect, or ended early), it records what
/// that means at the stage reached: withdrawn before the call was sent, cancelled after.
struct Audit {
    gw: Gateway,
    session: Arc<ClientSession>,
    /// `None` for requests that are no tool call, and once the row is written.
    meta: Option<CallMeta>,
    decision: Decision,
    by: Decider,
    /// The approving process, for a decision made through the control socket.
    via: Option<String>,
    sent: bool,
}

impl Audit {
    fn finish(&mut self, decision: Decision, by: Decider, outcome: CallOutcome) {
        if let Some(m) = self.meta.take() {
            let via = self.via.take();
            self.gw
                .record(&self.session, &m, decision, by, outcome, via);
        }
    }
}

impl Drop for Audit {
    fn drop(&mut self) {
        if self.sent {
            self.finish(self.decision, self.by, CallOutcome::Cancelled);
        } else {
            // The client cancelled or went away before the call was sent: its decision.
            self.finish(Decision::Withdrawn, Decider::Client, CallOutcome::NotRun);
        }
    }
}

/// What a held call finds when the person has allowed it and it is about to run.
pub(super) enum Recheck {
    /// Nothing changed that the answer did not cover.
    Go,
    /// The tool's definition is not the one the person saw: ask again, showing the change.
    AskAgain(Box<Gate>),
    /// It may no longer run (disabled, removed, stopped): the text (`{tool}` is filled in) and
    /// the decision for the activity log.
    Refused(String, Decision),
}

impl Gateway {
    /// Forwards a request to `server` and streams what it says about it back to the client.
    pub(super) fn forward(
        &self,
        s: &Arc<ClientSession>,
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
            .map(|_| format!("\"gatehouse-{}\"", self.next()));
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
            None => {
                return Outcome::Reply(jsonrpc::error_line(
                    id.get(),
                    ErrorCode::InvalidParams,
                    "Invalid params",
                ))
            }
        };
        let (tx, rx) = mpsc::channel::<Out>(OUT_QUEUE);
        let (sink, mut events) = crate::supervisor::rpc::route_channel();
        let client_id = id.get().to_owned();
        let gw = self.clone();
        let session = s.clone();
        let task = tokio::spawn({
            let client_id = client_id.clone();
            async move {
                let (exposed, pass, meta) = match tool {
                    Some(ToolCall { name, pass, meta }) => (Some(name), Some(pass), Some(meta)),
                    None => (None, None, None),
                };
                // The call's one activity row: written with the outcome at the end, or by the
                // guard if the task is dropped first (the client cancelled or went away).
                let mut audit = Audit {
                    gw: gw.clone(),
                    session: session.clone(),
                    meta,
                    decision: Decision::Withdrawn,
                    by: Decider::Policy,
                    via: None,
                    sent: false,
                };
                let (decision, by) = match pass {
                    None => (Decision::Allowed, Decider::Policy),
                    Some(Pass::Free(d)) => (d, Decider::Policy),
                    Some(Pass::Held(gate)) => {
                        let name = exposed.clone().unwrap_or_default();
                        let mut gate = *gate;
                        let mut asked = 1;
                        let hold_started = std::time::Instant::now();
                        let held = loop {
                            let (hash, arguments) =
                                (gate.hash.clone(), gate.request.arguments.clone());
                            let held = hold(&gw, gate, &tx, client_token.as_deref()).await;
                            let Held::Allowed(_, _, via) = &held else {
                                break held;
                            };
                            // The answer covers what the person saw, as things stand now: the
                            // tool is checked again at the moment it would run.
                            match gw.recheck(&session, &server, &name, &hash, &arguments) {
                                Recheck::Go => break held,
                                Recheck::AskAgain(g) if asked < MAX_ASKS => {
                                    asked += 1;
                                    gate = *g;
                                }
                                Recheck::AskAgain(_) => {
                                    break Held::Refused(
                                        format!("The definition of {{tool}} changed each time the person answered ({MAX_ASKS} times), so it was not run."),
                                        Decision::Denied,
                                        Decider::Policy,
                                        via.clone(),
                                    )
                                }
                                Recheck::Refused(text, decision) => {
                                    break Held::Refused(text, decision, Decider::Policy, via.clone())
                                }
                            }
                        };
                        if let Some(m) = audit.meta.as_mut() {
                            m.waited = Some(hold_started.elapsed());
                        }
                        match held {
                            Held::Allowed(d, by, via) => {
                                audit.via = via;
                                (d, by)
                            }
                            Held::Refused(text, decision, by, via) => {
                                audit.via = via;
                                audit.finish(decision, by, CallOutcome::NotRun);
                                lock(&session.inflight).remove(&client_id);
                                let result = super::tool_error(&text.replace("{tool}", &name));
                                let line = ours(&client_id, &result, session.era());
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
                audit.decision = decision;
                audit.by = by;
                audit.sent = true;
                // A 2026-07-28 server may answer with input requests; for a 2025 client each
                // round is relayed (`input.rs`) and the call sent again with the answers.
                let mut params = params;
                let mut rounds = 0;
                let mut input_failure: Option<String> = None;
                let mut tx = tx;
                let mut client_id = client_id;
                let result = loop {
                    let route = CallRoute {
                        sink: sink.clone(),
                        progress_token: our_token.clone(),
                        // A 2025 client's, from its `initialize` (a 2026 client's request
                        // carries its own).
                        client_capabilities: match session.era() {
                            Era::Legacy => session.capabilities(),
                            Era::Modern => None,
                        },
                    };
                    let got = {
                        let call = server.request_routed(method, Some(&params), Some(route));
                        tokio::pin!(call);
                        loop {
                            let relayed = gw
                                .relay_call(
                                    &session,
                                    &server,
                                    method,
                                    call.as_mut(),
                                    &mut events,
                                    &tx,
                                    client_token.as_deref(),
                                )
                                .await;
                            match relayed {
                                Relayed::Done(r) => break Some(r),
                                Relayed::Gone => break None,
                                Relayed::AskClient { upstream_id, line } => {
                                    // A 2025 server asks a 2026-07-28 client: the client's request
                                    // ends with an input-required result, and its retry takes the
                                    // call over (`input.rs`).
                                    match gw
                                        .park(
                                            &session,
                                            &server,
                                            &tx,
                                            &client_id,
                                            upstream_id,
                                            &line,
                                        )
                                        .await
                                    {
                                        Parked::Attached(next) => {
                                            client_id = next.client_id;
                                            tx = next.tx;
                                        }
                                        Parked::Refused => {}
                                        Parked::Gone => break None,
                                    }
                                }
                            }
                        }
                    };
                    let Some(got) = got else { break None };
                    // The result's top level, read once: its isError flag, its type, its `_meta`.
                    let view = match &got {
                        Ok(Reply::Result(r)) => Some(crate::protocol::ResultView::of_reply(r)),
                        _ => None,
                    };
                    let needs_input = session.era() == Era::Legacy
                        && view
                            .as_ref()
                            .is_some_and(|v| v.kind == ResultKind::InputRequired);
                    if !needs_input {
                        break Some((got, view));
                    }
                    if rounds >= super::input::MAX_INPUT_ROUNDS {
                        input_failure = Some(format!(
                            "it asked for input more than {} times",
                            super::input::MAX_INPUT_ROUNDS
                        ));
                        break Some((got, view));
                    }
                    let Ok(Reply::Result(r)) = &got else {
                        break Some((got, view));
                    };
                    match gw.relay_input(&session, &tx, r.get(), &params).await {
                        Ok(next) => match RawValue::from_string(next) {
                            Ok(p) => {
                                params = p;
                                rounds += 1;
                            }
                            Err(e) => {
                                input_failure = Some(format!("the retry could not be built ({e})"));
                                break Some((got, view));
                            }
                        },
                        Err(why) => {
                            input_failure = Some(why);
                            break Some((got, view));
                        }
                    }
                };
                lock(&session.inflight).remove(&client_id);
                let Some((result, view)) = result else {
                    // The client went away: dropping `call` cancels it upstream.
                    return;
                };
                let era = session.era();
                // A legacy client has no way to answer a multi round-trip request.
                let input_required = view
                    .as_ref()
                    .is_some_and(|v| v.kind == ResultKind::InputRequired);
                let unanswerable = era == Era::Legacy && input_required;
                // A modern client gets only input requests it declared it can answer.
                let undeclared = match (&result, era) {
                    (Ok(Reply::Result(r)), Era::Modern) if input_required => {
                        let caps = session.info().capabilities.unwrap_or_else(|| "{}".into());
                        crate::protocol::unanswerable_input(r.get(), &caps)
                    }
                    _ => None,
                };
                let outcome = match &result {
                    Ok(Reply::Result(_)) if undeclared.is_some() => CallOutcome::ProtocolError,
                    Ok(Reply::Result(_)) if unanswerable => CallOutcome::IsError,
                    Ok(Reply::Result(_)) if view.as_ref().is_some_and(|v| v.is_error) => {
                        CallOutcome::IsError
                    }
                    Ok(Reply::Result(_)) => CallOutcome::Ok,
                    Ok(Reply::Error(_)) => CallOutcome::ProtocolError,
                    Err(CallError::Timeout { .. }) => CallOutcome::TimedOut,
                    Err(_) => CallOutcome::Lost,
                };
                let line = match result {
                    Ok(Reply::Result(_)) if undeclared.is_some() => {
                        let (asked, needs) = undeclared.unwrap_or_default();
                        jsonrpc::error_object_line(
                            &client_id,
                            &jsonrpc::error_object_with_data(
                                ErrorCode::MissingRequiredClientCapability,
                                &format!("server \"{}\" needs the client to answer {asked}, and this client did not declare the \"{needs}\" capability", server.id()),
                                &format!("{{\"requiredCapabilities\":{{{}:{{}}}}}}", jsonrpc::json_string(needs)),
                            ),
                        )
                    }
                    Ok(Reply::Result(_)) if unanswerable => {
                        let what = exposed.as_deref().unwrap_or(method);
                        let text = format!(
                            "server \"{}\" answered {what} by asking the client for more input (an MCP 2026-07-28 input request), which could not be relayed to this client: {}.",
                            server.id(),
                            input_failure.as_deref().unwrap_or("it cannot answer one")
                        );
                        match &exposed {
                            Some(_) => ours(&client_id, &super::tool_error(&text), era),
                            None => {
                                jsonrpc::error_line(&client_id, ErrorCode::InternalError, &text)
                            }
                        }
                    }
                    Ok(Reply::Result(r)) => {
                        // Unchanged for this client (the common case), the result goes out
                        // in the line it came in; changed, the change is the copy.
                        let changed = match &view {
                            Some(v) => match crate::protocol::for_client_viewed(r.get(), era, v) {
                                std::borrow::Cow::Owned(changed) => Some(changed),
                                std::borrow::Cow::Borrowed(_) => None,
                            },
                            None => None,
                        };
                        match changed {
                            Some(changed) => jsonrpc::result_line(&client_id, &changed),
                            None => r.into_result_line(&client_id),
                        }
                    }
                    Ok(Reply::Error(e)) => jsonrpc::error_object_line(&client_id, e.get()),
                    Err(CallError::Timeout { server, secs }) => {
                        let what = exposed.as_deref().unwrap_or(method);
                        let text = format!(
                            "server \"{server}\" did not answer {what} within {secs} s (its call_timeout_secs); Gatehouse cancelled the call, and its outcome is unknown."
                        );
                        match &exposed {
                            Some(_) => ours(&client_id, &super::tool_error(&text), era),
                            None => {
                                jsonrpc::error_line(&client_id, ErrorCode::InternalError, &text)
                            }
                        }
                    }
                    Err(e) => match &exposed {
                        Some(name) => ours(
                            &client_id,
                            &super::tool_error(&format!("{e}; the outcome of {name} is unknown.")),
                            era,
                        ),
                        None => jsonrpc::error_line(
                            &client_id,
                            ErrorCode::InternalError,
                            &e.to_string(),
                        ),
                    },
                };
                let _ = tokio::time::timeout(CLIENT_STALL, tx.send(Out::Final(line))).await;
                // After the answer is on its way: logging never delays a call.
                audit.finish(decision, by, outcome);
            }
        });
        {
            let mut inflight = lock(&s.inflight);
            if !task.is_finished() {
                inflight.insert(client_id, task.abort_handle());
            }
        }
        Outcome::Stream(rx)
    }

    /// Relays what the server says about a call to the client until its answer (`Done`), the
    /// client going away or not reading (`Gone`; dropping the call cancels it upstream), or — for
    /// a 2026-07-28 client, which takes no server→client requests — a request of the server's
    /// that the client must answer through an input-required result (`AskClient`).
    #[allow(clippy::too_many_arguments)]
    async fn relay_call<F>(
        &self,
        session: &Arc<ClientSession>,
        server: &ServerHandle,
        method: &'static str,
        mut call: std::pin::Pin<&mut F>,
        events: &mut crate::supervisor::rpc::RouteRx,
        tx: &mpsc::Sender<Out>,
        client_token: Option<&str>,
    ) -> Relayed
    where
        F: std::future::Future<Output = Result<Reply, CallError>>,
    {
        loop {
            tokio::select! {
                r = &mut call => return Relayed::Done(r),
                Some(ev) = events.recv() => {
                    let ev = match ev {
                        CallEvent::Request { id, line } if session.era() == Era::Modern => {
                            return Relayed::AskClient { upstream_id: id, line };
                        }
                        ev => ev,
                    };
                    if let Some(line) = self.relay(session, server, ev, client_token) {
                        // A client that stops reading loses this call's stream, never the hub's
                        // memory.
                        match tokio::time::timeout(CLIENT_STALL, tx.send(Out::Event(line))).await {
                            Ok(Ok(())) => {}
                            Ok(Err(_)) => return Relayed::Gone,
                            Err(_) => {
                                server.warn_once(&format!(
                                    "a client stopped reading the stream of its call ({method}) for {} s; the call was dropped",
                                    CLIENT_STALL.as_secs()
                                ));
                                return Relayed::Gone;
                            }
                        }
                    }
                }
                _ = tx.closed() => return Relayed::Gone,
            }
        }
    }

    /// Records a tool call in the activity log (never waits on it).
    pub(super) fn record(
        &self,
        s: &Arc<ClientSession>,
        m: &CallMeta,
        decision: Decision,
        by: Decider,
        outcome: CallOutcome,
        via: Option<String>,
    ) {
        let elapsed = m.started.elapsed().as_millis() as u64;
        let info = s.info();
        self.inner.hub.activity().record(CallRecord {
            time_ms: crate::logs::now_ms().saturating_sub(elapsed),
            client: info.name,
            client_version: info.version,
            client_protocol: info.protocol_version,
            session: s.id.clone(),
            server: m.server.clone(),
            tool: m.tool.clone(),
            arguments: m.arguments.clone(),
            decision,
            decided_by: by,
            duration_ms: elapsed,
            outcome,
            decided_via: via,
            profile: s.profile.clone(),
            waited_ms: m.waited.map_or(0, |w| w.as_millis() as u64),
        });
    }

    /// Turns a server's message about a call into the client's terms.
    fn relay(
        &self,
        s: &Arc<ClientSession>,
        server: &ServerHandle,
        ev: CallEvent,
        client_token: Option<&str>,
    ) -> Option<Vec<u8>> {
        match ev {
            CallEvent::Notification(line) => {
                #[derive(Deserialize)]
                struct M<'a> {
                    #[serde(borrow)]
                    method: &'a str,
                    #[serde(borrow)]
                    params: Option<&'a RawValue>,
                }
                let m: M = serde_json::from_slice(&line).ok()?;
                if m.method == "notifications/progress" {
                    let token = client_token?;
                    let params = set_member(m.params?.get(), "progressToken", token)?;
                    let p = RawValue::from_string(params).ok()?;
                    Some(jsonrpc::notification_line(m.method, Some(&p)))
                } else {
                    let mut l = line;
                    l.push(b'\n');
                    Some(l)
                }
            }
            CallEvent::Request { id, line } => {
                let peer = server.peer().ok()?;
                if lock(&s.forwarded).len() >= MAX_FORWARDED {
                    // A client that leaves server requests unanswered gets no more of them.
                    let why = format!(
                        "the client has {MAX_FORWARDED} requests from servers unanswered; this one was not passed on"
                    );
                    let err = jsonrpc::error_object(ErrorCode::InternalError, &why);
                    tokio::spawn(async move {
                        if let Ok(err) = RawValue::from_string(err) {
                            peer.respond(&id, ResponseBody::Error(&err)).await;
                        }
                    });
                    return None;
                }
                let ours = format!("\"gatehouse-req-{}\"", self.next());
                let text = std::str::from_utf8(&line).ok()?;
                let mut rewritten = set_member(text, "id", &ours)?.into_bytes();
                rewritten.push(b'\n');
                lock(&s.forwarded).insert(
                    ours,
                    Forwarded::Upstream {
                        peer,
                        upstream_id: id,
                    },
                );
                Some(rewritten)
            }
        }
    }
}

/// A result Gatehouse makes itself (a refusal, a timeout), as a client of `era` takes it: a
/// modern client gets its `resultType`.
pub(super) fn ours(id: &str, result: &str, era: Era) -> Vec<u8> {
    match era {
        // Ours carry no server's identity: nothing to read for a legacy client.
        Era::Legacy => jsonrpc::result_line(id, result),
        Era::Modern => jsonrpc::result_line(id, &crate::protocol::for_client(result, era)),
    }
}

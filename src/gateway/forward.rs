//! One forwarded request with named phases: approve (`approve.rs`: the hold, the recheck, asking
//! again) → call (`call.rs`: rounds, relay, park) → answer (`answer.rs`: one pure function for
//! the outcome and the reply line) → audit (`audit.rs`: the one activity row). This file only
//! runs them in order. The phases run as the request's [`Stream`] is read — by its transport, no
//! task of their own — until the call says something before its end (see [`Stream`]).

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::admission::Gate;
use super::answer::{answer, refused, Ending};
use super::approve::{approve, Held};
use super::audit::{Audit, CallMeta};
use super::call::{call, Upstream};
use super::context::Cx;
use super::outcome::{Out, Outcome, Stream, CLIENT_STALL};
use super::park::Attach;
use super::said::Check;
use super::session::{Tracked, OUT_QUEUE};
use crate::activity::{CallOutcome, Decision};
use crate::approval::Decider;
use crate::jsonrpc::{self, set_member, ErrorCode};
use crate::protocol::Era;
use crate::supervisor::rpc::{RouteRx, RouteTx};
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

/// Forwards a request to `server` with `params` as raw members (the cold paths: prompts,
/// resources, completions): the client's progress token is swapped for ours, then [`forward`];
/// its result held to `said`'s pin when given (`said.rs`).
pub(super) fn forward_members(
    cx: &Cx,
    id: &RawValue,
    server: ServerHandle,
    method: &'static str,
    params: BTreeMap<String, Box<RawValue>>,
    said: Option<Check>,
) -> Outcome {
    let Some((params, tokens)) = with_our_token(cx, params) else {
        return Outcome::error(id.get(), ErrorCode::InvalidParams, "Invalid params");
    };
    forward(cx, id, server, method, params, tokens, (None, said))
}

/// Forwards a request to `server` with `params` as the server gets them (`tokens` says whose
/// progress token they carry) and streams what it says about it back to the client: the
/// request's call is in its session's table of calls in flight (a `notifications/cancelled`
/// ends it) until its work ends or is dropped.
pub(super) fn forward(
    cx: &Cx,
    id: &RawValue,
    server: ServerHandle,
    method: &'static str,
    params: Box<RawValue>,
    tokens: Tokens,
    (tool, said): (Option<ToolCall>, Option<Check>),
) -> Outcome {
    let (tx, rx) = mpsc::channel::<Out>(OUT_QUEUE);
    let number = cx.next_id();
    let (sink, events) = crate::supervisor::rpc::route_channel();
    let call = Call {
        cx: cx.clone(),
        server,
        method,
        tool,
        said,
        tokens,
        client_id: id.get().to_owned(),
        tx: tx.clone(),
    };
    let (run, abort) = futures_util::future::abortable(call.run(params, sink, events));
    cx.session.track(id.get(), number, abort);
    // Untracked however the work ends — answered, aborted, or dropped before it was ever
    // polled (its stream dropped unread): the guard lives in the future from here.
    let tracked = Tracked::new(&cx.session, number);
    // Aborted (the client cancelled it, or its session ended): no answer.
    let run = Box::pin(async move {
        let _tracked = tracked;
        run.await.ok().flatten()
    });
    Outcome::Stream(Stream::running(rx, tx, run))
}

/// How long a confined server's failed call waits for its stderr to catch up before the
/// failure is explained (`failure.rs` reads what it wrote during the call).
pub const STDERR_CATCH_UP: std::time::Duration = std::time::Duration::from_millis(50);

/// The client's progress token (raw JSON), and ours that replaces it upstream.
pub(super) struct Tokens {
    client: Option<String>,
    ours: Option<String>,
}

impl Tokens {
    /// For a request that carries `client`'s token (raw JSON): one of ours, unique across
    /// clients, in its place.
    pub fn for_client(cx: &Cx, client: Option<&str>) -> Tokens {
        Tokens {
            ours: client.map(|_| format!("\"gatehouse-{}\"", cx.next_id())),
            client: client.map(str::to_owned),
        }
    }

    /// Our token, when the client sent one.
    pub fn ours(&self) -> Option<&str> {
        self.ours.as_deref()
    }
}

/// `params` as the server gets them, with the client's progress token replaced by one of ours
/// (unique across clients); `None` when they cannot be written back.
fn with_our_token(
    cx: &Cx,
    mut params: BTreeMap<String, Box<RawValue>>,
) -> Option<(Box<RawValue>, Tokens)> {
    let client = params.get("_meta").and_then(|m| {
        let text = m.get();
        match jsonrpc::scan::top_level(text.as_bytes(), [b"progressToken"]) {
            Some([token]) => token.map(|r| text[r].to_owned()),
            None => serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(text)
                .ok()
                .and_then(|m| m.get("progressToken").map(|t| t.get().to_owned())),
        }
    });
    let tokens = Tokens::for_client(cx, client.as_deref());
    if let (Some(ours), Some(meta)) = (tokens.ours(), params.get("_meta")) {
        if let Some(new_meta) = set_member(meta.get(), "progressToken", ours) {
            if let Ok(raw) = RawValue::from_string(new_meta) {
                params.insert("_meta".into(), raw);
            }
        }
    }
    // Serialised straight into a RawValue: the members are raw already, no re-validation.
    let params = serde_json::value::to_raw_value(&params).ok()?;
    Some((params, tokens))
}

/// One forwarded request: what its phases share.
struct Call {
    cx: Cx,
    server: ServerHandle,
    method: &'static str,
    tool: Option<ToolCall>,
    /// What its result is held to (a prompt's text, an app's HTML).
    said: Option<Check>,
    tokens: Tokens,
    /// The client's raw request id.
    client_id: String,
    /// Where the call's messages to its client go.
    tx: mpsc::Sender<Out>,
}

impl Call {
    /// The call's phases in order: its answer to the request when that is the last thing it
    /// sends (`None`: sent on another stream — a parked call's retry's —, or the client left).
    async fn run(
        mut self,
        params: Box<RawValue>,
        sink: RouteTx,
        mut events: RouteRx,
    ) -> Option<Vec<u8>> {
        let (exposed, pass, meta) = match self.tool.take() {
            Some(ToolCall { name, pass, meta }) => (Some(name), Some(pass), Some(meta)),
            None => (None, None, None),
        };
        // Its text marked as untrusted data, and the most bytes of its result this client
        // receives.
        let (spotlight, budget) = match (&meta, &exposed) {
            (Some(m), Some(name)) => self.shaping(m.tool(), name),
            _ => (None, None),
        };
        // Audit: the call's one activity row, written with the outcome at the end, or by the
        // guard if the call is dropped first (the client cancelled or left).
        let mut audit = Audit::new(self.cx.hub.activity(), &self.cx.session, meta);
        // Approve: a held call waits for the person's answer.
        let (decision, by) = match pass {
            None => (Decision::Allowed, Decider::Policy),
            Some(Pass::Free(d)) => (d, Decider::Policy),
            Some(Pass::Held(gate)) => {
                let name = exposed.as_deref().unwrap_or_default();
                let client = self.tokens.client.as_deref();
                // Boxed: a held call's wait is rare, and the common call's state stays small.
                match Box::pin(held(&self, name, *gate, client, &mut audit)).await {
                    Ok(allowed) => allowed,
                    Err(answer) => return answer,
                }
            }
        };
        audit.sent(decision, by);
        // Call: the rounds, the relay, a parked call's retry taking it over.
        let keep = self
            .cx
            .hub
            .config()
            .servers
            .get(self.server.id())
            .map(|c| c.unmasked_secrets.clone())
            .unwrap_or_default();
        let up = Upstream {
            server: &self.server,
            method: self.method,
            sink,
            our_token: self.tokens.ours.clone(),
            client_token: self.tokens.client.as_deref(),
            keep: &keep,
        };
        let mut to = Attach {
            client_id: self.client_id.clone(),
            tx: self.tx.clone(),
        };
        let called_at = crate::logs::now_ms();
        // The client went away: dropping the call cancelled it upstream.
        let called = call(&self.cx, &up, params, &mut events, &mut to).await?;
        // A confined server's failure is often explained only on its stderr, which travels on
        // another pipe than its answer: that pipe is given a moment to catch up (failed calls of
        // confined servers only) before the failure is explained.
        let failed = match &called.result {
            Ok(crate::supervisor::Reply::Result(_)) => {
                called.view.as_ref().is_some_and(|v| v.is_error)
            }
            _ => true,
        };
        if failed && self.server.confined().is_some() {
            tokio::time::sleep(STDERR_CATCH_UP).await;
        }
        // Answer: the outcome and the client's line, chosen together.
        let (outcome, line, error) =
            self.answered(called, &to.client_id, exposed.as_deref(), called_at);
        audit.error = error;
        // A secret Gatehouse handed the server never reaches the client in its answer.
        let line = self.cx.hub.redactions().mask_line(line, &keep);
        // What a server says to the model or the person, as the person approved it.
        let line = match &self.said {
            Some(check) => super::said::heard(
                &self.cx,
                self.server.id().as_str(),
                check,
                line,
                &to.client_id,
            ),
            None => line,
        };
        let line = match &spotlight {
            Some(tool) => super::spotlight::apply(line, self.server.id().as_str(), tool),
            None => line,
        };
        let line = match budget {
            Some(b) => {
                let profile = self.cx.session.profile.as_deref();
                let profile = profile.unwrap_or(crate::profiles::DEFAULT_PROFILE);
                super::budget::apply(line, b, &self.cx.calls.results, profile)
            }
            None => line,
        };
        audit.finish(decision, by, outcome);
        if !to.tx.same_channel(&self.tx) {
            // A parked call's retry took it over: the answer goes on the retry's stream.
            let _ = tokio::time::timeout(CLIENT_STALL, to.tx.send(Out::Final(line))).await;
            return None;
        }
        Some(line)
    }

    /// How a tool call's result is shaped for its client: the tool's own name when its text is
    /// marked as untrusted data (`spotlight.rs`), and its result budget (`budget.rs`).
    fn shaping(&self, tool: &str, exposed: &str) -> (Option<String>, Option<u64>) {
        let config = self.cx.hub.config();
        let profile = self.cx.session.profile.as_deref().and_then(|p| {
            config
                .clients
                .iter()
                .find(|(k, _)| k.as_str() == p)
                .map(|(_, v)| v)
        });
        let id = self.server.id();
        let spot = crate::config::spotlight_for(&config, profile, id, tool, exposed);
        (
            spot.then(|| tool.to_owned()),
            crate::config::budget_for(&config, profile, id, tool, exposed),
        )
    }

    /// The outcome for the activity log, the client's line for request `client_id` and — when
    /// it failed — its text for Activity (the sandbox named where it may be the cause).
    fn answered(
        &self,
        called: super::call::Called,
        client_id: &str,
        exposed: Option<&str>,
        called_at: u64,
    ) -> (CallOutcome, Vec<u8>, Option<String>) {
        let session = &self.cx.session;
        let caps = match session.era() {
            Era::Modern => session.info().capabilities,
            Era::Legacy => None,
        };
        let server_id = self.server.id().as_str();
        let (outcome, line) = answer(Ending {
            result: called.result,
            view: called.view,
            era: session.era(),
            client_id,
            server: server_id,
            method: self.method,
            exposed,
            input_failure: called.input_failure.as_deref(),
            client_capabilities: caps.as_deref(),
        });
        let (line, error) = super::failure::explain(
            line,
            outcome,
            (self.server.confined().as_deref(), called_at),
            server_id,
            || self.server.logs().stderr_since(40, called_at),
        );
        (outcome, line, error)
    }
}

/// The approval phase of a held call: `Ok` with the decision and who made it when it may run;
/// `Err` with the answer to the request when it may not (`None`: the client went away, and the
/// request is gone from the broker).
async fn held(
    call: &Call,
    name: &str,
    gate: Gate,
    client_token: Option<&str>,
    audit: &mut Audit,
) -> Result<(Decision, Decider), Option<Vec<u8>>> {
    let started = std::time::Instant::now();
    let held = approve(&call.cx, &call.server, name, gate, &call.tx, client_token).await;
    if let Some(m) = audit.meta.as_mut() {
        m.waited = Some(started.elapsed());
    }
    match held {
        Held::Allowed(d, by, via) => {
            audit.via = via;
            Ok((d, by))
        }
        Held::Refused(text, decision, by, via) => {
            audit.via = via;
            audit.error = Some(text.clone());
            audit.finish(decision, by, CallOutcome::NotRun);
            Err(Some(refused(&call.client_id, &text, call.cx.session.era())))
        }
        Held::ClientGone => Err(None),
    }
}

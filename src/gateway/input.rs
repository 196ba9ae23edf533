//! A 2026-07-28 server's input requests (multi round-trip: an `input_required` result) relayed to
//! a 2025-era client the way that client knows: each embedded request (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) goes to it as a server→client request on the call's
//! stream, its answers become the retry's `inputResponses`, and `requestState` is echoed
//! unchanged. The retry itself is a new request to the server (see `forward.rs`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::context::Cx;
use super::outcome::Out;
use super::session::{lock, ClientSession, Forwarded, INPUT_DEADLINE};
use crate::jsonrpc::{self, json_string};

/// Rounds of input one call may ask for, at most; then it ends with an error result.
pub const MAX_INPUT_ROUNDS: usize = 8;
/// Input requests in one round, at most.
const MAX_INPUT_REQUESTS: usize = 16;

/// Asks the client every input request of `result` and returns the params of the retry
/// (`params` with `inputResponses` and `requestState`), or why the round cannot be answered
/// (the client lacks the capability, refused, went away, or took too long).
pub(super) async fn relay_input(
    cx: &Cx,
    tx: &mpsc::Sender<Out>,
    result: &str,
    params: &RawValue,
) -> Result<String, String> {
    #[derive(Deserialize)]
    struct R<'a> {
        #[serde(rename = "inputRequests", default, borrow)]
        input_requests: BTreeMap<String, &'a RawValue>,
        #[serde(rename = "requestState", default, borrow)]
        request_state: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Req<'a> {
        method: String,
        #[serde(default, borrow)]
        params: Option<&'a RawValue>,
    }
    let s = &cx.session;
    let r: R = serde_json::from_str(result)
        .map_err(|e| format!("its input request is malformed ({e})"))?;
    if r.input_requests.len() > MAX_INPUT_REQUESTS {
        return Err(format!(
            "it asked for {} inputs at once (Gatehouse relays at most {MAX_INPUT_REQUESTS})",
            r.input_requests.len()
        ));
    }
    // Every request is checked before any is sent: a round is relayed whole or not at all.
    let capabilities = s.info().capabilities.unwrap_or_else(|| "{}".into());
    let mut asks = Vec::new();
    for (key, raw) in &r.input_requests {
        let req: Req = serde_json::from_str(raw.get())
            .map_err(|e| format!("its input request {key:?} is malformed ({e})"))?;
        let one = format!("{{\"inputRequests\":{{\"k\":{}}}}}", raw.get());
        if let Some((method, needs)) = crate::protocol::unanswerable_input(&one, &capabilities) {
            return Err(format!(
                    "it asks the client to answer {method}, and this client did not declare the \"{needs}\" capability"
                ));
        }
        asks.push((key, req));
    }
    // The requests sent and not yet answered leave the session's table however this ends
    // (an error, the deadline, the call's task dropped).
    let mut pending = Unanswered {
        session: s,
        ids: Vec::new(),
    };
    let mut waiting = Vec::new();
    for (key, req) in asks {
        let ours = format!("\"gatehouse-input-{}\"", cx.next_id());
        let (answer_tx, answer_rx) = tokio::sync::oneshot::channel();
        {
            let mut forwarded = lock(&s.forwarded);
            if forwarded.len() >= super::session::MAX_FORWARDED {
                return Err("the client has too many requests unanswered".into());
            }
            forwarded.insert(ours.clone(), Forwarded::Input(answer_tx));
        }
        pending.ids.push(ours.clone());
        let line = jsonrpc::request_line_with_id(&ours, &req.method, req.params);
        if tx.send(Out::Event(line)).await.is_err() {
            return Err("the client went away".into());
        }
        waiting.push((key.clone(), answer_rx));
    }
    let mut responses: Vec<String> = Vec::new();
    for (key, answer) in waiting {
        let got = tokio::select! {
            a = tokio::time::timeout(INPUT_DEADLINE, answer) => a,
            _ = tx.closed() => return Err("the client went away".into()),
        };
        match got {
            Ok(Ok(Ok(answer))) => responses.push(format!("{}:{}", json_string(&key), answer.get())),
            Ok(Ok(Err(error))) => {
                return Err(format!(
                    "the client refused its input request: {}",
                    error.get()
                ))
            }
            Ok(Err(_)) => return Err("the client's session ended".into()),
            Err(_) => {
                return Err(format!(
                    "the client did not answer its input request within {} s",
                    INPUT_DEADLINE.as_secs()
                ))
            }
        }
    }
    // The retry: the original params, the answers, the server's state echoed as it was.
    let mut members: BTreeMap<String, Box<RawValue>> = serde_json::from_str(params.get())
        .map_err(|e| format!("the call's params are malformed ({e})"))?;
    let responses = RawValue::from_string(format!("{{{}}}", responses.join(",")))
        .map_err(|e| format!("the client's answer is malformed ({e})"))?;
    members.insert("inputResponses".into(), responses);
    match r.request_state {
        Some(state) => {
            members.insert("requestState".into(), state.to_owned());
        }
        None => {
            members.remove("requestState");
        }
    }
    serde_json::to_string(&members).map_err(|e| e.to_string())
}

/// The input requests of one round still in a session's table of requests to its client: they
/// are taken out when the round ends, whichever way (an answered one is gone already).
struct Unanswered<'a> {
    session: &'a ClientSession,
    ids: Vec<String>,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        let mut forwarded = lock(&self.session.forwarded);
        for id in &self.ids {
            forwarded.remove(id);
        }
    }
}

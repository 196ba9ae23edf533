//! A 2026-07-28 server's input requests (multi round-trip: an `input_required` result) relayed to
//! a 2025-era client the way that client knows: each embedded request (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) goes to it as a server→client request on the call's
//! stream, its answers become the retry's `inputResponses`, and `requestState` is echoed
//! unchanged. The retry itself is a new request to the server (see `forward.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::session::{lock, ClientSession, Forwarded};
use super::{Gateway, Out};
use crate::jsonrpc::{self, json_string};

/// Rounds of input one call may ask for, at most; then it ends with an error result.
pub const MAX_INPUT_ROUNDS: usize = 8;
/// How long a client may take to answer one round of input requests (a person may be asked).
pub const INPUT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);
/// Input requests in one round, at most.
const MAX_INPUT_REQUESTS: usize = 16;

impl Gateway {
    /// Asks the client every input request of `result` and returns the params of the retry
    /// (`params` with `inputResponses` and `requestState`), or why the round cannot be answered
    /// (the client lacks the capability, refused, went away, or took too long).
    pub(super) async fn relay_input(
        &self,
        s: &Arc<ClientSession>,
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
        let r: R = serde_json::from_str(result)
            .map_err(|e| format!("its input request is malformed ({e})"))?;
        if r.input_requests.len() > MAX_INPUT_REQUESTS {
            return Err(format!(
                "it asked for {} inputs at once (Gatehouse relays at most {MAX_INPUT_REQUESTS})",
                r.input_requests.len()
            ));
        }
        let capabilities = s.info().capabilities.unwrap_or_else(|| "{}".into());
        let mut waiting = Vec::new();
        for (key, raw) in &r.input_requests {
            let req: Req = serde_json::from_str(raw.get())
                .map_err(|e| format!("its input request {key:?} is malformed ({e})"))?;
            let one = format!("{{\"inputRequests\":{{\"k\":{}}}}}", raw.get());
            if let Some((method, needs)) = crate::protocol::unanswerable_input(&one, &capabilities)
            {
                return Err(format!(
                    "it asks the client to answer {method}, and this client did not declare the \"{needs}\" capability"
                ));
            }
            let ours = format!("\"gatehouse-input-{}\"", self.next());
            let (answer_tx, answer_rx) = tokio::sync::oneshot::channel();
            {
                let mut forwarded = lock(&s.forwarded);
                if forwarded.len() >= super::forward::MAX_FORWARDED {
                    return Err("the client has too many requests unanswered".into());
                }
                forwarded.insert(ours.clone(), Forwarded::Input(answer_tx));
            }
            let line = jsonrpc::request_line_with_id(&ours, &req.method, req.params);
            if tx.send(Out::Event(line)).await.is_err() {
                lock(&s.forwarded).remove(&ours);
                return Err("the client went away".into());
            }
            waiting.push((key.clone(), ours, answer_rx));
        }
        let mut responses: Vec<String> = Vec::new();
        for (key, ours, answer) in waiting {
            let got = tokio::select! {
                a = tokio::time::timeout(INPUT_DEADLINE, answer) => a,
                _ = tx.closed() => {
                    lock(&s.forwarded).remove(&ours);
                    return Err("the client went away".into());
                }
            };
            match got {
                Ok(Ok(Ok(answer))) => {
                    responses.push(format!("{}:{}", json_string(&key), answer.get()))
                }
                Ok(Ok(Err(error))) => {
                    return Err(format!(
                        "the client refused its input request: {}",
                        error.get()
                    ))
                }
                Ok(Err(_)) => return Err("the client's session ended".into()),
                Err(_) => {
                    lock(&s.forwarded).remove(&ours);
                    return Err(format!(
                        "the client did not answer its input request within {} s",
                        INPUT_DEADLINE.as_secs()
                    ));
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
}

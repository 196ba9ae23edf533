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
use crate::protocol::STATE_PREFIX;

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
        // Every request is checked before any is sent: a round is relayed whole or not at all.
        let capabilities = s.info().capabilities.unwrap_or_else(|| "{}".into());
        let mut asks = Vec::new();
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
            let ours = format!("\"gatehouse-input-{}\"", self.next());
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

/// Calls whose 2025 server asked a 2026-07-28 client something, waiting for the client's retry,
/// at most, per client profile; another such request of that profile is refused to its server.
pub const MAX_PARKED: usize = 256;

/// The key of the one input request of a parked call.
const INPUT_KEY: &str = "gatehouse";

/// What relaying a call to its client came to.
pub(super) enum Relayed {
    /// The server's answer.
    Done(Result<crate::supervisor::Reply, crate::supervisor::rpc::CallError>),
    /// The client went away or stopped reading.
    Gone,
    /// The server asked a 2026-07-28 client something mid-call (a server→client request).
    AskClient {
        upstream_id: Box<RawValue>,
        line: Vec<u8>,
    },
}

/// What parking a call came to.
pub(super) enum Parked {
    /// The client retried: the call goes on, answering this request on this stream.
    Attached(Attach),
    /// The request was answered with an error (the client cannot answer it); the call goes on.
    Refused,
    /// No retry came in time, or the client went away: the call is dropped.
    Gone,
}

/// A client's retry of a parked call.
pub(super) struct Attach {
    pub client_id: String,
    pub tx: mpsc::Sender<Out>,
}

/// A parked call: whose it is, and how its retry reaches it.
pub(super) struct ParkedCall {
    session: String,
    /// The client profile whose share it takes.
    profile: Option<String>,
    abort: Option<tokio::task::AbortHandle>,
    attach: tokio::sync::oneshot::Sender<(Attach, Option<Box<RawValue>>)>,
}

/// The parked calls, by the `requestState` given to their client. The mutex guards one insert,
/// lookup or removal.
pub(super) type ParkedCalls = std::sync::Mutex<std::collections::HashMap<String, ParkedCall>>;

impl Gateway {
    /// Parks a call under `state`, in its profile's share of the table ([`MAX_PARKED`]):
    /// false when that share is full. Each client profile has its own share: one profile's
    /// unanswered input requests never refuse another's.
    fn park_in(
        &self,
        s: &ClientSession,
        client_id: &str,
        state: &str,
        attach: tokio::sync::oneshot::Sender<(Attach, Option<Box<RawValue>>)>,
    ) -> bool {
        let mut parked = lock(&self.inner.parked);
        if parked.values().filter(|p| p.profile == s.profile).count() >= MAX_PARKED {
            return false;
        }
        let abort = lock(&s.inflight).remove(client_id);
        parked.insert(
            state.to_owned(),
            ParkedCall {
                session: s.id.clone(),
                profile: s.profile.clone(),
                abort,
                attach,
            },
        );
        true
    }

    /// A 2025 server asked a 2026-07-28 client something during a call: the client's request is
    /// answered with an input-required result carrying that request and a `requestState` of
    /// ours, and the call waits (at most [`INPUT_DEADLINE`]) for the client's retry, whose answer
    /// goes to the server. A request the client did not declare it can answer is refused to the
    /// server at once.
    pub(super) async fn park(
        &self,
        s: &Arc<ClientSession>,
        server: &crate::supervisor::ServerHandle,
        tx: &mpsc::Sender<Out>,
        client_id: &str,
        upstream_id: Box<RawValue>,
        line: &[u8],
    ) -> Parked {
        #[derive(Deserialize)]
        struct Req<'a> {
            method: String,
            #[serde(default, borrow)]
            params: Option<&'a RawValue>,
        }
        let Ok(peer) = server.peer() else {
            return Parked::Gone;
        };
        let refuse = |why: String| {
            let peer = peer.clone();
            let id = upstream_id.clone();
            server.warn_once(&format!(
                "a request from the server during a call was refused: {why}"
            ));
            async move {
                let err = jsonrpc::error_object(jsonrpc::ErrorCode::MethodNotFound, &why);
                if let Ok(err) = RawValue::from_string(err) {
                    peer.respond(&id, crate::supervisor::rpc::ResponseBody::Error(&err))
                        .await;
                }
                Parked::Refused
            }
        };
        let Ok(req) = serde_json::from_slice::<Req>(line) else {
            return refuse("the request is malformed".into()).await;
        };
        let embedded = format!(
            "{{\"method\":{},\"params\":{}}}",
            json_string(&req.method),
            req.params.map_or("{}", |p| p.get())
        );
        let capabilities = s.info().capabilities.unwrap_or_else(|| "{}".into());
        let one = format!("{{\"inputRequests\":{{\"k\":{embedded}}}}}");
        if let Some((method, needs)) = crate::protocol::unanswerable_input(&one, &capabilities) {
            return refuse(format!(
                "the client speaks MCP 2026-07-28 and did not declare the \"{needs}\" capability that {method} needs"
            ))
            .await;
        }
        if !matches!(
            req.method.as_str(),
            "elicitation/create" | "sampling/createMessage" | "roots/list"
        ) {
            return refuse(format!(
                "the client speaks MCP 2026-07-28, which has no server-to-client {} requests",
                req.method
            ))
            .await;
        }
        let state = format!("{STATE_PREFIX}{}", crate::token::random_hex(16));
        let (attach_tx, attach_rx) = tokio::sync::oneshot::channel();
        if !self.park_in(s, client_id, &state, attach_tx) {
            return refuse(format!(
                "{MAX_PARKED} calls of this client profile are already waiting for their clients' input"
            ))
            .await;
        }
        let result = format!(
            "{{\"resultType\":\"input_required\",\"inputRequests\":{{{}:{embedded}}},\"requestState\":{}}}",
            json_string(INPUT_KEY),
            json_string(&state)
        );
        let _ = tx
            .send(Out::Final(jsonrpc::result_line(client_id, &result)))
            .await;
        let attached = tokio::time::timeout(INPUT_DEADLINE, attach_rx).await;
        lock(&self.inner.parked).remove(&state);
        let Ok(Ok((attach, answer))) = attached else {
            return Parked::Gone;
        };
        match answer {
            Some(answer) => {
                peer.respond(
                    &upstream_id,
                    crate::supervisor::rpc::ResponseBody::Result(&answer),
                )
                .await
            }
            None => {
                let err = jsonrpc::error_object(
                    jsonrpc::ErrorCode::InvalidParams,
                    "the client retried without an answer to the request",
                );
                if let Ok(err) = RawValue::from_string(err) {
                    peer.respond(
                        &upstream_id,
                        crate::supervisor::rpc::ResponseBody::Error(&err),
                    )
                    .await;
                }
            }
        }
        Parked::Attached(attach)
    }

    /// A retry of a parked call (its `requestState` is ours): `None` when the request is not one,
    /// else the outcome — the call's stream from here on, or an error when the state is unknown,
    /// expired or another client's.
    pub(super) fn resume(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> Option<super::Outcome> {
        let text = params?.get();
        // Cheap first: most requests carry no state of ours.
        crate::protocol::NEEDLES.state.find(text.as_bytes())?;
        let [state, responses] =
            crate::jsonrpc::scan::top_level(text.as_bytes(), [b"requestState", b"inputResponses"])?;
        let state = serde_json::from_str::<String>(&text[state?]).ok()?;
        if !state.starts_with(STATE_PREFIX) {
            return None;
        }
        let parked = {
            let mut all = lock(&self.inner.parked);
            match all.get(&state) {
                Some(p) if p.session == s.id => all.remove(&state),
                _ => None,
            }
        };
        let Some(parked) = parked else {
            return Some(super::Outcome::Reply(jsonrpc::error_line(
                id.get(),
                jsonrpc::ErrorCode::InvalidParams,
                "Invalid params: this requestState is unknown or expired (the call it belonged to ended); call the tool again",
            )));
        };
        #[derive(Deserialize)]
        struct Answers {
            #[serde(default)]
            gatehouse: Option<Box<RawValue>>,
        }
        let answer = responses
            .and_then(|r| serde_json::from_str::<Answers>(&text[r]).ok())
            .and_then(|a| a.gatehouse);
        let (tx, rx) = mpsc::channel(super::session::OUT_QUEUE);
        if let Some(abort) = parked.abort {
            lock(&s.inflight).insert(id.get().to_owned(), abort);
        }
        let attach = Attach {
            client_id: id.get().to_owned(),
            tx,
        };
        if parked.attach.send((attach, answer)).is_err() {
            lock(&s.inflight).remove(id.get());
            return Some(super::Outcome::Reply(jsonrpc::error_line(
                id.get(),
                jsonrpc::ErrorCode::InvalidParams,
                "Invalid params: the call this requestState belonged to has ended; call the tool again",
            )));
        }
        Some(super::Outcome::Stream(rx))
    }
}

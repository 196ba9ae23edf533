//! A 2025 server's mid-call request given to a 2026-07-28 client, which takes no server→client
//! requests: the client's request ends with an `input_required` result carrying it and a
//! `requestState` of ours, and the call is parked until the client's retry takes it over (its
//! answer goes to the server, the rest of the call to the retry's stream).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::outcome::{Out, Outcome};
use super::session::{lock, ClientSession, INPUT_DEADLINE};
use crate::jsonrpc::{self, json_string};
use crate::protocol::STATE_PREFIX;

/// Calls whose 2025 server asked a 2026-07-28 client something, waiting for the client's retry,
/// at most, per client profile; another such request of that profile is refused to its server.
pub const MAX_PARKED: usize = 256;

/// The key of the one input request of a parked call.
const INPUT_KEY: &str = "gatehouse";

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
    abort: Option<super::session::InFlight>,
    attach: tokio::sync::oneshot::Sender<(Attach, Option<Box<RawValue>>)>,
}

/// The calls parked for their 2026-07-28 client's retry, by the `requestState` given to it. The
/// mutex guards one insert, lookup or removal.
#[derive(Default)]
pub(super) struct ParkedCalls(std::sync::Mutex<std::collections::HashMap<String, ParkedCall>>);

impl ParkedCalls {
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
        let mut parked = lock(&self.0);
        if parked.values().filter(|p| p.profile == s.profile).count() >= MAX_PARKED {
            return false;
        }
        let abort = s.take_inflight(client_id);
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
        lock(&self.0).remove(&state);
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
    ) -> Option<Outcome> {
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
            let mut all = lock(&self.0);
            match all.get(&state) {
                Some(p) if p.session == s.id => all.remove(&state),
                _ => None,
            }
        };
        let Some(parked) = parked else {
            return Some(Outcome::error(
                id.get(),
                jsonrpc::ErrorCode::InvalidParams,
                "Invalid params: this requestState is unknown or expired (the call it belonged to ended); call the tool again",
            ));
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
            s.put_inflight(id.get(), abort);
        }
        let attach = Attach {
            client_id: id.get().to_owned(),
            tx,
        };
        if parked.attach.send((attach, answer)).is_err() {
            s.take_inflight(id.get());
            return Some(Outcome::error(
                id.get(),
                jsonrpc::ErrorCode::InvalidParams,
                "Invalid params: the call this requestState belonged to has ended; call the tool again",
            ));
        }
        Some(Outcome::Stream(rx.into()))
    }
}

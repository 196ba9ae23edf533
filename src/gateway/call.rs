//! The call phase of a forwarded request: the upstream call with the client's progress token
//! swapped for ours, the relay of what the server says about it (progress, log messages,
//! server→client requests), a 2025 client's input rounds with a 2026-07-28 server, and a 2026
//! client's call parked while it answers a 2025 server's request.

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::context::Cx;
use super::input::relay_input;
use super::outcome::{Out, CLIENT_STALL};
use super::park::{Attach, Parked};
use super::session::{lock, Forwarded, MAX_FORWARDED};
use crate::jsonrpc::{self, set_member, ErrorCode};
use crate::protocol::{Era, ResultKind, ResultView};
use crate::supervisor::rpc::{CallError, CallEvent, CallRoute, ResponseBody, RouteRx, RouteTx};
use crate::supervisor::{Reply, ServerHandle};

/// The server end of a call: where it goes and how its events are told apart.
pub(super) struct Upstream<'a> {
    pub server: &'a ServerHandle,
    pub method: &'static str,
    /// Where the server's messages about this call go.
    pub sink: RouteTx,
    /// Our progress token for the call (raw JSON), when the client sent one.
    pub our_token: Option<String>,
    /// The client's progress token (raw JSON).
    pub client_token: Option<&'a str>,
    /// The secrets this server may hand over unmasked (`unmasked_secrets`).
    pub keep: &'a [String],
}

/// What the call phase ends with, for the answer phase.
pub(super) struct Called {
    pub result: Result<Reply, CallError>,
    pub view: Option<ResultView>,
    /// Why a server's input requests could not be relayed to a 2025 client.
    pub input_failure: Option<String>,
}

/// Sends the call and relays what the server says about it until its answer; `None` when
/// the client went away (dropping the call cancels it upstream). `to` is where the answer
/// goes: a parked call's retry takes it over.
pub(super) async fn call(
    cx: &Cx,
    up: &Upstream<'_>,
    mut params: Box<RawValue>,
    events: &mut RouteRx,
    to: &mut Attach,
) -> Option<Called> {
    let session = &cx.session;
    let mut rounds = 0;
    loop {
        let route = CallRoute {
            sink: up.sink.clone(),
            progress_token: up.our_token.clone(),
            // A 2025 client's, from its `initialize` (a 2026 client's request carries its
            // own).
            client_capabilities: match session.era() {
                Era::Legacy => session.capabilities(),
                Era::Modern => None,
            },
        };
        let got = {
            let call = up
                .server
                .request_routed(up.method, Some(&params), Some(route));
            tokio::pin!(call);
            loop {
                let relayed = relay_call(cx, up, call.as_mut(), events, &to.tx).await;
                match relayed {
                    Relayed::Done(r) => break Some(r),
                    Relayed::Gone => break None,
                    Relayed::AskClient { upstream_id, line } => {
                        // A 2025 server asks a 2026-07-28 client: the client's request ends
                        // with an input-required result, and its retry takes the call over
                        // (`park.rs`). Boxed, as the input rounds below: rare, and a call's
                        // own state stays small.
                        let parked = cx.calls.parked.park(
                            session,
                            up.server,
                            &to.tx,
                            &to.client_id,
                            upstream_id,
                            &line,
                        );
                        match Box::pin(parked).await {
                            Parked::Attached(next) => *to = next,
                            Parked::Refused => {}
                            Parked::Gone => break None,
                        }
                    }
                }
            }
        };
        let result = got?;
        // The result's top level, read once: its isError flag, its type, its `_meta`.
        let view = match &result {
            Ok(Reply::Result(r)) => Some(ResultView::of_reply(r)),
            _ => None,
        };
        let needs_input = session.era() == Era::Legacy
            && view
                .as_ref()
                .is_some_and(|v| v.kind == ResultKind::InputRequired);
        let input_failure = if !needs_input {
            None
        } else if rounds >= super::input::MAX_INPUT_ROUNDS {
            Some(format!(
                "it asked for input more than {} times",
                super::input::MAX_INPUT_ROUNDS
            ))
        } else if let Ok(Reply::Result(r)) = &result {
            // A 2026-07-28 server answered a 2025 client with input requests: each round is
            // relayed (`input.rs`) and the call sent again with the answers.
            match Box::pin(relay_input(cx, &to.tx, r.get(), &params)).await {
                Ok(next) => match RawValue::from_string(next) {
                    Ok(p) => {
                        params = p;
                        rounds += 1;
                        continue;
                    }
                    Err(e) => Some(format!("the retry could not be built ({e})")),
                },
                Err(why) => Some(why),
            }
        } else {
            None
        };
        return Some(Called {
            result,
            view,
            input_failure,
        });
    }
}

/// Relays what the server says about a call to the client until its answer (`Done`), the
/// client going away or not reading (`Gone`; dropping the call cancels it upstream), or — for
/// a 2026-07-28 client, which takes no server→client requests — a request of the server's
/// that the client must answer through an input-required result (`AskClient`).
async fn relay_call<F>(
    cx: &Cx,
    up: &Upstream<'_>,
    mut call: std::pin::Pin<&mut F>,
    events: &mut RouteRx,
    tx: &mpsc::Sender<Out>,
) -> Relayed
where
    F: std::future::Future<Output = Result<Reply, CallError>>,
{
    loop {
        tokio::select! {
            // Events first: the reader queues a call's notifications before it hands over
            // the answer, so whatever the server said before answering (the last progress
            // notification, a log line) reaches the client before the result, never after
            // or not at all.
            biased;
            Some(ev) = events.recv() => {
                let ev = match ev {
                    CallEvent::Request { id, line } if cx.session.era() == Era::Modern => {
                        return Relayed::AskClient { upstream_id: id, line };
                    }
                    ev => ev,
                };
                if let Some(line) = relay(cx, up.server, ev, up.client_token) {
                    let line = cx.hub.redactions().mask_line(line, up.keep);
                    // A client that stops reading loses this call's stream, never the hub's
                    // memory.
                    match tokio::time::timeout(CLIENT_STALL, tx.send(Out::Event(line))).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => return Relayed::Gone,
                        Err(_) => {
                            up.server.warn_once(&format!(
                                "a client stopped reading the stream of its call ({}) for {} s; the call was dropped",
                                up.method,
                                CLIENT_STALL.as_secs()
                            ));
                            return Relayed::Gone;
                        }
                    }
                }
            }
            r = &mut call => return Relayed::Done(r),
            _ = tx.closed() => return Relayed::Gone,
        }
    }
}

/// Turns a server's message about a call into the client's terms.
fn relay(
    cx: &Cx,
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
            let s = &cx.session;
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
            let ours = format!("\"gatehouse-req-{}\"", cx.next_id());
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

/// What relaying a call to its client came to.
enum Relayed {
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

//! The answer phase of a forwarded request: one pure function choosing both what the activity
//! log records (the outcome) and the line the client gets, from how the call ended and who asked.
//! Nothing here waits, locks or reads a process: it is unit-tested as a table.

use crate::activity::CallOutcome;
use crate::jsonrpc::{self, ErrorCode};
use crate::protocol::{Era, ResultKind, ResultView};
use crate::supervisor::rpc::CallError;
use crate::supervisor::Reply;

/// How a forwarded request ended, and what its answer depends on.
pub(super) struct Ending<'a> {
    /// The server's reply, or why there was none.
    pub result: Result<Reply, CallError>,
    /// A result's top level, read once (its isError flag, its type, its `_meta`).
    pub view: Option<ResultView>,
    /// The client's era.
    pub era: Era,
    /// The client's raw request id.
    pub client_id: &'a str,
    /// The server's id.
    pub server: &'a str,
    /// The method forwarded.
    pub method: &'a str,
    /// A tool call's exposed name: its failures are `isError` results, not JSON-RPC errors.
    pub exposed: Option<&'a str>,
    /// Why a server's input requests could not be relayed to a 2025 client.
    pub input_failure: Option<&'a str>,
    /// A 2026 client's declared capabilities (raw JSON).
    pub client_capabilities: Option<&'a str>,
}

/// The outcome for the activity log and the client's line.
pub(super) fn answer(e: Ending<'_>) -> (CallOutcome, Vec<u8>) {
    let Ending {
        result,
        view,
        era,
        client_id,
        server,
        method,
        exposed,
        input_failure,
        client_capabilities,
    } = e;
    let input_required = view
        .as_ref()
        .is_some_and(|v| v.kind == ResultKind::InputRequired);
    // Ours, for a failure: an isError result for a tool call, a JSON-RPC error otherwise.
    let failure = |text: &str| match exposed {
        Some(_) => ours(client_id, &tool_error(text), era),
        None => jsonrpc::error_line(client_id, ErrorCode::InternalError, text),
    };
    let what = exposed.unwrap_or(method);
    match result {
        Ok(Reply::Result(r)) if input_required && era == Era::Modern => {
            // A modern client gets only input requests it declared it can answer.
            let caps = client_capabilities.unwrap_or("{}");
            match crate::protocol::unanswerable_input(r.get(), caps) {
                Some((asked, needs)) => (
                    CallOutcome::ProtocolError,
                    jsonrpc::error_object_line(
                        client_id,
                        &jsonrpc::error_object_with_data(
                            ErrorCode::MissingRequiredClientCapability,
                            &format!("server \"{server}\" needs the client to answer {asked}, and this client did not declare the \"{needs}\" capability"),
                            &format!("{{\"requiredCapabilities\":{{{}:{{}}}}}}", jsonrpc::json_string(needs)),
                        ),
                    ),
                ),
                None => passed(r, view, era, client_id),
            }
        }
        Ok(Reply::Result(_)) if input_required => {
            // A legacy client has no way to answer a multi round-trip request.
            let text = format!(
                "server \"{server}\" answered {what} by asking the client for more input (an MCP 2026-07-28 input request), which could not be relayed to this client: {}.",
                input_failure.unwrap_or("it cannot answer one")
            );
            (CallOutcome::IsError, failure(&text))
        }
        Ok(Reply::Result(r)) => passed(r, view, era, client_id),
        Ok(Reply::Error(e)) => (
            CallOutcome::ProtocolError,
            jsonrpc::error_object_line(client_id, e.get()),
        ),
        Err(CallError::Timeout { server, secs }) => (
            CallOutcome::TimedOut,
            failure(&format!(
                "server \"{server}\" did not answer {what} within {secs} s (its call_timeout_secs); Gatehouse cancelled the call, and its outcome is unknown."
            )),
        ),
        Err(e) => (
            CallOutcome::Lost,
            match exposed {
                Some(name) => failure(&format!("{e}; the outcome of {name} is unknown.")),
                None => failure(&e.to_string()),
            },
        ),
    }
}

/// A server's result as the client's era takes it: unchanged (the common case), it goes out in
/// the line it came in; changed, the change is the copy. Its outcome is its isError flag.
fn passed(
    r: jsonrpc::RawJson,
    view: Option<ResultView>,
    era: Era,
    client_id: &str,
) -> (CallOutcome, Vec<u8>) {
    let outcome = match view.as_ref().is_some_and(|v| v.is_error) {
        true => CallOutcome::IsError,
        false => CallOutcome::Ok,
    };
    let changed = match &view {
        Some(v) => match crate::protocol::for_client_viewed(r.get(), era, v) {
            std::borrow::Cow::Owned(changed) => Some(changed),
            std::borrow::Cow::Borrowed(_) => None,
        },
        None => None,
    };
    let line = match changed {
        Some(changed) => jsonrpc::result_line(client_id, &changed),
        None => r.into_result_line(client_id),
    };
    (outcome, line)
}

/// A held call that may not run: its text, whole (the tool named where it was made), as the
/// tool's `isError` result — nothing in it is filled in afterwards, so no text a person or a
/// client wrote (a deny reason) can change it.
pub(super) fn refused(client_id: &str, text: &str, era: Era) -> Vec<u8> {
    ours(client_id, &tool_error(text), era)
}

/// An `isError: true` tool result with one text.
pub fn tool_error(text: &str) -> String {
    format!(
        "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"isError\":true}}",
        jsonrpc::json_string(text)
    )
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

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;

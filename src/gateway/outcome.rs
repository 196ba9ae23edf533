//! What handling one client message comes to ([`Outcome`], with a stream's [`Out`]s), made where
//! the answer is decided: an error Gatehouse answers with carries its code from there, so a
//! transport that gives each code a status (2026-07-28 over HTTP) never reads its own line back.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::jsonrpc::{self, ErrorCode};

/// One message for the client while a request is handled.
#[derive(Debug)]
pub enum Out {
    /// Related to the request (progress, a server→client request, a log message).
    Event(Vec<u8>),
    /// The request's response; nothing follows.
    Final(Vec<u8>),
}

/// What handling one client message produced.
pub enum Outcome {
    /// A notification or response was taken; nothing to send back (HTTP 202).
    Accepted,
    /// A result, at once.
    Reply(Vec<u8>),
    /// An error Gatehouse answers with at once: the line, and its code.
    Error(Vec<u8>, ErrorCode),
    /// Messages ending with [`Out::Final`].
    Stream(mpsc::Receiver<Out>),
}

impl Outcome {
    /// The error `{"code", "message"}` answering request `id`.
    pub fn error(id: &str, code: ErrorCode, message: &str) -> Outcome {
        Outcome::Error(jsonrpc::error_line(id, code, message), code)
    }

    /// The error `{"code", "message", "data"}` answering request `id` (`data` raw JSON).
    pub fn error_with_data(id: &str, code: ErrorCode, message: &str, data: &str) -> Outcome {
        let object = jsonrpc::error_object_with_data(code, message, data);
        Outcome::Error(jsonrpc::error_object_line(id, &object), code)
    }

    /// The line of an answer given at once (`None`: accepted, or a stream).
    pub fn line(&self) -> Option<&[u8]> {
        match self {
            Outcome::Reply(line) | Outcome::Error(line, _) => Some(line),
            Outcome::Accepted | Outcome::Stream(_) => None,
        }
    }
}

/// A request's params as raw members, plus the one string member `key` it cannot do without
/// (`name`, `uri`); a missing or malformed one is answered with -32602.
#[allow(clippy::result_large_err)]
pub(super) fn member_params(
    id: &RawValue,
    params: Option<&RawValue>,
    method: &str,
    key: &str,
) -> Result<(BTreeMap<String, Box<RawValue>>, String), Outcome> {
    let invalid = || {
        Outcome::error(
            id.get(),
            ErrorCode::InvalidParams,
            &format!("Invalid params: {method} needs a string \"{key}\""),
        )
    };
    let p = params
        .and_then(|p| serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(p.get()).ok())
        .ok_or_else(invalid)?;
    let value = p
        .get(key)
        .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
        .ok_or_else(invalid)?;
    Ok((p, value))
}

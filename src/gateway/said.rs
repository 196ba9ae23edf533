//! What a server says besides its tools, held to its pins before a client hears it: the prompts
//! `prompts/list` gives (a changed definition is replaced by the pinned one, or left out), the
//! text `prompts/get` returns for each argument set and the content `resources/read` returns
//! for a `ui://` URI (a change gets the pinned result, or an error naming the held change); a
//! server's `instructions` are held to theirs at each listing (`catalog.rs`). The comparing, pinning and holding
//! are the broker's (`approval/broker/changes.rs`); a change held anew gets one activity row.

use serde_json::value::RawValue;

use super::context::Cx;
use crate::activity::CallRecord;
use crate::approval::{Heard, HeldChange, PinKind, Said};
use crate::jsonrpc::{self, ErrorCode};

/// What a forwarded request's result is held to.
pub(super) enum Check {
    /// The text of prompt `name` (the server's own name) for `arguments` (canonical JSON).
    PromptText { name: String, arguments: String },
    /// The content of app resource `uri` (the server's own URI).
    Ui { uri: String },
}

impl Check {
    /// The check for a `prompts/get` with `arguments` (raw JSON, absent: none).
    pub fn prompt(name: &str, arguments: Option<&RawValue>) -> Check {
        let arguments = arguments
            .and_then(|a| serde_json::from_str::<serde_json::Value>(a.get()).ok())
            .and_then(|v| serde_json_canonicalizer::to_string(&v).ok())
            // Not canonical JSON: its own text is its argument set (never another's).
            .or_else(|| arguments.map(|a| a.get().to_owned()))
            .unwrap_or_else(|| "{}".to_owned());
        Check::PromptText {
            name: name.to_owned(),
            arguments,
        }
    }

    /// The check for a `resources/read` of `uri`, when it is an app's.
    pub fn resource(uri: &str) -> Option<Check> {
        uri.starts_with("ui://").then(|| Check::Ui {
            uri: uri.to_owned(),
        })
    }
}

/// The client's line for request `client_id` whose answer from `server` is `line`: as it is
/// when its result is what the pin says (or the first sight), else the pinned result, else an
/// error naming the held change. Errors pass as they are.
pub(super) fn heard(
    cx: &Cx,
    server: &str,
    check: &Check,
    line: Vec<u8>,
    client_id: &str,
) -> Vec<u8> {
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        result: Option<&'a RawValue>,
    }
    let Some(result) = serde_json::from_slice::<Line<'_>>(&line)
        .ok()
        .and_then(|l| l.result)
    else {
        return line;
    };
    let said = match check {
        Check::PromptText { name, arguments } => Said {
            kind: PinKind::Prompt,
            server,
            name,
            // A secret value in the arguments is never stored with the pin or shown.
            arguments: Some(cx.hub.redactions().mask(arguments)),
            content: result.get(),
        },
        Check::Ui { uri } => Said {
            kind: PinKind::Ui,
            server,
            name: uri,
            arguments: None,
            content: result.get(),
        },
    };
    let (heard, new) = cx.hub.approvals().said(&said);
    if let Some(change) = new {
        record(cx, &change);
    }
    match heard {
        Heard::Pass => line,
        Heard::Pinned(kept) => super::answer::ours(client_id, &kept, cx.session.era()),
        Heard::Held(text) => jsonrpc::error_line(client_id, ErrorCode::InternalError, &text),
    }
}

/// `prompts/list`'s items of one server held to their pins: each prompt as listed, or its pinned
/// definition when it changed, or left out when that was not kept.
pub(super) fn prompt_listed(
    cx: &Cx,
    server: &str,
    name: &str,
    item: Box<RawValue>,
) -> Option<Box<RawValue>> {
    // What is pinned, stored and shown has secret values masked (the line of `prompts/get` and
    // `resources/read` is masked before it gets here; a listed item is not).
    let masked = cx.hub.redactions().mask(item.get());
    let said = Said {
        kind: PinKind::Prompt,
        server,
        name,
        arguments: None,
        content: &masked,
    };
    let (heard, new) = cx.hub.approvals().said(&said);
    if let Some(change) = new {
        record(cx, &change);
    }
    match heard {
        Heard::Pass => Some(item),
        Heard::Pinned(kept) => RawValue::from_string(kept).ok(),
        Heard::Held(_) => None,
    }
}

fn record(cx: &Cx, change: &HeldChange) {
    let s = &cx.session;
    let mut rec = CallRecord::change_held(change, &s.id, s.profile.clone());
    let info = s.info();
    rec.client = info.name.clone();
    cx.hub.activity().record(rec);
}

//! A tool result's line taken apart only as far as a change needs (a budget's cut, spotlight's
//! markers): the message's members, the result's members and each content item stay the
//! server's own text (`RawValue`), so whatever is not changed — a number past 2^53, an escape,
//! the order of an item's keys — reaches the client, and the kept whole result, as the server
//! wrote it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

/// One member's text, as it was.
pub(super) type Raw = Box<RawValue>;

/// A response line's members and its result's.
pub(super) struct Parts {
    message: BTreeMap<String, Raw>,
    /// The result's members.
    pub result: BTreeMap<String, Raw>,
    newline: bool,
}

/// `line` taken apart; `None` when it is no response with a result object.
pub(super) fn split(line: &[u8]) -> Option<Parts> {
    let message: BTreeMap<String, Raw> = serde_json::from_slice(line).ok()?;
    let result = serde_json::from_str(message.get("result")?.get()).ok()?;
    Some(Parts {
        message,
        result,
        newline: line.ends_with(b"\n"),
    })
}

/// `v` as member text.
pub(super) fn raw(v: &impl Serialize) -> Option<Raw> {
    serde_json::value::to_raw_value(v).ok()
}

/// A text item's members and its text; `None` for any other item.
pub(super) fn text_item(item: &RawValue) -> Option<(BTreeMap<String, Raw>, String)> {
    let members: BTreeMap<String, Raw> = serde_json::from_str(item.get()).ok()?;
    let kind: String = serde_json::from_str(members.get("type")?.get()).ok()?;
    if kind != "text" {
        return None;
    }
    let text: String = serde_json::from_str(members.get("text")?.get()).ok()?;
    Some((members, text))
}

impl Parts {
    /// The result as the server wrote it.
    pub fn whole(&self) -> &str {
        self.message.get("result").map_or("", |r| r.get())
    }

    /// The result's `content` items (none when it has no array there).
    pub fn take_items(&mut self) -> Vec<Raw> {
        self.result
            .remove("content")
            .and_then(|c| serde_json::from_str(c.get()).ok())
            .unwrap_or_default()
    }

    /// The line with the result's members as they are now; `None` if one cannot be written.
    pub fn join(mut self) -> Option<Vec<u8>> {
        self.message.insert("result".into(), raw(&self.result)?);
        let mut out = serde_json::to_vec(&self.message).ok()?;
        if self.newline {
            out.push(b'\n');
        }
        Some(out)
    }
}

//! Results and lists as a client of each era takes them: `resultType`, the hop's identity in
//! `_meta`, the cache hints of lists; what an input-required result asks for.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{insert_first, our_info, push_members, Era, NEEDLES, RESULT_TYPE_KEY, SERVER_INFO_KEY};
use crate::jsonrpc::{json_string, scan, RawJson, RESULT_MEMBERS};

/// What a result is, by its top-level `resultType` (absent: `complete`, as the revision says of
/// results from legacy servers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    /// A finished result.
    Complete,
    /// Asks the client for input and a retry (multi round-trip request).
    InputRequired,
}

/// What the forwarding path needs of a result, read from its top level in one pass (the rest
/// of a 10 MiB result is stepped over, never decoded).
#[derive(Debug, Clone)]
pub struct ResultView {
    /// `isError: true`.
    pub is_error: bool,
    /// Its `resultType`.
    pub kind: ResultKind,
    /// Whether it has a `resultType` at all.
    has_type: bool,
    /// Where its `_meta` value is, if it has one.
    meta: Option<std::ops::Range<usize>>,
}

impl ResultView {
    /// Reads `raw`'s top level; a result the scan cannot decide (escaped keys, duplicates) is
    /// parsed instead, so both always agree.
    pub fn of(raw: &str) -> ResultView {
        if let Some(found) = scan::top_level(raw.as_bytes(), RESULT_MEMBERS) {
            return Self::from_members(raw.as_bytes(), found);
        }
        Self::parsed(raw)
    }

    /// A server's result as the reader kept it: its members were found when its line was read,
    /// so the result is not stepped over a second time.
    pub fn of_reply(raw: &RawJson) -> ResultView {
        match raw.members() {
            Some(found) => Self::from_members(raw.get().as_bytes(), found.clone()),
            None => Self::of(raw.get()),
        }
    }

    fn from_members(b: &[u8], [flag, kind, meta]: scan::Found<3>) -> ResultView {
        ResultView {
            is_error: flag.is_some_and(|r| b.get(r) == Some(b"true")),
            kind: match kind.clone().and_then(|r| b.get(r)) {
                Some(b"\"input_required\"") => ResultKind::InputRequired,
                _ => ResultKind::Complete,
            },
            has_type: kind.is_some(),
            meta,
        }
    }

    /// What the scan could not decide, by serde.
    fn parsed(raw: &str) -> ResultView {
        #[derive(Deserialize)]
        struct R {
            #[serde(rename = "isError", default)]
            is_error: Option<bool>,
            #[serde(rename = "resultType", default)]
            result_type: Option<serde_json::Value>,
        }
        let r = serde_json::from_str::<R>(raw).ok();
        let kind = r.as_ref().and_then(|r| r.result_type.as_ref());
        ResultView {
            is_error: r.as_ref().and_then(|r| r.is_error) == Some(true),
            kind: match kind.and_then(|k| k.as_str()) {
                Some("input_required") => ResultKind::InputRequired,
                _ => ResultKind::Complete,
            },
            has_type: kind.is_some(),
            // Undecided by the scan: the identity is left where it is rather than guessed at.
            meta: None,
        }
    }
}

/// A result's kind, read from its top level only.
pub fn result_kind(raw: &str) -> ResultKind {
    ResultView::of(raw).kind
}

/// A server's result as a client of `client` era sees it: the server's own identity leaves
/// `_meta` (the hop is ours), and a modern client gets the `resultType` every modern result
/// carries (`complete` where a legacy server left it out). Everything else keeps its bytes; a
/// result that needs neither change is not copied.
pub fn for_client(raw: &str, client: Era) -> Cow<'_, str> {
    let view = ResultView::of(raw);
    for_client_viewed(raw, client, &view)
}

/// The members of a result that only 2026-07-28 defines: a 2025 client never gets them.
pub const MODERN_ONLY_MEMBERS: [&str; 3] = [RESULT_TYPE_KEY, "ttlMs", "cacheScope"];

/// [`for_client`] with the result's top level already read. A modern client's copy is made in
/// one pass: `resultType` first where missing, our identity in `_meta` in place of the server's.
pub fn for_client_viewed<'a>(raw: &'a str, client: Era, view: &ResultView) -> Cow<'a, str> {
    let has_info = view.meta.as_ref().is_some_and(|r| {
        NEEDLES
            .server_info
            .find(&raw.as_bytes()[r.clone()])
            .is_some()
    });
    // `_meta` without the server's identity, and with ours for a modern client.
    let new_meta = |meta: &str| -> Option<String> {
        let mut m: BTreeMap<std::borrow::Cow<'_, str>, &RawValue> =
            serde_json::from_str(meta).ok()?;
        m.remove(SERVER_INFO_KEY);
        let mut out = String::with_capacity(meta.len() + 96);
        out.push('{');
        if client == Era::Modern {
            out.push_str(&json_string(SERVER_INFO_KEY));
            out.push(':');
            out.push_str(our_info());
        }
        push_members(&mut out, &m);
        out.push('}');
        Some(out)
    };
    if client == Era::Legacy {
        if view.has_type {
            // A 2026-07-28 server's own members mean nothing to a 2025 client: they go (a
            // 2025 result has none, so the common case never gets here). Then the rest as usual.
            let mut text = raw.to_owned();
            for key in MODERN_ONLY_MEMBERS {
                if let Some((without, _)) = crate::jsonrpc::take_member(&text, key) {
                    text = without;
                }
            }
            let view = ResultView::of(&text);
            return Cow::Owned(for_client_viewed(&text, client, &view).into_owned());
        }
        let Some(range) = view.meta.clone().filter(|_| has_info) else {
            return Cow::Borrowed(raw);
        };
        return match new_meta(&raw[range.clone()]).as_deref() {
            // Nothing else was in it: the member goes (the other members keep their bytes; their
            // order becomes sorted, which JSON gives no meaning to).
            Some("{}") => match crate::jsonrpc::take_member(raw, "_meta") {
                Some((without, _)) => Cow::Owned(without),
                None => Cow::Borrowed(raw),
            },
            Some(m) => Cow::Owned(crate::jsonrpc::splice(raw, range, m)),
            None => Cow::Borrowed(raw),
        };
    }
    let Some(open) = raw.find('{') else {
        return Cow::Borrowed(raw);
    };
    let mut head = String::new();
    if !view.has_type {
        head.push_str("\"resultType\":\"complete\"");
    }
    let (rest_a, meta_text, rest_b) = match view.meta.clone() {
        Some(r) => match new_meta(&raw[r.clone()]) {
            Some(m) => (&raw[open + 1..r.start], m, &raw[r.end..]),
            None => (&raw[open + 1..], String::new(), ""),
        },
        None => {
            if !head.is_empty() {
                head.push(',');
            }
            head.push_str(&format!(
                "{}:{{{}:{}}}",
                json_string("_meta"),
                json_string(SERVER_INFO_KEY),
                our_info()
            ));
            (&raw[open + 1..], String::new(), "")
        }
    };
    let empty_rest = rest_a.trim_start().starts_with('}');
    let mut out = String::with_capacity(raw.len() + head.len() + meta_text.len() + 2);
    out.push_str(&raw[..=open]);
    out.push_str(&head);
    if !head.is_empty() && !empty_rest {
        out.push(',');
    }
    out.push_str(rest_a);
    out.push_str(&meta_text);
    out.push_str(rest_b);
    Cow::Owned(out)
}

/// The first input request of an input-required result that a client with `capabilities`
/// (raw JSON) did not declare it can answer: (its method, the capability it needs).
pub fn unanswerable_input(result: &str, capabilities: &str) -> Option<(String, &'static str)> {
    #[derive(Deserialize)]
    struct R {
        #[serde(rename = "inputRequests", default)]
        input_requests: BTreeMap<String, Req>,
    }
    #[derive(Deserialize)]
    struct Req {
        method: Option<String>,
    }
    let r: R = serde_json::from_str(result).ok()?;
    let caps: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(capabilities).unwrap_or_default();
    r.input_requests.into_values().find_map(|req| {
        let method = req.method?;
        let needs = match method.as_str() {
            "elicitation/create" => "elicitation",
            "sampling/createMessage" => "sampling",
            "roots/list" => "roots",
            _ => return None,
        };
        (!caps.contains_key(needs)).then_some((method, needs))
    })
}

/// How long a client may cache a list Gatehouse answers (`ttlMs`): lists change when servers
/// do, and clients hear of it, so a short freshness hint is honest.
pub const LIST_TTL_MS: u64 = 0;

/// A list result of ours (`tools/list`, `prompts/list`…) for a client of `client` era: a modern
/// one also gets `resultType`, `ttlMs`, `cacheScope: "private"` (each client's list is its own:
/// profiles see different tools) and our identity in `_meta`.
pub fn list_for_client(raw: &str, client: Era) -> Cow<'_, str> {
    if client == Era::Legacy {
        return Cow::Borrowed(raw);
    }
    let Some([kind, ttl, scope, meta]) = scan::top_level(
        raw.as_bytes(),
        [
            RESULT_TYPE_KEY.as_bytes(),
            b"ttlMs",
            b"cacheScope",
            b"_meta",
        ],
    ) else {
        return Cow::Borrowed(raw);
    };
    let mut out = raw.to_owned();
    if meta.is_none() {
        let ours = format!("{{{}:{}}}", json_string(SERVER_INFO_KEY), our_info());
        out = insert_first(&out, "_meta", &ours);
    }
    if scope.is_none() {
        out = insert_first(&out, "cacheScope", "\"private\"");
    }
    if ttl.is_none() {
        out = insert_first(&out, "ttlMs", &LIST_TTL_MS.to_string());
    }
    if kind.is_none() {
        out = insert_first(&out, RESULT_TYPE_KEY, "\"complete\"");
    }
    Cow::Owned(out)
}

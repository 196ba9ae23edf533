//! The two eras of MCP and what a gateway owns between them.
//!
//! *Legacy* revisions (2024-11-05 … 2025-11-25) open with an `initialize` handshake and keep a
//! session. The *modern* revision (2026-07-28) has neither: every request carries its protocol
//! version, client capabilities and client info in `_meta`, `server/discover` advertises what a
//! server speaks, and every result says what it is (`resultType`). Gatehouse terminates both
//! sides, so it speaks each era to whoever speaks it and owns the reserved `_meta` keys of each
//! hop: a client's envelope never reaches a server (ours does, to a modern one), and a server's
//! identity never reaches a client. Everything else in `_meta` (trace context, progress tokens,
//! task keys) goes end to end untouched, as do arguments and results.
//!
//! Also here: the `=?base64?…?=` header-value codec of the modern Streamable HTTP transport and
//! the check of a tool's `x-mcp-header` annotations.

use std::borrow::Cow;
use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::jsonrpc::{json_string, scan};

/// The modern revision.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Modern revisions we speak, oldest first.
pub const MODERN_VERSIONS: &[&str] = &[MODERN_VERSION];
/// Legacy (handshake) revisions we speak, oldest first.
pub const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// `_meta` key: the protocol version of a modern request.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities on a modern request.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's identity on a modern request.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the log level a modern client asks for on one request.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key: the server's identity on a modern result.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The prefix of the `requestState` Gatehouse gives a call parked for its client's input.
pub const STATE_PREFIX: &str = "gatehouse:";

/// How a result is meant: finished, or asking the client for input first (multi round-trip).
pub const RESULT_TYPE_KEY: &str = "resultType";

/// The byte searches of the hot path, each built once (building a searcher costs more than
/// running it over a small message).
pub(crate) struct Needles {
    /// `io.modelcontextprotocol/`: any reserved `_meta` key.
    pub reserved: memchr::memmem::Finder<'static>,
    /// The protocol-version key: a modern envelope.
    pub version: memchr::memmem::Finder<'static>,
    /// The server-identity key.
    pub server_info: memchr::memmem::Finder<'static>,
    /// `x-mcp-header`.
    pub x_mcp_header: memchr::memmem::Finder<'static>,
    /// `"tools/call"`.
    pub tools_call: memchr::memmem::Finder<'static>,
    /// The prefix of a `requestState` of ours (a parked call's).
    pub state: memchr::memmem::Finder<'static>,
}

/// The searchers, built on first use.
pub(crate) static NEEDLES: std::sync::LazyLock<Needles> = std::sync::LazyLock::new(|| Needles {
    reserved: memchr::memmem::Finder::new(b"io.modelcontextprotocol/"),
    version: memchr::memmem::Finder::new(PROTOCOL_VERSION_KEY.as_bytes()),
    server_info: memchr::memmem::Finder::new(SERVER_INFO_KEY.as_bytes()),
    x_mcp_header: memchr::memmem::Finder::new(b"x-mcp-header"),
    tools_call: memchr::memmem::Finder::new(b"\"tools/call\""),
    state: memchr::memmem::Finder::new(STATE_PREFIX.as_bytes()),
});

/// Which era a peer speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: `initialize`, sessions. What a peer is until it shows otherwise.
    #[default]
    Legacy,
    /// 2026-07-28: per-request envelope, `server/discover`.
    Modern,
}

impl Era {
    /// `legacy` or `modern`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// Every version we speak, newest first, as `server/discover` lists them.
pub fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .rev()
        .chain(LEGACY_VERSIONS.iter().rev())
        .copied()
        .collect()
}

/// Gatehouse's identity, as a modern `_meta` value.
pub fn our_info() -> &'static str {
    static INFO: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{{\"name\":\"gatehouse\",\"title\":\"Gatehouse\",\"version\":{}}}",
            json_string(env!("CARGO_PKG_VERSION"))
        )
    });
    &INFO
}

/// Our envelope's members but the capabilities, as `_meta` text (built once).
fn our_stamp() -> &'static str {
    static STAMP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{}:{},{}:{}",
            json_string(PROTOCOL_VERSION_KEY),
            json_string(MODERN_VERSION),
            json_string(CLIENT_INFO_KEY),
            our_info(),
        )
    });
    &STAMP
}

/// A modern request's envelope, as its client sent it.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// The protocol version the request is in.
    pub version: String,
    /// The client's capabilities (raw JSON).
    pub capabilities: String,
    /// `clientInfo.name`, `clientInfo.version`.
    pub client: (Option<String>, Option<String>),
}

/// Why a modern request's envelope is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// A required key is missing, or a value has the wrong type (-32602).
    #[error("{0}")]
    Invalid(String),
    /// A version we do not speak in the modern era (-32022, with the versions we do).
    #[error("Unsupported protocol version: {0}")]
    Unsupported(String),
}

/// The modern envelope of a request's params: `Ok(None)` for a legacy request (no protocol
/// version in `_meta`, which legacy clients never send: the prefix is reserved).
pub fn read_envelope(params: Option<&RawValue>) -> Result<Option<Envelope>, EnvelopeError> {
    let Some(params) = params else {
        return Ok(None);
    };
    // Legacy traffic never carries the key: most requests are decided without a parse.
    if NEEDLES.version.find(params.get().as_bytes()).is_none() {
        return Ok(None);
    }
    // `_meta` is found at the top level, the rest stepped over (never parsed for this).
    let text = params.get();
    let meta = match scan::top_level(text.as_bytes(), [b"_meta"]) {
        Some([Some(r)]) => &text[r],
        Some([None]) => return Ok(None),
        None => {
            #[derive(Deserialize)]
            struct P<'a> {
                #[serde(borrow, rename = "_meta", default)]
                meta: Option<&'a RawValue>,
            }
            match serde_json::from_str::<P>(text) {
                Ok(P { meta: Some(m) }) => m.get(),
                _ => return Ok(None),
            }
        }
    };
    envelope_of_meta(meta)
}

/// The modern envelope in a request's `_meta` (its raw text).
pub fn envelope_of_meta(meta: &str) -> Result<Option<Envelope>, EnvelopeError> {
    let Ok(meta) = serde_json::from_str::<BTreeMap<std::borrow::Cow<'_, str>, &RawValue>>(meta)
    else {
        return Ok(None);
    };
    let Some(version) = meta.get(PROTOCOL_VERSION_KEY) else {
        return Ok(None);
    };
    let Some(capabilities) = meta.get(CLIENT_CAPABILITIES_KEY) else {
        return Err(EnvelopeError::Invalid(format!(
            "params._meta is missing the required envelope key {CLIENT_CAPABILITIES_KEY}"
        )));
    };
    if !capabilities.get().starts_with('{') {
        return Err(EnvelopeError::Invalid(format!(
            "{CLIENT_CAPABILITIES_KEY} must be an object"
        )));
    }
    let Ok(version) = serde_json::from_str::<String>(version.get()) else {
        return Err(EnvelopeError::Invalid(format!(
            "{PROTOCOL_VERSION_KEY} must be a string"
        )));
    };
    if !MODERN_VERSIONS.contains(&version.as_str()) {
        return Err(EnvelopeError::Unsupported(version));
    }
    #[derive(Deserialize, Default)]
    struct Who {
        name: Option<String>,
        version: Option<String>,
    }
    let who: Who = meta
        .get(CLIENT_INFO_KEY)
        .and_then(|w| serde_json::from_str(w.get()).ok())
        .unwrap_or_default();
    Ok(Some(Envelope {
        version,
        capabilities: capabilities.get().to_owned(),
        client: (who.name, who.version),
    }))
}

/// The `data` of an unsupported-version error: the versions we speak and the one asked for.
pub fn unsupported_data(requested: &str) -> String {
    let supported: Vec<String> = supported_versions()
        .iter()
        .map(|v| json_string(v))
        .collect();
    format!(
        "{{\"supported\":[{}],\"requested\":{}}}",
        supported.join(","),
        json_string(requested)
    )
}

/// A request's params for the next hop, a server of `era`: the previous hop's protocol keys
/// leave `_meta` (a legacy server never sees an envelope, which a dual-era server would refuse
/// on its legacy connection) and, for a modern server, ours go in — our version and identity,
/// and the capabilities of the client the request comes from when it declared them (so a
/// multi round-trip request it can answer passes through), else none. `None`: the params are
/// unchanged (most legacy traffic, decided without a parse).
pub fn for_upstream(params: Option<&RawValue>, era: Era) -> Option<String> {
    let text = params.map_or("", |p| p.get());
    let reserved = NEEDLES.reserved.find(text.as_bytes()).is_some();
    if era == Era::Legacy && !reserved {
        return None;
    }
    // Only `_meta` is read and rewritten; the other members (the arguments) keep their bytes and
    // are stepped over, not parsed.
    let meta_range = match params {
        None => None,
        Some(p) => {
            let [m] = scan::top_level(p.get().as_bytes(), [b"_meta"])?;
            m
        }
    };
    // Borrowed: the members that stay are copied as they are, never re-encoded.
    let mut meta: BTreeMap<std::borrow::Cow<'_, str>, &RawValue> = meta_range
        .clone()
        .and_then(|r| serde_json::from_str(&text[r]).ok())
        .unwrap_or_default();
    let client_capabilities = meta.remove(CLIENT_CAPABILITIES_KEY);
    meta.remove(PROTOCOL_VERSION_KEY);
    meta.remove(CLIENT_INFO_KEY);
    if era == Era::Legacy {
        meta.remove(LOG_LEVEL_KEY);
    }
    let mut new_meta = String::with_capacity(128);
    new_meta.push('{');
    push_members(&mut new_meta, &meta);
    if era == Era::Modern {
        let caps = client_capabilities
            .map(|c| c.get())
            .filter(|c| c.starts_with('{'))
            .unwrap_or("{}");
        if new_meta.len() > 1 {
            new_meta.push(',');
        }
        new_meta.push_str(our_stamp());
        new_meta.push_str(",\"");
        new_meta.push_str(CLIENT_CAPABILITIES_KEY);
        new_meta.push_str("\":");
        new_meta.push_str(caps);
    }
    new_meta.push('}');
    let out = match (params, meta_range) {
        (None, _) => format!("{{\"_meta\":{new_meta}}}"),
        (Some(_), Some(r)) => format!("{}{new_meta}{}", &text[..r.start], &text[r.end..]),
        (Some(_), None) if era == Era::Legacy => return None,
        (Some(_), None) => insert_first(text, "_meta", &new_meta),
    };
    // Valid JSON by construction: valid params with one valid member replaced or added.
    Some(out)
}

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
        let b = raw.as_bytes();
        if let Some([flag, kind, meta]) =
            scan::top_level(b, [b"isError", RESULT_TYPE_KEY.as_bytes(), b"_meta"])
        {
            return ResultView {
                is_error: flag.is_some_and(|r| &b[r] == b"true"),
                kind: match &kind {
                    Some(r) if &b[r.clone()] == b"\"input_required\"" => ResultKind::InputRequired,
                    _ => ResultKind::Complete,
                },
                has_type: kind.is_some(),
                meta,
            };
        }
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
            Some(m) => Cow::Owned(format!("{}{m}{}", &raw[..range.start], &raw[range.end..])),
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

/// Appends `members` to an object being written (`out` holds its `{` and any members before):
/// keys quoted, values as their raw text.
fn push_members(out: &mut String, members: &BTreeMap<Cow<'_, str>, &RawValue>) {
    for (k, v) in members {
        if !out.ends_with('{') {
            out.push(',');
        }
        out.push_str(&json_string(k));
        out.push(':');
        out.push_str(v.get());
    }
}

/// `raw` (an object) with `"key":value` as its first member.
fn insert_first(raw: &str, key: &str, value: &str) -> String {
    let body = raw.trim_start();
    let Some(rest) = body.strip_prefix('{') else {
        return raw.to_owned();
    };
    let empty = rest.trim_start().starts_with('}');
    let mut out = String::with_capacity(raw.len() + key.len() + value.len() + 4);
    out.push('{');
    out.push_str(&json_string(key));
    out.push(':');
    out.push_str(value);
    if !empty {
        out.push(',');
    }
    out.push_str(rest);
    out
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

/// The header-value form of `value` (modern Streamable HTTP): as it is when it is printable
/// ASCII without edge whitespace, else `=?base64?…?=` of its UTF-8.
pub fn encode_header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// The inverse of [`encode_header_value`]; `None` for a malformed sentinel (bad or
/// non-canonical base64, not UTF-8), which then matches no body value.
pub fn decode_header_value(value: &str) -> Option<String> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let engine = base64::engine::general_purpose::STANDARD;
    let bytes = engine.decode(payload).ok()?;
    if engine.encode(&bytes) != payload {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The routing headers a modern Streamable HTTP POST of `msg` carries: `MCP-Protocol-Version`,
/// `Mcp-Method`, and `Mcp-Name` for the methods that name something (encoded when it is not
/// plain ASCII). Empty for something that is not a request or notification.
pub fn routing_headers(msg: &[u8]) -> Vec<(&'static str, String)> {
    #[derive(Deserialize)]
    struct M {
        method: Option<String>,
        params: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let Ok(M {
        method: Some(method),
        params,
    }) = serde_json::from_slice::<M>(msg)
    else {
        return Vec::new();
    };
    let name = name_member(&method)
        .and_then(|k| params.as_ref()?.get(k)?.as_str().map(encode_header_value));
    let mut out = vec![
        ("mcp-protocol-version", MODERN_VERSION.to_owned()),
        ("mcp-method", method),
    ];
    out.extend(name.map(|n| ("mcp-name", n)));
    out
}

/// Where a request's `Mcp-Name` header comes from: `params.name` or `params.uri`.
pub fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// Why a tool's `x-mcp-header` annotations make it unusable over Streamable HTTP, if they do
/// (the revision says such a tool is left out of the list, with a note): an annotation off a
/// pure `properties` chain, not an RFC 9110 token, on a property that is not a string, integer
/// or boolean, or repeated (case-insensitively).
pub fn invalid_x_mcp_header(input_schema: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    const SINGLE: &[&str] = &[
        "items",
        "contains",
        "unevaluatedItems",
        "additionalProperties",
        "propertyNames",
        "unevaluatedProperties",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    ];
    const LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
    const MAP: &[&str] = &[
        "patternProperties",
        "dependentSchemas",
        "$defs",
        "definitions",
    ];
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    // (path of `properties` keys, or None once another keyword was crossed; the schema).
    let mut stack: Vec<(Option<Vec<String>>, &Value)> = vec![(Some(Vec::new()), input_schema)];
    while let Some((path, node)) = stack.pop() {
        let Value::Object(schema) = node else {
            continue;
        };
        if let Some(header) = schema.get("x-mcp-header") {
            let Some(path) = path.as_ref().filter(|p| !p.is_empty()) else {
                return Some(
                    "x-mcp-header on a schema position that is not reached through properties alone"
                        .into(),
                );
            };
            let at = path.join(".");
            let Value::String(header) = header else {
                return Some(format!("property {at}: x-mcp-header must be a string"));
            };
            if !token(header) {
                return Some(format!(
                    "property {at}: x-mcp-header {header:?} is not an HTTP field-name token"
                ));
            }
            match schema.get("type").and_then(Value::as_str) {
                Some("string" | "integer" | "boolean") => {}
                _ => {
                    return Some(format!(
                        "property {at}: x-mcp-header is only allowed on string, integer or boolean properties"
                    ))
                }
            }
            if let Some(other) = seen.insert(header.to_ascii_lowercase(), at.clone()) {
                return Some(format!(
                    "x-mcp-header {header:?} on property {at} repeats the one on {other}"
                ));
            }
        }
        for (kw, value) in schema {
            if kw == "properties" {
                if let Value::Object(props) = value {
                    for (name, sub) in props {
                        let p = path.as_ref().map(|p| {
                            let mut p = p.clone();
                            p.push(name.clone());
                            p
                        });
                        stack.push((p, sub));
                    }
                }
            } else if SINGLE.contains(&kw.as_str()) {
                stack.push((None, value));
            } else if LIST.contains(&kw.as_str()) {
                if let Value::Array(items) = value {
                    stack.extend(items.iter().map(|v| (None, v)));
                }
            } else if MAP.contains(&kw.as_str()) {
                if let Value::Object(m) = value {
                    stack.extend(m.values().map(|v| (None, v)));
                }
            }
        }
    }
    None
}

/// One `x-mcp-header` annotation: the path of `properties` keys to the parameter, and the
/// header name token (`Mcp-Param-{token}`).
pub type HeaderAnnotation = (Vec<String>, String);

/// The `x-mcp-header` annotations of a (valid) input schema.
pub fn x_mcp_headers(input_schema: &serde_json::Value) -> Vec<HeaderAnnotation> {
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<String>, &serde_json::Value)> = vec![(Vec::new(), input_schema)];
    while let Some((path, node)) = stack.pop() {
        let Some(schema) = node.as_object() else {
            continue;
        };
        if let (false, Some(h)) = (
            path.is_empty(),
            schema.get("x-mcp-header").and_then(|h| h.as_str()),
        ) {
            out.push((path.clone(), h.to_owned()));
        }
        if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
            for (name, sub) in props {
                let mut p = path.clone();
                p.push(name.clone());
                stack.push((p, sub));
            }
        }
    }
    out
}

/// Tools whose header annotations one client of a server remembers, at most.
pub const MAX_ANNOTATED_TOOLS: usize = 10_000;

/// What an HTTP client of a modern server (the remote bridge, `gatehouse connect`) knows of the
/// tools' `x-mcp-header` annotations, learnt from the `tools/list` answers it carries (tool name
/// → property path and header token, at most [`MAX_ANNOTATED_TOOLS`] tools), so that each
/// `tools/call` it sends carries its `Mcp-Param-*` headers.
#[derive(Default)]
pub struct ParamHeaders {
    /// Guards one lookup or one answer's update.
    known: std::sync::Mutex<std::collections::HashMap<String, Vec<HeaderAnnotation>>>,
}

impl ParamHeaders {
    /// The `Mcp-Param-*` headers of a `tools/call` (none for other messages, or a tool without
    /// annotations).
    pub fn of(&self, msg: &[u8]) -> Vec<(String, String)> {
        if NEEDLES.tools_call.find(msg).is_none() {
            return Vec::new();
        }
        #[derive(serde::Deserialize)]
        struct M {
            method: Option<String>,
            params: Option<P>,
        }
        #[derive(serde::Deserialize)]
        struct P {
            name: Option<String>,
            #[serde(default)]
            arguments: serde_json::Value,
        }
        let Ok(M {
            method: Some(m),
            params:
                Some(P {
                    name: Some(name),
                    arguments,
                }),
        }) = serde_json::from_slice::<M>(msg)
        else {
            return Vec::new();
        };
        if m != "tools/call" {
            return Vec::new();
        }
        let annotations = self
            .known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&name)
            .cloned()
            .unwrap_or_default();
        annotations
            .into_iter()
            .filter_map(|(path, token)| {
                let value = value_at(&arguments, &path).and_then(header_scalar)?;
                Some((format!("Mcp-Param-{token}"), encode_header_value(&value)))
            })
            .collect()
    }

    /// Learns the header annotations of the tools in a `tools/list` answer (only an answer that
    /// mentions `x-mcp-header` is parsed for this).
    pub fn learn(&self, body: &[u8]) {
        if NEEDLES.x_mcp_header.find(body).is_none() {
            return;
        }
        #[derive(serde::Deserialize)]
        struct R {
            result: Option<L>,
        }
        #[derive(serde::Deserialize)]
        struct L {
            tools: Vec<T>,
        }
        #[derive(serde::Deserialize)]
        struct T {
            name: String,
            #[serde(rename = "inputSchema", default)]
            input_schema: serde_json::Value,
        }
        let Ok(R { result: Some(list) }) = serde_json::from_slice::<R>(body) else {
            return;
        };
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        for t in list.tools {
            if invalid_x_mcp_header(&t.input_schema).is_some() {
                continue;
            }
            let found = x_mcp_headers(&t.input_schema);
            if found.is_empty() {
                known.remove(&t.name);
            } else if known.len() < MAX_ANNOTATED_TOOLS || known.contains_key(&t.name) {
                known.insert(t.name, found);
            }
        }
    }
}

/// A tool argument as an `Mcp-Param-*` header renders it (strings as they are, integers in
/// decimal, booleans as `true`/`false`); `None` when it has no header form (absent, null, an
/// object, a fractional number).
pub fn header_scalar(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        serde_json::Value::Number(n) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
            .map(|f| format!("{}", f as i64)),
        _ => None,
    }
}

/// The value at a path of object keys in `arguments`.
pub fn value_at<'a>(
    arguments: &'a serde_json::Value,
    path: &[String],
) -> Option<&'a serde_json::Value> {
    path.iter()
        .try_fold(arguments, |node, key| node.as_object()?.get(key))
        .filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn each_hop_gets_only_its_own_envelope() {
        let modern_client = raw(&format!(
            r#"{{"name":"t","arguments":{{"a":1}},"_meta":{{"{PROTOCOL_VERSION_KEY}":"2026-07-28","{CLIENT_CAPABILITIES_KEY}":{{"elicitation":{{}}}},"{CLIENT_INFO_KEY}":{{"name":"c"}},"{LOG_LEVEL_KEY}":"info","traceparent":"00-ab-cd-01","progressToken":7}}}}"#
        ));
        // To a legacy server: the envelope and the log level leave, the rest stays.
        let legacy = for_upstream(Some(&modern_client), Era::Legacy).unwrap();
        let v: serde_json::Value = serde_json::from_str(&legacy).unwrap();
        assert_eq!(
            v["_meta"],
            serde_json::json!({"traceparent":"00-ab-cd-01","progressToken":7})
        );
        assert_eq!(v["arguments"], serde_json::json!({"a":1}));
        // To a modern server: ours, with the client's capabilities.
        let modern = for_upstream(Some(&modern_client), Era::Modern).unwrap();
        let v: serde_json::Value = serde_json::from_str(&modern).unwrap();
        assert_eq!(v["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
        assert_eq!(v["_meta"][CLIENT_INFO_KEY]["name"], "gatehouse");
        assert_eq!(
            v["_meta"][CLIENT_CAPABILITIES_KEY],
            serde_json::json!({"elicitation":{}})
        );
        assert_eq!(v["_meta"][LOG_LEVEL_KEY], "info");
        assert_eq!(v["_meta"]["traceparent"], "00-ab-cd-01");
        // A legacy client's request to a legacy server is not touched at all; to a modern one it
        // gets our envelope with no capabilities.
        let plain = raw(r#"{"name":"t","_meta":{"progressToken":1}}"#);
        assert!(for_upstream(Some(&plain), Era::Legacy).is_none());
        let v: serde_json::Value =
            serde_json::from_str(&for_upstream(Some(&plain), Era::Modern).unwrap()).unwrap();
        assert_eq!(v["_meta"][CLIENT_CAPABILITIES_KEY], serde_json::json!({}));
        assert_eq!(v["_meta"]["progressToken"], 1);
        let none: serde_json::Value =
            serde_json::from_str(&for_upstream(None, Era::Modern).unwrap()).unwrap();
        assert_eq!(none["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
    }

    #[test]
    fn envelopes_are_read_or_refused_precisely() {
        let env = |meta: &str| read_envelope(Some(&raw(&format!(r#"{{"_meta":{meta}}}"#))));
        assert!(matches!(
            read_envelope(Some(&raw(r#"{"_meta":{"progressToken":1}}"#))),
            Ok(None)
        ));
        assert!(matches!(read_envelope(None), Ok(None)));
        let ok = env(&format!(
            r#"{{"{PROTOCOL_VERSION_KEY}":"2026-07-28","{CLIENT_CAPABILITIES_KEY}":{{}},"{CLIENT_INFO_KEY}":{{"name":"n","version":"1"}}}}"#
        ))
        .unwrap()
        .unwrap();
        assert_eq!(ok.client, (Some("n".into()), Some("1".into())));
        assert!(matches!(
            env(&format!(r#"{{"{PROTOCOL_VERSION_KEY}":"2026-07-28"}}"#)),
            Err(EnvelopeError::Invalid(_))
        ));
        assert!(matches!(
            env(&format!(
                r#"{{"{PROTOCOL_VERSION_KEY}":7,"{CLIENT_CAPABILITIES_KEY}":{{}}}}"#
            )),
            Err(EnvelopeError::Invalid(_))
        ));
        assert_eq!(
            env(&format!(
                r#"{{"{PROTOCOL_VERSION_KEY}":"2025-11-25","{CLIENT_CAPABILITIES_KEY}":{{}}}}"#
            ))
            .unwrap_err(),
            EnvelopeError::Unsupported("2025-11-25".into())
        );
    }

    #[test]
    fn results_carry_their_type_and_our_hop_only() {
        // A legacy server's result to a modern client: resultType and our identity added,
        // nothing else moves.
        let r = r#"{"content":[{"type":"text","text":"resultType"}],"isError":false}"#;
        let ours = format!(r#""_meta":{{"{SERVER_INFO_KEY}":{}}}"#, our_info());
        assert_eq!(
            for_client(r, Era::Modern),
            format!(
                r#"{{"resultType":"complete",{ours},"content":[{{"type":"text","text":"resultType"}}],"isError":false}}"#
            )
        );
        assert_eq!(
            for_client("{}", Era::Modern),
            format!(r#"{{"resultType":"complete",{ours}}}"#)
        );
        // A modern server's identity is replaced by ours; its other keys stay.
        let m2 = format!(
            r#"{{"resultType":"complete","_meta":{{"{SERVER_INFO_KEY}":{{"name":"up"}},"trace":1}}}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&for_client(&m2, Era::Modern)).unwrap();
        assert_eq!(v["_meta"][SERVER_INFO_KEY]["name"], "gatehouse");
        assert_eq!(v["_meta"]["trace"], 1);
        assert_eq!(v["resultType"], "complete");
        // Untouched for a legacy client, and not copied.
        assert!(matches!(for_client(r, Era::Legacy), Cow::Borrowed(_)));
        // A modern server's identity leaves, its type stays.
        let m = format!(
            r#"{{"resultType":"complete","content":[],"_meta":{{"{SERVER_INFO_KEY}":{{"name":"up"}},"trace":1}}}}"#
        );
        assert_eq!(
            for_client(&m, Era::Legacy),
            r#"{"resultType":"complete","content":[],"_meta":{"trace":1}}"#
        );
        // An identity alone in `_meta`: the member goes with it.
        let alone = format!(
            r#"{{"content":[],"_meta":{{"{SERVER_INFO_KEY}":{{"name":"up"}}}},"isError":false}}"#
        );
        assert_eq!(
            for_client(&alone, Era::Legacy),
            r#"{"content":[],"isError":false}"#
        );
        assert_eq!(result_kind(&m), ResultKind::Complete);
        assert_eq!(
            result_kind(r#"{"resultType":"input_required","inputRequests":{}}"#),
            ResultKind::InputRequired
        );
        let list = list_for_client(r#"{"tools":[]}"#, Era::Modern);
        let v: serde_json::Value = serde_json::from_str(&list).unwrap();
        assert_eq!(v["resultType"], "complete");
        assert_eq!(v["cacheScope"], "private");
        assert_eq!(v["ttlMs"], LIST_TTL_MS);
        assert_eq!(v["_meta"][SERVER_INFO_KEY]["name"], "gatehouse");
    }

    #[test]
    fn header_values_round_trip_and_malformed_ones_match_nothing() {
        for (value, encoded) in [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ] {
            assert_eq!(encode_header_value(value), encoded);
            assert_eq!(decode_header_value(encoded).as_deref(), Some(value));
        }
        assert_eq!(decode_header_value("=?base64?!!!?="), None);
        assert_eq!(decode_header_value("=?base64?SGk=x?="), None);
        assert_eq!(
            decode_header_value("=?base64?SGl=?="),
            None,
            "non-canonical"
        );
    }

    #[test]
    fn x_mcp_header_annotations_are_checked_like_the_revision_says() {
        use serde_json::json;
        let ok = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "nested":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},
            "q":{"type":"string"}}});
        assert_eq!(invalid_x_mcp_header(&ok), None);
        let mut found = x_mcp_headers(&ok);
        found.sort();
        assert_eq!(
            found,
            vec![
                (vec!["nested".to_owned(), "n".to_owned()], "N".to_owned()),
                (vec!["region".to_owned()], "Region".to_owned())
            ]
        );
        for bad in [
            json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":""}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":7}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}),
            json!({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
            json!({"type":"string","x-mcp-header":"Root"}),
        ] {
            assert!(invalid_x_mcp_header(&bad).is_some(), "{bad}");
        }
    }
}

#[cfg(test)]
mod result_view_tests {
    use super::*;
    use crate::jsonrpc::scan;

    /// The full parse the scan stands in for.
    fn by_serde(raw: &str) -> bool {
        #[derive(Deserialize)]
        struct R {
            #[serde(rename = "isError", default)]
            is_error: Option<bool>,
        }
        serde_json::from_str::<R>(raw).ok().and_then(|r| r.is_error) == Some(true)
    }

    #[test]
    fn the_top_level_scan_agrees_with_a_full_parse() {
        let big = "x".repeat(1 << 20);
        let cases = [
            r#"{"content":[{"type":"text","text":"hi"}]}"#.to_owned(),
            r#"{"content":[],"isError":true}"#.to_owned(),
            r#"{"isError":false,"content":[]}"#.to_owned(),
            r#" { "isError" : true } "#.to_owned(),
            r#"{"isError":null}"#.to_owned(),
            r#"{"isError":"true"}"#.to_owned(),
            r#"{"isError":true,"isError":false}"#.to_owned(),
            r#"{"isError":true}"#.to_owned(),
            // Nested or quoted: not the result's own flag.
            r#"{"structuredContent":{"isError":true},"content":[]}"#.to_owned(),
            r#"{"content":[{"type":"text","text":""isError":true"}]}"#.to_owned(),
            r#"{"a":"\","isError":true}"#.to_owned(),
            r#"{"a":[1,{"b":[]},"]}"],"n":-1.5e3,"t":true,"isError":true}"#.to_owned(),
            format!(r#"{{"content":[{{"type":"text","text":"{big}"}}],"isError":true}}"#),
            format!(r#"{{"content":[{{"type":"text","text":"{big}"}}]}}"#),
            "{}".to_owned(),
            "[]".to_owned(),
            r#"{"isError":tru"#.to_owned(),
            "".to_owned(),
        ];
        for raw in &cases {
            assert_eq!(
                ResultView::of(raw).is_error,
                by_serde(raw),
                "{}",
                raw.chars().take(80).collect::<String>()
            );
        }
        // The big ones are decided by the scan, without the fallback.
        for (case, flag) in [(&cases[12], true), (&cases[13], false)] {
            let [found] = scan::top_level(case.as_bytes(), [b"isError"]).unwrap();
            assert_eq!(found.is_some_and(|r| &case.as_bytes()[r] == b"true"), flag);
        }
    }
}

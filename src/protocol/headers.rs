//! The modern Streamable HTTP headers: the `=?base64?…?=` value codec, the routing headers of a
//! message, and tools' `x-mcp-header` annotations (checked, and mirrored into `Mcp-Param-*`).

use std::collections::BTreeMap;

use base64::Engine as _;

use super::Members;

use super::{MODERN_VERSION, NEEDLES};

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

/// The routing headers a modern Streamable HTTP POST of a message (its envelope, read once) carries: `MCP-Protocol-Version`,
/// `Mcp-Method`, and `Mcp-Name` for the methods that name something (encoded when it is not
/// plain ASCII). Empty for something that is not a request or notification.
pub fn routing_headers(env: &crate::jsonrpc::Envelope<'_>) -> Vec<(&'static str, String)> {
    let Some(method) = env.method.as_deref() else {
        return Vec::new();
    };
    // Only the member the method names is read, from the params' top level.
    let name = name_member(method).and_then(|_| {
        Members::of(env.params)
            .ok()?
            .named(method)
            .map(encode_header_value)
    });
    let mut out = vec![
        ("mcp-protocol-version", MODERN_VERSION.to_owned()),
        ("mcp-method", method.to_owned()),
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
    pub fn of(&self, env: &crate::jsonrpc::Envelope<'_>) -> Vec<(String, String)> {
        if env.method.as_deref() != Some("tools/call") {
            return Vec::new();
        }
        let Ok(Members {
            name: Some(name),
            arguments,
            ..
        }) = Members::of(env.params)
        else {
            return Vec::new();
        };
        let annotations = crate::sync::lock(&self.known)
            .get(&name)
            .cloned()
            .unwrap_or_default();
        if annotations.is_empty() {
            return Vec::new();
        }
        // Only a tool with annotations has its arguments read.
        let arguments = arguments
            .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
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
        let mut known = crate::sync::lock(&self.known);
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

/// Whether a header's decoded text names the same number as an argument spelled otherwise
/// (`1e3` for `1000`): an integer argument is compared as an integer, exactly (so
/// `9007199254740992` never matches `9007199254740993`, which floats would equate); only a
/// fractional argument is compared as a float.
pub fn number_matches(decoded: &str, value: &serde_json::Value) -> bool {
    let Some(n) = value.as_number() else {
        return false;
    };
    let exact = n
        .as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from));
    match exact {
        Some(i) => decoded.trim().parse::<i128>().is_ok_and(|h| h == i),
        None => match (decoded.trim().parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(a)) => h == a,
            _ => false,
        },
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

//! A 2026-07-28 `tools/call`'s `Mcp-Param-*` headers against its arguments, for a tool whose
//! input schema annotates parameters with `x-mcp-header`. The call path has found the tool (the
//! name resolved, the profile's view checked) before it asks: nothing here looks a name up.

use crate::protocol::{decode_header_value, header_scalar, number_matches, value_at};
use crate::supervisor::ToolDef;

/// The `Mcp-Param-*` headers a request came with over HTTP (lower-case names; a value that is
/// not visible ASCII as U+FFFD): none for stdio, a 2025 client, or a request without them.
#[derive(Debug, Default, Clone)]
pub struct ParamHeaders(Vec<(String, String)>);

impl ParamHeaders {
    /// The prefix every such header's name starts with (lower case).
    pub const PREFIX: &'static str = "mcp-param-";

    /// The headers `pairs` whose name starts with [`ParamHeaders::PREFIX`] (names lower case).
    pub fn of<'a>(pairs: impl Iterator<Item = (&'a str, Option<&'a str>)>) -> ParamHeaders {
        ParamHeaders(
            pairs
                .filter(|(name, _)| name.starts_with(Self::PREFIX))
                .map(|(name, value)| (name.to_owned(), value.unwrap_or("\u{fffd}").to_owned()))
                .collect(),
        )
    }

    /// Every value of header `name` (lower case).
    fn values(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Checks `headers` against the call's raw `arguments` for `tool`: each annotated argument that
/// is present has its header, once, equal to it (decoded; an integer compared as an integer,
/// exactly, and only a fractional number as a float), and no header claims an argument that is
/// absent. Most tools have no annotation: their arguments are not parsed.
pub(super) fn check(
    tool: &ToolDef,
    arguments: Option<&serde_json::Value>,
    headers: &ParamHeaders,
) -> Result<(), String> {
    let annotations = tool.header_annotations();
    if annotations.is_empty() {
        return Ok(());
    }
    // The call's one reading (`crate::arguments`): no key given twice, so the header matches
    // the value the server reads.
    let arguments = arguments.unwrap_or(&serde_json::Value::Null);
    for (path, token) in annotations {
        let header_name = format!("Mcp-Param-{token}");
        let values = headers.values(&header_name.to_ascii_lowercase());
        let argument = path.join(".");
        if values.len() > 1 {
            return Err(format!(
                "Header mismatch: {header_name} appears more than once"
            ));
        }
        let given = values.into_iter().next();
        let rendered = value_at(arguments, &path).and_then(header_scalar);
        match (given, rendered) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(format!(
                    "Header mismatch: {header_name} is present but the argument {argument} is absent or has no header form"
                ))
            }
            (None, Some(_)) => {
                return Err(format!(
                    "Header mismatch: {header_name} is missing but the argument {argument} is present"
                ))
            }
            (Some(raw), Some(body)) => {
                let Some(decoded) = decode_header_value(raw) else {
                    return Err(format!(
                        "Header mismatch: {header_name} carries a malformed base64 value"
                    ));
                };
                let same = decoded == body
                    || value_at(arguments, &path).is_some_and(|v| number_matches(&decoded, v));
                if !same {
                    return Err(format!(
                        "Header mismatch: {header_name} header value does not match the argument {argument}"
                    ));
                }
            }
        }
    }
    Ok(())
}

//! A modern (2026-07-28) request's routing headers against its body: `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`, checked against the members they name (`protocol::Members`).

use axum::http::{HeaderMap, HeaderName};

use super::VERSION_HEADER;

/// The routing headers' names.
static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
static MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
static MCP_VERSION: HeaderName = HeaderName::from_static(VERSION_HEADER);

/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` against the body: each present once and
/// equal to what the body says (`Mcp-Name` decoded first); `named` is the body's `name` or `uri`
/// for the methods that name something.
pub(super) fn check_routing_headers(
    h: &HeaderMap,
    method: Option<&str>,
    named: Option<&str>,
    envelope: &crate::protocol::Envelope,
) -> Result<(), String> {
    if let Some(dup) = [&MCP_VERSION, &MCP_METHOD, &MCP_NAME]
        .into_iter()
        .find(|name| h.get_all(*name).iter().nth(1).is_some())
    {
        return Err(format!("Header mismatch: {dup} appears more than once"));
    }
    let header = |name: &HeaderName| h.get(name).map(|v| v.to_str().map_err(|_| ()));
    match header(&MCP_VERSION) {
        Some(Ok(v)) if v == envelope.version => {}
        Some(Ok(v)) => {
            return Err(format!(
                "Header mismatch: MCP-Protocol-Version header value '{v}' does not match body value '{}'",
                envelope.version
            ))
        }
        _ => return Err("Header mismatch: the MCP-Protocol-Version header is missing or malformed".into()),
    }
    let method = method.unwrap_or_default();
    match header(&MCP_METHOD) {
        Some(Ok(v)) if v == method => {}
        Some(Ok(v)) => {
            return Err(format!(
            "Header mismatch: Mcp-Method header value '{v}' does not match body value '{method}'"
        ))
        }
        _ => return Err("Header mismatch: the Mcp-Method header is missing or malformed".into()),
    }
    if crate::protocol::name_member(method).is_some() {
        if let Some(body) = named {
            match header(&MCP_NAME) {
                Some(Ok(v)) => match crate::protocol::decode_header_value(v) {
                    Some(decoded) if decoded == body => {}
                    Some(decoded) => {
                        return Err(format!(
                            "Header mismatch: Mcp-Name header value '{decoded}' does not match body value '{body}'"
                        ))
                    }
                    None => return Err("Header mismatch: the Mcp-Name header carries a malformed base64 value".into()),
                },
                _ => return Err("Header mismatch: the Mcp-Name header is missing or malformed".into()),
            }
        }
    }
    Ok(())
}

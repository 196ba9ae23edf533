//! Building JSON-RPC lines (each ends with `\n`). Ids are raw JSON text (`7`, `"a"`, `null`) as
//! the peer sent them; results, params and error objects go in as raw JSON, untouched.

use serde_json::value::RawValue;

use super::ErrorCode;

/// The id of an answer to a message whose own id could not be read.
pub const NULL_ID: &str = "null";

pub(super) const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";

/// A success response: `result` is raw JSON.
pub fn result_line(id: &str, result: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD.len() + id.len() + result.len() + 14);
    out.extend_from_slice(HEAD);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.as_bytes());
    out.extend_from_slice(b"}\n");
    out
}

/// An error response with Gatehouse's own code and message.
pub fn error_line(id: &str, code: ErrorCode, message: &str) -> Vec<u8> {
    error_object_line(id, &error_object(code, message))
}

/// Gatehouse's own error object (raw JSON): `{"code":…,"message":…}`.
pub fn error_object(code: ErrorCode, message: &str) -> String {
    format!(
        "{{\"code\":{},\"message\":{}}}",
        code.code(),
        json_string(message)
    )
}

/// Gatehouse's own error object with a `data` member (raw JSON).
pub fn error_object_with_data(code: ErrorCode, message: &str, data: &str) -> String {
    format!(
        "{{\"code\":{},\"message\":{},\"data\":{data}}}",
        code.code(),
        json_string(message)
    )
}

/// An error response carrying an error object as a peer sent it (raw JSON).
pub fn error_object_line(id: &str, error: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD.len() + id.len() + error.len() + 13);
    out.extend_from_slice(HEAD);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"error\":");
    out.extend_from_slice(error.as_bytes());
    out.extend_from_slice(b"}\n");
    out
}

/// A request with a numeric id; `params` is raw JSON and goes in untouched.
pub fn request_line(id: u64, method: &str, params: Option<&RawValue>) -> Vec<u8> {
    request_line_text(id, method, params.map(|p| p.get()))
}

/// [`request_line`] with params as text the caller knows to be JSON (built from valid parts).
pub fn request_line_text(id: u64, method: &str, params: Option<&str>) -> Vec<u8> {
    let method = json_string(method);
    let mut out = Vec::with_capacity(64 + method.len() + params.map_or(0, str::len));
    out.extend_from_slice(HEAD);
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"method\":");
    out.extend_from_slice(method.as_bytes());
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.as_bytes());
    }
    out.extend_from_slice(b"}\n");
    out
}

/// A request whose id is raw JSON text (a string of ours, quoted); `params` is raw JSON.
pub fn request_line_with_id(id: &str, method: &str, params: Option<&RawValue>) -> Vec<u8> {
    let method = json_string(method);
    let mut out =
        Vec::with_capacity(64 + id.len() + method.len() + params.map_or(0, |p| p.get().len()));
    out.extend_from_slice(HEAD);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"method\":");
    out.extend_from_slice(method.as_bytes());
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.extend_from_slice(b"}\n");
    out
}

/// A notification; `params` is raw JSON.
pub fn notification_line(method: &str, params: Option<&RawValue>) -> Vec<u8> {
    let method = json_string(method);
    let mut out = Vec::with_capacity(48 + method.len() + params.map_or(0, |p| p.get().len()));
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    out.extend_from_slice(method.as_bytes());
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.extend_from_slice(b"}\n");
    out
}

/// A Rust string as a JSON string literal (quoted and escaped).
pub fn json_string(s: &str) -> String {
    // Serialising a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: Vec<u8>) -> String {
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn lines_keep_raw_members_and_end_with_a_newline() {
        let p = RawValue::from_string(r#"{"a":0.10000000000000001}"#.into()).unwrap();
        assert_eq!(
            text(request_line(3, "tools/call", Some(&p))),
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"a\":0.10000000000000001}}\n"
        );
        assert_eq!(
            text(notification_line("notifications/x", None)),
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n"
        );
        assert_eq!(
            text(result_line("\"a\"", r#"{"n":1e400}"#)),
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"n\":1e400}}\n"
        );
        assert_eq!(
            text(error_line(NULL_ID, ErrorCode::InvalidRequest, "bad \"x\"")),
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"bad \\\"x\\\"\"}}\n"
        );
        assert_eq!(
            text(error_object_line("1", r#"{"code":-1,"message":"m","data":[1.50]}"#)),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"m\",\"data\":[1.50]}}\n"
        );
    }
}

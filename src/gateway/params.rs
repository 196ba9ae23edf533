//! A forwarded request's params, read once and written once: the one member the method cannot
//! do without (`name`, `uri`) decoded, `arguments` and `_meta` found at the top level and every
//! other member stepped over (`jsonrpc::scan`); then the same bytes for the server, with its own
//! name in that member and our progress token in `_meta`, in one copy. A member the forwarding
//! reads given twice (in any spelling) is refused: what is checked must be what the server reads.

use std::ops::Range;

use serde_json::value::RawValue;

use super::outcome::Outcome;
use crate::jsonrpc::{self, ErrorCode};

/// The members forwarding reads, after the method's own one.
const ARGUMENTS: usize = 1;
const META: usize = 2;

/// A request's params as forwarding reads them.
pub(super) struct Params<'a> {
    text: &'a str,
    /// The method's member (`name`, `uri`), decoded.
    pub value: String,
    /// Where the raw values of the method's member, `arguments` and `_meta` are in `text`.
    at: [Option<Range<usize>>; 3],
}

impl<'a> Params<'a> {
    /// Reads `params` of request `id` for `method`, which cannot do without the string member
    /// `key`; a missing or malformed one, or a read member given twice, is answered with -32602.
    #[allow(clippy::result_large_err)]
    pub fn read(
        id: &RawValue,
        params: Option<&'a RawValue>,
        method: &str,
        key: &str,
    ) -> Result<Params<'a>, Outcome> {
        let invalid = |why: String| Outcome::error(id.get(), ErrorCode::InvalidParams, &why);
        let text = params.map_or("", RawValue::get);
        let keys = [key, "arguments", "_meta"];
        let at = match jsonrpc::scan::top_level(text.as_bytes(), keys.map(str::as_bytes)) {
            Some(found) => found,
            // Escaped keys, a member twice or malformed text: a parser decides.
            None => parsed(text, keys).map_err(invalid)?,
        };
        let value = at[0]
            .clone()
            .and_then(|r| serde_json::from_str::<String>(&text[r]).ok())
            .ok_or_else(|| invalid(format!("Invalid params: {method} needs a string \"{key}\"")))?;
        Ok(Params { text, value, at })
    }

    /// The raw `arguments`, when there are any.
    pub fn arguments(&self) -> Option<&'a RawValue> {
        let r = self.at[ARGUMENTS].clone()?;
        serde_json::from_str::<&RawValue>(&self.text[r]).ok()
    }

    /// The client's progress token (raw JSON), when its `_meta` carries one.
    pub fn progress_token(&self) -> Option<&'a str> {
        let meta = &self.text[self.at[META].clone()?];
        match jsonrpc::scan::top_level(meta.as_bytes(), [b"progressToken"]) {
            Some([token]) => token.map(|r| &meta[r]),
            None => jsonrpc::strict::members(meta)
                .ok()?
                .into_iter()
                .rev()
                .find(|(k, _)| k == "progressToken")
                .map(|(_, v)| v.get()),
        }
    }

    /// The params for the server: `value` (raw JSON) in place of the method's member, and
    /// `token` (raw JSON) in place of the client's progress token; every other byte as sent.
    pub fn upstream(&self, value: &str, token: Option<&str>) -> Option<Box<RawValue>> {
        let meta = match (token, self.at[META].clone()) {
            (Some(ours), Some(r)) => Some((r.clone(), with_token(&self.text[r], ours)?)),
            _ => None,
        };
        let mut edits: Vec<(Range<usize>, &str)> = Vec::with_capacity(2);
        edits.push((self.at[0].clone()?, value));
        if let Some((r, text)) = &meta {
            edits.push((r.clone(), text.as_str()));
        }
        edits.sort_by_key(|(r, _)| r.start);
        let mut out = String::with_capacity(self.text.len() + value.len() + 32);
        let mut from = 0;
        for (r, replacement) in edits {
            out.push_str(&self.text[from..r.start]);
            out.push_str(replacement);
            from = r.end;
        }
        out.push_str(&self.text[from..]);
        RawValue::from_string(out).ok()
    }
}

/// `meta` (a raw object) with its `progressToken` replaced by `ours`.
fn with_token(meta: &str, ours: &str) -> Option<String> {
    match jsonrpc::scan::top_level(meta.as_bytes(), [b"progressToken"]) {
        Some([Some(r)]) => Some(format!("{}{ours}{}", &meta[..r.start], &meta[r.end..])),
        _ => jsonrpc::set_member(meta, "progressToken", ours),
    }
}

/// Where the raw values of `keys` are in `text`, read by a parser (keys decoded): refused when
/// one of them is given twice, or `text` is no object.
fn parsed(text: &str, keys: [&str; 3]) -> Result<[Option<Range<usize>>; 3], String> {
    let members = jsonrpc::strict::members(text).map_err(|e| format!("Invalid params: {e}"))?;
    let base = text.as_ptr() as usize;
    let mut at: [Option<Range<usize>>; 3] = [None, None, None];
    for (key, value) in members {
        let Some(i) = keys.iter().position(|k| *k == key) else {
            continue;
        };
        // The value is a slice of `text`: its place is where it starts.
        let start = value.get().as_ptr() as usize - base;
        let range = start..start + value.get().len();
        if at[i].replace(range).is_some() {
            return Err(format!(
                "Invalid params: params give \"{key}\" more than once"
            ));
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<'a>(text: &'a RawValue) -> Result<Params<'a>, String> {
        let id = RawValue::from_string("1".into()).unwrap();
        Params::read(&id, Some(text), "tools/call", "name").map_err(|o| {
            String::from_utf8(o.line().unwrap_or_default().to_vec()).unwrap_or_default()
        })
    }

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    /// The server gets the params as the client sent them, its own name in `name` and our token
    /// in `_meta`, every other byte unchanged and in its order.
    #[test]
    fn the_server_gets_the_clients_bytes_with_its_own_name_and_our_token() {
        let sent = raw(
            r#"{"_meta":{"progressToken":7,"x":"y"}, "name":"fx__echo","arguments":{"text":"a\u00e9","n":1.50},"z":[1]}"#,
        );
        let p = read(&sent).unwrap();
        assert_eq!(p.value, "fx__echo");
        assert_eq!(
            p.arguments().unwrap().get(),
            r#"{"text":"a\u00e9","n":1.50}"#
        );
        assert_eq!(p.progress_token(), Some("7"));
        let up = p.upstream(r#""echo""#, Some(r#""gatehouse-3""#)).unwrap();
        assert_eq!(
            up.get(),
            r#"{"_meta":{"progressToken":"gatehouse-3","x":"y"}, "name":"echo","arguments":{"text":"a\u00e9","n":1.50},"z":[1]}"#
        );
        let up = p.upstream(r#""echo""#, None).unwrap();
        assert!(up.get().contains(r#""progressToken":7"#), "{}", up.get());
    }

    /// A member forwarding reads, given twice in any spelling, is refused: a server that reads
    /// the other one would run what was not checked.
    #[test]
    fn a_member_given_twice_is_refused_in_any_spelling() {
        for text in [
            r#"{"name":"fx__echo","name":"fx__touch"}"#,
            r#"{"name":"fx__echo","na\u006de":"fx__touch"}"#,
            r#"{"name":"fx__echo","arguments":{},"arguments":{"path":"/x"}}"#,
            r#"{"name":"fx__echo","_meta":{},"_m\u0065ta":{"progressToken":1}}"#,
        ] {
            let err = read(&raw(text)).err().unwrap_or_default();
            assert!(err.contains("more than once"), "{text}: {err}");
        }
        // An escaped spelling alone is the member, and is replaced where it is.
        let sent = raw(r#"{"na\u006de":"fx__echo","arguments":{}}"#);
        let p = read(&sent).unwrap();
        assert_eq!(p.value, "fx__echo");
        assert_eq!(
            p.upstream(r#""echo""#, None).unwrap().get(),
            r#"{"na\u006de":"echo","arguments":{}}"#
        );
    }

    #[test]
    fn a_missing_or_malformed_name_is_refused() {
        for text in [r#"{"arguments":{}}"#, r#"{"name":3}"#, r#"[1]"#] {
            let err = read(&raw(text)).err().unwrap_or_default();
            assert!(err.contains("-32602"), "{text}: {err}");
        }
    }
}

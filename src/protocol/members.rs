//! The members of a request's params that name what it is about — `name`, `uri` (strings) and
//! `arguments` (raw) — read from the top level in one pass: what the routing headers are made
//! from (a client's side) and checked against (the gateway's), and what the `Mcp-Param-*`
//! headers are looked up by.

/// The members of a request's params that headers name: `name`,
/// `uri` (strings) and `arguments` (raw). Read from the top level in one pass; the arguments are
/// stepped over, not parsed.
pub struct Members<'a> {
    /// `params.name`, when it is a string.
    pub name: Option<String>,
    /// `params.uri`, when it is a string.
    pub uri: Option<String>,
    /// `params.arguments`, raw.
    pub arguments: Option<&'a str>,
}

impl<'a> Members<'a> {
    /// Reads them from raw params (none from a message without).
    pub fn of(params: Option<&'a serde_json::value::RawValue>) -> Members<'a> {
        let text = params.map_or("{}", |p| p.get());
        let string = |raw: &str| serde_json::from_str::<String>(raw).ok();
        match crate::jsonrpc::scan::top_level(text.as_bytes(), [b"name", b"uri", b"arguments"]) {
            Some([name, uri, arguments]) => Members {
                name: name.and_then(|r| string(&text[r])),
                uri: uri.and_then(|r| string(&text[r])),
                arguments: arguments.map(|r| &text[r]),
            },
            // Spelled in a way the scan leaves to serde (escaped keys, duplicates).
            None => {
                #[derive(serde::Deserialize, Default)]
                struct P<'a> {
                    name: Option<serde_json::Value>,
                    uri: Option<serde_json::Value>,
                    #[serde(borrow)]
                    arguments: Option<&'a serde_json::value::RawValue>,
                }
                let p: P<'a> = serde_json::from_str(text).unwrap_or_default();
                let text =
                    |v: Option<serde_json::Value>| v.and_then(|v| v.as_str().map(str::to_owned));
                Members {
                    name: text(p.name),
                    uri: text(p.uri),
                    arguments: p.arguments.map(|a| a.get()),
                }
            }
        }
    }
}

impl Members<'_> {
    /// The member `method`'s `Mcp-Name` comes from ([`super::name_member`]).
    pub fn named(&self, method: &str) -> Option<&str> {
        match super::name_member(method)? {
            "uri" => self.uri.as_deref(),
            _ => self.name.as_deref(),
        }
    }
}

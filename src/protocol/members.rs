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
    /// Reads them from raw params (none from a message without). A member given twice (in any
    /// spelling: `"na\u006de"` is `name`) is refused: parsers disagree on which one counts, and
    /// what is checked must be what the server reads.
    pub fn of(params: Option<&'a serde_json::value::RawValue>) -> Result<Members<'a>, String> {
        let text = params.map_or("{}", |p| p.get());
        let string = |raw: &str| serde_json::from_str::<String>(raw).ok();
        const WANTED: [&str; 3] = ["name", "uri", "arguments"];
        if let Some([name, uri, arguments]) =
            crate::jsonrpc::scan::top_level(text.as_bytes(), WANTED.map(str::as_bytes))
        {
            return Ok(Members {
                name: name.and_then(|r| string(&text[r])),
                uri: uri.and_then(|r| string(&text[r])),
                arguments: arguments.map(|r| &text[r]),
            });
        }
        // Spelled in a way the scan leaves to a parser (escaped keys, duplicates).
        let all = crate::jsonrpc::strict::members(text).unwrap_or_default();
        let mut found: [Option<&'a serde_json::value::RawValue>; 3] = [None; 3];
        for (key, value) in all {
            if let Some(i) = WANTED.iter().position(|w| *w == key) {
                if found[i].replace(value).is_some() {
                    return Err(format!("params give \"{key}\" more than once"));
                }
            }
        }
        let [name, uri, arguments] = found;
        Ok(Members {
            name: name.and_then(|r| string(r.get())),
            uri: uri.and_then(|r| string(r.get())),
            arguments: arguments.map(|a| a.get()),
        })
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

//! Client capabilities between the eras: one table, read the same way whichever era the client
//! speaks and whichever the server does. What a client declared is kept reduced to what
//! Gatehouse asks about, in the form both eras read alike:
//!
//! | declared (either era)                  | kept and sent on                          |
//! |----------------------------------------|-------------------------------------------|
//! | `"elicitation": {}`                    | `"elicitation": {"form": {}}` (2025-11-25's backward-compatibility rule: an empty object means form mode) |
//! | `"elicitation": {"form"?, "url"?}`     | the modes named, each `{}`                |
//! | `"sampling": {…"tools"?, "context"?}`  | `"sampling"` with those members, each `{}` |
//! | `"roots": {…}`                         | `"roots": {}`                             |
//! | anything else                          | left out (Gatehouse relays nothing else)  |
//!
//! A 2025 client's session keeps this from its `initialize`; a 2026-07-28 client's from each
//! request's envelope. Either way a modern server receives it in the request's envelope, so a
//! 2025 client that declared `"elicitation": {}` is a client that answers form elicitation.

use serde_json::{Map, Value};

/// The capabilities the table knows, with the sub-members it keeps for each.
const TABLE: [(&str, &[&str]); 3] = [
    ("elicitation", &["form", "url"]),
    ("sampling", &["tools", "context"]),
    ("roots", &[]),
];

/// A client's capabilities object (raw JSON, either era) reduced by the table, as JSON text.
/// Anything that is not an object reads as no capability.
pub fn normalized(capabilities: &str) -> String {
    let caps: Map<String, Value> = serde_json::from_str(capabilities).unwrap_or_default();
    let mut out = Map::new();
    for (name, subs) in TABLE {
        let Some(declared) = caps.get(name).and_then(Value::as_object) else {
            continue;
        };
        let mut kept = Map::new();
        for sub in subs.iter().filter(|s| declared.contains_key(**s)) {
            kept.insert((*sub).to_owned(), Value::Object(Map::new()));
        }
        if name == "elicitation" && kept.is_empty() {
            kept.insert("form".into(), Value::Object(Map::new()));
        }
        out.insert(name.to_owned(), Value::Object(kept));
    }
    Value::Object(out).to_string()
}

/// A 2026-07-28 request's own capabilities for the next hop: every member as the client sent
/// it, but an elicitation the table reads differently (`{}`, or neither mode named) is written
/// as the table keeps it. Unchanged text is returned borrowed.
pub fn translated(capabilities: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let Ok(mut caps) = serde_json::from_str::<
        std::collections::BTreeMap<String, Box<serde_json::value::RawValue>>,
    >(capabilities) else {
        return Cow::Borrowed(capabilities);
    };
    let Some(elicitation) = caps.get("elicitation") else {
        return Cow::Borrowed(capabilities);
    };
    let kept = normalized(&format!("{{\"elicitation\":{}}}", elicitation.get()));
    let Some(form) = serde_json::from_str::<Map<String, Value>>(&kept)
        .ok()
        .and_then(|m| m.get("elicitation").map(Value::to_string))
    else {
        return Cow::Borrowed(capabilities);
    };
    let declared: Option<Map<String, Value>> = serde_json::from_str(elicitation.get()).ok();
    let names_a_mode = declared
        .as_ref()
        .is_some_and(|d| d.contains_key("form") || d.contains_key("url"));
    if names_a_mode {
        return Cow::Borrowed(capabilities);
    }
    match serde_json::value::RawValue::from_string(form) {
        Ok(raw) => {
            caps.insert("elicitation".into(), raw);
            Cow::Owned(serde_json::to_string(&caps).unwrap_or_else(|_| capabilities.to_owned()))
        }
        Err(_) => Cow::Borrowed(capabilities),
    }
}

#[cfg(test)]
mod tests {
    use super::{normalized, translated};

    /// A modern client's own capabilities go on whole (an extension it declared reaches the
    /// server), with only an empty elicitation written as form mode.
    #[test]
    fn a_modern_clients_capabilities_pass_with_elicitation_read_by_the_table() {
        assert_eq!(
            translated(r#"{"elicitation":{},"extensions":{"io.modelcontextprotocol/ui":{"v":1}}}"#),
            r#"{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/ui":{"v":1}}}"#
        );
        let as_is = r#"{"elicitation":{"url":{}},"sampling":{}}"#;
        assert!(matches!(translated(as_is), std::borrow::Cow::Borrowed(t) if t == as_is));
        let none = r#"{"roots":{}}"#;
        assert!(matches!(translated(none), std::borrow::Cow::Borrowed(t) if t == none));
    }

    /// The table, both eras: an empty elicitation is form mode; modes named are kept; other
    /// members and unknown capabilities are dropped; nonsense is no capability.
    #[test]
    fn each_capability_reads_the_same_in_both_eras() {
        for (declared, kept) in [
            (r#"{"elicitation":{}}"#, r#"{"elicitation":{"form":{}}}"#),
            (
                r#"{"elicitation":{"form":{},"url":{}}}"#,
                r#"{"elicitation":{"form":{},"url":{}}}"#,
            ),
            (
                r#"{"elicitation":{"url":{}}}"#,
                r#"{"elicitation":{"url":{}}}"#,
            ),
            (
                r#"{"sampling":{"tools":{},"x":1},"roots":{"listChanged":true}}"#,
                r#"{"roots":{},"sampling":{"tools":{}}}"#,
            ),
            (r#"{"experimental":{"a":{}},"elicitation":true}"#, "{}"),
            ("[1]", "{}"),
            ("{}", "{}"),
        ] {
            assert_eq!(normalized(declared), kept, "{declared}");
            // Reading it again changes nothing (a session's copy is sent on as it is).
            assert_eq!(normalized(kept), kept, "{kept}");
        }
    }
}

//! MCP Apps through the aggregator (`io.modelcontextprotocol/ui`). A tool's `_meta.ui` and its
//! `ui://` resource pass through unchanged — except when tools of more than one server point at
//! the same `ui://` URI (two copies of one app server, say): then each server's copy is exposed
//! as `ui://gatehouse.SERVER/REST` (the original `ui://REST`), in the tools' `_meta` and in
//! `resources/list` alike, and a read of that alias goes to that server under the original URI.
//! An app's own calls use its server's own tool names, which route where they are unique in the
//! client's profile (`names.rs`).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// The authority prefix of an alias: `ui://gatehouse.SERVER/…` (server ids have no dots).
const ALIAS_PREFIX: &str = "ui://gatehouse.";

/// The `ui://` URI a tool's definition points its app at (`_meta.ui.resourceUri`, or the older
/// `_meta["ui/resourceUri"]`), if any. Definitions without `ui://` in them are not parsed.
pub fn resource_uri(raw: &str) -> Option<String> {
    if !raw.contains("ui://") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Def {
        #[serde(rename = "_meta")]
        meta: Option<Value>,
    }
    let meta = serde_json::from_str::<Def>(raw).ok()?.meta?;
    meta.pointer("/ui/resourceUri")
        .or_else(|| meta.get("ui/resourceUri"))
        .and_then(Value::as_str)
        .filter(|u| u.starts_with("ui://"))
        .map(str::to_owned)
}

/// The `ui://` URIs tools of more than one server point at, from (server, URI) pairs.
pub fn shared<'a>(refs: impl Iterator<Item = (&'a str, String)>) -> HashSet<String> {
    let mut by_uri: HashMap<String, HashSet<&'a str>> = HashMap::new();
    for (server, uri) in refs {
        by_uri.entry(uri).or_default().insert(server);
    }
    by_uri
        .into_iter()
        .filter(|(_, servers)| servers.len() > 1)
        .map(|(uri, _)| uri)
        .collect()
}

/// Server `server`'s copy of the shared URI `uri`, as clients see it.
pub fn alias(server: &str, uri: &str) -> String {
    let rest = uri.strip_prefix("ui://").unwrap_or(uri);
    format!("{ALIAS_PREFIX}{server}/{rest}")
}

/// (server, original URI) of an alias of a URI in `shared`.
pub fn resolve<'a>(uri: &'a str, shared: &HashSet<String>) -> Option<(&'a str, String)> {
    let (server, rest) = uri.strip_prefix(ALIAS_PREFIX)?.split_once('/')?;
    let original = format!("ui://{rest}");
    shared.contains(&original).then_some((server, original))
}

/// A tool definition with its `_meta.ui.resourceUri` (and `_meta["ui/resourceUri"]`) made
/// server `server`'s alias; every other member's bytes kept.
pub fn with_alias(raw: &str, server: &str, uri: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Def {
        #[serde(rename = "_meta")]
        meta: Value,
    }
    let mut meta = serde_json::from_str::<Def>(raw).ok()?.meta;
    let shown = Value::String(alias(server, uri));
    if let Some(u) = meta.pointer_mut("/ui/resourceUri") {
        *u = shown.clone();
    }
    if let Some(u) = meta.get_mut("ui/resourceUri") {
        *u = shown;
    }
    crate::jsonrpc::set_member(raw, "_meta", &meta.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_ui_uri_gets_one_alias_per_server_and_each_alias_resolves_back() {
        let raw = r#"{"name":"show","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://clock/app.html","visibility":["model","app"]},"ui/resourceUri":"ui://clock/app.html"}}"#;
        assert_eq!(resource_uri(raw).as_deref(), Some("ui://clock/app.html"));
        assert_eq!(
            resource_uri(r#"{"name":"x","description":"ui:// in words"}"#),
            None
        );
        let refs = vec![
            ("a", "ui://clock/app.html".to_owned()),
            ("b", "ui://clock/app.html".to_owned()),
            ("b", "ui://b-only/x.html".to_owned()),
        ];
        let shared = shared(refs.into_iter());
        assert_eq!(shared.len(), 1);
        let out = with_alias(raw, "b", "ui://clock/app.html").unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["_meta"]["ui"]["resourceUri"],
            "ui://gatehouse.b/clock/app.html"
        );
        assert_eq!(
            v["_meta"]["ui/resourceUri"],
            "ui://gatehouse.b/clock/app.html"
        );
        assert_eq!(
            v["_meta"]["ui"]["visibility"],
            serde_json::json!(["model", "app"])
        );
        assert!(out.contains(r#""inputSchema":{"type":"object"}"#));
        assert_eq!(
            resolve("ui://gatehouse.b/clock/app.html", &shared),
            Some(("b", "ui://clock/app.html".to_owned()))
        );
        // Not an alias of a shared URI: left alone.
        assert_eq!(resolve("ui://gatehouse.b/b-only/x.html", &shared), None);
        assert_eq!(resolve("ui://clock/app.html", &shared), None);
    }
}

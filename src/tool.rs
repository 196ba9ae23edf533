//! One tool as a server listed it — a noun every floor uses (the supervisor lists them, the
//! gateway routes to them, approvals pin and judge them): its name and whole definition, raw;
//! what a person is shown of it, read once; its definition hash.

use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// The longest title kept and shown of a tool (the definition clients get is whole).
pub const MAX_TITLE_CHARS: usize = 256;
/// The longest description kept and shown of a tool.
pub const MAX_DESCRIPTION_CHARS: usize = 8 * 1024;

/// One tool as the server listed it: its name and its whole definition, raw. Everything else is
/// read from the definition once, when first needed, and kept.
#[derive(Debug)]
pub struct ToolDef {
    /// The server's own name for the tool.
    pub name: String,
    /// The definition exactly as the server sent it.
    pub raw: Arc<RawValue>,
    /// `annotations.readOnlyHint` is literally `true` (read when the list is fetched: every call
    /// consults it).
    pub read_only: bool,
    /// Its `_meta` says `"anthropic/requiresUserInteraction": true`: the server asks that a
    /// person take part in each call (it asks as if flagged).
    pub asks_for_person: bool,
    parsed: OnceLock<ToolMeta>,
    hash: OnceLock<String>,
    /// Secret values to mask in what is shown of the definition (never in `raw`, which goes to
    /// the clients that list the tools).
    redactions: Arc<crate::secrets::Redactions>,
}

/// The parts of a definition a person is shown.
#[derive(Debug, Clone, Default)]
pub struct ToolMeta {
    /// `title`, else `annotations.title`.
    pub title: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `annotations`, whole.
    pub annotations: Option<Value>,
}

impl ToolDef {
    /// A tool from its raw definition; an error when it has no string `name`. What is shown of it
    /// ([`ToolDef::meta`]) has every value in `redactions` masked.
    pub fn parse(
        raw: Box<RawValue>,
        redactions: Arc<crate::secrets::Redactions>,
    ) -> Result<ToolDef, String> {
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        let named: Named = serde_json::from_str(raw.get())
            .map_err(|e| format!("the server listed a tool without a name: {e}"))?;
        Ok(ToolDef {
            name: named.name,
            read_only: read_only_hint(raw.get()),
            asks_for_person: user_interaction_hint(raw.get()),
            raw: Arc::from(raw),
            parsed: OnceLock::new(),
            hash: OnceLock::new(),
            redactions,
        })
    }

    /// Why its `x-mcp-header` annotations are invalid, if they are (only a definition that
    /// has one is parsed for this).
    pub fn invalid_header_annotation(&self) -> Option<String> {
        let raw = self.raw.get();
        crate::protocol::NEEDLES.x_mcp_header.find(raw.as_bytes())?;
        let definition: Value = serde_json::from_str(raw).ok()?;
        crate::protocol::invalid_x_mcp_header(definition.get("inputSchema")?)
    }

    /// The `x-mcp-header` annotations of its input schema: (property path, header token).
    pub fn header_annotations(&self) -> Vec<(Vec<String>, String)> {
        let raw = self.raw.get();
        if crate::protocol::NEEDLES
            .x_mcp_header
            .find(raw.as_bytes())
            .is_none()
        {
            return Vec::new();
        }
        serde_json::from_str::<Value>(raw)
            .ok()
            .and_then(|d| d.get("inputSchema").map(crate::protocol::x_mcp_headers))
            .unwrap_or_default()
    }

    /// Title, description and annotations, parsed on first use, secret values masked, the
    /// title and description bounded (this is what is stored and shown: tool lists, approval
    /// requests, pins; the definition itself passes to clients whole).
    pub fn meta(&self) -> &ToolMeta {
        self.parsed.get_or_init(|| {
            let masked = self.redactions.mask(self.raw.get());
            let definition: Value = serde_json::from_str(&masked).unwrap_or(Value::Null);
            let text = |v: Option<&Value>, max: usize| {
                v.and_then(Value::as_str).map(|s| crate::text::cut(s, max))
            };
            let annotations = definition.get("annotations").cloned();
            ToolMeta {
                title: text(definition.get("title"), MAX_TITLE_CHARS).or_else(|| {
                    text(
                        annotations.as_ref().and_then(|a| a.get("title")),
                        MAX_TITLE_CHARS,
                    )
                }),
                description: text(definition.get("description"), MAX_DESCRIPTION_CHARS),
                annotations,
            }
        })
    }

    /// Whether [`ToolDef::meta`] has been parsed (it is kept once it is).
    #[cfg(test)]
    pub(crate) fn meta_parsed(&self) -> bool {
        self.parsed.get().is_some()
    }

    /// The definition as it may be shown or stored (secret values masked), as compact text
    /// (`null` if masking broke it, as [`ToolDef::shown_value`] would say).
    pub fn shown_definition(&self) -> Box<RawValue> {
        RawValue::from_string(self.redactions.mask(self.raw.get())).unwrap_or_default()
    }

    /// The definition as it may be shown (secret values masked), parsed: for a diff.
    pub fn shown_value(&self) -> Value {
        serde_json::from_str(&self.redactions.mask(self.raw.get())).unwrap_or(Value::Null)
    }

    /// The SHA-256 of the canonical definition (what "always allow" and pins are bound to),
    /// computed on first use.
    pub fn hash(&self) -> &str {
        self.hash.get_or_init(|| definition_hash(self.raw.get()))
    }
}

/// Whether a raw tool definition declares `annotations.readOnlyHint: true` (literally `true`).
pub fn read_only_hint(definition: &str) -> bool {
    #[derive(Deserialize)]
    struct Def {
        #[serde(default)]
        annotations: Option<Ann>,
    }
    #[derive(Deserialize)]
    struct Ann {
        #[serde(rename = "readOnlyHint", default)]
        read_only: Option<Value>,
    }
    serde_json::from_str::<Def>(definition)
        .ok()
        .and_then(|d| d.annotations)
        .and_then(|a| a.read_only)
        == Some(Value::Bool(true))
}

/// The `_meta` key by which a server says a tool needs a person in each call.
pub const USER_INTERACTION_KEY: &str = "anthropic/requiresUserInteraction";

/// Whether a raw tool definition's `_meta` says [`USER_INTERACTION_KEY`]: literally `true`
/// (a definition without the key's text is not parsed).
pub fn user_interaction_hint(definition: &str) -> bool {
    if !definition.contains("requiresUserInteraction") {
        return false;
    }
    #[derive(Deserialize)]
    struct Def {
        #[serde(rename = "_meta", default)]
        meta: Option<serde_json::Map<String, Value>>,
    }
    serde_json::from_str::<Def>(definition)
        .ok()
        .and_then(|d| d.meta)
        .and_then(|m| m.get(USER_INTERACTION_KEY).cloned())
        == Some(Value::Bool(true))
}

/// SHA-256 (hex) of a tool's whole definition, canonicalised (sorted keys) so that member order
/// does not matter but any change of content does.
pub fn definition_hash(raw: &str) -> String {
    use sha2::{Digest, Sha256};
    let canonical = serde_json::from_str::<Value>(raw)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| raw.to_owned());
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is kept and shown of a tool is bounded; what clients get is the definition whole.
    #[test]
    fn a_huge_description_is_cut_where_it_is_shown_and_whole_for_clients() {
        let long = "d".repeat(20_000);
        let raw = RawValue::from_string(format!(
            r#"{{"name":"w","title":"{}","description":"{long}"}}"#,
            "t".repeat(1000)
        ))
        .unwrap();
        let t = ToolDef::parse(raw, Arc::default()).unwrap();
        assert_eq!(
            t.meta().description.as_deref().map(|d| d.chars().count()),
            Some(MAX_DESCRIPTION_CHARS + 1)
        );
        assert_eq!(
            t.meta().title.as_deref().map(|d| d.chars().count()),
            Some(MAX_TITLE_CHARS + 1)
        );
        assert!(t.raw.get().contains(&long));
    }

    #[test]
    fn a_tool_is_read_once_and_keeps_its_bytes() {
        let raw = RawValue::from_string(
            r#"{"name":"w","annotations":{"title":"Write","readOnlyHint":false},"description":"d","x":1.50}"#.into(),
        )
        .unwrap();
        let t = ToolDef::parse(raw, Arc::default()).unwrap();
        assert_eq!(t.name, "w");
        assert!(!t.read_only);
        assert_eq!(t.meta().title.as_deref(), Some("Write"));
        assert_eq!(t.meta().description.as_deref(), Some("d"));
        assert!(t.raw.get().contains("\"x\":1.50"));
        assert_eq!(t.hash(), definition_hash(t.raw.get()));
        assert!(
            ToolDef::parse(RawValue::from_string("{}".into()).unwrap(), Arc::default()).is_err()
        );
    }

    #[test]
    fn a_server_asks_for_a_person_only_with_a_literal_true_in_meta() {
        assert!(user_interaction_hint(
            r#"{"name":"a","_meta":{"anthropic/requiresUserInteraction":true}}"#
        ));
        assert!(!user_interaction_hint(
            r#"{"name":"a","_meta":{"anthropic/requiresUserInteraction":"true"}}"#
        ));
        assert!(!user_interaction_hint(
            r#"{"name":"a","annotations":{"anthropic/requiresUserInteraction":true}}"#
        ));
        assert!(!user_interaction_hint(r#"{"name":"a"}"#));
    }

    #[test]
    fn read_only_hint_must_be_literally_true() {
        assert!(read_only_hint(
            r#"{"name":"a","annotations":{"readOnlyHint":true}}"#
        ));
        assert!(!read_only_hint(
            r#"{"name":"a","annotations":{"readOnlyHint":"true"}}"#
        ));
        assert!(!read_only_hint(
            r#"{"name":"a","annotations":{"destructiveHint":false}}"#
        ));
        assert!(!read_only_hint(r#"{"name":"a"}"#));
    }
}

//! Pins of what a server says besides its tools: each prompt's definition, the text
//! `prompts/get` returns for each argument set, the server's `instructions` and the content of
//! each `ui://` resource. First sight is pinned; a later sight that differs is a change the
//! person answers (`broker/changes.rs`), and until then the client gets the pinned version —
//! kept here when it is at most [`MAX_KEPT_BYTES`] and the store has room — or an error.
//!
//! What counts is the content in canonical form: keys sorted (RFC 8785), a prompt's arguments
//! by name, every run of whitespace in a string one space, the top-level `_meta` left out. So
//! reordered arguments or members and changed whitespace are never a change. These pins share
//! the store's bound ([`super::MAX_STORE_BYTES`]); past it, a content is pinned by its hash
//! alone (a change then gets the error until approved, never the new content).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Store, ENTRY_OVERHEAD};
use crate::approval::change::{PinKind, PinRow, MAX_SHOWN_BYTES};
use crate::logs::now_ms;

/// The most bytes of one content kept to be given in place of a change.
pub const MAX_KEPT_BYTES: usize = 256 << 10;

/// Pins of this kind one server may keep at most; past it, the prompt text pinned longest ago
/// gives way (a prompt's texts are as many as its argument sets).
pub const MAX_SAID_PER_SERVER: usize = 1024;

/// One thing a server says, as it says it now.
pub struct Said<'a> {
    /// What it is.
    pub kind: PinKind,
    /// The server's id.
    pub server: &'a str,
    /// The prompt's own name, the `ui://` URI; empty for instructions.
    pub name: &'a str,
    /// For a prompt's text (`prompts/get`): its argument set in canonical JSON.
    pub arguments: Option<String>,
    /// What the client gets, as JSON text: a prompt's definition, a `prompts/get` or
    /// `resources/read` result, or the instructions as a JSON string.
    pub content: &'a str,
}

/// A pin of something a server said.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SaidPin {
    kind: PinKind,
    server: String,
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    arguments: Option<String>,
    sha256: String,
    since_ms: u64,
    bytes: usize,
    /// What the client got at first sight (JSON text), when it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kept: Option<String>,
}

impl SaidPin {
    /// The pinned hash.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The pinned content's size as the server sent it.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The pinned content (JSON text), when kept.
    pub fn kept(&self) -> Option<&str> {
        self.kept.as_deref()
    }

    fn cost(&self, key: &str) -> usize {
        key.len() + self.kept.as_ref().map_or(0, String::len) + ENTRY_OVERHEAD
    }

    pub(crate) fn row(&self) -> PinRow {
        PinRow {
            kind: self.kind,
            server: self.server.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
            hash: self.sha256.clone(),
            since: self.since_ms,
        }
    }
}

/// How a sight compares with its pin.
pub(crate) enum Seen {
    /// As pinned, or seen for the first time (and now pinned).
    Same,
    /// Differs from the pin, which is returned.
    Changed(SaidPin),
}

impl Said<'_> {
    /// The store's key: server first, so one server's pins are one range.
    pub(crate) fn key(&self) -> String {
        [
            self.server,
            "\u{1f}",
            self.kind.as_str(),
            "\u{1f}",
            self.name,
            "\u{1f}",
            self.arguments.as_deref().unwrap_or(""),
        ]
        .concat()
    }

    /// The SHA-256 (hex) of the content in canonical form.
    pub fn sha256(&self) -> String {
        let v = self.normal();
        let canonical = serde_json_canonicalizer::to_string(&v).unwrap_or_default();
        Sha256::digest(canonical.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The content as compared: `_meta` left out, a prompt definition's arguments by name,
    /// whitespace runs in strings one space.
    fn normal(&self) -> Value {
        let mut v: Value = serde_json::from_str(self.content)
            .unwrap_or_else(|_| Value::String(self.content.to_owned()));
        if let Value::Object(m) = &mut v {
            m.remove("_meta");
            if self.kind == PinKind::Prompt && self.arguments.is_none() {
                if let Some(Value::Array(args)) = m.get_mut("arguments") {
                    args.sort_by(|a, b| {
                        let name =
                            |x: &Value| x.get("name").and_then(Value::as_str).map(str::to_owned);
                        name(a).cmp(&name(b))
                    });
                }
            }
        }
        squash(&mut v);
        v
    }

    /// The pin of this content now.
    fn pin(&self, sha256: String, keep: bool) -> SaidPin {
        SaidPin {
            kind: self.kind,
            server: self.server.to_owned(),
            name: self.name.to_owned(),
            arguments: self.arguments.clone(),
            sha256,
            since_ms: now_ms(),
            bytes: self.content.len(),
            kept: (keep && self.content.len() <= MAX_KEPT_BYTES).then(|| self.content.to_owned()),
        }
    }

    /// The new pin when the person approves this content.
    pub(crate) fn approved(&self) -> SaidPin {
        self.pin(self.sha256(), true)
    }
}

/// Every string in `v` with its whitespace runs made one space, trimmed.
fn squash(v: &mut Value) {
    match v {
        Value::String(s) if s.contains(char::is_whitespace) => {
            *s = s.split_whitespace().collect::<Vec<_>>().join(" ");
        }
        Value::Array(a) => a.iter_mut().for_each(squash),
        Value::Object(m) => m.values_mut().for_each(squash),
        _ => {}
    }
}

/// What a person reads of a content of `kind` (JSON text `content`), bounded: a prompt's
/// messages as `[role]` and their text, a definition as indented JSON, the instructions' text,
/// an app's HTML.
pub fn shown(kind: PinKind, text_of_prompt: bool, content: &str) -> String {
    let v: Value =
        serde_json::from_str(content).unwrap_or_else(|_| Value::String(content.to_owned()));
    let text = match (kind, &v) {
        (_, Value::String(s)) => s.clone(),
        (PinKind::Prompt, _) if text_of_prompt => prompt_text(&v),
        (PinKind::Ui, _) => resource_text(&v),
        _ => serde_json::to_string_pretty(&v).unwrap_or_default(),
    };
    crate::text::cut(&text, MAX_SHOWN_BYTES)
}

fn prompt_text(v: &Value) -> String {
    let mut out = String::new();
    if let Some(d) = v.get("description").and_then(Value::as_str) {
        out.push_str(&format!("(description) {d}\n"));
    }
    for m in v
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        out.push_str(&format!("[{role}]\n"));
        match m.get("content") {
            Some(c) if c.get("type").and_then(Value::as_str) == Some("text") => {
                out.push_str(c.get("text").and_then(Value::as_str).unwrap_or(""));
            }
            Some(c) => out.push_str(&c.to_string()),
            None => {}
        }
        out.push('\n');
    }
    out
}

fn resource_text(v: &Value) -> String {
    let mut out = String::new();
    for c in v
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = c.get("text").and_then(Value::as_str) {
            out.push_str(t);
        } else if let Some(b) = c.get("blob").and_then(Value::as_str) {
            out.push_str(&format!("(binary content, {} bytes of base64)", b.len()));
        }
        out.push('\n');
    }
    out
}

impl Store {
    /// Compares what a server says now with its pin; pins it at first sight (its content kept
    /// while the store has room). Returns the comparison and whether the store changed.
    pub(crate) fn said_seen(&mut self, s: &Said<'_>) -> (Seen, bool) {
        let key = s.key();
        let sha = s.sha256();
        match self.said.get(&key) {
            Some(p) if p.sha256 == sha => return (Seen::Same, false),
            Some(p) => return (Seen::Changed(p.clone()), false),
            None => {}
        }
        let prefix = [s.server, "\u{1f}"].concat();
        let mine = || {
            self.said
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
        };
        if mine().count() >= MAX_SAID_PER_SERVER {
            // The prompt text pinned longest ago gives way; none, and nothing more is pinned.
            let oldest = mine()
                .filter(|(_, p)| p.arguments.is_some())
                .min_by_key(|(_, p)| p.since_ms)
                .map(|(k, _)| k.clone());
            let Some(oldest) = oldest else {
                return (Seen::Same, false);
            };
            self.said_remove(&oldest);
        }
        let room = self.bytes + key.len() + s.content.len() + ENTRY_OVERHEAD <= self.byte_limit();
        self.said_put(key, s.pin(sha, room));
        (Seen::Same, true)
    }

    /// The person approved `pin`'s content: it replaces the pin of the same thing (kept
    /// whatever the bound, as an answer the person gave).
    pub(crate) fn said_trust(&mut self, key: String, pin: SaidPin) {
        self.said_put(key, pin);
    }

    fn said_put(&mut self, key: String, pin: SaidPin) {
        self.said_remove(&key);
        self.bytes += pin.cost(&key);
        self.said.insert(key, pin);
    }

    fn said_remove(&mut self, key: &str) {
        if let Some(old) = self.said.remove(key) {
            self.bytes = self.bytes.saturating_sub(old.cost(key));
        }
    }

    /// What the said pins take in the file, about.
    pub(super) fn said_bytes(&self) -> usize {
        self.said.iter().map(|(k, p)| p.cost(k)).sum()
    }

    /// Drops every said pin of `server`.
    pub(super) fn said_drop_server(&mut self, server: &str) {
        let prefix = [server, "\u{1f}"].concat();
        self.said.retain(|k, _| !k.starts_with(&prefix));
    }

    /// Every said pin, as listed.
    pub(crate) fn said_rows(&self) -> impl Iterator<Item = PinRow> + '_ {
        self.said.values().map(SaidPin::row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt<'a>(content: &'a str, arguments: Option<&str>) -> Said<'a> {
        Said {
            kind: PinKind::Prompt,
            server: "s",
            name: "greet",
            arguments: arguments.map(str::to_owned),
            content,
        }
    }

    #[test]
    fn argument_order_and_whitespace_are_not_a_change_but_a_word_is() {
        let a = prompt(
            r#"{"name":"greet","arguments":[{"name":"a"},{"name":"b","required":true}]}"#,
            None,
        );
        let b = prompt(
            r#"{ "arguments": [ {"required":true,"name":"b"}, {"name":"a"} ], "name": "greet" }"#,
            None,
        );
        assert_eq!(a.sha256(), b.sha256());
        let t1 = prompt(
            r#"{"messages":[{"role":"user","content":{"type":"text","text":"Say  hi\n to A"}}]}"#,
            Some("{}"),
        );
        let t2 = prompt(
            r#"{"messages":[{"role":"user","content":{"type":"text","text":"Say hi to A "}}],"_meta":{"at":1}}"#,
            Some("{}"),
        );
        let t3 = prompt(
            r#"{"messages":[{"role":"user","content":{"type":"text","text":"Say hi to B"}}]}"#,
            Some("{}"),
        );
        assert_eq!(t1.sha256(), t2.sha256());
        assert_ne!(t1.sha256(), t3.sha256());
        // The order of the messages is the text: it counts.
        let two = r#"{"messages":[{"role":"user","content":{"type":"text","text":"1"}},{"role":"user","content":{"type":"text","text":"2"}}]}"#;
        let swapped = r#"{"messages":[{"role":"user","content":{"type":"text","text":"2"}},{"role":"user","content":{"type":"text","text":"1"}}]}"#;
        assert_ne!(
            prompt(two, Some("{}")).sha256(),
            prompt(swapped, Some("{}")).sha256()
        );
    }

    #[test]
    fn first_sight_is_pinned_and_kept_and_a_change_returns_the_pin() {
        let mut st = Store::default();
        let first = prompt(r#"{"messages":[]}"#, Some(r#"{"x":"1"}"#));
        assert!(matches!(st.said_seen(&first), (Seen::Same, true)));
        assert!(matches!(st.said_seen(&first), (Seen::Same, false)));
        // Another argument set is another pin.
        let other = prompt(r#"{"messages":[1]}"#, Some(r#"{"x":"2"}"#));
        assert!(matches!(st.said_seen(&other), (Seen::Same, true)));
        let changed = prompt(r#"{"messages":[2]}"#, Some(r#"{"x":"1"}"#));
        match st.said_seen(&changed) {
            (Seen::Changed(pin), false) => assert_eq!(pin.kept(), Some(r#"{"messages":[]}"#)),
            _ => panic!("a change was not seen"),
        }
        // Approved: the new content is the pin.
        st.said_trust(changed.key(), changed.approved());
        assert!(matches!(st.said_seen(&changed), (Seen::Same, false)));
        assert_eq!(st.said_rows().count(), 2);
        st.said_drop_server("s");
        assert_eq!(st.said_rows().count(), 0);
    }

    #[test]
    fn past_the_store_bound_a_content_is_pinned_by_its_hash_alone() {
        let mut st = Store::with_limit(2000);
        let big = format!(r#"{{"contents":[{{"text":"{}"}}]}}"#, "x".repeat(4000));
        let ui = Said {
            kind: PinKind::Ui,
            server: "s",
            name: "ui://app",
            arguments: None,
            content: &big,
        };
        st.said_seen(&ui);
        let other = r#"{"contents":[{"text":"y"}]}"#;
        let changed = Said {
            content: other,
            ..ui
        };
        match st.said_seen(&changed) {
            (Seen::Changed(pin), _) => {
                assert_eq!(pin.kept(), None);
                assert_eq!(pin.bytes(), big.len());
            }
            _ => panic!("a change was not seen"),
        }
        assert!(st.bytes <= 2000, "{}", st.bytes);
    }

    #[test]
    fn a_prompt_is_shown_as_its_messages_and_an_app_as_its_html() {
        let p = r#"{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}"#;
        assert_eq!(
            shown(PinKind::Prompt, true, p),
            "(description) d\n[user]\nhi\n"
        );
        let ui = r#"{"contents":[{"uri":"ui://a","text":"<p>x</p>"}]}"#;
        assert_eq!(shown(PinKind::Ui, false, ui), "<p>x</p>\n");
        assert_eq!(shown(PinKind::Instructions, false, "\"use it\""), "use it");
    }
}

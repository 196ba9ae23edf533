//! What the broker remembers across restarts (`DATA_DIR/approvals.json`): the first definition
//! seen of every tool (its pin) and the "always" answers, each bound to the SHA-256 of one exact
//! definition. A server's pins belong to what it runs (its command line or URL: another one
//! starts afresh); tools that appear after its first listing are quarantined (their annotations
//! are not believed) until the person has allowed a call once; pins of tools no longer listed are
//! pruned and a server keeps at most [`MAX_PINS_PER_SERVER`]. A pin is the definition's hash and
//! a bounded snapshot of it for the diff (`snapshot.rs`); the whole file stays within
//! [`MAX_STORE_BYTES`] (past it, new tools are not pinned — and so asked for).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

mod exact;

use super::request::DefinitionChange;
use crate::logs::now_ms;
#[cfg(test)]
use crate::supervisor::status::definition_hash;
use crate::supervisor::status::ToolDef;

/// The persisted state.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Store {
    /// `server/tool` → the definition hash "always" was given for.
    #[serde(default)]
    always: BTreeMap<String, String>,
    /// `server/tool` → the trusted definition.
    #[serde(default)]
    pins: BTreeMap<String, Pin>,
    /// `server` → the SHA-256 of what it runs, when its pins were made.
    #[serde(default)]
    origins: BTreeMap<String, String>,
    /// "Always" key → when it was given (ms since the epoch).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    always_since: BTreeMap<String, u64>,
    /// "Exact call, always" answers, oldest first (`exact.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exact: Vec<exact::ExactAlways>,
    /// What the file takes, about (pins and answers; recounted after each listing).
    #[serde(skip)]
    bytes: usize,
    /// [`MAX_STORE_BYTES`] unless a test sets a smaller one (0: the constant).
    #[serde(skip)]
    limit: usize,
}

/// The most `approvals.json` takes (about): past it new tools are not pinned.
pub const MAX_STORE_BYTES: usize = 32 << 20;

/// What one entry of the file takes besides its key and text (names, hash, punctuation).
const ENTRY_OVERHEAD: usize = 160;

/// Pins one server may keep at most; tools past it are never pinned (and so always asked for).
pub const MAX_PINS_PER_SERVER: usize = 2048;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pin {
    sha256: String,
    /// Kept as text (a parsed tree per tool cost several KiB each: 37 MiB of the hub's memory
    /// with 5,400 tools); parsed only to show what changed.
    definition: Box<RawValue>,
    /// Appeared after the server's first listing and not yet allowed by the person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    quarantined: bool,
}

fn key(server: &str, tool: &str) -> String {
    [server, "/", tool].concat()
}

/// The key of an "always" answer: the tool's, plus ` @PROFILE` when a client profile gave it
/// (an answer covers the client that gave it; the gateway token's is the plain key).
fn always_key(server: &str, tool: &str, profile: Option<&str>) -> String {
    match profile {
        Some(p) => [server, "/", tool, " @", p].concat(),
        None => key(server, tool),
    }
}

/// An "always" key without its profile part.
fn tool_key(always_key: &str) -> &str {
    always_key.split_once(" @").map_or(always_key, |(k, _)| k)
}

impl Store {
    /// Reads the store; an unreadable file is moved aside (never lost) and the store starts empty.
    pub fn load(path: &Path) -> Store {
        match std::fs::read_to_string(path) {
            Ok(text) => match serde_json::from_str::<Store>(&text) {
                Ok(mut s) => {
                    s.recount();
                    s
                }
                Err(e) => {
                    let aside = path.with_extension(format!("corrupt-{}", now_ms()));
                    let _ = std::fs::rename(path, &aside);
                    tracing::error!(path = %path.display(), aside = %aside.display(), error = %e, "remembered approvals were unreadable; moved aside, starting with none");
                    Store::default()
                }
            },
            Err(_) => Store::default(),
        }
    }

    /// The store as the file holds it (times of answers no longer kept are dropped first).
    pub fn file_text(&mut self) -> String {
        let always = &self.always;
        self.always_since.retain(|k, _| always.contains_key(k));
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Pins a tool seen for the first time; for a pinned tool, says what changed if its
    /// definition differs. Returns the change and whether the store changed.
    pub fn check(&mut self, server: &str, def: &ToolDef) -> (Option<DefinitionChange>, bool) {
        let hash = def.hash();
        match self.pins.get(&key(server, &def.name)) {
            Some(pin) if pin.sha256 == hash => (None, false),
            Some(pin) => {
                // Compared in the pin's bounded form (a long member by its digest).
                let new = super::snapshot::of_value(&def.shown_value());
                let old: Value = serde_json::from_str(pin.definition.get()).unwrap_or(Value::Null);
                let change = DefinitionChange {
                    fields: changed_fields(&old, &new),
                    old,
                    new,
                };
                (Some(change), false)
            }
            None => {
                let quarantined = self.known(server);
                (None, self.pin(server, def, quarantined))
            }
        }
    }

    /// Takes a server's full tool list, listed while it runs `origin` (the SHA-256 of its command
    /// line or URL). Another origin than its pins were made for drops them (and its "always"
    /// answers): they were for another program. Tools not seen before are pinned — quarantined
    /// unless this is the server's first listing — and pins of tools no longer listed are
    /// pruned. Returns whether the store changed.
    pub fn take_listing(
        &mut self,
        server: &str,
        origin: &str,
        tools: &[std::sync::Arc<ToolDef>],
    ) -> bool {
        let mut changed = false;
        // First listing: nothing known of the server (a store from before origins were kept
        // has pins without one: not a first listing).
        let first = match self.origins.get(server) {
            Some(o) if o == origin => false,
            Some(_) => {
                self.drop_server(server);
                true
            }
            None => !self.has_pins(server),
        };
        if self.origins.get(server).map(String::as_str) != Some(origin) {
            self.origins.insert(server.to_owned(), origin.to_owned());
            changed = true;
        }
        let listed: std::collections::HashSet<String> =
            tools.iter().map(|d| key(server, &d.name)).collect();
        let before = self.pins.len() + self.always.len();
        // Only this server's keys are visited (a range of the sorted maps), never every pin.
        let prefix = key(server, "");
        for k in stale_keys(&self.pins, &prefix, &listed, |k| k) {
            self.pins.remove(&k);
        }
        for k in stale_keys(&self.always, &prefix, &listed, tool_key) {
            self.always.remove(&k);
        }
        changed |= self.pins.len() + self.always.len() != before;
        self.recount();
        let mut count = self.pin_count(server);
        for def in tools {
            if !self.pins.contains_key(&key(server, &def.name)) {
                if count >= MAX_PINS_PER_SERVER {
                    continue;
                }
                count += 1;
                changed |= self.pin(server, def, !first);
            }
        }
        changed
    }

    /// Whether the server was listed before.
    fn known(&self, server: &str) -> bool {
        self.origins.contains_key(server) || self.has_pins(server)
    }

    fn has_pins(&self, server: &str) -> bool {
        let prefix = key(server, "");
        self.pins
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    fn pin_count(&self, server: &str) -> usize {
        let prefix = key(server, "");
        self.pins
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .count()
    }

    fn drop_server(&mut self, server: &str) {
        let prefix = key(server, "");
        self.pins.retain(|k, _| !k.starts_with(&prefix));
        self.always.retain(|k, _| !k.starts_with(&prefix));
        self.origins.remove(server);
    }

    /// Pins one definition unless the server, or the file, is at its bound; returns whether it
    /// did.
    fn pin(&mut self, server: &str, def: &ToolDef, quarantined: bool) -> bool {
        if self.pin_count(server) >= MAX_PINS_PER_SERVER {
            return false;
        }
        let k = key(server, &def.name);
        let definition = super::snapshot::of_text(def.shown_definition().get());
        let cost = k.len() + definition.get().len() + ENTRY_OVERHEAD;
        if self.bytes + cost > self.byte_limit() {
            return false;
        }
        self.bytes += cost;
        self.pins.insert(
            k,
            Pin {
                sha256: def.hash().to_owned(),
                definition,
                quarantined,
            },
        );
        true
    }

    fn byte_limit(&self) -> usize {
        match self.limit {
            0 => MAX_STORE_BYTES,
            n => n,
        }
    }

    /// Counts again what the file takes.
    fn recount(&mut self) {
        let pins: usize = self
            .pins
            .iter()
            .map(|(k, p)| k.len() + p.definition.get().len() + ENTRY_OVERHEAD)
            .sum();
        let answers: usize = self.always.keys().map(|k| k.len() + ENTRY_OVERHEAD).sum();
        self.bytes = pins + answers;
    }

    /// A store whose file may take `limit` bytes (tests).
    #[cfg(test)]
    fn with_limit(limit: usize) -> Store {
        Store {
            limit,
            ..Store::default()
        }
    }

    /// Whether a tool's own annotations may not be believed yet: it appeared after its server's
    /// first listing (or past the bound) and the person has not allowed a call to it.
    pub fn quarantined(&self, server: &str, tool: &str) -> bool {
        match self.pins.get(&key(server, tool)) {
            Some(pin) => pin.quarantined,
            None => self.known(server),
        }
    }

    /// The pinned definition of a tool, parsed (a reduced snapshot for a long one).
    pub fn pinned(&self, server: &str, tool: &str) -> Option<Value> {
        let pin = self.pins.get(&key(server, tool))?;
        serde_json::from_str(pin.definition.get()).ok()
    }

    /// The person allowed a call to the tool: it leaves quarantine. Returns whether it was in.
    pub fn release(&mut self, server: &str, tool: &str) -> bool {
        match self.pins.get_mut(&key(server, tool)) {
            Some(pin) if pin.quarantined => {
                pin.quarantined = false;
                true
            }
            _ => false,
        }
    }

    /// Whether "always" was given for exactly this definition, by this client profile (`None`:
    /// the gateway token's).
    pub fn always_allows(
        &self,
        profile: Option<&str>,
        server: &str,
        tool: &str,
        hash: &str,
    ) -> bool {
        self.always
            .get(&always_key(server, tool, profile))
            .is_some_and(|h| h == hash)
    }

    /// Remembers "always" (given by `profile`) for the definition with `hash`; it becomes the
    /// pin.
    pub fn trust(
        &mut self,
        profile: Option<&str>,
        server: &str,
        tool: &str,
        hash: &str,
        definition: Option<Value>,
    ) {
        let k = key(server, tool);
        let k2 = always_key(server, tool, profile);
        let answer_bytes = k2.len() + ENTRY_OVERHEAD;
        self.always.insert(k2.clone(), hash.to_owned());
        self.always_since.insert(k2, now_ms());
        let definition = definition
            .and_then(|v| serde_json::value::to_raw_value(&super::snapshot::of_value(&v)).ok())
            .or_else(|| self.pins.get(&k).map(|p| p.definition.clone()))
            .unwrap_or_default(); // `null`
                                  // An answer the person gave is kept whatever the bound (it is counted, and new pins
                                  // make room for it).
        self.bytes += answer_bytes + k.len() + definition.get().len() + ENTRY_OVERHEAD;
        self.pins.insert(
            k,
            Pin {
                sha256: hash.to_owned(),
                definition,
                quarantined: false,
            },
        );
    }

    /// Every "always" answer: (server, tool, profile, definition hash, when).
    pub fn always_grants(&self) -> Vec<(String, String, Option<String>, String, u64)> {
        self.always
            .iter()
            .filter_map(|(k, hash)| {
                let (tool_part, profile) = match k.split_once(" @") {
                    Some((t, p)) => (t, Some(p.to_owned())),
                    None => (k.as_str(), None),
                };
                let (server, tool) = tool_part.split_once('/')?;
                let since = self.always_since.get(k).copied().unwrap_or(0);
                Some((
                    server.to_owned(),
                    tool.to_owned(),
                    profile,
                    hash.clone(),
                    since,
                ))
            })
            .collect()
    }

    /// Revokes one "always" answer; returns whether there was one.
    pub fn revoke_always(&mut self, server: &str, tool: &str, profile: Option<&str>) -> bool {
        let k = always_key(server, tool, profile);
        self.always_since.remove(&k);
        self.always.remove(&k).is_some()
    }

    /// Drops the "always" answers matching `matches(server, tool)`; returns how many.
    pub fn forget(&mut self, matches: impl Fn(&str, &str) -> bool) -> usize {
        let exact = self.forget_exact(&matches);
        let before = self.always.len() + exact;
        self.always.retain(|k, _| {
            let (s, t) = tool_key(k).split_once('/').unwrap_or((k, ""));
            !matches(s, t)
        });
        before - self.always.len()
    }
}

/// The keys under `prefix` (one server's) whose tool is not `listed`; only that range of the
/// sorted map is visited.
fn stale_keys<V>(
    map: &BTreeMap<String, V>,
    prefix: &str,
    listed: &std::collections::HashSet<String>,
    tool_of: fn(&str) -> &str,
) -> Vec<String> {
    map.range(prefix.to_owned()..)
        .take_while(|(k, _)| k.starts_with(prefix))
        .filter(|(k, _)| !listed.contains(tool_of(k)))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Top-level members whose values differ (`definition` when either is not an object).
fn changed_fields(old: &Value, new: &Value) -> Vec<String> {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return vec!["definition".into()];
    };
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| o.get(*k) != n.get(*k))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_order_does_not_change_the_hash() {
        assert_eq!(
            definition_hash(r#"{"b":1,"a":2}"#),
            definition_hash(r#"{"a":2,"b":1}"#)
        );
        assert_ne!(definition_hash(r#"{"a":1}"#), definition_hash(r#"{"a":2}"#));
    }

    #[test]
    fn corrupt_store_is_moved_aside_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        std::fs::write(&path, "{ not json").unwrap();
        let store = Store::load(&path);
        assert!(store.pins.is_empty());
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
            .collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(
            std::fs::read_to_string(aside[0].path()).unwrap(),
            "{ not json"
        );
    }

    fn tool(name: &str) -> std::sync::Arc<ToolDef> {
        let raw = format!(
            r#"{{"name":"{name}","inputSchema":{{"type":"object"}},"annotations":{{"readOnlyHint":true}}}}"#
        );
        definition(raw)
    }

    /// A tool as a server would list it, from its definition's text.
    fn definition(raw: String) -> std::sync::Arc<ToolDef> {
        std::sync::Arc::new(
            ToolDef::parse(
                serde_json::value::RawValue::from_string(raw).unwrap(),
                std::sync::Arc::default(),
            )
            .unwrap(),
        )
    }

    #[test]
    fn listings_and_changes_keep_definitions_as_text_only() {
        // Memory: a parsed tree per tool cost several KiB each (37 MiB with 5,400 tools); a
        // listing keeps text and parses nothing for good, and a change is still described.
        let mut st = Store::default();
        let tools: Vec<_> = (0..50).map(|i| tool(&format!("t{i}"))).collect();
        assert!(st.take_listing("s", "origin", &tools));
        assert!(tools.iter().all(|t| !t.meta_parsed()));
        let changed = std::sync::Arc::new(
            ToolDef::parse(
                serde_json::value::RawValue::from_string(
                    r#"{"name":"t0","description":"now it deletes","inputSchema":{"type":"object"}}"#.into(),
                )
                .unwrap(),
                std::sync::Arc::default(),
            )
            .unwrap(),
        );
        let (change, _) = st.check("s", &changed);
        let change = change.expect("a change");
        assert_eq!(change.fields, vec!["annotations", "description"]);
        assert_eq!(change.old["annotations"]["readOnlyHint"], true);
        assert_eq!(change.new["description"], "now it deletes");
        assert!(!changed.meta_parsed());
        // What is saved reads back the same.
        let text = st.file_text();
        let back: Store = serde_json::from_str(&text).unwrap();
        assert_eq!(back.pins.len(), 50);
        assert_eq!(
            back.pins["s/t0"].definition.get(),
            st.pins["s/t0"].definition.get()
        );
    }

    /// A server renaming its tools over and over keeps only the pins of what it lists now, and
    /// no server keeps more than MAX_PINS_PER_SERVER.
    #[test]
    fn pins_follow_the_listing_and_are_bounded_per_server() {
        let mut st = Store::default();
        for round in 0..2_000 {
            let tools = vec![tool(&format!("a{round}")), tool(&format!("b{round}"))];
            st.take_listing("s", "origin", &tools);
        }
        assert_eq!(st.pins.len(), 2, "{:?}", st.pins.keys().collect::<Vec<_>>());
        assert!(st.file_text().len() < 2_000);
        let many: Vec<_> = (0..MAX_PINS_PER_SERVER + 10)
            .map(|i| tool(&format!("t{i}")))
            .collect();
        st.take_listing("s", "origin", &many);
        assert_eq!(st.pins.len(), MAX_PINS_PER_SERVER);
        // A tool past the bound is never pinned, so never trusted by its annotations.
        assert!(st.quarantined("s", &format!("t{}", MAX_PINS_PER_SERVER + 5)));
    }

    /// The first listing is taken as it is; what appears later is quarantined until released;
    /// another origin starts afresh and drops the "always" answers.
    #[test]
    fn later_tools_are_quarantined_and_another_origin_starts_afresh() {
        let mut st = Store::default();
        st.take_listing("s", "one", &[tool("first")]);
        assert!(!st.quarantined("s", "first"));
        st.take_listing("s", "one", &[tool("first"), tool("later")]);
        assert!(st.quarantined("s", "later"));
        assert!(st.quarantined("s", "never-listed"));
        assert!(st.release("s", "later"));
        assert!(!st.quarantined("s", "later"));
        st.trust(None, "s", "first", tool("first").hash(), None);
        assert!(st.always_allows(None, "s", "first", tool("first").hash()));
        st.take_listing("s", "two", &[tool("first"), tool("other")]);
        assert!(!st.always_allows(None, "s", "first", tool("first").hash()));
        assert!(!st.quarantined("s", "other"), "a first listing again");
        assert!(!st.quarantined("t", "x"), "an unknown server is not known");
    }

    /// An "always" answer covers the client profile that gave it, and no other; it follows the
    /// tool's listing and is forgotten with it.
    #[test]
    fn always_answers_belong_to_the_profile_that_gave_them() {
        let mut st = Store::default();
        let t = tool("t");
        st.take_listing("s", "o", std::slice::from_ref(&t));
        st.trust(Some("cursor"), "s", "t", t.hash(), None);
        assert!(st.always_allows(Some("cursor"), "s", "t", t.hash()));
        assert!(!st.always_allows(Some("code"), "s", "t", t.hash()));
        assert!(!st.always_allows(None, "s", "t", t.hash()));
        st.take_listing("s", "o", std::slice::from_ref(&t));
        assert!(
            st.always_allows(Some("cursor"), "s", "t", t.hash()),
            "still listed: kept"
        );
        assert_eq!(st.forget(|s, tool| s == "s" && tool == "t"), 1);
        assert!(!st.always_allows(Some("cursor"), "s", "t", t.hash()));
    }

    fn long_tool(name: &str, description: &str) -> std::sync::Arc<ToolDef> {
        definition(
            serde_json::json!({"name": name, "description": description,
                "inputSchema": {"type": "object"}})
            .to_string(),
        )
    }

    /// A pin is a hash and a bounded snapshot: 120 tools of 256 KiB each make a file of a few
    /// MiB, not 30; a changed long description is still named; and past the file's bound new
    /// tools go unpinned (asked for) rather than growing it.
    #[test]
    fn pins_keep_hashes_and_bounded_snapshots_and_the_file_stays_within_its_bound() {
        let mut st = Store::default();
        let big = "d".repeat(256 << 10);
        let tools: Vec<_> = (0..120)
            .map(|i| long_tool(&format!("t{i}"), &big))
            .collect();
        st.take_listing("s", "o", &tools);
        assert_eq!(st.pin_count("s"), 120);
        let text = st.file_text();
        assert!(text.len() < 120 * 2048, "{} bytes", text.len());
        // A change of the long description is named by member, its digest shown.
        let changed = long_tool("t0", &"e".repeat(256 << 10));
        let (change, _) = st.check("s", &changed);
        let change = change.expect("a changed definition is a change");
        assert_eq!(change.fields, vec!["description".to_owned()]);
        assert!(change.new.to_string().len() <= super::super::snapshot::MAX_SNAPSHOT_BYTES);
        // The bound: a store of 64 KiB pins what fits and no more.
        let mut small = Store::with_limit(64 << 10);
        let many: Vec<_> = (0..400)
            .map(|i| long_tool(&format!("m{i}"), &"x".repeat(2000)))
            .collect();
        small.take_listing("s", "o", &many);
        let pinned = small.pin_count("s");
        assert!(pinned > 10 && pinned < 400, "{pinned}");
        assert!(small.file_text().len() <= 64 << 10);
        assert!(
            small.quarantined("s", "m399"),
            "an unpinned tool of a known server is not believed"
        );
    }
}

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
pub(super) mod said;

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
    /// Pins of what servers say besides their tools (`said.rs`), by server, kind and name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    said: BTreeMap<String, said::SaidPin>,
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
    /// When it was pinned or last trusted (ms since the epoch; 0 in a file from before).
    #[serde(default)]
    since_ms: u64,
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
        self.said_drop_server(server);
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
                since_ms: now_ms(),
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
        self.bytes = pins + answers + self.said_bytes();
    }

    /// Every pin: the tools' and what the servers said, by server.
    pub fn rows(&self) -> Vec<super::change::PinRow> {
        let mut rows: Vec<super::change::PinRow> = self
            .pins
            .iter()
            .filter_map(|(k, p)| {
                let (server, tool) = k.split_once('/')?;
                Some(super::change::PinRow {
                    kind: super::change::PinKind::Tool,
                    server: server.to_owned(),
                    name: tool.to_owned(),
                    arguments: None,
                    hash: p.sha256.clone(),
                    since: p.since_ms,
                })
            })
            .chain(self.said_rows())
            .collect();
        rows.sort_by(|a, b| (&a.server, a.kind, &a.name).cmp(&(&b.server, b.kind, &b.name)));
        rows
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
                since_ms: now_ms(),
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
#[path = "pins_tests.rs"]
mod tests;

//! What the broker remembers across restarts (`DATA_DIR/approvals.json`): the first definition
//! seen of every tool (its pin) and the "always" answers, each bound to the SHA-256 of one exact
//! definition.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pin {
    sha256: String,
    definition: Value,
}

fn key(server: &str, tool: &str) -> String {
    format!("{server}/{tool}")
}

impl Store {
    /// Reads the store; an unreadable file is moved aside (never lost) and the store starts empty.
    pub fn load(path: &Path) -> Store {
        match std::fs::read_to_string(path) {
            Ok(text) => match serde_json::from_str(&text) {
                Ok(s) => s,
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

    /// The store as the file holds it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Pins a tool seen for the first time; for a pinned tool, says what changed if its
    /// definition differs. Returns the change and whether the store changed.
    pub fn check(&mut self, server: &str, def: &ToolDef) -> (Option<DefinitionChange>, bool) {
        let hash = def.hash();
        match self.pins.get(&key(server, &def.name)) {
            Some(pin) if pin.sha256 == hash => (None, false),
            Some(pin) => {
                let new = def.meta().definition.clone();
                let change = DefinitionChange {
                    fields: changed_fields(&pin.definition, &new),
                    old: pin.definition.clone(),
                    new,
                };
                (Some(change), false)
            }
            None => {
                self.pin(server, def);
                (None, true)
            }
        }
    }

    /// Pins every tool not seen before. Returns whether anything was added.
    pub fn pin_new(&mut self, server: &str, tools: &[std::sync::Arc<ToolDef>]) -> bool {
        let mut added = false;
        for def in tools {
            if !self.pins.contains_key(&key(server, &def.name)) {
                self.pin(server, def);
                added = true;
            }
        }
        added
    }

    fn pin(&mut self, server: &str, def: &ToolDef) {
        self.pins.insert(
            key(server, &def.name),
            Pin {
                sha256: def.hash().to_owned(),
                definition: def.meta().definition.clone(),
            },
        );
    }

    /// Whether "always" was given for exactly this definition.
    pub fn always_allows(&self, server: &str, tool: &str, hash: &str) -> bool {
        self.always
            .get(&key(server, tool))
            .is_some_and(|h| h == hash)
    }

    /// Remembers "always" for the definition with `hash`; it becomes the pin.
    pub fn trust(&mut self, server: &str, tool: &str, hash: &str, definition: Option<Value>) {
        let k = key(server, tool);
        self.always.insert(k.clone(), hash.to_owned());
        let definition = definition
            .or_else(|| self.pins.get(&k).map(|p| p.definition.clone()))
            .unwrap_or(Value::Null);
        self.pins.insert(
            k,
            Pin {
                sha256: hash.to_owned(),
                definition,
            },
        );
    }

    /// Drops the "always" answers matching `matches(server, tool)`; returns how many.
    pub fn forget(&mut self, matches: impl Fn(&str, &str) -> bool) -> usize {
        let before = self.always.len();
        self.always.retain(|k, _| {
            let (s, t) = k.split_once('/').unwrap_or((k, ""));
            !matches(s, t)
        });
        before - self.always.len()
    }
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
}

//! The secrets the hub knows of — referenced by the config or set through it, never values —
//! and the restart of the servers that use one when it changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::HubHandle;
use crate::config::Config;
use crate::secrets::SecretSource;

/// The names of secrets set through this hub (never values), kept in `index`.
fn indexed(index: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(index)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Every secret Gatehouse knows of — referenced by `config` or set through the hub (kept in
/// `index`) — each with the servers that use it (possibly none).
pub(super) fn names(config: &Config, index: &Path) -> BTreeMap<String, Vec<String>> {
    let mut all = users(config);
    for name in indexed(index) {
        all.entry(name).or_default();
    }
    all
}

/// Secret names referenced by `config`, each with the servers that use it.
pub(super) fn users(config: &Config) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, server) in &config.servers {
        for name in server.secret_refs() {
            out.entry(name.to_owned()).or_default().push(id.to_string());
        }
    }
    out
}

/// A secret was set or removed in `secrets`: the index of names follows (`index`), and the
/// servers that use it restart (unless stopped on purpose). Returns their ids.
pub(super) async fn changed(
    hub: &HubHandle,
    secrets: &std::sync::Arc<dyn SecretSource>,
    index: &Path,
    name: &str,
) -> Vec<String> {
    // The index of names follows the keychain: set → listed, removed → not.
    let secrets = secrets.clone();
    let n = name.to_owned();
    let exists = tokio::task::spawn_blocking(move || match secrets.get(&n) {
        Ok(_) => Some(true),
        Err(crate::secrets::SecretError::Missing { .. }) => Some(false),
        // An unreachable keychain says nothing about the name: the index is kept.
        Err(_) => None,
    })
    .await
    .unwrap_or(None);
    let mut names = indexed(index);
    let changed = match exists {
        Some(true) => names.insert(name.to_owned()),
        Some(false) => names.remove(name),
        None => false,
    };
    if changed {
        let text = serde_json::to_string_pretty(&names).unwrap_or_default();
        if let Err(e) = crate::config::write_atomic(index, text.as_bytes()) {
            tracing::warn!(error = %e, "cannot save the index of secret names");
        }
    }
    let users = users(&hub.config()).remove(name).unwrap_or_default();
    let mut restarted = Vec::new();
    for id in users {
        if let Ok(h) = hub.server(&id) {
            if h.status().state != crate::supervisor::State::Stopped && h.restart().await.is_ok() {
                restarted.push(id);
            }
        }
    }
    restarted
}

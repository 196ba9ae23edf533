//! The secrets the hub knows of — referenced by the config or set through it, never values —
//! and the restart of the servers that use one when it changes.

use std::collections::BTreeMap;

use super::HubHandle;

impl HubHandle {
    /// The names of secrets set through this hub (never values).
    pub(super) fn secret_index(&self) -> std::collections::BTreeSet<String> {
        std::fs::read_to_string(&self.inner.secret_index)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Every secret Gatehouse knows of — referenced by the config or set through it — each
    /// with the servers that use it (possibly none).
    pub fn secret_names(&self) -> BTreeMap<String, Vec<String>> {
        let mut all = self.secret_users();
        for name in self.secret_index() {
            all.entry(name).or_default();
        }
        all
    }

    /// Secret names referenced by the config, each with the servers that use it.
    pub fn secret_users(&self) -> BTreeMap<String, Vec<String>> {
        let config = self.config();
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (id, server) in &config.servers {
            for name in server.secret_refs() {
                out.entry(name.to_owned()).or_default().push(id.to_string());
            }
        }
        out
    }

    /// A secret was set or removed: restarts the servers that use it (unless stopped on purpose).
    /// Returns their ids.
    pub async fn secret_changed(&self, name: &str) -> Vec<String> {
        // The index of names follows the keychain: set → listed, removed → not.
        let secrets = self.inner.ctx.secrets.clone();
        let n = name.to_owned();
        let exists = tokio::task::spawn_blocking(move || match secrets.get(&n) {
            Ok(_) => Some(true),
            Err(crate::secrets::SecretError::Missing { .. }) => Some(false),
            // An unreachable keychain says nothing about the name: the index is kept.
            Err(_) => None,
        })
        .await
        .unwrap_or(None);
        let mut names = self.secret_index();
        let changed = match exists {
            Some(true) => names.insert(name.to_owned()),
            Some(false) => names.remove(name),
            None => false,
        };
        if changed {
            let text = serde_json::to_string_pretty(&names).unwrap_or_default();
            if let Err(e) = crate::config::write_atomic(&self.inner.secret_index, text.as_bytes()) {
                tracing::warn!(error = %e, "cannot save the index of secret names");
            }
        }
        let users = self.secret_users().remove(name).unwrap_or_default();
        let mut restarted = Vec::new();
        for id in users {
            if let Ok(h) = self.server(&id) {
                if h.status().state != crate::supervisor::State::Stopped
                    && h.restart().await.is_ok()
                {
                    restarted.push(id);
                }
            }
        }
        restarted
    }
}

//! Pinned artifacts installed when the person changes the config (an entry added, saved,
//! imported or re-pinned, the file read again): every pinned runner entry whose artifact is not
//! in the store yet is installed before it is started (`registry::store`). A start of the hub
//! installs nothing: an entry whose artifact is missing says so and how to install it.

use crate::config::{Config, Transport};
use crate::registry::pin::spec;
use crate::registry::store::{cooldown_before, Artifact, Store};

/// Installs the artifacts `config`'s pinned runner entries lack, one at a time; each outcome
/// is logged (a failure is also kept beside its folder, for the entry's status).
pub(super) async fn install_missing(store: &Store, config: &Config) {
    for (id, server) in &config.servers {
        let Transport::Stdio(t) = &server.transport else {
            continue;
        };
        let (Some(pin), Some(spec)) = (&t.pin, spec(&t.command, &t.args)) else {
            continue;
        };
        if spec.version.as_deref() != Some(pin.version.as_str())
            || store.installed(&spec, pin).is_ok()
        {
            continue;
        }
        match install(store, &spec, pin, config.registry.min_age_days()).await {
            Ok(a) => {
                tracing::info!(server = %id, "installed {} {} ({} packages) into the store", a.name, a.version, a.packages)
            }
            Err(e) => tracing::warn!(server = %id, "its pinned artifact was not installed: {e}"),
        }
    }
}

/// Installs `spec` at `pin` into `store`, its tree resolved under the cool-down.
pub async fn install(
    store: &Store,
    spec: &crate::registry::pin::Spec,
    pin: &crate::config::Pin,
    min_age_days: u64,
) -> Result<Artifact, String> {
    let before = cooldown_before(spec, &pin.version, min_age_days).await?;
    let (store, spec, pin) = (store.clone(), spec.clone(), pin.clone());
    tokio::task::spawn_blocking(move || store.install(&spec, &pin, before))
        .await
        .map_err(|e| format!("the install stopped: {e}"))?
}

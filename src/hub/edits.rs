//! The hub's config as it changes — a new config applied (new servers started, removed ones
//! stopped, changed ones updated), the config file edited under its lock or read again, a server
//! removed with its sign-in — and the hub's end.

use std::path::{Path, PathBuf};

use super::start::{profile_ids, register_client_tokens};
use super::{HubError, HubHandle};
use crate::config::{Config, ServerId};
use crate::oauth::Manager;
use crate::supervisor::{ServerHandle, ServerStatus};

/// Applies `config`: new servers start, removed ones stop (their kept tool lists, under
/// `known_tools`, forgotten), changed ones are updated (a launch change restarts them; a failed
/// one gets a fresh chance); the client tokens follow the profiles.
pub(super) async fn apply(
    hub: &HubHandle,
    known_tools: Option<&Path>,
    mut config: Config,
) -> Result<(), HubError> {
    if hub.lock().shutting_down {
        return Err(HubError::ShuttingDown);
    }
    super::tools::refuse_unmatchable_rules(hub, &mut config);
    let removed: Vec<(ServerId, ServerHandle)> = {
        let mut st = hub.lock();
        let gone: Vec<ServerId> = st
            .servers
            .keys()
            .filter(|k| !config.servers.contains_key(*k))
            .cloned()
            .collect();
        gone.into_iter()
            .filter_map(|k| st.servers.remove(&k).map(|h| (k, h)))
            .collect()
    };
    for (id, h) in removed {
        let _ = h.shutdown().await;
        if let Some(dir) = known_tools {
            crate::supervisor::known::forget(dir, id.as_str());
        }
    }
    let ids = profile_ids(&config);
    let tokens = hub.client_tokens().clone();
    match tokio::task::spawn_blocking(move || tokens.sync(&ids)).await {
        Ok(Err(e)) => tracing::error!("client tokens: {e}"),
        Err(e) => tracing::error!("client tokens: {e}"),
        Ok(Ok(())) => {}
    }
    register_client_tokens(hub.redactions(), hub.client_tokens());
    let before = hub.config();
    // Entries that cannot be read are rows of their own: every front end hears of them.
    for (key, e) in &config.invalid {
        if before.invalid.get(key) != Some(e) {
            hub.bus()
                .publish(crate::events::Event::Status(ServerStatus::invalid(key, e)));
        }
    }
    for (h, cfg) in hub.install(config) {
        // A change of tool flags alone restarts nothing: say so, so that every tool list (the
        // gateway's catalog, the app) is rebuilt under the new flags at once.
        let flags_changed = before.servers.get(h.id()).is_some_and(|old| {
            old.tools != cfg.tools || old.requires_approval != cfg.requires_approval
        });
        let id = h.id().to_string();
        let _ = h.update(cfg).await;
        if flags_changed {
            hub.bus().publish(crate::events::Event::ToolsChanged {
                server: id,
                tools: h.tools().len(),
            });
        }
    }
    Ok(())
}

/// Edits the config file at `path` under `lock` (the hub's edit lock): the file as it is now (it
/// must parse: a file the person is mid-way through editing is never overwritten), the edit, an
/// atomic save, then apply.
pub(super) async fn edit(
    hub: &HubHandle,
    path: Option<PathBuf>,
    lock: &tokio::sync::Mutex<()>,
    edit: impl FnOnce(&Config) -> Result<Config, String> + Send + 'static,
) -> Result<(), HubError> {
    let path =
        path.ok_or_else(|| HubError::Config("this hub was not started from a config file".into()))?;
    let _edit = lock.lock().await;
    let next = tokio::task::spawn_blocking(move || crate::config::edit(&path, edit))
        .await
        .map_err(|e| HubError::Config(format!("the config edit failed: {e}")))?
        .map_err(|e| HubError::Config(e.to_string()))?;
    hub.install_artifacts(&next).await;
    hub.apply_config(next).await
}

/// Reads the config file at `path` again and applies it.
pub(super) async fn reload(hub: &HubHandle, path: Option<PathBuf>) -> Result<(), HubError> {
    let path =
        path.ok_or_else(|| HubError::Config("this hub was not started from a config file".into()))?;
    let config = Config::load(&path).map_err(|e| HubError::Config(e.to_string()))?;
    hub.install_artifacts(&config).await;
    hub.apply_config(config).await
}

/// Removes server `id` from the config file and stops it; a remote server's sign-in goes with
/// it (revoked where offered, through `oauth`): tokens nobody can see or use are not left in the
/// keychain.
pub(super) async fn remove_server(
    hub: &HubHandle,
    oauth: &Manager,
    id: &str,
) -> Result<(), HubError> {
    let was_remote = super::sign_in::remote_entry(hub, id).is_ok();
    let owned = id.to_owned();
    hub.edit_config(move |c| c.without_server(&owned)).await?;
    if was_remote {
        if let Err(e) = oauth.sign_out(id).await {
            tracing::warn!(server = id, error = %e, "the removed server's sign-in was not deleted");
        }
    }
    Ok(())
}

/// Stops every server (in parallel) and waits until each actor has ended — no child process, no
/// task of the hub is left behind —, then writes what must be on disk before the hub ends.
pub(super) async fn shutdown(hub: &HubHandle, oauth: &Manager) {
    oauth.shutdown();
    let (servers, joins) = {
        let mut st = hub.lock();
        st.shutting_down = true;
        (
            std::mem::take(&mut st.servers),
            std::mem::take(&mut st.joins),
        )
    };
    let stops: Vec<_> = servers
        .into_values()
        .map(|h| tokio::spawn(async move { h.shutdown().await }))
        .collect();
    for s in stops {
        let _ = s.await;
    }
    for j in joins {
        let _ = j.await;
    }
    // The activity rows of the last calls are on disk before the hub ends: a query is answered
    // only after every record before it is written (it cuts the writer's gathering short),
    // within a bound.
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        hub.activity().recent_of(0, None, None),
    )
    .await;
    // Remembered answers are written off the async threads: on disk before the hub ends.
    let approvals = hub.approvals().clone();
    let _ = tokio::task::spawn_blocking(move || approvals.flush(std::time::Duration::from_secs(5)))
        .await;
}

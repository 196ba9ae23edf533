//! Remote servers' sign-ins through the hub: begun (the browser opened), waited for, signed out
//! of; a signed-in server started again only if enabled.

use super::{HubError, HubHandle};
use crate::oauth::Manager;
use crate::secrets::Redactions;

/// The remote entry of `id`, for a sign-in.
pub(super) fn remote_entry(
    hub: &HubHandle,
    id: &str,
) -> Result<crate::config::RemoteTransport, HubError> {
    hub.server(id)?;
    let config = hub.config();
    let entry = config
        .servers
        .iter()
        .find(|(k, _)| k.as_str() == id)
        .map(|(_, c)| c.transport.clone());
    match entry {
        Some(crate::config::Transport::Remote(r)) => Ok(r),
        _ => Err(HubError::SignIn(format!(
            "\"{id}\" is a local (stdio) server: only remote servers are signed in to; a local one takes its credentials from its env"
        ))),
    }
}

/// Begins a sign-in to a remote server through `oauth` (or joins the one running): the
/// authorization URL, opened in the person's browser. When it succeeds the server is started
/// again. What `oauth` says is masked with `redactions` before it is shown.
pub(super) async fn begin(
    hub: &HubHandle,
    oauth: &std::sync::Arc<Manager>,
    redactions: &Redactions,
    id: &str,
) -> Result<crate::oauth::SignInStarted, HubError> {
    let r = remote_entry(hub, id)?;
    if matches!(r.auth, crate::config::RemoteAuth::None) {
        return Err(HubError::SignIn(format!(
            "\"{id}\" has \"auth\": \"none\": remove it from the entry to sign in"
        )));
    }
    // Signed in: the server starts again with its tokens (an enabled one: a disabled server
    // stays stopped until enabled).
    let (hub, owned) = (hub.clone(), id.to_owned());
    let after: crate::oauth::AfterSignIn = Box::new(move || {
        Box::pin(async move {
            let _ = restart_if_enabled(&hub, &owned).await;
        })
    });
    oauth
        .begin_sign_in(id, &r.url, &r.oauth_settings(), after)
        .await
        .map_err(|e| HubError::SignIn(redactions.mask(&e)))
}

/// How the sign-in to `id` ends (waits while the browser is out, at most
/// `oauth::SIGN_IN_TIMEOUT`).
pub(super) async fn wait(
    hub: &HubHandle,
    oauth: &Manager,
    redactions: &Redactions,
    id: &str,
) -> Result<(), HubError> {
    oauth
        .wait_sign_in(id)
        .await
        .map_err(|e| HubError::SignIn(redactions.mask(&e)))?;
    // The server is started again by the sign-in's own task: seen leaving `needs_sign_in`.
    let mut rx = hub.server(id)?.watch_status();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        rx.wait_for(|s| s.state != crate::supervisor::State::NeedsSignIn),
    )
    .await;
    Ok(())
}

/// Signs out of a remote server: tokens revoked where offered, deleted from the keychain,
/// the connection ended (the server then waits in `needs_sign_in`). Returns whether the
/// authorization server accepted the revocation (`None`: it offers none, or there was no
/// sign-in).
pub(super) async fn sign_out(
    hub: &HubHandle,
    oauth: &Manager,
    id: &str,
) -> Result<Option<bool>, HubError> {
    remote_entry(hub, id)?;
    let revoked = oauth.sign_out(id).await.map_err(HubError::SignIn)?;
    restart_if_enabled(hub, id).await?;
    Ok(revoked)
}

/// Restarts a server whose config lets it run (a disabled one stays stopped).
async fn restart_if_enabled(hub: &HubHandle, id: &str) -> Result<(), HubError> {
    let server = hub.server(id)?;
    if server.status().enabled {
        server.restart().await.map_err(|_| HubError::ShuttingDown)?;
    }
    Ok(())
}

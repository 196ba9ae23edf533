//! Remote servers' sign-ins through the hub: begun (the browser opened), waited for, signed out
//! of; a signed-in server started again only if enabled.

use super::{HubError, HubHandle};

impl HubHandle {
    /// The remote entry of `id`, for a sign-in.
    pub(super) fn remote_entry(
        &self,
        id: &str,
    ) -> Result<crate::config::RemoteTransport, HubError> {
        self.server(id)?;
        let config = self.config();
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

    /// Begins a sign-in to a remote server (or joins the one running): the authorization URL,
    /// opened in the person's browser. When it succeeds the server is started again.
    pub async fn sign_in(&self, id: &str) -> Result<crate::oauth::SignInStarted, HubError> {
        let r = self.remote_entry(id)?;
        if matches!(r.auth, crate::config::RemoteAuth::None) {
            return Err(HubError::SignIn(format!(
                "\"{id}\" has \"auth\": \"none\": remove it from the entry to sign in"
            )));
        }
        // Signed in: the server starts again with its tokens (an enabled one: a disabled server
        // stays stopped until enabled).
        let (hub, owned) = (self.clone(), id.to_owned());
        let after: crate::oauth::AfterSignIn = Box::new(move || {
            Box::pin(async move {
                let _ = hub.restart_if_enabled(&owned).await;
            })
        });
        self.inner
            .ctx
            .oauth
            .begin_sign_in(id, &r.url, &r.oauth_settings(), after)
            .await
            .map_err(|e| HubError::SignIn(self.inner.redactions.mask(&e)))
    }

    /// How the sign-in to `id` ends (waits while the browser is out, at most
    /// `oauth::SIGN_IN_TIMEOUT`).
    pub async fn sign_in_wait(&self, id: &str) -> Result<(), HubError> {
        self.inner
            .ctx
            .oauth
            .wait_sign_in(id)
            .await
            .map_err(|e| HubError::SignIn(self.inner.redactions.mask(&e)))?;
        // The server is started again by the sign-in's own task: seen leaving `needs_sign_in`.
        let mut rx = self.server(id)?.watch_status();
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
    pub async fn sign_out(&self, id: &str) -> Result<Option<bool>, HubError> {
        self.remote_entry(id)?;
        let revoked = self
            .inner
            .ctx
            .oauth
            .sign_out(id)
            .await
            .map_err(HubError::SignIn)?;
        self.restart_if_enabled(id).await?;
        Ok(revoked)
    }

    /// Restarts a server whose config lets it run (a disabled one stays stopped).
    pub(super) async fn restart_if_enabled(&self, id: &str) -> Result<(), HubError> {
        let server = self.server(id)?;
        if server.status().enabled {
            server.restart().await.map_err(|_| HubError::ShuttingDown)?;
        }
        Ok(())
    }
}

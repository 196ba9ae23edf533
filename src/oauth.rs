//! Signing in to remote servers protected by the MCP authorization spec (OAuth 2.1 with PKCE,
//! RFC 9728 / 8414 discovery, dynamic client registration, RFC 8707 resource indicators, RFC 9207
//! issuer checks) and keeping the tokens: one keychain entry per server ([`vault`]), bound to the
//! authorization server that issued them, refreshed ahead of their expiry.
//!
//! [`Manager`] is the hub's: it holds the vault, the last challenge each server sent, and the
//! sign-ins in progress. [`Credentials`] is one connection's: the remote bridge asks it for the
//! `Authorization` header of each request and hands it every 401.

mod discovery;
mod flow;
pub mod net;
#[cfg(test)]
mod tests;
pub mod vault;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::logs::now_ms;
use crate::secrets::Redactions;

pub use discovery::Challenge;
pub use flow::{AfterSignIn, SignInStarted, SIGN_IN_TIMEOUT};
pub use vault::{MemoryVault, NoVault, Vault};

/// Refreshed this long before expiry at most (a quarter of the lifetime when that is shorter).
pub const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// What a sign-in left in the keychain: the tokens and everything needed to refresh or revoke
/// them, bound to the issuer that made them.
#[derive(Clone, Serialize, Deserialize)]
pub struct Grant {
    /// The server URL these tokens were asked for (a changed URL means a new sign-in).
    pub server_url: String,
    /// The RFC 8707 resource the tokens are for.
    pub resource: String,
    /// The authorization server (its metadata's `issuer`).
    pub issuer: String,
    /// The issuer's token endpoint.
    pub token_endpoint: String,
    /// Its revocation endpoint (RFC 7009), when it has one.
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    /// The client registration at that issuer.
    pub client_id: String,
    /// The client secret, when the registration gave one.
    #[serde(default)]
    pub client_secret: Option<String>,
    /// `client_secret_basic` or `client_secret_post` (with a secret), `none` without.
    #[serde(default)]
    pub token_auth: Option<String>,
    /// The redirect URI registered (its port is reused at the next sign-in when free).
    pub redirect_uri: String,
    /// Whether the registration was made by Gatehouse (dynamic registration).
    #[serde(default)]
    pub registered: bool,
    /// The access token.
    pub access_token: String,
    /// The refresh token, when one was given.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// When the access token expires (ms since the epoch), when the server said.
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
    /// When it was obtained.
    pub obtained_ms: u64,
    /// The scopes granted (space-separated).
    #[serde(default)]
    pub scope: Option<String>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens or the client secret.
        f.debug_struct("Grant")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("expires_at_ms", &self.expires_at_ms)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// When to refresh: `REFRESH_AHEAD` before expiry, or after three quarters of a shorter life.
    fn refresh_due(&self, now: u64) -> bool {
        let Some(exp) = self.expires_at_ms else {
            return false;
        };
        let life = exp.saturating_sub(self.obtained_ms);
        let ahead = (REFRESH_AHEAD.as_millis() as u64).min(life / 4);
        now + ahead >= exp
    }

    fn client_auth(&self) -> ClientAuth<'_> {
        match (&self.client_secret, self.token_auth.as_deref()) {
            (Some(s), Some("client_secret_basic")) => ClientAuth::Basic(&self.client_id, s),
            (Some(s), _) => ClientAuth::Post(&self.client_id, s),
            (None, _) => ClientAuth::Public(&self.client_id),
        }
    }
}

/// How a token request authenticates the client.
#[derive(Clone, Copy)]
enum ClientAuth<'a> {
    Public(&'a str),
    Post(&'a str, &'a str),
    Basic(&'a str, &'a str),
}

/// Why no token can be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// The person has to sign in (again); the text says why.
    SignIn(String),
    /// The authorization server could not be reached or failed; trying again later may work.
    Transient(String),
}

/// The hub's OAuth state.
pub struct Manager {
    vault: Arc<dyn Vault>,
    redactions: Arc<Redactions>,
    /// The last `WWW-Authenticate` challenge each server sent (for the next sign-in's scopes
    /// and metadata).
    challenges: Mutex<HashMap<String, Challenge>>,
    /// Each server's tokens while a connection uses them (one refresh at a time per server).
    tokens: Mutex<HashMap<String, Arc<Tokens>>>,
    /// Sign-ins in progress (or ended), by server.
    sign_ins: Mutex<HashMap<String, flow::Running>>,
    /// Held while a sign-in begins (discovery, registration), so one server never gets two.
    beginning: tokio::sync::Mutex<()>,
    /// The program that opens authorization URLs (else `GATEHOUSE_BROWSER`, else the
    /// platform's opener).
    browser: Option<std::ffi::OsString>,
}

impl Manager {
    /// A manager keeping tokens in `vault`; every token it holds is masked with `redactions`.
    pub fn new(vault: Arc<dyn Vault>, redactions: Arc<Redactions>) -> Manager {
        Manager::with_browser(vault, redactions, None)
    }

    /// Like [`Manager::new`], opening authorization URLs with `browser` (a program given the URL
    /// as its one argument).
    pub fn with_browser(
        vault: Arc<dyn Vault>,
        redactions: Arc<Redactions>,
        browser: Option<std::ffi::OsString>,
    ) -> Manager {
        Manager {
            browser,
            vault,
            redactions,
            challenges: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            sign_ins: Mutex::new(HashMap::new()),
            beginning: tokio::sync::Mutex::new(()),
        }
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        crate::sync::lock(m)
    }

    /// The grant kept for `server`, if any (blocking keychain read on the blocking pool).
    pub async fn load(&self, server: &str) -> Result<Option<Grant>, String> {
        let vault = self.vault.clone();
        let name = vault::entry_name(server);
        let raw = tokio::task::spawn_blocking(move || vault::load_split(vault.as_ref(), &name))
            .await
            .map_err(|e| format!("the keychain task failed: {e}"))??;
        let Some(raw) = raw else { return Ok(None) };
        match serde_json::from_str::<Grant>(&raw) {
            Ok(g) => {
                self.mask(server, &g);
                Ok(Some(g))
            }
            // A damaged record is as good as none: a new sign-in replaces it.
            Err(_) => Ok(None),
        }
    }

    async fn store(&self, server: &str, grant: &Grant) -> Result<(), String> {
        self.mask(server, grant);
        let vault = self.vault.clone();
        let name = vault::entry_name(server);
        let value = serde_json::to_string(grant).map_err(|e| e.to_string())?;
        tokio::task::spawn_blocking(move || {
            vault::save_split(vault.as_ref(), &name, &value, vault::PART)
        })
        .await
        .map_err(|e| format!("the keychain task failed: {e}"))?
        .map_err(|e| format!("cannot keep the tokens in the keychain: {e}"))
    }

    /// Deletes the kept grant of `server` (and forgets its tokens in memory: a connection still
    /// holding them gets no more, and no refresh stores them again).
    pub async fn forget(&self, server: &str) -> Result<(), String> {
        if let Some(t) = Self::lock(&self.tokens).remove(server) {
            t.forgotten.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let vault = self.vault.clone();
        let name = vault::entry_name(server);
        tokio::task::spawn_blocking(move || vault::remove_split(vault.as_ref(), &name))
            .await
            .map_err(|e| format!("the keychain task failed: {e}"))?
    }

    fn mask(&self, server: &str, g: &Grant) {
        let mut values = vec![g.access_token.as_str()];
        values.extend(g.refresh_token.as_deref());
        values.extend(g.client_secret.as_deref());
        self.redactions.replace(&format!("oauth:{server}"), &values);
    }

    /// Remembers what a server's challenge asked for.
    pub fn note_challenge(&self, server: &str, c: Challenge) {
        let mut all = Self::lock(&self.challenges);
        let merged = match all.get(server) {
            // Scopes asked for add up (incremental consent).
            Some(old) => Challenge {
                scope: union_scopes(old.scope.as_deref(), c.scope.as_deref()),
                resource_metadata: c
                    .resource_metadata
                    .or_else(|| old.resource_metadata.clone()),
                error: c.error,
            },
            None => c,
        };
        all.insert(server.to_owned(), merged);
    }

    fn challenge(&self, server: &str) -> Option<Challenge> {
        Self::lock(&self.challenges).get(server).cloned()
    }

    /// The credentials of one connection to `server` at `url`: its tokens when a sign-in left
    /// some for this URL, none otherwise. `capable`: whether a 401 may lead to a sign-in.
    pub async fn credentials(
        self: &Arc<Self>,
        server: &str,
        url: &str,
        capable: bool,
    ) -> Result<Arc<Credentials>, String> {
        // A keychain that cannot be read means "no stored sign-in": the server is connected to
        // without a token, and only its 401 asks for a sign-in (saying why none was found).
        let mut unreadable = None;
        let tokens = if capable {
            let cached = Self::lock(&self.tokens).get(server).cloned();
            match cached {
                Some(t) if t.server_url() == url => Some(t),
                _ => match self.load(server).await {
                    Ok(Some(g)) if g.server_url == url => {
                        let allowed = net::Allowed::for_server(
                            &reqwest::Url::parse(url).map_err(|e| e.to_string())?,
                        )
                        .await;
                        let t = Arc::new(Tokens {
                            server: server.to_owned(),
                            url: url.to_owned(),
                            manager: Arc::downgrade(self),
                            allowed,
                            grant: tokio::sync::Mutex::new(g),
                            forgotten: Default::default(),
                        });
                        Self::lock(&self.tokens).insert(server.to_owned(), t.clone());
                        Some(t)
                    }
                    Ok(_) => None,
                    Err(e) => {
                        unreadable = Some(e);
                        None
                    }
                },
            }
        } else {
            None
        };
        Ok(Arc::new(Credentials {
            server: server.to_owned(),
            capable,
            tokens,
            manager: self.clone(),
            needed: Mutex::new(None),
            unreadable,
        }))
    }
}

/// The union of two space-separated scope lists, in first-seen order.
fn union_scopes(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for s in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

/// One server's tokens, shared by its connections: refreshed one at a time.
pub struct Tokens {
    server: String,
    url: String,
    manager: std::sync::Weak<Manager>,
    allowed: net::Allowed,
    grant: tokio::sync::Mutex<Grant>,
    /// Signed out: these tokens are used no more.
    forgotten: std::sync::atomic::AtomicBool,
}

impl Tokens {
    fn server_url(&self) -> &str {
        &self.url
    }

    /// The access token to send now, refreshed first when it is about to expire.
    pub async fn bearer(&self) -> Result<String, AuthError> {
        let mut g = self.grant.lock().await;
        self.check_forgotten()?;
        if g.refresh_due(now_ms()) {
            self.refresh(&mut g).await?;
        }
        Ok(g.access_token.clone())
    }

    /// The server refused `used`: refreshed once (unless another request already did), or the
    /// person has to sign in again.
    pub async fn after_refusal(&self, used: &str) -> Result<String, AuthError> {
        let mut g = self.grant.lock().await;
        self.check_forgotten()?;
        if g.access_token != used {
            return Ok(g.access_token.clone());
        }
        self.refresh(&mut g).await?;
        Ok(g.access_token.clone())
    }

    fn check_forgotten(&self) -> Result<(), AuthError> {
        if self.forgotten.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(AuthError::SignIn("signed out".into()));
        }
        Ok(())
    }

    /// Holds the grant (no refresh meanwhile) while `f` runs on a copy of it.
    pub(crate) async fn locked<T>(&self, f: impl AsyncFnOnce(&Grant) -> T) -> T {
        let g = self.grant.lock().await;
        f(&g).await
    }

    async fn refresh(&self, g: &mut Grant) -> Result<(), AuthError> {
        let Some(refresh) = g.refresh_token.clone() else {
            return Err(AuthError::SignIn(
                "the access token expired and the authorization server gave no refresh token"
                    .into(),
            ));
        };
        let fresh = flow::refresh(g, &refresh, self.allowed).await?;
        *g = fresh;
        if let Some(m) = self.manager.upgrade() {
            m.store(&self.server, g)
                .await
                .map_err(AuthError::Transient)?;
        }
        tracing::info!(server = %self.server, "access token refreshed");
        Ok(())
    }
}

/// One connection's credentials.
pub struct Credentials {
    server: String,
    capable: bool,
    tokens: Option<Arc<Tokens>>,
    manager: Arc<Manager>,
    /// Set when this connection found that the person has to sign in: why.
    needed: Mutex<Option<String>>,
    /// Why the keychain could not be read when the connection began (it went on without
    /// tokens).
    unreadable: Option<String>,
}

/// What to do after the server refused a request.
pub enum Refused {
    /// Send it again: the token was refreshed ([`Credentials::header`] gives the new one).
    Retry,
    /// The connection ends: a sign-in is needed (see [`Credentials::sign_in_needed`]) or the
    /// authorization server failed.
    End(String),
    /// Not a matter for OAuth: the answer stands.
    Stands,
}

impl Credentials {
    /// The `Authorization` value for the next request (`None`: send none).
    pub async fn header(&self) -> Result<Option<String>, String> {
        let Some(t) = &self.tokens else {
            return Ok(None);
        };
        match t.bearer().await {
            Ok(tok) => Ok(Some(format!("Bearer {tok}"))),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// The server answered `status` (401/403) with `www_authenticate`; `sent` is the
    /// `Authorization` value the request carried. At most one retry per request: the caller
    /// passes `retried`.
    pub async fn refused(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
        sent: Option<&str>,
        retried: bool,
    ) -> Refused {
        if !self.capable {
            return Refused::Stands;
        }
        let challenge = www_authenticate.and_then(Challenge::parse);
        if status == 403 {
            // Only a request for more scope is ours to handle (a sign-in asking for it).
            return match challenge {
                Some(c) if c.error.as_deref() == Some("insufficient_scope") => {
                    let scope = c.scope.clone().unwrap_or_default();
                    self.manager.note_challenge(&self.server, c);
                    Refused::End(self.needs(format!(
                        "the server asks for more access (scope \"{scope}\")"
                    )))
                }
                _ => Refused::Stands,
            };
        }
        let Some(c) = challenge else {
            // A 401 without a Bearer challenge is not an OAuth server's.
            return Refused::Stands;
        };
        self.manager.note_challenge(&self.server, c);
        match (&self.tokens, sent.and_then(|s| s.strip_prefix("Bearer "))) {
            (Some(t), Some(used)) if !retried => match t.after_refusal(used).await {
                Ok(_) => Refused::Retry,
                Err(e) => Refused::End(self.failed(e)),
            },
            (Some(_), _) => Refused::End(
                self.needs("the server refused the tokens from the last sign-in".into()),
            ),
            (None, _) => Refused::End(self.needs(self.no_tokens("the server asks for a sign-in"))),
        }
    }

    fn failed(&self, e: AuthError) -> String {
        match e {
            AuthError::SignIn(why) => self.needs(why),
            AuthError::Transient(why) => format!("cannot refresh the sign-in: {why}"),
        }
    }

    fn needs(&self, why: String) -> String {
        let text = format!("needs a sign-in: {why}");
        *Manager::lock(&self.needed) = Some(why);
        text
    }

    /// `why`, and — when the keychain could not be read — that no sign-in could be found there.
    pub fn no_tokens(&self, why: &str) -> String {
        match &self.unreadable {
            Some(e) => format!("{why}, and no sign-in can be read: {e}"),
            None => why.to_owned(),
        }
    }

    /// Whether a sign-in left tokens for this connection.
    pub fn signed_in(&self) -> bool {
        self.tokens.is_some()
    }

    /// Why the person has to sign in, if this connection found they do.
    pub fn sign_in_needed(&self) -> Option<String> {
        Manager::lock(&self.needed).clone()
    }
}

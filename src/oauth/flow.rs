//! The sign-in itself (authorization code + PKCE S256 through the person's browser, a loopback
//! redirect on 127.0.0.1 with a random port and `state`, the RFC 9207 `iss` check before the code
//! is redeemed), refreshing, and revoking.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use sha2::Digest as _;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::discovery::{self, same_url, ServerMetadata};
use super::net::{self, Allowed, Body};
use super::{union_scopes, AuthError, ClientAuth, Grant, Manager};
use crate::config::OAuthSettings;
use crate::logs::now_ms;

mod redirect;
#[cfg(test)]
pub(in crate::oauth) use redirect::{answer_for as redirect_answer_for, Callback};
use redirect::{bind_any, open_browser, redirect_port};

/// How long a sign-in waits for the browser to come back.
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);
/// One request to the loopback redirect listener: its head within this, at most 8 KiB.
/// The longest token life believed (a year): a larger `expires_in` is clamped to it, so no
/// value can overflow the expiry (which made every request refresh).
pub const MAX_TOKEN_LIFE_SECS: u64 = 365 * 24 * 3600;

/// When a token given now (ms) with `expires_in` seconds expires, its life clamped.
pub fn expires_at(now_ms: u64, expires_in: u64) -> u64 {
    now_ms.saturating_add(expires_in.min(MAX_TOKEN_LIFE_SECS) * 1000)
}

/// A sign-in that has begun: where the person's browser was sent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SignInStarted {
    /// The authorization URL (also opened in the browser).
    pub url: String,
    /// Whether a browser was started with it (if not, the person opens it).
    pub opened: bool,
}

/// A sign-in in progress (or ended: `done` holds how).
pub(super) struct Running {
    started: SignInStarted,
    done: watch::Receiver<Option<Result<(), String>>>,
    /// The task waiting for the browser: aborted by [`Manager::shutdown`].
    task: tokio::task::JoinHandle<()>,
}

/// What runs after a sign-in succeeded (the hub starts the server again).
pub type AfterSignIn = Box<dyn FnOnce() -> futures_util::future::BoxFuture<'static, ()> + Send>;

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

fn random(n: usize) -> Result<String, String> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| format!("no randomness: {e}"))?;
    Ok(b64(&buf))
}

/// The S256 challenge of a PKCE verifier (RFC 7636 §4.2).
pub(super) fn pkce_challenge(verifier: &str) -> String {
    b64(&sha2::Sha256::digest(verifier.as_bytes()))
}

/// The loopback listener the browser returns to: on `port` when a registration is reused (its
/// redirect URI names it), else on any free port.
async fn redirect_listener(port: Option<u16>) -> Result<TcpListener, String> {
    match port {
        Some(port) => match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => Ok(l),
            Err(_) => bind_any().await,
        },
        None => bind_any().await,
    }
}

/// The authorization endpoint with the request's parameters, checked before a browser opens it.
fn authorization_url(
    endpoint: &str,
    params: &[(&str, &str)],
    scope: Option<&str>,
    allowed: Allowed,
) -> Result<reqwest::Url, String> {
    let mut url = reqwest::Url::parse(endpoint).map_err(|e| {
        format!("the authorization endpoint \"{endpoint}\" is not a valid URL: {e}")
    })?;
    browser_url_ok(&url, allowed)?;
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in params {
            q.append_pair(k, v);
        }
        if let Some(s) = scope {
            q.append_pair("scope", s);
        }
    }
    Ok(url)
}

impl Manager {
    /// Begins a sign-in to `server` at `url` (or joins the one already running): discovery,
    /// client registration, the loopback listener, the browser. The rest runs on its own task
    /// (`after` follows a success); [`Manager::wait_sign_in`] says how it ended.
    pub async fn begin_sign_in(
        self: &Arc<Self>,
        server: &str,
        url: &str,
        settings: &OAuthSettings,
        after: AfterSignIn,
    ) -> Result<SignInStarted, String> {
        // One beginning at a time, so two clicks never start two sign-ins to one server (each
        // step below is bounded by `net::REQUEST_TIMEOUT`).
        let _one = self.beginning.lock().await;
        if let Some(r) = Self::lock(&self.sign_ins).get(server) {
            if r.done.borrow().is_none() {
                return Ok(r.started.clone());
            }
        }
        let server_url =
            reqwest::Url::parse(url).map_err(|e| format!("invalid url \"{url}\": {e}"))?;
        let allowed = Allowed::for_server(&server_url).await;
        let challenge = self.challenge(server);
        let prm = discovery::resource_metadata(&server_url, challenge.as_ref(), allowed).await?;
        let issuer = prm.authorization_servers[0].clone();
        let meta = discovery::server_metadata(&issuer, allowed).await?;
        let previous = self.load(server).await.ok().flatten();
        // A registration is reused only at the same issuer, and only with its redirect port.
        let reusable = previous.as_ref().filter(|g| {
            same_url(&g.issuer, &meta.issuer) && g.registered && settings.client_id.is_none()
        });
        let listener =
            redirect_listener(reusable.and_then(|g| redirect_port(&g.redirect_uri))).await?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("the sign-in listener: {e}"))?
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}/callback");
        // What the server asked for (its challenge, else every scope it lists), what the entry
        // adds, and what an earlier sign-in had: scopes only grow (incremental consent).
        let asked = challenge
            .as_ref()
            .and_then(|c| c.scope.clone())
            .or_else(|| (!prm.scopes_supported.is_empty()).then(|| prm.scopes_supported.join(" ")));
        let scope = union_scopes(
            union_scopes(Some(&settings.scopes.join(" ")), asked.as_deref()).as_deref(),
            previous.as_ref().and_then(|g| g.scope.as_deref()),
        );
        let client = match (&settings.client_id, reusable) {
            (Some(id), _) => Client {
                id: id.clone(),
                secret: None,
                auth: None,
                registered: false,
            },
            (None, Some(g)) if g.redirect_uri == redirect_uri => Client {
                id: g.client_id.clone(),
                secret: g.client_secret.clone(),
                auth: g.token_auth.clone(),
                registered: true,
            },
            (None, _) => register(&meta, &redirect_uri, scope.as_deref(), allowed).await?,
        };
        let verifier = random(32)?;
        let state = random(16)?;
        let auth_url = authorization_url(
            &meta.authorization_endpoint,
            &[
                ("response_type", "code"),
                ("client_id", &client.id),
                ("redirect_uri", &redirect_uri),
                ("code_challenge", &pkce_challenge(&verifier)),
                ("code_challenge_method", "S256"),
                ("state", &state),
                ("resource", &prm.resource),
            ],
            scope.as_deref(),
            allowed,
        )?;
        let opened = open_browser(self.browser.clone(), auth_url.as_str());
        let started = SignInStarted {
            url: auth_url.to_string(),
            opened,
        };
        let (tx, rx) = watch::channel(None);
        let pending = Pending {
            server_url: url.to_owned(),
            resource: prm.resource,
            meta,
            client,
            redirect_uri,
            verifier,
            state,
            allowed,
        };
        let task = self.finish_in_background(server, pending, listener, after, tx);
        Self::lock(&self.sign_ins).insert(
            server.to_owned(),
            Running {
                started: started.clone(),
                done: rx,
                task,
            },
        );
        Ok(started)
    }

    /// The rest of a sign-in, on its own task: the browser's return on `listener` (bounded by
    /// `SIGN_IN_TIMEOUT`), the grant stored, `after` run on success; the outcome sent on `tx`.
    fn finish_in_background(
        self: &Arc<Self>,
        server: &str,
        pending: Pending,
        listener: TcpListener,
        after: AfterSignIn,
        tx: watch::Sender<Option<Result<(), String>>>,
    ) -> tokio::task::JoinHandle<()> {
        let manager = self.clone();
        let name = server.to_owned();
        tokio::spawn(async move {
            let result = match tokio::time::timeout(SIGN_IN_TIMEOUT, pending.finish(listener)).await
            {
                Ok(Ok(grant)) => match manager.store(&name, &grant).await {
                    Ok(()) => {
                        Self::lock(&manager.tokens).remove(&name);
                        Self::lock(&manager.challenges).remove(&name);
                        tracing::info!(server = %name, issuer = %grant.issuer, "signed in");
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
                Ok(Err(e)) => Err(e),
                Err(_) => Err(format!(
                    "the browser did not come back within {} minutes; sign in again",
                    SIGN_IN_TIMEOUT.as_secs() / 60
                )),
            };
            match &result {
                Ok(()) => after().await,
                Err(e) => tracing::warn!(server = %name, error = %e, "sign-in failed"),
            }
            let _ = tx.send(Some(result));
        })
    }

    /// How the sign-in to `server` ended (waits while it runs); an error when none was begun.
    pub async fn wait_sign_in(&self, server: &str) -> Result<(), String> {
        let rx = Self::lock(&self.sign_ins)
            .get(server)
            .map(|r| r.done.clone());
        let Some(mut rx) = rx else {
            return Err(format!("no sign-in to \"{server}\" was begun"));
        };
        let outcome = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| "the sign-in was abandoned".to_owned())?
            .clone();
        outcome.unwrap_or_else(|| Err("the sign-in was abandoned".into()))
    }

    /// Ends every sign-in still waiting for its browser (the hub is shutting down).
    pub fn shutdown(&self) {
        for r in Self::lock(&self.sign_ins).values() {
            r.task.abort();
        }
    }

    /// Signs out of `server`: its tokens are revoked where the authorization server offers
    /// revocation (RFC 7009), then deleted. Returns whether a revocation was accepted.
    pub async fn sign_out(&self, server: &str) -> Result<Option<bool>, String> {
        // A connection's refresh must not run (and store new tokens) while the old ones are
        // revoked and deleted: the grant is held for the whole sign-out.
        let cached = Self::lock(&self.tokens).get(server).cloned();
        match cached {
            Some(t) => t.locked(async |_| self.sign_out_held(server).await).await,
            None => self.sign_out_held(server).await,
        }
    }

    async fn sign_out_held(&self, server: &str) -> Result<Option<bool>, String> {
        let grant = self.load(server).await?;
        let revoked = match &grant {
            Some(g) => match &g.revocation_endpoint {
                Some(endpoint) => {
                    let allowed = match reqwest::Url::parse(&g.server_url) {
                        Ok(u) => Allowed::for_server(&u).await,
                        Err(_) => Allowed {
                            loopback: false,
                            private: false,
                        },
                    };
                    let mut ok = true;
                    let tokens = g
                        .refresh_token
                        .iter()
                        .map(|t| (t.as_str(), "refresh_token"))
                        .chain(std::iter::once((g.access_token.as_str(), "access_token")));
                    for (token, hint) in tokens {
                        ok &= revoke(g, endpoint, token, hint, allowed).await;
                    }
                    Some(ok)
                }
                None => None,
            },
            None => None,
        };
        self.forget(server).await?;
        Self::lock(&self.challenges).remove(server);
        Ok(revoked)
    }
}

/// The authorization endpoint is opened in the browser, not fetched by us: its scheme is checked
/// (https; http on loopback only when the server is there).
fn browser_url_ok(url: &reqwest::Url, allowed: Allowed) -> Result<(), String> {
    let host = url.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ip = bare.parse::<std::net::IpAddr>().ok();
    let reach = ip.map(net::reach);
    if reach == Some(net::Reach::Forbidden) {
        return Err(format!(
            "the authorization endpoint {url} is on a link-local or reserved address: refused"
        ));
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if allowed.loopback && (reach == Some(net::Reach::Loopback) || host == "localhost") => Ok(()),
        _ => Err(format!(
            "the authorization endpoint {url} is refused: it must be https:// (http:// only on loopback, for a server on loopback)"
        )),
    }
}

struct Client {
    id: String,
    secret: Option<String>,
    auth: Option<String>,
    registered: bool,
}

/// Dynamic client registration (RFC 7591) as a native app.
async fn register(
    meta: &ServerMetadata,
    redirect_uri: &str,
    scope: Option<&str>,
    allowed: Allowed,
) -> Result<Client, String> {
    let Some(endpoint) = &meta.registration_endpoint else {
        if meta.client_id_metadata_document_supported {
            return Err(format!(
                "the authorization server {} takes only client metadata documents (an https URL as the client id), which a local app like Gatehouse has none of: register Gatehouse there by hand and put the client id in this server's entry as \"oauth\": {{\"client_id\": \"…\"}}",
                meta.issuer
            ));
        }
        return Err(format!(
            "the authorization server {} does not offer client registration: register Gatehouse there by hand and put the client id in this server's entry as \"oauth\": {{\"client_id\": \"…\"}}",
            meta.issuer
        ));
    };
    let mut body = serde_json::json!({
        "client_name": "Gatehouse",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if let Some(s) = scope {
        body["scope"] = s.into();
    }
    let answer = net::request(
        endpoint,
        allowed,
        "the registration endpoint",
        Body::Json(&body),
        None,
    )
    .await?;
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        client_secret: Option<String>,
        token_endpoint_auth_method: Option<String>,
    }
    if !(200..300).contains(&answer.status) {
        return Err(format!(
            "the authorization server refused to register Gatehouse (HTTP {}): {}",
            answer.status,
            oauth_error(&answer.body)
        ));
    }
    // serde's message may quote a value (a client secret): only the position is said.
    let r: Registered = serde_json::from_slice(&answer.body).map_err(|e| {
        format!(
            "the registration answer is not a valid RFC 7591 answer (line {}, column {})",
            e.line(),
            e.column()
        )
    })?;
    Ok(Client {
        id: r.client_id,
        secret: r.client_secret,
        auth: r.token_endpoint_auth_method,
        registered: true,
    })
}

/// An OAuth error answer's `error` and `error_description`, bounded.
fn oauth_error(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct E {
        error: Option<String>,
        error_description: Option<String>,
    }
    match serde_json::from_slice::<E>(body) {
        Ok(E {
            error: Some(e),
            error_description: d,
        }) => {
            let mut s = e;
            if let Some(d) = d {
                s.push_str(": ");
                s.push_str(&d);
            }
            s.chars().take(300).collect()
        }
        _ => "no OAuth error in the answer".into(),
    }
}

/// What the rest of a sign-in needs.
struct Pending {
    server_url: String,
    resource: String,
    meta: ServerMetadata,
    client: Client,
    redirect_uri: String,
    verifier: String,
    state: String,
    allowed: Allowed,
}

impl Pending {
    async fn redeem(&self, code: &str) -> Result<Grant, String> {
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", &self.redirect_uri),
            ("code_verifier", &self.verifier),
            ("resource", &self.resource),
        ];
        let auth = client_auth(&self.client);
        let basic = push_client(&mut form, auth);
        let answer = net::request(
            &self.meta.token_endpoint,
            self.allowed,
            "the token endpoint",
            Body::Form(&form),
            basic,
        )
        .await?;
        if answer.status != 200 {
            return Err(format!(
                "the authorization server did not redeem the code (HTTP {}): {}",
                answer.status,
                oauth_error(&answer.body)
            ));
        }
        let t = parse_tokens(&answer.body)?;
        let now = now_ms();
        Ok(Grant {
            server_url: self.server_url.clone(),
            resource: self.resource.clone(),
            issuer: self.meta.issuer.clone(),
            token_endpoint: self.meta.token_endpoint.clone(),
            revocation_endpoint: self.meta.revocation_endpoint.clone(),
            client_id: self.client.id.clone(),
            client_secret: self.client.secret.clone(),
            token_auth: self.client.auth.clone(),
            redirect_uri: self.redirect_uri.clone(),
            registered: self.client.registered,
            access_token: t.access_token,
            refresh_token: t.refresh_token,
            expires_at_ms: t.expires_in.map(|s| expires_at(now, s)),
            obtained_ms: now,
            scope: t.scope,
        })
    }
}

fn client_auth(c: &Client) -> ClientAuth<'_> {
    match (&c.secret, c.auth.as_deref()) {
        (Some(s), Some("client_secret_basic")) => ClientAuth::Basic(&c.id, s),
        (Some(s), _) => ClientAuth::Post(&c.id, s),
        (None, _) => ClientAuth::Public(&c.id),
    }
}

/// Adds the client's identity to a token request's form; returns the Basic credentials when
/// that is how it authenticates.
fn push_client<'a>(
    form: &mut Vec<(&'a str, &'a str)>,
    auth: ClientAuth<'a>,
) -> Option<(&'a str, &'a str)> {
    match auth {
        ClientAuth::Public(id) => {
            form.push(("client_id", id));
            None
        }
        ClientAuth::Post(id, secret) => {
            form.push(("client_id", id));
            form.push(("client_secret", secret));
            None
        }
        ClientAuth::Basic(id, secret) => Some((id, secret)),
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: String,
    expires_in: Option<u64>,
    refresh_token: Option<String>,
    scope: Option<String>,
}

fn parse_tokens(body: &[u8]) -> Result<TokenAnswer, String> {
    // serde's message may quote a value (a token): only the position is said.
    let t: TokenAnswer = serde_json::from_slice(body).map_err(|e| {
        format!(
            "the token answer is not a valid RFC 6749 token response (line {}, column {})",
            e.line(),
            e.column()
        )
    })?;
    if !t.token_type.eq_ignore_ascii_case("bearer") {
        return Err(format!(
            "the authorization server gave a \"{}\" token; Gatehouse uses Bearer tokens only",
            t.token_type.chars().take(40).collect::<String>()
        ));
    }
    if t.access_token.is_empty() {
        return Err("the authorization server gave an empty access token".into());
    }
    Ok(t)
}

/// A refresh (RFC 6749 §6) at the grant's own token endpoint, for its resource. A refusal of
/// the refresh token means a new sign-in; anything else may pass.
pub(super) async fn refresh(
    g: &Grant,
    refresh: &str,
    allowed: Allowed,
) -> Result<Grant, AuthError> {
    let mut form: Vec<(&str, &str)> = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("resource", &g.resource),
    ];
    let basic = push_client(&mut form, g.client_auth());
    let answer = net::request(
        &g.token_endpoint,
        allowed,
        "the token endpoint",
        Body::Form(&form),
        basic,
    )
    .await
    .map_err(AuthError::Transient)?;
    if matches!(answer.status, 400 | 401) {
        return Err(AuthError::SignIn(format!(
            "the authorization server no longer accepts the sign-in ({})",
            oauth_error(&answer.body)
        )));
    }
    if answer.status != 200 {
        return Err(AuthError::Transient(format!(
            "the token endpoint answered HTTP {}",
            answer.status
        )));
    }
    let t = parse_tokens(&answer.body).map_err(AuthError::Transient)?;
    let now = now_ms();
    let mut fresh = g.clone();
    fresh.access_token = t.access_token;
    // A server that does not rotate the refresh token keeps the old one valid.
    if let Some(r) = t.refresh_token {
        fresh.refresh_token = Some(r);
    }
    fresh.expires_at_ms = t.expires_in.map(|s| expires_at(now, s));
    fresh.obtained_ms = now;
    if t.scope.is_some() {
        fresh.scope = t.scope;
    }
    Ok(fresh)
}

async fn revoke(g: &Grant, endpoint: &str, token: &str, hint: &str, allowed: Allowed) -> bool {
    let mut form: Vec<(&str, &str)> = vec![("token", token), ("token_type_hint", hint)];
    let basic = push_client(&mut form, g.client_auth());
    match net::request(
        endpoint,
        allowed,
        "the revocation endpoint",
        Body::Form(&form),
        basic,
    )
    .await
    {
        Ok(a) => a.status == 200,
        Err(e) => {
            tracing::warn!(error = %e, "revocation failed");
            false
        }
    }
}

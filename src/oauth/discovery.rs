//! Finding who signs a server's tokens: the `WWW-Authenticate` challenge (RFC 6750 §3), the
//! server's protected-resource metadata (RFC 9728, from the challenge or the well-known paths)
//! and its authorization server's metadata (RFC 8414, then OpenID discovery).

use serde::Deserialize;

use super::net::{self, Allowed, Body};

/// What a `WWW-Authenticate: Bearer …` challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the protected-resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the server wants for this request.
    pub scope: Option<String>,
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
}

impl Challenge {
    /// Reads the Bearer challenge of a `WWW-Authenticate` value; `None` when there is none.
    pub fn parse(header: &str) -> Option<Challenge> {
        let lower = header.to_ascii_lowercase();
        let start = find_scheme(&lower, "bearer")?;
        let mut rest = &header[start + "bearer".len()..];
        let mut c = Challenge::default();
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            let Some(eq) = rest.find('=') else { break };
            let name = rest[..eq].trim();
            if name.contains(' ') {
                break; // the next challenge's scheme
            }
            let after = &rest[eq + 1..];
            let (value, next) = if let Some(q) = after.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = q.char_indices();
                let mut end = q.len();
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                out.push(n);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        _ => out.push(ch),
                    }
                }
                (out, &q[end.min(q.len())..])
            } else {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_owned(), &after[end..])
            };
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => c.resource_metadata = Some(value),
                "scope" => c.scope = Some(value),
                "error" => c.error = Some(value),
                _ => {}
            }
            rest = next;
        }
        Some(c)
    }
}

/// Where `scheme` starts as an auth-scheme token in a lower-cased header value.
fn find_scheme(lower: &str, scheme: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = lower[from..].find(scheme) {
        let at = from + i;
        let before_ok = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',');
        let after = lower.as_bytes().get(at + scheme.len());
        if before_ok && after.is_none_or(|b| *b == b' ') {
            return Some(at);
        }
        from = at + scheme.len();
    }
    None
}

/// A server's protected-resource metadata (RFC 9728), the parts used.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceMetadata {
    /// The resource identifier: what tokens are asked for (RFC 8707 `resource`).
    pub resource: String,
    /// Its authorization servers' issuer URLs.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes it knows.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

/// An authorization server's metadata (RFC 8414), the parts used.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerMetadata {
    /// Its issuer identifier (checked against the one asked for).
    pub issuer: String,
    /// Where the browser goes.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are redeemed.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591), when offered.
    pub registration_endpoint: Option<String>,
    /// Token revocation (RFC 7009), when offered.
    pub revocation_endpoint: Option<String>,
    /// PKCE methods; S256 is required.
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
    /// It always sends `iss` in the authorization response (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// It takes Client ID Metadata Documents as client ids.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

/// Two URLs naming the same thing: equal, or equal but for one trailing slash.
pub fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The server's protected-resource metadata: from the challenge's `resource_metadata` if it
/// gave one, else the well-known path under the server's path, else at the root. Its
/// `resource` must be the server's URL (or an origin/path prefix of it).
pub async fn resource_metadata(
    server: &reqwest::Url,
    challenge: Option<&Challenge>,
    allowed: Allowed,
) -> Result<ResourceMetadata, String> {
    let mut candidates = Vec::new();
    if let Some(u) = challenge.and_then(|c| c.resource_metadata.clone()) {
        candidates.push(u);
    }
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    let (url, meta) = match first_document::<ResourceMetadata>(candidates, allowed, "protected-resource metadata").await? {
        Ok(found) => found,
        Err(last) => {
            return Err(format!(
                "the server asked for a sign-in but publishes no protected-resource metadata (RFC 9728): {last}"
            ))
        }
    };
    let ours = server.as_str();
    let resource_ok = same_url(&meta.resource, ours)
        || reqwest::Url::parse(&meta.resource).is_ok_and(|r| {
            // The same origin, and a path that is the server's or a whole-segment prefix.
            let prefix = r.path().trim_end_matches('/');
            r.origin() == server.origin()
                && (prefix.is_empty()
                    || server.path() == prefix
                    || server.path().starts_with(&format!("{prefix}/")))
        });
    if !resource_ok {
        return Err(format!(
                "the protected-resource metadata at {url} is for {}, not for {ours}: refused (tokens for one server are never asked for another)",
                meta.resource
            ));
    }
    if meta.authorization_servers.is_empty() {
        return Err(format!(
            "the protected-resource metadata at {url} names no authorization server"
        ));
    }
    Ok(meta)
}

/// The authorization server's metadata, by RFC 8414 then OpenID discovery. Its `issuer` must be
/// the one asked for, and it must offer PKCE with S256.
pub async fn server_metadata(issuer: &str, allowed: Allowed) -> Result<ServerMetadata, String> {
    let parsed = reqwest::Url::parse(issuer)
        .map_err(|e| format!("the authorization server \"{issuer}\" is not a valid URL: {e}"))?;
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!(
            "the authorization server \"{issuer}\" has a query or fragment: not an issuer (RFC 8414)"
        ));
    }
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    let (url, meta) = match first_document::<ServerMetadata>(
        candidates,
        allowed,
        "authorization server metadata",
    )
    .await?
    {
        Ok(found) => found,
        Err(last) => {
            return Err(format!(
                "no metadata found for the authorization server {issuer}: {last}"
            ))
        }
    };
    if !same_url(&meta.issuer, issuer) {
        return Err(format!(
                "the authorization server metadata at {url} names issuer {}, not {issuer}: refused (RFC 8414 §3.3)",
                meta.issuer
            ));
    }
    if !meta
        .code_challenge_methods_supported
        .iter()
        .any(|m| m == "S256")
    {
        return Err(format!(
                "the authorization server {issuer} does not offer PKCE with S256: Gatehouse does not sign in without it"
            ));
    }
    Ok(meta)
}

/// The first of `candidates` answering 200, parsed; `Ok(Err(last))` when none did (`last` says
/// what the last one answered); `Err` when one could not be fetched or parsed.
async fn first_document<T: serde::de::DeserializeOwned>(
    candidates: Vec<String>,
    allowed: Allowed,
    what: &str,
) -> Result<Result<(String, T), String>, String> {
    let mut last = String::new();
    for url in candidates {
        let answer = net::request(&url, allowed, what, Body::None, None).await?;
        if answer.status != 200 {
            last = format!("{url} answered HTTP {}", answer.status);
            continue;
        }
        let doc = serde_json::from_slice(&answer.body)
            .map_err(|e| format!("the {what} at {url} is not valid: {e}"))?;
        return Ok(Ok((url, doc)));
    }
    Ok(Err(last))
}

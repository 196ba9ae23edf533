//! Where OAuth requests may go, and the one way they are made. An MCP server names its
//! authorization server, which names its endpoints: every one of those URLs comes from someone
//! else, so each is checked before it is fetched — https (plain http only on loopback), and no
//! address the server could use to reach inside the person's machine or network (loopback only
//! when the MCP server itself is on loopback, private ranges only when it is on a private range
//! itself, link-local and cloud metadata addresses never). The addresses checked are the ones
//! connected to (the client is pinned to them), and redirects are never followed.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use futures_util::StreamExt;

/// The largest metadata document or token answer read.
pub const MAX_BODY: usize = 256 * 1024;
/// Each OAuth request (metadata, registration, token, revocation) ends within this.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Names of cloud metadata services, refused whatever they resolve to (a remote server's URL, a
/// fenced server's destination).
pub const METADATA_HOSTS: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
    "instance-data.ec2.internal",
];

/// What kind of network an address is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// This machine.
    Loopback,
    /// A private network (RFC 1918, CGNAT, IPv6 unique local).
    Private,
    /// Link-local (which holds the cloud metadata services), unspecified, multicast, reserved.
    Forbidden,
    /// Anything else.
    Public,
}

/// The kind of network `ip` is on.
pub fn reach(ip: IpAddr) -> Reach {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Reach::Loopback
            } else if v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || o[0] >= 240
            {
                Reach::Forbidden
            } else if v4.is_private() || (o[0] == 100 && (64..128).contains(&o[1])) {
                Reach::Private
            } else {
                Reach::Public
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return reach(IpAddr::V4(v4));
            }
            let s = v6.segments();
            if v6.is_loopback() {
                Reach::Loopback
            } else if v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xffc0) == 0xfe80
                // fd00:ec2::254, the AWS metadata service's IPv6 address.
                || (s[0] == 0xfd00 && s[1] == 0x0ec2)
            {
                Reach::Forbidden
            } else if (s[0] & 0xfe00) == 0xfc00 {
                Reach::Private
            } else {
                Reach::Public
            }
        }
    }
}

/// The IPv4 address an IPv6 address stands for, in every form that reaches it: mapped
/// (`::ffff:a.b.c.d`), compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`, local-use
/// `64:ff9b:1::/48`) and 6to4 (`2002:AABB:CCDD::/16`). `::` and `::1` are themselves.
pub fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    use std::net::Ipv4Addr;
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let low =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
        return Some(low(s[6], s[7]));
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && (s[2..6] == [0; 4] || s[2] == 1) {
        return Some(low(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(low(s[1], s[2]));
    }
    None
}

/// Which networks OAuth URLs may be on, from where the MCP server itself is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    /// The MCP server is on loopback: so may its authorization server be.
    pub loopback: bool,
    /// The MCP server is on a private network: so may its authorization server be.
    pub private: bool,
}

impl Allowed {
    /// The networks allowed for a server at `url` (its host resolved).
    pub async fn for_server(url: &reqwest::Url) -> Allowed {
        let addrs = resolve(url).await.unwrap_or_default();
        let all = |r: Reach| !addrs.is_empty() && addrs.iter().all(|a| reach(a.ip()) == r);
        Allowed {
            loopback: all(Reach::Loopback),
            private: all(Reach::Private),
        }
    }

    fn admits(self, r: Reach) -> bool {
        match r {
            Reach::Public => true,
            Reach::Loopback => self.loopback,
            Reach::Private => self.private,
            Reach::Forbidden => false,
        }
    }
}

async fn resolve(url: &reqwest::Url) -> Result<Vec<SocketAddr>, String> {
    let host = url
        .host_str()
        .ok_or_else(|| format!("{url} has no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found = tokio::time::timeout(
        REQUEST_TIMEOUT,
        tokio::net::lookup_host((host.as_str(), port)),
    )
    .await
    .map_err(|_| {
        format!(
            "looking up {host} took longer than {} s",
            REQUEST_TIMEOUT.as_secs()
        )
    })?
    .map_err(|e| format!("cannot look up {host}: {e}"))?;
    Ok(found.collect())
}

/// Checks a URL named by a server or its authorization server (`what` says which, for the
/// message) and returns the addresses to connect to.
pub async fn check(
    url: &str,
    allowed: Allowed,
    what: &str,
) -> Result<(reqwest::Url, Vec<SocketAddr>), String> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("{what} \"{url}\" is not a valid URL: {e}"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "{what} \"{url}\" carries credentials in the URL: refused"
        ));
    }
    let addrs = resolve(&parsed).await?;
    let host = parsed.host_str().unwrap_or("?").to_owned();
    for a in &addrs {
        let r = reach(a.ip());
        if !allowed.admits(r) {
            let kind = match r {
                Reach::Loopback => "this machine (loopback), while the MCP server is not on it",
                Reach::Private => "a private network address, while the MCP server is not on one",
                _ => "a link-local, metadata or reserved address",
            };
            return Err(format!(
                "{what} {url} is refused: {host} is {kind} ({}); a server may not send Gatehouse there",
                a.ip()
            ));
        }
    }
    match parsed.scheme() {
        "https" => {}
        "http" if addrs.iter().all(|a| reach(a.ip()) == Reach::Loopback) => {}
        other => {
            return Err(format!(
                "{what} {url} is refused: authorization servers must use https:// ({other}:// is allowed on loopback only)"
            ))
        }
    }
    if parsed.fragment().is_some() {
        return Err(format!("{what} {url} has a fragment: refused"));
    }
    Ok((parsed, addrs))
}

/// A client pinned to the checked addresses of `url`, following no redirect.
fn pinned(url: &reqwest::Url, addrs: &[SocketAddr]) -> Result<reqwest::Client, String> {
    // No proxy: a proxy would resolve the name itself, and the addresses checked here would
    // not be the ones reached (HTTP(S)_PROXY never applies to OAuth requests; README).
    let mut b = crate::http_client::http_client_builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(Duration::from_secs(10));
    if let Some(host) = url.host_str() {
        if host.parse::<IpAddr>().is_err() && !host.starts_with('[') {
            b = b.resolve_to_addrs(host, addrs);
        }
    }
    b.build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// An answer: its status and its body (bounded).
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body, at most [`MAX_BODY`].
    pub body: Vec<u8>,
    /// The `WWW-Authenticate` header, if any.
    pub www_authenticate: Option<String>,
}

/// What to send.
pub enum Body<'a> {
    /// A GET.
    None,
    /// A POST of a form.
    Form(&'a [(&'a str, &'a str)]),
    /// A POST of JSON.
    Json(&'a serde_json::Value),
}

/// One request to a checked URL. `basic` is HTTP Basic client authentication (RFC 6749 §2.3.1).
pub async fn request(
    url: &str,
    allowed: Allowed,
    what: &str,
    body: Body<'_>,
    basic: Option<(&str, &str)>,
) -> Result<Answer, String> {
    let (parsed, addrs) = check(url, allowed, what).await?;
    let http = pinned(&parsed, &addrs)?;
    let mut req = match body {
        Body::None => http.get(parsed.clone()),
        Body::Form(form) => http
            .post(parsed.clone())
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(
                form.iter()
                    .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
                    .collect::<Vec<_>>()
                    .join("&"),
            ),
        Body::Json(v) => http
            .post(parsed.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(v.to_string()),
    };
    req = req.header(reqwest::header::ACCEPT, "application/json");
    if let Some((id, secret)) = basic {
        req = req.basic_auth(form_encode(id), Some(form_encode(secret)));
    }
    let resp = req.send().await.map_err(|e| {
        format!(
            "{what} {parsed} cannot be reached: {}",
            crate::http_client::http_error_chain(&e)
        )
    })?;
    let status = resp.status().as_u16();
    if (300..400).contains(&status) {
        return Err(format!(
            "{what} {parsed} answered with a redirect (HTTP {status}): not followed"
        ));
    }
    let www_authenticate = resp
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if resp.content_length().is_some_and(|n| n > MAX_BODY as u64) {
        return Err(format!(
            "{what} {parsed} answered with more than {} KiB",
            MAX_BODY / 1024
        ));
    }
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            format!(
                "{what} {parsed}: {}",
                crate::http_client::http_error_chain(&e)
            )
        })?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(format!(
                "{what} {parsed} answered with more than {} KiB",
                MAX_BODY / 1024
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        body,
        www_authenticate,
    })
}

/// `application/x-www-form-urlencoded` of one value (client credentials in Basic, RFC 6749 §2.3.1).
pub fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

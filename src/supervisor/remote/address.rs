//! Where a remote MCP server's URL leads, checked at every connect (and when an entry is added
//! from a registry): its host resolved, every address classified as OAuth's requests are
//! (`oauth::net::reach`) — link-local (the cloud metadata services), reserved and unspecified
//! addresses never, the cloud providers' metadata names never, a private range only when the
//! entry says `"allow_private": true`, loopback and public addresses yes. The connection is then
//! pinned to the addresses checked, so a name that resolves elsewhere the next moment (DNS
//! rebinding) reaches nothing new.

use std::net::SocketAddr;

use crate::oauth::net::{reach, Reach, METADATA_HOSTS};

/// Why an address check did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressError {
    /// Where it leads is refused (a sentence with the fix).
    Refused(String),
    /// Its name does not resolve now (it may later).
    Unresolved(String),
}

impl std::fmt::Display for AddressError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddressError::Refused(s) | AddressError::Unresolved(s) => f.write_str(s),
        }
    }
}

/// Checks `url`'s addresses; returns them (to pin the connection to), or why not.
pub async fn check_address(
    url: &str,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, AddressError> {
    use AddressError::{Refused, Unresolved};
    let parsed =
        reqwest::Url::parse(url).map_err(|e| Refused(format!("invalid url \"{url}\": {e}")))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| Refused(format!("{url} has no host")))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let bare = host.trim_end_matches('.');
    if METADATA_HOSTS.contains(&bare) {
        return Err(Refused(format!(
            "{url} is refused: {bare} is a cloud metadata service, which no MCP server entry may reach"
        )));
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::time::timeout(
            std::time::Duration::from_secs(10),
            tokio::net::lookup_host((bare, port)),
        )
        .await
        .map_err(|_| Unresolved(format!("looking up {bare} took longer than 10 s")))?
        .map_err(|e| Unresolved(format!("cannot look up {bare}: {e}")))?
        .collect(),
    };
    if addrs.is_empty() {
        return Err(Unresolved(format!("{bare} resolves to no address")));
    }
    for a in &addrs {
        let ip = a.ip();
        // The cloud metadata services: 169.254.169.254 (and AWS's over IPv6, which sits in a
        // unique-local range).
        let metadata_v6 = ip
            == std::net::IpAddr::V6(std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254))
            || ip == std::net::IpAddr::V4(std::net::Ipv4Addr::new(169, 254, 169, 254));
        match reach(ip) {
            _ if metadata_v6 => {
                return Err(Refused(format!(
                    "{url} is refused: {bare} is a cloud metadata address ({ip}), which no MCP server entry may reach"
                )))
            }
            Reach::Forbidden => {
                return Err(Refused(format!(
                    "{url} is refused: {bare} is a link-local, metadata or reserved address ({ip}), which no MCP server entry may reach"
                )))
            }
            Reach::Private if !allow_private => {
                return Err(Refused(format!(
                    "{url} is refused: {bare} is on a private network ({ip}); if you mean a server on your network, add \"allow_private\": true to its entry"
                )))
            }
            _ => {}
        }
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata and link-local addresses are refused whatever the entry says; a private
    /// address only with `allow_private`; loopback passes.
    #[tokio::test]
    async fn addresses_are_checked_by_class() {
        for url in [
            "https://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/mcp",
            "https://metadata.google.internal/computeMetadata/v1/",
            "http://[fd00:ec2::254]/",
            "http://0.0.0.0:80/mcp",
        ] {
            let e = check_address(url, true).await.unwrap_err().to_string();
            assert!(e.contains("refused"), "{url}: {e}");
        }
        let e = check_address("http://192.168.1.5:8080/mcp", false)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"allow_private\": true"), "{e}");
        assert!(check_address("http://192.168.1.5:8080/mcp", true)
            .await
            .is_ok());
        assert!(check_address("http://127.0.0.1:9/mcp", false).await.is_ok());
        assert!(check_address("http://[::1]:9/mcp", false).await.is_ok());
    }
}

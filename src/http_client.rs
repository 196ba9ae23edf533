//! The HTTP client every request of Gatehouse's starts from (rustls with ring; OpenSSL is never
//! linked), and a reqwest error told with every cause it wraps.

/// An HTTP client builder with TLS ready: rustls with the ring provider (OpenSSL is never
/// linked). Every reqwest client in Gatehouse starts here.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    // Installing the process-wide provider twice is harmless (the second call is refused).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}
/// A reqwest error with every cause it wraps (`error sending request: client error (Connect):
/// tcp connect error: Connection refused (os error 111)`): the address left out (whoever
/// reports the error names it once), a cause that only repeats the one before it said once.
pub fn http_error_chain(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(url) = e.url() {
        s = s.replace(&format!(" for url ({url})"), "");
    }
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        let said = inner.to_string();
        if !said.is_empty() && !s.ends_with(&said) {
            s.push_str(": ");
            s.push_str(&said);
        }
        src = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    /// A refused connection is told once, without the address the caller already names.
    #[tokio::test]
    async fn a_refused_connection_is_said_once_without_its_address() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(9);
        let url = format!("http://127.0.0.1:{port}/mcp");
        let Ok(client) = super::http_client_builder().build() else {
            panic!("a client");
        };
        let Err(e) = client.get(&url).send().await else {
            panic!("nothing listens on {url}");
        };
        let said = super::http_error_chain(&e);
        assert!(
            !said.contains(&url) && !said.contains("127.0.0.1"),
            "{said}"
        );
        assert!(said.to_lowercase().contains("connection refused"), "{said}");
        assert_eq!(
            said.to_lowercase().matches("connection refused").count(),
            1,
            "{said}"
        );
    }
}

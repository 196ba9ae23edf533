//! The HTTP client every request of Gatehouse's starts from (rustls with ring; OpenSSL is never
//! linked), and a reqwest error told with every cause it wraps.

/// An HTTP client builder with TLS ready: rustls with the ring provider (OpenSSL is never
/// linked). Every reqwest client in Gatehouse starts here.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    // Installing the process-wide provider twice is harmless (the second call is refused).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}
/// A reqwest error with every cause it wraps (`error sending request: …: connection refused`).
pub fn http_error_chain(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

//! The parts of sign-in that need no network: challenges, address rules, PKCE, the redirect's
//! answer and its issuer check, refresh timing, split keychain records.

use std::net::IpAddr;

use super::discovery::Challenge;
use super::flow::{pkce_challenge, Callback};
use super::net::{reach, Reach};
use super::vault::{load_split, remove_split, save_split, MemoryVault, Vault};
use super::Grant;

#[test]
fn a_bearer_challenge_is_read_with_its_quoted_parameters() {
    let c = Challenge::parse(
        r#"Bearer error="insufficient_scope", scope="read write", resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp""#,
    )
    .unwrap();
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope.as_deref(), Some("read write"));
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("https://x.example/.well-known/oauth-protected-resource/mcp")
    );
    // Another scheme first, unquoted values, an escaped quote.
    let c =
        Challenge::parse(r#"Basic realm="a", Bearer error=invalid_token, scope="a\"b""#).unwrap();
    assert_eq!(c.error.as_deref(), Some("invalid_token"));
    assert_eq!(c.scope.as_deref(), Some("a\"b"));
    assert_eq!(Challenge::parse(r#"Basic realm="bearer""#), None);
    assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
}

#[test]
fn addresses_a_server_could_abuse_are_told_apart() {
    let table = [
        ("127.0.0.1", Reach::Loopback),
        ("::1", Reach::Loopback),
        ("10.1.2.3", Reach::Private),
        ("172.16.0.1", Reach::Private),
        ("192.168.1.1", Reach::Private),
        ("100.64.0.1", Reach::Private),
        ("fd12::1", Reach::Private),
        ("169.254.169.254", Reach::Forbidden),
        ("fe80::1", Reach::Forbidden),
        ("fd00:ec2::254", Reach::Forbidden),
        ("0.0.0.0", Reach::Forbidden),
        ("::ffff:169.254.169.254", Reach::Forbidden),
        ("::ffff:10.0.0.1", Reach::Private),
        ("224.0.0.1", Reach::Forbidden),
        ("93.184.216.34", Reach::Public),
        ("2606:4700::1", Reach::Public),
        // Every IPv6 form of an IPv4 address is that address.
        ("::169.254.169.254", Reach::Forbidden),
        ("::127.0.0.1", Reach::Loopback),
        ("::ffff:127.0.0.1", Reach::Loopback),
        ("64:ff9b::a9fe:a9fe", Reach::Forbidden),
        ("64:ff9b::10.0.0.1", Reach::Private),
        ("64:ff9b:1::7f00:1", Reach::Loopback),
        ("2002:a9fe:a9fe::1", Reach::Forbidden),
        ("2002:c0a8:0101::", Reach::Private),
        ("2002:5db8:d822::1", Reach::Public),
        ("::", Reach::Forbidden),
    ];
    for (ip, want) in table {
        assert_eq!(reach(ip.parse::<IpAddr>().unwrap()), want, "{ip}");
    }
}

#[tokio::test]
async fn urls_are_refused_by_where_they_lead() {
    use super::net::{check, Allowed};
    let remote = Allowed {
        loopback: false,
        private: false,
    };
    let local = Allowed {
        loopback: true,
        private: false,
    };
    let cases = [
        ("http://127.0.0.1:9/x", local, true),
        ("http://127.0.0.1:9/x", remote, false),
        ("https://10.0.0.5/x", local, false),
        ("https://169.254.169.254/latest", local, false),
        ("http://93.184.216.34/x", remote, false),
        ("https://93.184.216.34/x", remote, true),
        ("https://user:pw@93.184.216.34/x", remote, false),
        ("https://[fe80::1]/x", local, false),
    ];
    for (url, allowed, ok) in cases {
        assert_eq!(check(url, allowed, "test").await.is_ok(), ok, "{url}");
    }
}

#[test]
fn pkce_s256_is_the_unpadded_base64url_sha256_of_the_verifier() {
    // Computed independently (Python's hashlib and base64.urlsafe_b64encode, '=' removed).
    assert_eq!(
        pkce_challenge("dBjftJeZ4CVP-mJ92DeQJ8jOcPkC-ZTFLAbQcVSHmqU"),
        "OUwqag5Ge7dJ10Gd8g5d0T59W3IrC7GXqdVu9sa7yPY"
    );
}

#[test]
fn the_redirect_is_read_and_its_issuer_checked() {
    let cb = Callback::from_request_line(
        "GET /callback?code=a%2Bb&state=s1&iss=https%3A%2F%2Fas.example HTTP/1.1",
    )
    .unwrap();
    assert_eq!(cb.code.as_deref(), Some("a+b"));
    assert_eq!(cb.state.as_deref(), Some("s1"));
    assert!(cb.check_issuer("https://as.example", false).is_ok());
    assert!(cb.check_issuer("https://other.example", false).is_err());
    let none = Callback::from_request_line("GET /callback?code=x&state=s HTTP/1.1").unwrap();
    assert!(none.check_issuer("https://as.example", false).is_ok());
    assert!(none.check_issuer("https://as.example", true).is_err());
    assert_eq!(
        Callback::from_request_line("GET /favicon.ico HTTP/1.1"),
        None
    );
    // A broken escape and a multi-byte character never panic.
    let odd =
        Callback::from_request_line("GET /callback?code=%E2%82%AC%G1%&state=%e2 HTTP/1.1").unwrap();
    assert_eq!(odd.code.as_deref(), Some("€%G1%"));
}

fn grant(obtained: u64, expires: Option<u64>) -> Grant {
    Grant {
        server_url: "https://s.example/mcp".into(),
        resource: "https://s.example/mcp".into(),
        issuer: "https://as.example".into(),
        token_endpoint: "https://as.example/token".into(),
        revocation_endpoint: None,
        client_id: "c".into(),
        client_secret: None,
        token_auth: None,
        redirect_uri: "http://127.0.0.1:1/callback".into(),
        registered: true,
        access_token: "access-token-value".into(),
        refresh_token: Some("refresh-token-value".into()),
        expires_at_ms: expires,
        obtained_ms: obtained,
        scope: None,
    }
}

#[test]
fn tokens_are_refreshed_ahead_of_their_expiry() {
    // An hour's token: a minute ahead.
    let g = grant(0, Some(3_600_000));
    assert!(!g.refresh_due(3_600_000 - 61_000));
    assert!(g.refresh_due(3_600_000 - 59_000));
    // A 4 s token: in its last second.
    let g = grant(0, Some(4_000));
    assert!(!g.refresh_due(2_900));
    assert!(g.refresh_due(3_100));
    // A life beyond any sane bound is clamped to a year: no overflow, no refresh every time.
    let now = 1_800_000_000_000;
    let g = grant(now, Some(super::flow::expires_at(now, u64::MAX)));
    assert_eq!(
        g.expires_at_ms,
        Some(now + super::flow::MAX_TOKEN_LIFE_SECS * 1000)
    );
    assert!(!g.refresh_due(now + 1_000));
    assert_eq!(super::flow::expires_at(u64::MAX - 5, 3600), u64::MAX);
    // No expiry given: only when the server refuses it.
    assert!(!grant(0, None).refresh_due(u64::MAX / 2));
    // The debug form never shows a token.
    let shown = format!("{:?}", grant(0, None));
    assert!(!shown.contains("token-value"), "{shown}");
}

#[test]
fn a_record_over_the_entry_limit_is_split_and_joined() {
    let v = MemoryVault::default();
    let long: String = (0..1000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    save_split(&v, "oauth:s", &long, 300).unwrap();
    let parts = v.0.lock().unwrap().len();
    assert!(parts >= 4, "{parts} parts");
    assert!(v.0.lock().unwrap().values().all(|p| p.len() <= 300));
    assert_eq!(
        load_split(&v, "oauth:s").unwrap().as_deref(),
        Some(long.as_str())
    );
    // A shorter value replaces it whole: no stale part is left.
    save_split(&v, "oauth:s", "short", 300).unwrap();
    assert_eq!(v.0.lock().unwrap().len(), 1);
    assert_eq!(load_split(&v, "oauth:s").unwrap().as_deref(), Some("short"));
    // Non-ASCII text is never cut inside a character.
    let wide: String = "é€😀".repeat(200);
    save_split(&v, "oauth:s", &wide, 301).unwrap();
    assert!(v.0.lock().unwrap().values().all(|p| p.len() <= 301));
    assert_eq!(
        load_split(&v, "oauth:s").unwrap().as_deref(),
        Some(wide.as_str())
    );
    save_split(&v, "oauth:s", &long, 300).unwrap();
    remove_split(&v, "oauth:s").unwrap();
    assert!(v.0.lock().unwrap().is_empty());
    assert_eq!(v.load("oauth:s").unwrap(), None);
}

#[test]
fn scopes_asked_for_add_up() {
    use super::union_scopes;
    assert_eq!(
        union_scopes(Some("read"), Some("write read")).as_deref(),
        Some("read write")
    );
    assert_eq!(union_scopes(Some(""), None), None);
    let m = super::Manager::new(
        std::sync::Arc::new(MemoryVault::default()),
        std::sync::Arc::default(),
    );
    m.note_challenge("s", Challenge::parse(r#"Bearer scope="read""#).unwrap());
    m.note_challenge(
        "s",
        Challenge::parse(r#"Bearer error="insufficient_scope", scope="admin""#).unwrap(),
    );
    assert_eq!(
        m.challenge("s").and_then(|c| c.scope).as_deref(),
        Some("read admin")
    );
}

#[test]
fn an_entry_says_how_it_signs_in_and_is_refused_with_the_field() {
    use crate::config::{parse_entry, RemoteAuth, Transport};
    let auth = |v: serde_json::Value| match parse_entry(&v).map(|c| c.transport) {
        Ok(Transport::Remote(r)) => Ok((r.auth.clone(), r.oauth_capable())),
        Ok(_) => panic!("not remote"),
        Err(e) => Err((e.field, e.message)),
    };
    let url = "https://x.example/mcp";
    assert_eq!(
        auth(serde_json::json!({"url": url})),
        Ok((RemoteAuth::Auto, true))
    );
    // An entry with its own Authorization header is not signed in to automatically.
    assert_eq!(
        auth(serde_json::json!({"url": url, "headers": {"authorization": "Bearer k"}})),
        Ok((RemoteAuth::Auto, false))
    );
    assert_eq!(
        auth(serde_json::json!({"url": url, "auth": "none"})),
        Ok((RemoteAuth::None, false))
    );
    let with = auth(
        serde_json::json!({"url": url, "auth": "oauth", "oauth": {"client_id": "abc", "scopes": ["read"]}}),
    );
    match with {
        Ok((RemoteAuth::OAuth(s), true)) => {
            assert_eq!(s.client_id.as_deref(), Some("abc"));
            assert_eq!(s.scopes, vec!["read".to_owned()]);
        }
        other => panic!("{other:?}"),
    }
    for (entry, field) in [
        (serde_json::json!({"url": url, "auth": "magic"}), "auth"),
        (
            serde_json::json!({"url": url, "auth": "none", "oauth": {}}),
            "oauth",
        ),
        (
            serde_json::json!({"url": url, "oauth": {"scopes": ["a b"]}}),
            "oauth",
        ),
        (
            serde_json::json!({"url": url, "oauth": {"client_id": " "}}),
            "oauth",
        ),
        (serde_json::json!({"command": "x", "auth": "oauth"}), "auth"),
    ] {
        assert_eq!(
            auth(entry.clone()).err().map(|e| e.0),
            Some(Some(field)),
            "{entry}"
        );
    }
    // What is written back reads the same.
    let entry = serde_json::json!({"url": url, "auth": "oauth", "oauth": {"client_id": "abc"}});
    let cfg = parse_entry(&entry).unwrap();
    let again = serde_json::to_value(&cfg).unwrap();
    assert_eq!(parse_entry(&again).unwrap(), cfg, "{again}");
}

/// The redirect listener reads connections at once: a local process that holds a connection
/// open without a word, or races the browser with another `state`, neither delays nor ends the
/// sign-in; the browser's answer is the one taken, within a second.
#[tokio::test]
async fn the_redirect_listener_is_not_held_or_ended_by_another_local_process() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let started = std::time::Instant::now();
    let waiting =
        tokio::spawn(async move { super::flow::redirect_answer_for(&listener, "the-state").await });
    // Two silent connections, then a wrong state, then the browser.
    let _silent: Vec<_> = futures_util::future::join_all(
        (0..2).map(|_| tokio::net::TcpStream::connect(("127.0.0.1", port))),
    )
    .await;
    let mut racer = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    racer
        .write_all(b"GET /callback?code=evil&state=guess&error=access_denied HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    racer.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let mut browser = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    browser
        .write_all(b"GET /callback?code=good&state=the-state HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let (_, cb) = waiting.await.unwrap().unwrap();
    assert_eq!(cb.code.as_deref(), Some("good"));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

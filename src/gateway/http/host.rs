//! The `Host` guard: only an exact loopback authority with our port is ours (DNS rebinding and
//! oddities are refused with 403).

/// Whether a `Host` header names this gateway: exactly `localhost`, an IPv4 loopback address
/// (127.0.0.0/8, dotted quad) or `[::1]`, with our port written canonically (no leading zero;
/// it may be left out only when it is 80). The value is parsed as an RFC 3986 authority: no spaces, no user info, no trailing dot,
/// nothing after the port. Anything else is a DNS-rebinding attempt or a mistake: 403.
pub fn host_is_ours(host: &str, port: u16) -> bool {
    let Some((name, given)) = split_authority(host) else {
        return false;
    };
    let loopback = match name {
        HostName::Ipv6(ip) => ip == std::net::Ipv6Addr::LOCALHOST,
        HostName::Ipv4(ip) => ip.is_loopback(),
        HostName::Name(n) => n.eq_ignore_ascii_case("localhost"),
    };
    loopback && given.unwrap_or(80) == port
}

enum HostName<'a> {
    Ipv4(std::net::Ipv4Addr),
    Ipv6(std::net::Ipv6Addr),
    Name(&'a str),
}

/// `host[:port]` → the host and the port, or `None` when it is not a well-formed authority.
fn split_authority(authority: &str) -> Option<(HostName<'_>, Option<u16>)> {
    if authority.is_empty() || !authority.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let (name, rest) = if let Some(inner) = authority.strip_prefix('[') {
        let (addr, rest) = inner.split_once(']')?;
        let ip: std::net::Ipv6Addr = addr.parse().ok()?;
        // Only the canonical text (RFC 5952): `[::01]` or `[0:0:0:0:0:0:0:1]` name the same
        // address, but no browser or client writes them so.
        if ip.to_string() != addr {
            return None;
        }
        (HostName::Ipv6(ip), rest)
    } else {
        let (name, rest) = match authority.find(':') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        let reg_name = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        if !reg_name {
            return None;
        }
        match name.parse::<std::net::Ipv4Addr>() {
            Ok(ip) => (HostName::Ipv4(ip), rest),
            // A name made only of digits and dots is a malformed address, not a name.
            Err(_) if name.bytes().all(|b| b.is_ascii_digit() || b == b'.') => return None,
            Err(_) => (HostName::Name(name), rest),
        }
    };
    let port = match rest {
        "" => None,
        _ => {
            let digits = rest.strip_prefix(':')?;
            // Canonical digits only: a leading zero (`:08765`) names the same port but is
            // nothing a browser or client sends, so it is refused like any other oddity.
            if digits.is_empty()
                || digits.len() > 5
                || !digits.bytes().all(|b| b.is_ascii_digit())
                || (digits.len() > 1 && digits.starts_with('0'))
            {
                return None;
            }
            Some(digits.parse::<u16>().ok()?)
        }
    };
    Some((name, port))
}

#[cfg(test)]
mod tests {
    use super::host_is_ours;

    #[test]
    fn host_must_be_an_exact_loopback_authority_with_our_port() {
        const PORT: u16 = 7723;
        for ok in [
            "localhost:7723",
            "LOCALHOST:7723",
            "127.0.0.1:7723",
            "127.1.2.3:7723",
            "[::1]:7723",
        ] {
            assert!(host_is_ours(ok, PORT), "{ok} should be accepted");
        }
        assert!(host_is_ours("localhost", 80), "no port means 80");
        for bad in [
            "",
            "localhost",
            "localhost:1",
            "localhost:07723x",
            // Found by `make fuzz` (host_guard): a leading zero in the port, a loopback
            // address not in its canonical text.
            "127.0.1.7:07723",
            "[::01]:7723",
            "[0:0:0:0:0:0:0:1]:7723",
            "localhost:007723",
            "localhost:",
            "localhost:+7723",
            "localhost:77230",
            " localhost:7723",
            "localhost :7723",
            "localhost:7723 ",
            "\tlocalhost:7723",
            "localhost.:7723",
            "localhost.evil.com:7723",
            "evil.com:7723",
            "evil.localhost:7723",
            "127.0.0.1.evil.com:7723",
            "127.1:7723",
            "0x7f.0.0.1:7723",
            "0177.0.0.1:7723",
            "127.0.0.01:7723",
            "10.0.0.1:7723",
            "0.0.0.0:7723",
            "[::1]evil.com",
            "[::1].evil.com:7723",
            "[::1]:7723:7723",
            "[::1]7723",
            "[::2]:7723",
            "[::ffff:127.0.0.1]:7723",
            "[::1%lo]:7723",
            "[::1:7723",
            "::1:7723",
            "user@localhost:7723",
            "localhost:7723/mcp",
            "localhost:7723#x",
        ] {
            assert!(!host_is_ours(bad, PORT), "{bad:?} should be refused");
        }
    }
}

//! Whether a server entry would be Gatehouse calling itself. Such an entry makes Gatehouse
//! proxy its own tools, which multiply without end, and hands its token to a wrapper. The
//! entry is looked at however it is spelled: a URL to our endpoint (any loopback spelling, the
//! unspecified address, IPv4 shorthand), the `gatehouse` binary run as `connect` or `serve`,
//! and either of those inside a bridge's arguments (`mcp-remote URL`, `supergateway
//! --streamableHttp URL`, `mcp-proxy URL`) or a shell's script (`sh -c "…"`) — every word of
//! every argument is read.

use super::{RemoteTransport, StdioTransport, Transport};

/// Why this server would be Gatehouse calling itself, if it would be: a URL on a loopback host
/// with one of `gateway_ports` (the gateway's own endpoint), or the `gatehouse` binary run as
/// `connect` or `serve` (a bridge to, or a second copy of, this hub) — directly or through a
/// bridge or a shell.
pub fn reaches_gatehouse(transport: &Transport, gateway_ports: &[u16]) -> Option<String> {
    match transport {
        Transport::Remote(RemoteTransport { url, .. }) => is_our_url(url, gateway_ports).then(|| {
            format!(
                "{url} is Gatehouse's own endpoint: a server cannot be Gatehouse itself (its tools would include themselves without end); connect clients to Gatehouse instead"
            )
        }),
        Transport::Stdio(t) => stdio_reaches(t, gateway_ports),
    }
}

fn stdio_reaches(t: &StdioTransport, gateway_ports: &[u16]) -> Option<String> {
    let words: Vec<&str> = std::iter::once(t.command.as_str())
        .chain(t.args.iter().map(String::as_str))
        .flat_map(words)
        .collect();
    // The gatehouse binary, then `connect` or `serve` after it.
    if let Some(at) = words.iter().position(|w| is_gatehouse_program(w)) {
        if let Some(verb) = words[at + 1..]
            .iter()
            .find(|w| **w == "connect" || **w == "serve")
        {
            return Some(format!(
                "`{} {verb}` is Gatehouse itself: a server cannot be Gatehouse (its tools would include themselves without end); connect clients to Gatehouse instead",
                words[at]
            ));
        }
    }
    // A bridge or a script given our endpoint.
    let url = words.iter().find(|w| is_our_url(w, gateway_ports))?;
    Some(format!(
        "`{}` reaches Gatehouse's own endpoint ({url}) through a bridge: a server cannot be Gatehouse itself (its tools would include themselves without end, and the bridge would hold Gatehouse's token); connect clients to Gatehouse instead",
        t.command
    ))
}

/// The words of one argument: split on whitespace (a shell's script), quotes and a `--flag=`
/// prefix taken off.
fn words(arg: &str) -> impl Iterator<Item = &str> {
    arg.split_whitespace().map(|w| {
        let w = w.trim_matches(|c| c == '"' || c == '\'' || c == ';' || c == '(' || c == ')');
        match w.split_once('=') {
            Some((flag, value)) if flag.starts_with('-') => value,
            _ => w,
        }
    })
}

/// `gatehouse`, `gatehouse-app` (any directory, `.exe` or not).
fn is_gatehouse_program(word: &str) -> bool {
    let base = word
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let program = base.strip_suffix(".exe").unwrap_or(&base);
    program == "gatehouse" || program == "gatehouse-app"
}

/// A URL (with or without `http://`) whose host is this machine and whose port is ours.
fn is_our_url(word: &str, gateway_ports: &[u16]) -> bool {
    let parsed = if word.contains("://") {
        reqwest::Url::parse(word)
    } else if word.contains(':') {
        reqwest::Url::parse(&format!("http://{word}"))
    } else {
        return false;
    };
    let Ok(url) = parsed else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https" | "ws" | "wss") {
        return false;
    }
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let this_machine = match host.parse::<std::net::IpAddr>() {
        // 0.0.0.0 and [::] reach the local host too.
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => {
            let d = host.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
    };
    this_machine
        && url
            .port_or_known_default()
            .is_some_and(|p| gateway_ports.contains(&p))
}

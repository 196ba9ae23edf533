//! The egress proxy of a fenced server (`"network": {"allow": [...]}`): one listener on
//! loopback per launch, the only TCP port the server's sandbox lets it connect to
//! (`sandbox::linux`), named in its `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`. It takes HTTP
//! `CONNECT host:port` (a tunnel, for https) and plain HTTP requests in absolute form
//! (`GET http://host/path`, the `Host` header checked against it), and for each:
//!
//! - the destination must be on the allow list;
//! - the name is resolved once, and the connection goes to an address that was checked (a name
//!   that resolves elsewhere the next moment reaches nothing new): never the hub's own ports,
//!   never link-local (the cloud metadata services), reserved or unspecified addresses, never a
//!   cloud metadata name; loopback and private addresses only when the allow entry names that
//!   address itself (a name that resolves there is refused);
//! - a refusal answers `403` with a sentence naming the sandbox and the line that allows it,
//!   and is recorded (`sandbox::network::Refused`: `status`, the call's error, Activity).
//!
//! Its tasks belong to the server's session: they end with it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::oauth::net::{reach, Reach, METADATA_HOSTS};
use crate::sandbox::network::{Dest, Refused};

/// A request's head (the request line and headers) is at most this long.
pub const MAX_HEAD: usize = 16 * 1024;
/// A request's head must arrive within this.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(10);
/// Resolving a name and connecting each end within this.
pub const CONNECT_DEADLINE: Duration = Duration::from_secs(10);
/// Connections open through one server's proxy at once, at most (more wait).
pub const MAX_CONNECTIONS: usize = 256;

/// `GATEHOUSE_EGRESS_HOSTS=name=ADDRESS,…`: names the proxy resolves to these addresses, checks
/// aside (for tests: stand-in hosts on loopback aliases).
pub const HOSTS_VAR: &str = "GATEHOUSE_EGRESS_HOSTS";

/// A running proxy: its port and what it refused.
pub struct Egress {
    /// The loopback port it listens on.
    pub port: u16,
    /// What it refused since it started.
    pub refused: Arc<Refused>,
}

/// What the proxy of server `server` lets through.
#[derive(Clone)]
pub struct Fence {
    /// The server's id (for the refusal's sentence).
    pub server: String,
    /// Its allow list.
    pub allow: Vec<Dest>,
    /// The hub's own ports (the gateway's): never reached.
    pub hub_ports: Vec<u16>,
    /// Said in the server's log at a destination's first refusal.
    pub log: Arc<dyn Fn(String) + Send + Sync>,
    /// Secret values masked in a refused host before it is logged or kept (a server could name
    /// one it was given in a host name).
    pub redactions: Arc<crate::secrets::Redactions>,
}

/// Starts the proxy for `fence`; it runs until `stop`.
pub async fn start(
    fence: Fence,
    stop: CancellationToken,
) -> std::io::Result<(Egress, impl std::future::Future<Output = ()>)> {
    let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
    let port = listener.local_addr()?.port();
    let refused = Arc::new(Refused::default());
    let egress = Egress {
        port,
        refused: refused.clone(),
    };
    let hosts = Arc::new(test_hosts());
    let limit = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let fence = Arc::new(fence);
    let run = async move {
        let mut conns = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let Ok(permit) = limit.clone().acquire_owned().await else { break };
                    let (fence, refused, hosts) = (fence.clone(), refused.clone(), hosts.clone());
                    conns.spawn(async move {
                        let _permit = permit;
                        serve(stream, &fence, &refused, &hosts).await;
                    });
                }
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        // Dropping the set ends every tunnel of the session.
    };
    Ok((egress, run))
}

fn test_hosts() -> Vec<(String, IpAddr)> {
    std::env::var(HOSTS_VAR)
        .unwrap_or_default()
        .split(',')
        .filter_map(|pair| {
            let (name, addr) = pair.split_once('=')?;
            Some((name.trim().to_ascii_lowercase(), addr.trim().parse().ok()?))
        })
        .collect()
}

/// What a request asks to reach.
struct Target {
    host: String,
    port: u16,
    /// A tunnel (`CONNECT`), else a plain HTTP request whose head is rewritten to `head`.
    tunnel: bool,
    head: Vec<u8>,
}

/// One client connection: its head read, judged, and — allowed — joined to its destination.
async fn serve(
    mut client: TcpStream,
    fence: &Fence,
    refused: &Refused,
    hosts: &[(String, IpAddr)],
) {
    let Ok(Ok((head, rest))) = tokio::time::timeout(HEAD_DEADLINE, read_head(&mut client)).await
    else {
        let _ = answer(
            &mut client,
            400,
            "Gatehouse sandbox: the proxy could not read a request head within 10 s and 16 KiB",
        )
        .await;
        return;
    };
    let target = match target(&head) {
        Ok(t) => t,
        Err(why) => {
            let _ = answer(&mut client, 400, &format!("Gatehouse sandbox: {why}")).await;
            return;
        }
    };
    let addrs = match judge(fence, hosts, &target.host, target.port).await {
        Ok(a) => a,
        Err(why) => {
            let host = fence.redactions.mask(&target.host);
            let why = fence.redactions.mask(&why);
            if refused
                .since(0)
                .iter()
                .all(|r| r.host != host || r.port != target.port)
            {
                (fence.log)(format!(
                    "sandbox: refused a connection to {}:{} ({why})",
                    crate::text::reveal(&host),
                    target.port
                ));
            }
            refused.record(&host, target.port, &why);
            let text = format!(
                "Gatehouse sandbox: server {} may not reach {}:{} ({why}). To allow it, add \"{}:{}\" to servers.{}.network.allow",
                fence.server, target.host, target.port, target.host, target.port, fence.server
            );
            let _ = answer(&mut client, 403, &text).await;
            return;
        }
    };
    let mut upstream = match connect(&addrs).await {
        Ok(s) => s,
        Err(e) => {
            let text = format!(
                "Gatehouse sandbox proxy: cannot connect to {}:{}: {e}",
                target.host, target.port
            );
            let _ = answer(&mut client, 502, &text).await;
            return;
        }
    };
    let started = if target.tunnel {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
    } else {
        upstream.write_all(&target.head).await
    };
    if started.is_err() || upstream.write_all(&rest).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// The head (through the blank line) and what came after it.
async fn read_head(client: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::Error::other("head too long"));
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// What the head asks for: a `CONNECT host:port`, or an absolute-form `http://` request (its
/// head rewritten to origin form, `Proxy-*` headers dropped, its `Host` checked).
fn target(head: &[u8]) -> Result<Target, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let Ok(httparse::Status::Complete(_)) = req.parse(head) else {
        return Err("the request is not HTTP/1".into());
    };
    let (Some(method), Some(path)) = (req.method, req.path) else {
        return Err("the request is not HTTP/1".into());
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(path, None)?;
        return Ok(Target {
            host,
            port,
            tunnel: true,
            head: Vec::new(),
        });
    }
    let Some(rest) = path.strip_prefix("http://") else {
        return Err(format!(
            "{method} {} is not a proxy request (CONNECT host:port, or a URL starting http://)",
            crate::text::cut(path, 200)
        ));
    };
    let (authority, origin) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = split_authority(authority, Some(80))?;
    let mut out = format!("{method} {origin} HTTP/1.1\r\n").into_bytes();
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name.starts_with("proxy-") {
            continue;
        }
        if name == "host" {
            let said = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            let (named, _) = split_authority(&said, Some(port))?;
            if named != host {
                return Err(format!("the Host header names {named}, the URL {host}"));
            }
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(Target {
        host,
        port,
        tunnel: false,
        head: out,
    })
}

/// `host:port` (an IPv6 host in brackets), lowercase, no final dot; `default` when no port.
fn split_authority(s: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let s = s.rsplit_once('@').map_or(s, |(_, h)| h);
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or("an unclosed [ in the host")?;
        (h, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match (port, default) {
        (Some(p), _) => p.parse::<u16>().map_err(|_| format!("a bad port in {s}"))?,
        (None, Some(d)) => d,
        (None, None) => return Err(format!("{s} names no port")),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() || host.len() > 253 {
        return Err("no host".into());
    }
    Ok((host, port))
}

/// Whether `host:port` may be reached, and the checked addresses to connect to; else why not.
async fn judge(
    fence: &Fence,
    hosts: &[(String, IpAddr)],
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, String> {
    let Some(entry) = fence.allow.iter().find(|d| d.matches(host, port)) else {
        return Err("not in its network allow list".into());
    };
    if METADATA_HOSTS.contains(&host) {
        return Err("a cloud metadata service".into());
    }
    if let Some((_, ip)) = hosts.iter().find(|(n, _)| n == host) {
        return Ok(vec![SocketAddr::new(*ip, port)]);
    }
    let literal = host.parse::<IpAddr>().ok();
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => tokio::time::timeout(CONNECT_DEADLINE, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| "its name did not resolve within 10 s".to_owned())?
            .map_err(|e| format!("its name does not resolve: {e}"))?
            .collect(),
    };
    // Loopback and private addresses only when the entry names the address itself.
    let named = !entry.wildcard && (literal.is_some() || host == "localhost");
    for a in &addrs {
        match reach(a.ip()) {
            Reach::Forbidden => return Err(format!("{} is link-local, reserved or unspecified (the cloud metadata services live there)", a.ip())),
            Reach::Loopback if fence.hub_ports.contains(&port) => {
                return Err("Gatehouse's own port".into())
            }
            Reach::Loopback | Reach::Private if !named => {
                return Err(format!("{host} resolves to {}, a {} address; allow the address itself to reach it", a.ip(), if reach(a.ip()) == Reach::Loopback { "loopback" } else { "private" }))
            }
            _ => {}
        }
    }
    if addrs.is_empty() {
        return Err("its name resolves to no address".into());
    }
    Ok(addrs)
}

/// The first of `addrs` that answers, within [`CONNECT_DEADLINE`] in all.
async fn connect(addrs: &[SocketAddr]) -> std::io::Result<TcpStream> {
    let attempt = async {
        let mut last = std::io::Error::other("no address");
        for a in addrs {
            match TcpStream::connect(a).await {
                Ok(s) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(last)
    };
    tokio::time::timeout(CONNECT_DEADLINE, attempt)
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
}

async fn answer(client: &mut TcpStream, code: u16, text: &str) -> std::io::Result<()> {
    let reason = match code {
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Bad Request",
    };
    let body = format!("{text}\n");
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nX-Gatehouse-Sandbox: refused\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_its_target_and_a_lying_host_header_is_refused() {
        let t = target(b"CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n")
            .unwrap();
        assert!(t.tunnel && t.host == "api.github.com" && t.port == 443);
        let t = target(b"GET http://a.test:8080/x?y HTTP/1.1\r\nHost: a.test:8080\r\nProxy-Authorization: k\r\n\r\n").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.tunnel), ("a.test", 8080, false));
        let head = String::from_utf8(t.head).unwrap();
        assert!(head.starts_with("GET /x?y HTTP/1.1\r\n"), "{head}");
        assert!(!head.contains("Proxy-Authorization"), "{head}");
        assert!(target(b"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n").is_err());
        assert!(target(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n").is_err());
        assert!(target(b"CONNECT a.test HTTP/1.1\r\n\r\n").is_err());
        let t = target(b"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 8080));
    }

    fn fence(allow: &[&str]) -> Fence {
        Fence {
            server: "s".into(),
            allow: allow.iter().map(|a| Dest::parse(a).unwrap()).collect(),
            hub_ports: vec![7777],
            log: Arc::new(|_| {}),
            redactions: Arc::default(),
        }
    }

    #[tokio::test]
    async fn only_allowed_destinations_at_checked_addresses_pass() {
        let f = fence(&[
            "localhost:8080",
            "127.0.0.1:7777",
            "169.254.169.254:80",
            "*.test:80",
            "10.0.0.1:80",
        ]);
        assert!(judge(&f, &[], "other.example", 80)
            .await
            .unwrap_err()
            .contains("allow list"));
        assert!(judge(&f, &[], "169.254.169.254", 80)
            .await
            .unwrap_err()
            .contains("link-local"));
        assert!(judge(&f, &[], "127.0.0.1", 7777)
            .await
            .unwrap_err()
            .contains("own port"));
        assert!(judge(&f, &[], "localhost", 8080).await.is_ok());
        assert!(judge(&f, &[], "10.0.0.1", 80).await.is_ok());
        // A name under an allowed domain that resolves to loopback: refused.
        let hosts = [("rebind.test".to_owned(), "127.0.0.1".parse().unwrap())];
        assert!(judge(&f, &[], "localhost.test", 80).await.is_err());
        // A test's mapped name goes where it is mapped.
        assert_eq!(
            judge(&f, &hosts, "rebind.test", 80).await.unwrap()[0].port(),
            80
        );
    }

    /// A server that names a secret value it was given in a host name is refused, and the value
    /// is kept neither in its refused list nor in its log: both have it masked.
    #[tokio::test]
    async fn a_secret_named_in_a_refused_host_is_masked_where_it_is_kept() {
        let logged = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let mut f = fence(&["a.test:443"]);
        let redactions = Arc::new(crate::secrets::Redactions::default());
        redactions.register("api-key", "s3cr3tvalue");
        f.redactions = redactions;
        let sink = logged.clone();
        f.log = Arc::new(move |l| sink.lock().unwrap().push(l));
        let stop = CancellationToken::new();
        let (egress, run) = start(f, stop.clone()).await.unwrap();
        tokio::spawn(run);
        let mut c = TcpStream::connect(("127.0.0.1", egress.port))
            .await
            .unwrap();
        c.write_all(b"CONNECT s3cr3tvalue.evil.test:443 HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        c.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let rows = egress.refused.rows();
        assert_eq!(rows.len(), 1);
        assert!(
            !rows[0].host.contains("s3cr3tvalue") && rows[0].host.contains("[secret:api-key]"),
            "{rows:?}"
        );
        let said = logged.lock().unwrap().join("\n");
        assert!(
            !said.contains("s3cr3tvalue") && said.contains("[secret:api-key]"),
            "{said}"
        );
        stop.cancel();
    }
}

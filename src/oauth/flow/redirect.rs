//! The sign-in's loopback redirect: the listener that waits for the browser's answer (every
//! connection read at once, each within a short deadline, a few at a time), the answer's
//! parameters, the pages shown in the browser, and opening the browser without a shell.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{Grant, Pending};

/// How long a connection to the redirect listener may take to send its request line.
const CALLBACK_READ: Duration = Duration::from_secs(3);
/// Connections to the redirect listener read at once (more are closed unread).
const CALLBACK_CONNECTIONS: usize = 16;
const CALLBACK_MAX: usize = 8 * 1024;

/// The parameters the browser brought back.
#[derive(Debug, Default, PartialEq, Eq)]
pub(in crate::oauth) struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl Callback {
    /// The query of `GET /callback?…` (`None` for any other path).
    pub(in crate::oauth) fn from_request_line(line: &str) -> Option<Callback> {
        let target = line.strip_prefix("GET ")?.split(' ').next()?;
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if path != "/callback" {
            return None;
        }
        let mut c = Callback::default();
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode(v);
            match k {
                "code" => c.code = Some(v),
                "state" => c.state = Some(v),
                "iss" => c.iss = Some(v),
                "error" => c.error = Some(v),
                "error_description" => c.error_description = Some(v),
                _ => {}
            }
        }
        Some(c)
    }

    /// RFC 9207: a present `iss` must be the issuer; an absent one is refused when the server
    /// said it always sends one.
    pub(in crate::oauth) fn check_issuer(
        &self,
        meta_issuer: &str,
        always_sent: bool,
    ) -> Result<(), String> {
        match &self.iss {
            Some(iss) if iss == meta_issuer => Ok(()),
            Some(iss) => Err(format!(
                "the sign-in answer came from issuer \"{iss}\", not \"{meta_issuer}\": refused (a mix-up attack, RFC 9207); nothing was redeemed"
            )),
            None if always_sent => Err(format!(
                "the sign-in answer has no issuer although {meta_issuer} says it always sends one: refused (RFC 9207)"
            )),
            None => Ok(()),
        }
    }
}

fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let pair = (b[i] == b'%')
            .then(|| Some((hex(*b.get(i + 1)?)?, hex(*b.get(i + 2)?)?)))
            .flatten();
        match (b[i], pair) {
            (_, Some((hi, lo))) => {
                out.push(hi * 16 + lo);
                i += 2;
            }
            (b'+', None) => out.push(b' '),
            (c, None) => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first answer on `listener` that carries `state`, with its connection (to answer the
/// browser on). Every other request is answered and ignored: a page or local process that
/// races the browser with another state, or holds a connection open, ends nothing.
pub(in crate::oauth) async fn answer_for(
    listener: &TcpListener,
    state: &str,
) -> Result<(tokio::net::TcpStream, Callback), String> {
    // Connections are read at once, each within CALLBACK_READ: one that sends nothing never
    // keeps the browser waiting.
    let mut heads = tokio::task::JoinSet::new();
    loop {
        let (mut sock, line) = tokio::select! {
            accepted = listener.accept() => {
                let (mut sock, _) = accepted
                    .map_err(|e| format!("the sign-in listener failed: {e}"))?;
                if heads.len() < CALLBACK_CONNECTIONS {
                    heads.spawn(async move {
                        let line = read_request_line(&mut sock).await;
                        (sock, line)
                    });
                }
                continue;
            }
            Some(Ok((sock, line))) = heads.join_next(), if !heads.is_empty() => (sock, line),
        };
        let Some(line) = line else {
            continue;
        };
        let Some(cb) = Callback::from_request_line(&line) else {
            let _ = respond(
                &mut sock,
                404,
                "Not found",
                "This address only takes Gatehouse's sign-in answer.",
            )
            .await;
            continue;
        };
        if cb.state.as_deref() != Some(state) {
            // Not this sign-in's answer (a stale tab, or a page trying its luck): ignored.
            let _ = respond(&mut sock, 400, "Not this sign-in", "This answer does not belong to the sign-in Gatehouse is waiting for. Start the sign-in again from Gatehouse.").await;
            continue;
        }
        return Ok((sock, cb));
    }
}

impl Pending {
    /// Waits for the browser's redirect with our `state`, checks it, redeems the code.
    pub(super) async fn finish(self, listener: TcpListener) -> Result<Grant, String> {
        let (mut sock, cb) = answer_for(&listener, &self.state).await?;
        if let Some(err) = &cb.error {
            let why = format!(
                "the authorization server said {err}{}",
                cb.error_description
                    .as_deref()
                    .map(|d| format!(": {}", d.chars().take(300).collect::<String>()))
                    .unwrap_or_default()
            );
            let _ = respond(&mut sock, 400, "Sign-in refused", &why).await;
            return Err(why);
        }
        if let Err(why) = cb.check_issuer(
            &self.meta.issuer,
            self.meta.authorization_response_iss_parameter_supported,
        ) {
            let _ = respond(&mut sock, 400, "Sign-in refused", &why).await;
            return Err(why);
        }
        let Some(code) = cb.code else {
            let why = "the sign-in answer has no code".to_owned();
            let _ = respond(&mut sock, 400, "Sign-in refused", &why).await;
            return Err(why);
        };
        let result = self.redeem(&code).await;
        let _ = match &result {
            Ok(_) => {
                respond(
                    &mut sock,
                    200,
                    "Signed in",
                    "Gatehouse is signed in. You can close this tab.",
                )
                .await
            }
            Err(e) => respond(&mut sock, 400, "Sign-in failed", e).await,
        };
        result
    }
}

async fn read_request_line(sock: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let read = async {
        let mut chunk = [0u8; 1024];
        loop {
            let n = sock.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
            if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.len() > CALLBACK_MAX {
                break;
            }
        }
        Some(())
    };
    tokio::time::timeout(CALLBACK_READ, read).await.ok()??;
    let end = buf.iter().position(|&b| b == b'\r' || b == b'\n')?;
    String::from_utf8(buf[..end].to_vec()).ok()
}

async fn respond(
    sock: &mut tokio::net::TcpStream,
    status: u16,
    title: &str,
    text: &str,
) -> std::io::Result<()> {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>Gatehouse: {}</title><body style=\"font:16px system-ui;margin:3em\"><h1>{}</h1><p>{}</p>",
        esc(title),
        esc(title),
        esc(text)
    );
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body.as_bytes()).await?;
    sock.shutdown().await
}

/// Opens `url` in the person's browser, never through a shell: the hub's browser program, else
/// `GATEHOUSE_BROWSER` (a program given the URL as its one argument), else the platform's opener.
pub(super) fn open_browser(browser: Option<std::ffi::OsString>, url: &str) -> bool {
    let chosen = browser.or_else(|| std::env::var_os("GATEHOUSE_BROWSER"));
    let (program, pre): (std::ffi::OsString, Vec<&str>) = match chosen {
        Some(p) if !p.is_empty() => (p, vec![]),
        _ if cfg!(target_os = "macos") => ("open".into(), vec![]),
        _ if cfg!(windows) => ("rundll32".into(), vec!["url.dll,FileProtocolHandler"]),
        _ => ("xdg-open".into(), vec![]),
    };
    let spawned = tokio::process::Command::new(&program)
        .args(pre)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Not waited for and never killed (it may be the person's browser itself): tokio reaps
        // a dropped child when it exits.
        Ok(_child) => true,
        Err(e) => {
            tracing::warn!(program = ?program, error = %e, "cannot open a browser");
            false
        }
    }
}
pub(super) async fn bind_any() -> Result<TcpListener, String> {
    TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1 for the sign-in's redirect: {e}"))
}

pub(super) fn redirect_port(uri: &str) -> Option<u16> {
    reqwest::Url::parse(uri).ok()?.port()
}

//! The streams of a remote connection: the old transport's event stream (`connect_sse`), a
//! POST's answer as JSON or SSE (`relay`), the Streamable HTTP session's GET stream (`listen`),
//! and the protocol version an initialize answer names.

use super::bounded_body;
use super::check_status;
use super::is_response;
use super::line;
use super::lost;
use super::mark;
use super::sse_events;
use super::unmarked;
use super::BodyError;
use super::Bridge;
use super::Mode;
use super::SESSION_HEADER;
use crate::jsonrpc::sse::SseError;
use crate::jsonrpc::sse::SseEvent;
use crate::jsonrpc::MAX_LINE_BYTES as MAX_LINE;
use reqwest::header::HeaderValue;
use reqwest::header::ACCEPT;
use reqwest::header::CONTENT_TYPE;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl Bridge {
    pub(super) async fn connect_sse(
        self: &Arc<Self>,
        init: &[u8],
        tasks: &CancellationToken,
    ) -> Result<Mode, String> {
        let mut h = self.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let resp = self
            .execute(reqwest::Method::GET, self.url.clone(), h, None)
            .await
            .map_err(|f| f.reason(&format!("cannot reach {}", self.url)))?;
        check_status(&resp)?;
        let mut events = sse_events(resp);
        let endpoint = loop {
            match events.next().await {
                Some(Ok(SseEvent { event, data })) if event == "endpoint" => {
                    let data = String::from_utf8_lossy(&data);
                    let endpoint = self
                        .url
                        .join(data.trim())
                        .map_err(|e| format!("the server sent a bad endpoint \"{data}\": {e}"))?;
                    // The entry's headers (its secrets) go only where its own URL was checked
                    // and pinned: an endpoint at another origin — a metadata address, a private
                    // one the entry could not name — is refused, never followed.
                    if endpoint.origin() != self.url.origin() {
                        return Err(format!(
                            "refused: the server's SSE \"endpoint\" event names {}, another origin than {}; Gatehouse sends the entry's requests (and its headers) only to the origin whose addresses it checked",
                            crate::text::reveal(endpoint.as_str()),
                            self.url
                        ));
                    }
                    break endpoint;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(lost(e)),
                None => {
                    return Err(format!(
                        "{} is neither a Streamable HTTP nor an SSE MCP endpoint (no \"endpoint\" event)",
                        self.url
                    ))
                }
            }
        };
        let b = self.clone();
        let t = tasks.clone();
        tokio::spawn(async move {
            let reason = tokio::select! {
                _ = t.cancelled() => return,
                r = async {
                    while let Some(ev) = events.next().await {
                        match ev {
                            Ok(SseEvent { event, data }) if event == "message" || event.is_empty() => {
                                if b.to_peer.send(line(data)).await.is_err() {
                                    return String::new();
                                }
                            }
                            Ok(_) => {}
                            Err(e) => return e.to_string(),
                        }
                    }
                    "the server closed its SSE stream".to_owned()
                } => r,
            };
            let _ = b.lost.send(format!("connection lost: {reason}")).await;
        });
        let mode = Mode::Sse { endpoint };
        self.send_checked(&mode, init.to_vec()).await?;
        Ok(mode)
    }

    /// Forwards a POST's answer (JSON or an SSE stream) to the peer. A request whose stream ends
    /// before its answer means the server went away mid-call. What comes on a request's stream
    /// besides its answer is marked with the request's id ([`RELATED`]) so the peer routes it to
    /// that call's client. A body or event over the line bound is dropped unread past the bound,
    /// and the request answered with an error instead.
    pub(super) async fn relay(
        &self,
        resp: reqwest::Response,
        expect_answer: bool,
        request: Option<String>,
    ) -> Result<(), String> {
        if resp.status().as_u16() == 202 {
            return Ok(());
        }
        let sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !sse {
            let body = match bounded_body(resp, MAX_LINE).await {
                Ok(b) => b,
                Err(BodyError::TooLarge) => {
                    self.refuse_answer(
                        request.as_deref(),
                        &format!("the server answered with a body of over {} MiB (the limit); it was dropped", MAX_LINE >> 20),
                    )
                    .await;
                    return Ok(());
                }
                Err(BodyError::Lost(e)) => return Err(format!("connection lost: {e}")),
            };
            if body.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            self.note_protocol(&body);
            self.param_headers.learn(&body);
            let _ = self.to_peer.send(line(unmarked(body))).await;
            return Ok(());
        }
        let related = request.as_deref().filter(|id| id.parse::<u64>().is_ok());
        let mut events = sse_events(resp);
        let mut answered = false;
        while let Some(ev) = events.next().await {
            let data = match ev {
                Ok(ev) => unmarked(ev.data),
                Err(SseError::TooLarge { limit }) => {
                    if !answered {
                        self.refuse_answer(
                            request.as_deref(),
                            &format!("the server sent an event of over {} MiB (the limit) on a request's stream; the stream was dropped", limit >> 20),
                        )
                        .await;
                    }
                    return Ok(());
                }
                Err(e) => return Err(lost(e)),
            };
            if data.is_empty() {
                continue;
            }
            let data = if is_response(&data) {
                answered = true;
                self.note_protocol(&data);
                self.param_headers.learn(&data);
                data
            } else {
                match related {
                    Some(id) => mark(data, id),
                    None => data,
                }
            };
            let _ = self.to_peer.send(line(data)).await;
        }
        if expect_answer && !answered {
            return Err("connection lost: the server's stream ended before it answered".into());
        }
        Ok(())
    }

    /// Remembers the negotiated protocol version from an initialize answer (sent as a header on
    /// every later request, as the spec asks).
    pub(super) fn note_protocol(&self, body: &[u8]) {
        #[derive(serde::Deserialize)]
        struct R {
            result: Option<Init>,
        }
        #[derive(serde::Deserialize)]
        struct Init {
            #[serde(rename = "protocolVersion")]
            protocol_version: Option<String>,
        }
        // Only an initialize result names one: nothing else is parsed for it.
        if memchr::memmem::find(body, b"\"protocolVersion\"").is_none() {
            return;
        }
        if let Ok(R {
            result: Some(Init {
                protocol_version: Some(v),
            }),
        }) = serde_json::from_slice::<R>(body)
        {
            let mut p = crate::sync::lock(&self.protocol);
            if p.is_none() {
                *p = Some(v);
            }
        }
    }

    /// The GET stream of a Streamable HTTP session. A server without one (405) is checked by the
    /// keepalive instead; a stream that breaks means the server is gone.
    pub(super) async fn listen(&self, mode: &Mode) {
        let Mode::Streamable { session } = mode else {
            return;
        };
        let mut h = self.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(s) = session
            .as_deref()
            .and_then(|s| HeaderValue::from_str(s).ok())
        {
            h.insert(SESSION_HEADER, s);
        }
        let resp = match self
            .execute(reqwest::Method::GET, self.url.clone(), h, None)
            .await
        {
            Ok(r) if r.status().is_success() => r,
            Ok(_) => return,
            Err(f) => {
                let _ = self.lost.send(f.reason("connection lost")).await;
                return;
            }
        };
        let mut events = sse_events(resp);
        while let Some(ev) = events.next().await {
            match ev {
                Ok(SseEvent { data, .. }) if !data.is_empty() => {
                    if self.to_peer.send(line(unmarked(data))).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = self.lost.send(lost(e)).await;
                    return;
                }
            }
        }
        // The server closed the stream on purpose; the keepalive still watches the connection.
    }
}

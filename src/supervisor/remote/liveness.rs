//! Whether a remote server is still there while nothing else is said to it: every
//! [`KEEPALIVE`] of quiet a check goes out — `ping` on a 2025 session, the discovery request on a
//! 2026-07-28 server (which has neither a session nor ping) — and a check not answered within
//! [`KEEPALIVE_ANSWER`], or a connection refused, ends the bridge with the reason.

use super::bounded_body;
use super::Bridge;
use super::Failure;
use super::Mode;
use crate::jsonrpc;
use crate::jsonrpc::MAX_LINE_BYTES as MAX_LINE;

use std::time::Duration;

/// How long an idle connection may go unchecked: a ping (a 2026-07-28 server: the discovery
/// request) is sent when nothing else went out.
pub(super) const KEEPALIVE: Duration = Duration::from_secs(3);
/// How long that check may take before the server counts as lost: with [`KEEPALIVE`], a lost
/// server is noticed within 9 s.
const KEEPALIVE_ANSWER: Duration = Duration::from_secs(6);

impl Bridge {
    /// The liveness check of an idle connection: `ping` on a 2025 session; on a 2026-07-28
    /// server (which has no ping and no session) its discovery request again, any HTTP answer
    /// counting. No answer within [`KEEPALIVE_ANSWER`], or no connection at all, ends the bridge
    /// with the reason (the actor then restarts it: `restarting`, the reason in `last_error`).
    pub(super) async fn ping(&self, mode: &Mode, discover: Option<&[u8]>) {
        let ping = br#"{"jsonrpc":"2.0","id":"gatehouse-keepalive","method":"ping"}"#;
        let (url, session, headers, msg) = match (mode, discover) {
            (Mode::Streamable { session }, _) => (
                self.url.clone(),
                session.as_deref(),
                self.base_headers(session.as_deref()),
                ping.to_vec(),
            ),
            (Mode::Modern, Some(probe)) => (
                self.url.clone(),
                None,
                self.modern_headers(jsonrpc::Envelope::parse(probe).ok().as_ref()),
                probe.to_vec(),
            ),
            // On the old transport the answer would arrive on the event stream, which the GET
            // reader already watches; nothing to send.
            (Mode::Sse { .. }, _) | (Mode::Modern, None) => return,
        };
        let sent = tokio::time::timeout(KEEPALIVE_ANSWER, async {
            let r = self
                .execute(reqwest::Method::POST, url, headers, Some(msg.into()))
                .await?;
            let status = r.status().as_u16();
            // The answer is drained, bounded (so the connection can be reused); it is not the peer's.
            let _ = bounded_body(r, MAX_LINE).await;
            Ok::<u16, Failure>(status)
        })
        .await;
        let reason = match sent {
            Ok(Ok(404)) if session.is_some() => {
                "the server ended our session (HTTP 404)".to_owned()
            }
            Ok(Ok(_)) => return,
            Ok(Err(f)) => f.reason("connection lost"),
            Err(_) => format!(
                "connection lost: no answer to a liveness check within {} s",
                KEEPALIVE_ANSWER.as_secs()
            ),
        };
        let _ = self.lost.send(reason).await;
    }
}

/// The handshake's `server/discover` request under the keepalive's own id (its answer is never
/// the peer's), for checking a modern server is still there.
pub(super) fn keepalive_probe(discover: &[u8]) -> Option<Vec<u8>> {
    let mut v: serde_json::Value = serde_json::from_slice(discover).ok()?;
    v.as_object_mut()?
        .insert("id".into(), "gatehouse-keepalive".into());
    serde_json::to_vec(&v).ok()
}

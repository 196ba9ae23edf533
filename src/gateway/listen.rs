//! `subscriptions/listen` (MCP 2026-07-28): a client's stream of change notifications, and the
//! notifications tagged with the listen request they belong to.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::{session, ClientSession, Gateway, Out, Outcome};
use crate::jsonrpc::{self, ErrorCode};

impl Gateway {
    /// `subscriptions/listen` (MCP 2026-07-28): the answer is a stream that stays open, first the
    /// acknowledgment of what Gatehouse honors (the tool, prompt and resource lists of this
    /// client's view; up to [`session::MAX_SUBSCRIPTIONS`] resources, whose legacy servers are
    /// asked to tell of their changes), then each change, tagged with the request's id.
    pub(super) async fn listen(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> Outcome {
        #[derive(Deserialize, Default)]
        struct Filter {
            #[serde(rename = "toolsListChanged", default)]
            tools: bool,
            #[serde(rename = "promptsListChanged", default)]
            prompts: bool,
            #[serde(rename = "resourcesListChanged", default)]
            resources: bool,
            #[serde(rename = "resourceSubscriptions", default)]
            uris: Vec<String>,
        }
        #[derive(Deserialize)]
        struct P {
            notifications: Filter,
        }
        let Some(P { notifications: f }) =
            params.and_then(|p| serde_json::from_str::<P>(p.get()).ok())
        else {
            return Outcome::Reply(jsonrpc::error_line(
                id.get(),
                ErrorCode::InvalidParams,
                "Invalid params: subscriptions/listen needs \"notifications\", the kinds of change to hear of",
            ));
        };
        let mut kinds = Vec::new();
        let mut honored = serde_json::Map::new();
        for (asked, kind, key) in [
            (f.tools, "tools", "toolsListChanged"),
            (f.prompts, "prompts", "promptsListChanged"),
            (f.resources, "resources", "resourcesListChanged"),
        ] {
            if asked {
                kinds.push(kind);
                honored.insert(key.into(), serde_json::Value::Bool(true));
            }
        }
        let mut uris = f.uris;
        uris.sort();
        uris.dedup();
        uris.truncate(session::MAX_SUBSCRIPTIONS);
        let mut held = Vec::new();
        if !uris.is_empty() {
            honored.insert(
                "resourceSubscriptions".into(),
                serde_json::Value::from(uris.clone()),
            );
            held = self.subscribe_upstream(s, &uris).await;
        }
        let (tx, rx) = mpsc::channel(session::LISTEN_QUEUE);
        let meta = format!(
            "{{{}:{}}}",
            jsonrpc::json_string(SUBSCRIPTION_ID_KEY),
            id.get()
        );
        let ack = format!(
            "{{\"notifications\":{},\"_meta\":{meta}}}",
            serde_json::Value::Object(honored)
        );
        let Ok(ack) = RawValue::from_string(ack) else {
            return Outcome::Reply(jsonrpc::error_line(
                id.get(),
                ErrorCode::InvalidParams,
                "Invalid request id",
            ));
        };
        let line =
            jsonrpc::notification_line("notifications/subscriptions/acknowledged", Some(&ack));
        if tx.try_send(Out::Event(line)).is_err() {
            return Outcome::Accepted;
        }
        let listener = session::Listener {
            id: id.get().to_owned(),
            kinds,
            resources: uris,
            _shares: super::subs::keep_while_open(held, &tx),
            tx,
        };
        // Listen streams never time out and each holds a connection: one profile may hold a
        // quarter of the connections with them, never all (another profile still connects).
        let share = super::conns::connection_limit() / 4;
        if self.inner.sessions.listening_on(&s.profile) >= share {
            return Outcome::Reply(jsonrpc::error_line(
                id.get(),
                ErrorCode::InternalError,
                &format!(
                    "this client profile has {share} listen streams open already (a quarter of the connections); close one first"
                ),
            ));
        }
        if !s.listen(listener) {
            return Outcome::Reply(jsonrpc::error_line(
                id.get(),
                ErrorCode::InternalError,
                &format!(
                    "this client has {} listen streams open already; close one first",
                    session::MAX_LISTENERS
                ),
            ));
        }
        Outcome::Stream(rx)
    }
}

/// `_meta` key: the subscription a change notification belongs to (its listen request's id).
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The listen kind a change notification belongs to.
pub(super) fn listen_kind(method: &str) -> Option<&'static str> {
    match method {
        "notifications/tools/list_changed" => Some("tools"),
        "notifications/prompts/list_changed" => Some("prompts"),
        "notifications/resources/list_changed" => Some("resources"),
        _ => None,
    }
}

/// A change notification on the listen stream of request `id` (raw).
pub(super) fn tagged_notification(method: &str, id: &str) -> Vec<u8> {
    let params = format!(
        "{{\"_meta\":{{{}:{id}}}}}",
        jsonrpc::json_string(SUBSCRIPTION_ID_KEY)
    );
    match RawValue::from_string(params) {
        Ok(p) => jsonrpc::notification_line(method, Some(&p)),
        Err(_) => jsonrpc::notification_line(method, None),
    }
}

//! `subscriptions/listen` (MCP 2026-07-28): a client's stream of change notifications, and the
//! notifications tagged with the listen request they belong to.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::context::Cx;
use super::lists::Lists;
use super::outcome::{Out, Outcome};
use super::subs::Upstreams;
use super::{session, ClientSession};
use crate::jsonrpc::{self, ErrorCode};

/// `subscriptions/listen` (MCP 2026-07-28): the answer is a stream that stays open, first the
/// acknowledgment of what Gatehouse honors (the tool, prompt and resource lists of this
/// client's view; up to [`session::MAX_SUBSCRIPTIONS`] resources, whose legacy servers are
/// asked to tell of their changes — found through the resource owners `lists` knows, counted in
/// `subs`), then each change, tagged with the request's id.
pub(super) async fn listen(
    cx: &Cx,
    lists: &Lists,
    subs: &Arc<Upstreams>,
    id: &RawValue,
    params: Option<&RawValue>,
) -> Outcome {
    let s = &cx.session;
    let Some((kinds, mut honored, uris)) = asked(params) else {
        return Outcome::error(
                id.get(),
                ErrorCode::InvalidParams,
                "Invalid params: subscriptions/listen needs \"notifications\", the kinds of change to hear of",
            );
    };
    let mut held = Vec::new();
    if !uris.is_empty() {
        honored.insert(
            "resourceSubscriptions".into(),
            serde_json::Value::from(uris.clone()),
        );
        held = lists.subscribe_upstream(cx, subs, &uris).await;
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
        return Outcome::error(id.get(), ErrorCode::InvalidParams, "Invalid request id");
    };
    let line = jsonrpc::notification_line("notifications/subscriptions/acknowledged", Some(&ack));
    if tx.try_send(Out::Event(line)).is_err() {
        return Outcome::Accepted;
    }
    let life = s
        .expires_ms
        .map_or(session::STREAM_LIFETIME, |t| {
            std::time::Duration::from_millis(t.saturating_sub(crate::logs::now_ms()))
        })
        .min(session::STREAM_LIFETIME);
    let listener = session::Listener {
        id: id.get().to_owned(),
        kinds,
        resources: uris,
        _watch: watch(s, id.get().to_owned(), &tx, held, life),
        tx,
    };
    // Listen streams are long (hours) and each holds a connection: one profile may hold a
    // quarter of the connections with them, never all (another profile still connects).
    let share = super::conns::connection_limit() / 4;
    if cx.sessions.listening_on(&s.profile) >= share {
        return Outcome::error(
                id.get(),
                ErrorCode::InternalError,
                &format!(
                    "this client profile has {share} listen streams open already (a quarter of the connections); close one first"
                ),
            );
    }
    if !s.listen(listener) {
        return Outcome::error(
            id.get(),
            ErrorCode::InternalError,
            &format!(
                "this client has {} listen streams open already; close one first",
                session::MAX_LISTENERS
            ),
        );
    }
    Outcome::Stream(rx.into())
}

/// The task that lives as long as a listen stream: it holds the stream's shares of the upstream
/// subscriptions (`subs.rs`) and ends the stream when its lifetime is over. It ends — giving the
/// shares back at once — when the client drops the stream (the receiving end closes), when the
/// gateway does (the returned guard is dropped with the `Listener`), or at `life`.
fn watch(
    s: &Arc<ClientSession>,
    id: String,
    tx: &mpsc::Sender<Out>,
    held: Vec<super::subs::Held>,
    life: std::time::Duration,
) -> Option<tokio_util::sync::DropGuard> {
    let rt = tokio::runtime::Handle::try_current().ok()?;
    let ended = tokio_util::sync::CancellationToken::new();
    let cancelled = ended.clone();
    // The task's sender keeps the stream open only while the `Listener` does too: dropping the
    // `Listener` cancels `cancelled`, and the task lets go of both.
    let tx = tx.clone();
    let session = Arc::downgrade(s);
    // Counted from the listen request, not from the task's first turn.
    let until = tokio::time::Instant::now() + life;
    rt.spawn(async move {
        let expired = tokio::select! {
            _ = tx.closed() => false,
            _ = cancelled.cancelled() => false,
            _ = tokio::time::sleep_until(until) => true,
        };
        drop(held);
        drop(tx);
        if expired {
            if let Some(s) = session.upgrade() {
                s.unlisten(&id);
            }
        }
    });
    Some(ended.drop_guard())
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

/// The list kinds, the acknowledgment's `notifications`, the resources.
type Asked = (
    Vec<&'static str>,
    serde_json::Map<String, serde_json::Value>,
    Vec<String>,
);

/// What a `subscriptions/listen` asks to hear of: the list kinds, what of them is honored (the
/// acknowledgment's `notifications`), and the resources (sorted, unique, at most
/// [`session::MAX_SUBSCRIPTIONS`]). `None` when it names no `notifications`.
fn asked(params: Option<&RawValue>) -> Option<Asked> {
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
    let P { notifications: f } = serde_json::from_str::<P>(params?.get()).ok()?;
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
    Some((kinds, honored, uris))
}

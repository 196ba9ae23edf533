//! Upstream resource subscriptions, shared: however many clients (legacy sessions, listen
//! streams) subscribe to one resource of one server, the server is asked once
//! (`resources/subscribe`), and told `resources/unsubscribe` when the last of them goes. Each
//! holder keeps a [`Held`]; dropping it — an unsubscribe, a closed stream, an ended session,
//! whichever path drops it — gives its share back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::value::RawValue;

use crate::jsonrpc;
use crate::supervisor::rpc::RpcPeer;
use crate::sync::lock;

/// How long an `unsubscribe` sent for the last holder may take.
const UNSUBSCRIBE_DEADLINE: Duration = Duration::from_secs(5);

/// (server id, resource URI).
type Key = (String, String);

struct Entry {
    /// Holders of this subscription.
    count: usize,
    /// The connection the server was last asked on (a restarted server is asked again).
    peer: Weak<RpcPeer>,
}

/// Every upstream subscription the gateway holds, counted.
#[derive(Default)]
pub(super) struct Upstreams {
    table: Mutex<HashMap<Key, Entry>>,
}

/// One holder's share of an upstream subscription.
pub(super) struct Held {
    table: Weak<Upstreams>,
    key: Key,
}

impl Upstreams {
    /// A holder for `uri` of server `server`, reached on `peer`: the share, and whether the
    /// server must be asked now (no holder yet on this connection to it).
    pub(super) fn hold(
        self: &Arc<Self>,
        server: &str,
        uri: &str,
        peer: &Arc<RpcPeer>,
    ) -> (Held, bool) {
        let key = (server.to_owned(), uri.to_owned());
        let mut table = lock(&self.table);
        let e = table.entry(key.clone()).or_insert(Entry {
            count: 0,
            peer: Weak::new(),
        });
        let ask = !std::ptr::eq(e.peer.as_ptr(), Arc::as_ptr(peer));
        if ask {
            e.peer = Arc::downgrade(peer);
        }
        e.count += 1;
        (
            Held {
                table: Arc::downgrade(self),
                key,
            },
            ask,
        )
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(table) = self.table.upgrade() else {
            return;
        };
        let last = {
            let mut t = lock(&table.table);
            match t.get_mut(&self.key) {
                Some(e) if e.count > 1 => {
                    e.count -= 1;
                    None
                }
                Some(_) => t.remove(&self.key).and_then(|e| e.peer.upgrade()),
                None => None,
            }
        };
        // The last holder went: the server (if still the one asked) is told, off this path.
        let (Some(peer), Ok(rt)) = (last, tokio::runtime::Handle::try_current()) else {
            return;
        };
        let Ok(params) =
            RawValue::from_string(format!("{{\"uri\":{}}}", jsonrpc::json_string(&self.key.1)))
        else {
            return;
        };
        rt.spawn(async move {
            let _ = tokio::time::timeout(
                UNSUBSCRIBE_DEADLINE,
                peer.request("resources/unsubscribe", Some(&params)),
            )
            .await;
        });
    }
}

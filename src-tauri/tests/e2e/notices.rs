//! A stand-in notification service on the test's session bus, speaking the freedesktop
//! notification API (org.freedesktop.Notifications 1.2: `GetCapabilities`, `Notify`,
//! `CloseNotification`, `GetServerInformation`; the `ActionInvoked` and `NotificationClosed`
//! signals) — Xvfb runs none. It keeps what it was asked to show, and clicks an action as a
//! person would.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedValue;

const PATH: &str = "/org/freedesktop/Notifications";

/// One notification as the app posted it.
#[derive(Debug, Clone)]
pub struct Shown {
    pub id: u32,
    pub summary: String,
    pub body: String,
    /// Pairs of (key, label), flattened as the API sends them.
    pub actions: Vec<String>,
    pub open: bool,
}

struct Service {
    shown: Arc<Mutex<Vec<Shown>>>,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Service {
    fn get_capabilities(&self) -> Vec<String> {
        vec!["actions".into(), "body".into()]
    }

    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        _hints: HashMap<String, OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        let mut shown = self.shown.lock().unwrap();
        let id = shown.len() as u32 + 1;
        shown.push(Shown {
            id,
            summary,
            body,
            actions,
            open: true,
        });
        id
    }

    async fn close_notification(
        &self,
        id: u32,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) {
        if let Some(n) = self.shown.lock().unwrap().iter_mut().find(|n| n.id == id) {
            n.open = false;
        }
        // Reason 3: closed by a call to CloseNotification.
        let _ = Self::notification_closed(&emitter, id, 3).await;
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        (
            "gatehouse-e2e".into(),
            "gatehouse".into(),
            "1".into(),
            "1.2".into(),
        )
    }

    #[zbus(signal)]
    async fn notification_closed(
        emitter: &SignalEmitter<'_>,
        id: u32,
        reason: u32,
    ) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn action_invoked(emitter: &SignalEmitter<'_>, id: u32, key: &str) -> zbus::Result<()>;
}

/// The service, running until dropped.
pub struct Notices {
    conn: zbus::Connection,
    shown: Arc<Mutex<Vec<Shown>>>,
}

impl Notices {
    /// Takes the notification service's name on the session bus.
    pub async fn start() -> Notices {
        let shown = Arc::new(Mutex::new(Vec::new()));
        let conn = zbus::connection::Builder::session()
            .expect("the test's session bus")
            .name("org.freedesktop.Notifications")
            .expect("the service name")
            .serve_at(
                PATH,
                Service {
                    shown: shown.clone(),
                },
            )
            .expect("serve")
            .build()
            .await
            .expect("the notification service on the session bus");
        Notices { conn, shown }
    }

    /// Waits for an open notification whose body contains `text`.
    pub async fn wait_for(&self, text: &str) -> Shown {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let found = self
                .shown
                .lock()
                .unwrap()
                .iter()
                .find(|n| n.open && n.body.contains(text))
                .cloned();
            if let Some(n) = found {
                return n;
            }
            assert!(
                Instant::now() < deadline,
                "no notification saying \"{text}\": {:?}",
                self.shown.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether notification `id` is still open.
    pub fn open(&self, id: u32) -> bool {
        self.shown
            .lock()
            .unwrap()
            .iter()
            .any(|n| n.id == id && n.open)
    }

    /// Clicks action `key` of notification `id`, as a person would (the service then closes it).
    pub async fn click(&self, id: u32, key: &str) {
        let iface = self
            .conn
            .object_server()
            .interface::<_, Service>(PATH)
            .await
            .expect("the service's interface");
        let emitter = iface.signal_emitter();
        Service::action_invoked(emitter, id, key)
            .await
            .expect("ActionInvoked");
        if let Some(n) = self.shown.lock().unwrap().iter_mut().find(|n| n.id == id) {
            n.open = false;
        }
        // Reason 2: dismissed by the user.
        Service::notification_closed(emitter, id, 2)
            .await
            .expect("NotificationClosed");
    }
}

//! A gateway on a loopback port in front of a test hub, driven over plain HTTP (`Gw`), and
//! reading its answers: a line's raw `result`, an SSE body's messages.

use std::time::Duration;

use gatehouse::gateway::{self, Gateway};
use gatehouse::State;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{wait_state, Mcp, TestHub};

pub const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A gateway on a loopback port in front of a test hub (shared with the isolation tests).
pub struct Gw {
    pub th: TestHub,
    pub gw: Gateway,
    pub url: String,
    pub http: reqwest::Client,
    pub stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Gw {
    pub async fn start(config_json: &str) -> Gw {
        Self::start_with_origins(config_json, vec![]).await
    }

    pub async fn start_with_origins(config_json: &str, origins: Vec<String>) -> Gw {
        // These tests are about routing: approvals stay out of the way unless a test asks.
        let mut cfg: Value = serde_json::from_str(config_json).unwrap();
        if cfg.get("approval").is_none() {
            cfg["approval"] = json!({"default": "flagged-only"});
        }
        let th = TestHub::start(&cfg.to_string());
        for h in th.hub.servers() {
            wait_state(&h, State::Running, Duration::from_secs(15)).await;
        }
        let gw = Gateway::new(th.hub.clone());
        gw.refresh_catalog();
        let listener = gateway::http::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let stop = CancellationToken::new();
        let task = tokio::spawn(gateway::http::serve(
            listener,
            gw.clone(),
            TOKEN.into(),
            origins,
            stop.clone(),
        ));
        Gw {
            th,
            gw,
            url,
            http: gatehouse::http_client_builder().no_proxy().build().unwrap(),
            stop,
            task,
        }
    }

    pub fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        r
    }

    /// initialize + initialized (the shared helper, declaring sampling); the session id.
    pub async fn session(&self) -> String {
        let who = json!({"name": "it", "version": "1"});
        let caps = json!({"sampling": {}});
        let m = Mcp::open_as(&self.url, TOKEN, who, "2025-06-18", caps).await;
        assert_eq!(m.init["protocolVersion"], "2025-06-18");
        assert_eq!(m.init["serverInfo"]["name"], "gatehouse");
        m.sid
    }

    /// A request whose answer is plain JSON; returns the body text.
    pub async fn rpc(&self, sid: &str, id: u64, method: &str, params: Value) -> String {
        let resp = self
            .post(
                Some(sid),
                &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.text().await.unwrap()
    }

    pub async fn stop(self) {
        self.stop.cancel();
        self.gw.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
        self.th.hub.shutdown().await;
    }
}

/// The raw `result` member of a JSON-RPC response line.
pub fn raw_result(line: &str) -> String {
    #[derive(serde::Deserialize)]
    struct R<'a> {
        #[serde(borrow)]
        result: &'a serde_json::value::RawValue,
    }
    serde_json::from_str::<R>(line)
        .unwrap_or_else(|e| panic!("{e}: {line}"))
        .result
        .get()
        .to_owned()
}

/// The `data:` payloads of an SSE body.
pub fn sse_messages(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|ev| ev.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

//! A fake child for the actor's unit tests: an in-memory MCP server on duplex pipes with a fake
//! process group, scripted per launch (answers the handshake or not, crashes after a while,
//! ignores stdin closing or SIGTERM) and a journal of what happened when, in tokio time. No
//! process is ever started.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::launch::{
    LaunchError, LaunchRequest, Launched, Launcher, ProcessGroup, SessionKind, StopSignal,
};
use super::status::ExitInfo;

/// How one launched fake behaves.
#[derive(Debug, Clone, Copy)]
pub struct Script {
    /// It answers `initialize` and `tools/list`.
    pub answers: bool,
    /// It exits with code 1 this long after it started.
    pub crash_after: Option<Duration>,
    /// It exits (code 0) when its stdin closes.
    pub exits_on_eof: bool,
    /// It exits (signal 15) on SIGTERM.
    pub exits_on_term: bool,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            answers: true,
            crash_after: None,
            exits_on_eof: true,
            exits_on_term: true,
        }
    }
}

/// What happened, when.
pub type Journal = Arc<Mutex<Vec<(Instant, String)>>>;

/// Launches fakes, one [`Script`] for all.
pub struct FakeLauncher {
    pub script: Script,
    pub journal: Journal,
}

impl FakeLauncher {
    pub fn new(script: Script) -> Arc<FakeLauncher> {
        Arc::new(FakeLauncher {
            script,
            journal: Arc::default(),
        })
    }

    /// The journal's entries equal to `what`, with their times.
    pub fn times_of(&self, what: &str) -> Vec<Instant> {
        self.journal
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, w)| w == what)
            .map(|(t, _)| *t)
            .collect()
    }

    pub fn entries(&self) -> Vec<String> {
        self.journal
            .lock()
            .unwrap()
            .iter()
            .map(|(_, w)| w.clone())
            .collect()
    }
}

fn note(journal: &Journal, what: &str) {
    journal
        .lock()
        .unwrap()
        .push((Instant::now(), what.to_owned()));
}

struct FakeGroup {
    exit: Arc<watch::Sender<Option<ExitInfo>>>,
    journal: Journal,
    exits_on_term: bool,
}

fn exit(tx: &watch::Sender<Option<ExitInfo>>, code: Option<i32>, signal: Option<i32>) {
    tx.send_if_modified(|e| {
        if e.is_some() {
            return false;
        }
        *e = Some(ExitInfo { code, signal });
        true
    });
}

impl ProcessGroup for FakeGroup {
    fn signal(&self, sig: StopSignal) {
        match sig {
            StopSignal::Term => {
                note(&self.journal, "TERM");
                if self.exits_on_term {
                    exit(&self.exit, None, Some(15));
                }
            }
            StopSignal::Kill => {
                note(&self.journal, "KILL");
                exit(&self.exit, None, Some(9));
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.exit.borrow().is_some()
    }
}

impl Launcher for FakeLauncher {
    fn launch<'a>(
        &'a self,
        _req: LaunchRequest<'a>,
    ) -> BoxFuture<'a, Result<Launched, LaunchError>> {
        Box::pin(async move {
            note(&self.journal, "launch");
            let script = self.script;
            let (our_w, their_r) = tokio::io::duplex(1 << 16);
            let (mut their_w, our_r) = tokio::io::duplex(1 << 16);
            let (exit_tx, exit_rx) = watch::channel(None);
            let exit_tx = Arc::new(exit_tx);
            let mut tasks = JoinSet::new();
            if let Some(after) = script.crash_after {
                let tx = exit_tx.clone();
                let journal = self.journal.clone();
                tasks.spawn(async move {
                    tokio::time::sleep(after).await;
                    note(&journal, "crash");
                    exit(&tx, Some(1), None);
                });
            }
            {
                let tx = exit_tx.clone();
                let journal = self.journal.clone();
                tasks.spawn(async move {
                    let mut lines = BufReader::new(their_r).lines();
                    let mut exited = tx.subscribe();
                    loop {
                        let line = tokio::select! {
                            l = lines.next_line() => l,
                            // A dead process writes nothing more; its stdout closes.
                            _ = exited.wait_for(|e| e.is_some()) => return,
                        };
                        let Ok(Some(line)) = line else {
                            note(&journal, "stdin closed");
                            if script.exits_on_eof {
                                exit(&tx, Some(0), None);
                            }
                            // Stays alive with its stdout open until signalled.
                            let _ = exited.wait_for(|e| e.is_some()).await;
                            return;
                        };
                        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                        let (Some(id), Some(method)) = (v.get("id"), v["method"].as_str()) else {
                            continue;
                        };
                        if method == "server/discover" {
                            // A legacy server: the method is unknown to it.
                            let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}});
                            if their_w.write_all(format!("{reply}\n").as_bytes()).await.is_err() {
                                return;
                            }
                            continue;
                        }
                        let result = match method {
                            "initialize" if script.answers => serde_json::json!({
                                "protocolVersion": "2025-06-18",
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "fake", "version": "1"}
                            }),
                            "tools/list" if script.answers => serde_json::json!({
                                "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]
                            }),
                            // The gateway rig's calls: the text comes back, and it is noted.
                            "tools/call" if script.answers => {
                                note(&journal, "call");
                                let text = v["params"]["arguments"]["text"].clone();
                                serde_json::json!({"content": [{"type": "text", "text": text}]})
                            }
                            _ => continue,
                        };
                        let reply =
                            serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
                        if their_w
                            .write_all(format!("{reply}\n").as_bytes())
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
            Ok(Launched {
                kind: SessionKind::Child {
                    pid: 4242,
                    group: Arc::new(FakeGroup {
                        exit: exit_tx,
                        journal: self.journal.clone(),
                        exits_on_term: script.exits_on_term,
                    }),
                },
                writer: Box::new(our_w),
                reader: Box::new(our_r),
                exit: exit_rx,
                stderr_done: None,
                stop: CancellationToken::new(),
                tasks,
                confined: None,
            })
        })
    }
}

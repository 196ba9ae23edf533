//! What one client or one server does never reaches another client, and never grows the hub
//! without a bound: server→client requests go to the client whose call raised them or to
//! nobody; a client that stops reading loses its stream; a flooding or oversized server (stdio or
//! remote) costs the hub a bounded amount of memory. Memory is read from the `gatehouse serve`
//! child's /proc status (peak RSS), so the figures are the real process's.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::support::*;

const T: std::time::Duration = std::time::Duration::from_secs(15);

/// Reads a call's SSE stream to its final answer (id `id`), answering sampling requests with
/// `answer` when given. Returns every message seen.
async fn stream_call(
    g: &Gw,
    sid: &str,
    id: u64,
    params: Value,
    answer: Option<&str>,
) -> Vec<Value> {
    let resp = g
        .post(
            Some(sid),
            &json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}),
        )
        .send()
        .await
        .unwrap();
    if resp.headers()["content-type"] == "application/json" {
        // Nothing came before the answer: it is the whole body.
        return vec![serde_json::from_str(&resp.text().await.unwrap()).unwrap()];
    }
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut answered = 0;
    let deadline = Instant::now() + T;
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline.into(), stream.next()).await {
        buf.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        let done = buf
            .rsplit_once("\n\n")
            .map(|(a, _)| format!("{a}\n\n"))
            .unwrap_or_default();
        let msgs = sse_messages(&done);
        let asks: Vec<&Value> = msgs
            .iter()
            .filter(|m| m["method"] == "sampling/createMessage")
            .collect();
        if let Some(text) = answer {
            for req in asks.iter().skip(answered) {
                let reply = json!({"jsonrpc":"2.0","id":req["id"],"result":{"role":"assistant","model":"test","content":{"type":"text","text":text}}});
                assert_eq!(
                    g.post(Some(sid), &reply).send().await.unwrap().status(),
                    202
                );
            }
            answered = asks.len();
        }
        if msgs
            .iter()
            .any(|m| m["id"] == id && m.get("method").is_none())
        {
            return msgs;
        }
    }
    panic!("no final answer to call {id}; got {buf}");
}

/// A server→client request (sampling) goes only to the client whose call raised it. With two
/// calls of two clients in flight and nothing in the request tying it to one, no client is asked
/// and the server gets an error; tied by the call's progress token, it reaches that call's
/// client, and the other client sees neither.
#[tokio::test]
async fn a_servers_request_reaches_only_the_client_whose_call_raised_it() {
    let g = Gw::start(&config(&[("fx", fixture(&[]))])).await;
    let a = g.session().await;
    let b = g.session().await;
    // Client A: an unrelated long call to the same server, its whole stream kept.
    let a_call = g
        .post(Some(&a), &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":3000}}}))
        .send();
    let a_task = tokio::spawn(async move { a_call.await.unwrap().text().await.unwrap() });
    let h = g.th.server("fx");
    let deadline = Instant::now() + T;
    while h.peer().map(|p| p.in_flight()).unwrap_or(0) < 1 {
        assert!(
            Instant::now() < deadline,
            "A's call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Client B, untied request: refused, never guessed.
    let msgs = stream_call(
        &g,
        &b,
        2,
        json!({"name":"fx__ask","arguments":{"question":"untied?"}}),
        Some("from B"),
    )
    .await;
    assert!(
        !msgs.iter().any(|m| m["method"] == "sampling/createMessage"),
        "an untied request reached a client: {msgs:?}"
    );
    let fin = msgs.iter().find(|m| m["id"] == 2).unwrap();
    let text = fin["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        text.contains("sampling failed") && text.contains("cannot tell which"),
        "{fin}"
    );
    // Client B, tied by its call's progress token: B is asked and answers.
    let msgs = stream_call(
        &g,
        &b,
        3,
        json!({"name":"fx__ask","arguments":{"question":"tied?","relate":true},"_meta":{"progressToken":"b-3"}}),
        Some("from B"),
    )
    .await;
    let fin = msgs.iter().find(|m| m["id"] == 3).unwrap();
    assert_eq!(
        fin["result"]["content"][0]["text"], "the client said: from B",
        "{fin}"
    );
    let a_text = a_task.await.unwrap();
    assert!(a_text.contains("slept 3000 ms"), "{a_text}");
    assert!(
        !a_text.contains("sampling/createMessage"),
        "client A got B's request: {a_text}"
    );
    assert!(
        h.logs()
            .tail(None)
            .iter()
            .any(|l| l.line.contains("refused a sampling/createMessage request")),
        "the refusal is noted in the server's log"
    );
    g.stop().await;
}

/// Peak and current resident memory of a process, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap()
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// A call read to its end; the body.
async fn call_text(c: &Mcp, id: u64, name: &str, args: Value) -> String {
    c.post(json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}}))
        .await
}

/// The fx server's log file as the hub kept it.
fn log_of(served: &Served) -> String {
    let dir = served.log.parent().unwrap();
    std::fs::read_to_string(dir.join("data/logs/fx.log")).unwrap_or_default()
}

/// A server flooding progress during a call whose client stops reading costs the hub a bounded
/// amount of memory: the call's queue holds at most 8 MiB, the client loses its stream after
/// 10 s unread (noted in the server's log), and the hub goes on serving others.
#[tokio::test]
async fn a_client_that_stops_reading_loses_its_stream_never_the_hubs_memory() {
    let dir = tempfile::tempdir().unwrap();
    let cfg =
        json!({"servers": {"fx": fixture(&["--flood"])}, "approval": {"default": "flagged-only"}});
    let served = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let pid = served.child.id();
    let c = Mcp::connect(&served, "it").await;
    let (_, before) = memory_kib(pid);
    // 300 MB of progress; the response is taken but its body never read.
    let resp = c
        .builder(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__flood","arguments":{"count":300000,"bytes":1000},"_meta":{"progressToken":"p"}}}))
        .send()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    while !log_of(&served).contains("stopped reading") {
        assert!(
            Instant::now() < deadline,
            "the stalled client was never dropped: {}",
            log_of(&served)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (peak, _) = memory_kib(pid);
    let grew = peak.saturating_sub(before) / 1024;
    println!(
        "hub RSS before {} MiB, peak {} MiB (+{grew} MiB)",
        before / 1024,
        peak / 1024
    );
    assert!(
        grew < 64,
        "the hub grew by {grew} MiB for one stalled client"
    );
    drop(resp);
    // Others are served meanwhile.
    let other = Mcp::connect(&served, "it").await;
    let text = call_text(&other, 2, "fx__echo", json!({"text":"still here"})).await;
    assert!(text.contains("still here"), "{text}");
}

/// 100,000 `tools/list_changed` notifications cost the hub a bounded amount of memory (refreshes
/// coalesce: one listing runs at a time, one more waits), and the tools stay listed.
#[tokio::test]
async fn a_flood_of_list_changed_is_coalesced_within_a_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"servers": {"fx": fixture(&["--flood", "--tools", "200"])}, "approval": {"default": "flagged-only"}});
    let served = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let pid = served.child.id();
    let c = Mcp::connect(&served, "it").await;
    let (_, before) = memory_kib(pid);
    let text = call_text(&c, 1, "fx__churn", json!({"count":100000})).await;
    assert!(text.contains("sent 100000"), "{text}");
    // The server still answers, and every tool is still listed.
    let echo = call_text(&c, 2, "fx__echo", json!({"text":"after"})).await;
    assert!(echo.contains("after"), "{echo}");
    let list = c
        .builder(&json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(
        v["result"]["tools"].as_array().unwrap().len(),
        FIXTURE_TOOLS + 3 + 200
    );
    // The flood was coalesced: a handful of listings, not one per notification.
    let lists = call_text(&c, 4, "fx__lists", json!({})).await;
    let v: Value = serde_json::from_str(&lists).unwrap();
    let n: u64 = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    println!("tools/list requests after 100,000 list_changed: {n}");
    // Seen here: 44 coalesced, 1,660 with coalescing switched off.
    assert!(n < 300, "{n} listings for one flood");
    let (peak, _) = memory_kib(pid);
    let grew = peak.saturating_sub(before) / 1024;
    println!(
        "hub RSS before {} MiB, peak {} MiB (+{grew} MiB)",
        before / 1024,
        peak / 1024
    );
    assert!(
        grew < 48,
        "the hub grew by {grew} MiB for a list_changed flood"
    );
}

/// A remote server whose answer is larger than the line bound (a 100 MiB JSON body, or a
/// 100 MiB SSE event) gets the call an error naming the bound; the hub reads no more than the
/// bound of it and the server stays connected.
#[tokio::test]
#[ignore = "needs python3: run `make test`"]
async fn a_remote_servers_oversized_answer_is_refused_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = r#"
import http.server, json, sys
MIB = 1 << 20
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(405); self.send_header("Content-Length", "0"); self.end_headers()
    def do_DELETE(self):
        self.do_GET()
    def reply(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in msg:
            self.send_response(202); self.send_header("Content-Length", "0"); self.end_headers(); return
        m, i = msg["method"], msg["id"]
        if m == "initialize":
            return self.reply({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1"}}})
        if m == "tools/list":
            t = lambda n: {"name": n, "description": n, "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
            return self.reply({"jsonrpc": "2.0", "id": i, "result": {"tools": [t("body"), t("event"), t("small")]}})
        if m == "tools/call":
            name = msg["params"]["name"]
            if name == "small":
                return self.reply({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "small answer"}]}})
            # 100 MiB, no Content-Length: the reader cannot know the size before reading.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if name == "event" else "application/json")
            self.send_header("Connection", "close"); self.end_headers()
            head = ('data: {"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(i)) if name == "event" else ('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(i))
            try:
                self.wfile.write(head.encode())
                for _ in range(100):
                    self.wfile.write(b"x" * MIB)
                self.wfile.write(b'"}]}}' + (b"\n\n" if name == "event" else b""))
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        self.reply({"jsonrpc": "2.0", "id": i, "result": {}})
    def log_message(self, *a): pass
print("ready", flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;
    let mut child = Reaped(
        std::process::Command::new("python3")
            .args(["-c", script, &port.to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let cfg = json!({"servers": {"big": {"url": format!("http://127.0.0.1:{port}/mcp")}}, "approval": {"default": "flagged-only"}});
    let served = serve(dir.path(), &cfg.to_string(), &["big"]).await;
    let pid = served.child.id();
    let c = Mcp::connect(&served, "it").await;
    let (_, before) = memory_kib(pid);
    for (id, tool) in [(1, "big__body"), (2, "big__event")] {
        let text = call_text(&c, id, tool, json!({})).await;
        assert!(
            text.contains("over 16 MiB (the limit)"),
            "{tool}: {}",
            &text[..text.len().min(300)]
        );
    }
    let (peak, _) = memory_kib(pid);
    let grew = peak.saturating_sub(before) / 1024;
    println!(
        "hub RSS before {} MiB, peak {} MiB (+{grew} MiB)",
        before / 1024,
        peak / 1024
    );
    assert!(grew < 64, "the hub grew by {grew} MiB for a 100 MiB answer");
    // Still connected: the next call is answered.
    let text = call_text(&c, 3, "big__small", json!({})).await;
    assert!(text.contains("small answer"), "{text}");
    let _ = child.kill();
    let _ = child.wait();
}

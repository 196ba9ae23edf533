//! `gatehouse-fixture`: an MCP stdio server with switchable misbehaviours, for tests and benches.
//!
//! Flags (combinable):
//!   --slow-start MS      sleep before reading anything
//!   --no-init            never answer `initialize`
//!   --exit-on-discover   exit with code 2 on `server/discover` (a strict 2025 server that
//!                        dies on a method it does not know)
//!   --exit-after N       exit with code 1 right after answering the Nth tools/call
//!   --exit-code N        print a line to stderr and exit with code N at once (crash loop)
//!   --crash-if-exists P  like --exit-code 3, but only while the file P exists
//!   --garbage            before every response print a non-JSON line and an unknown-id response
//!   --huge-line MIB      print one line of MIB mebibytes before answering `initialize`
//!   --ignore-term        ignore SIGTERM
//!   --ignore-eof         keep running after stdin closes
//!   --grandchild         act like an npx wrapper: run a copy of this server (with --ignore-term
//!                        --ignore-eof) as a child on the same stdio and wait for it
//!   --tools N            add N generated tools `tool_0` … `tool_{N-1}`
//!   --fat-tools N        add N tools `fat_0` … of a 1 MiB description each, listed 8 a page
//!   --list-changed       send notifications/tools/list_changed after `initialized`
//!   --description TEXT   description of the `echo` tool
//!   --conformance        also serve the prompts, resources, templates, subscriptions and
//!                        completions the official conformance suite expects
//!   --said-file PATH     a prompt, instructions and an app read from PATH (`fixture/said.rs`)
//!   --asks-person        also list confirm {text}: read-only, its `_meta` asking for a person
//!   --silent METHOD      never answer METHOD (repeatable)
//!   --wrong-id           answer tools/call with an id nobody asked for
//!   --spec-file PATH     read at every tools/list: its first line is the echo tool's
//!                        description, each later line the name of one more tool that claims
//!                        readOnlyHint and, when called, creates the file at its path argument
//!   --escape PIDFILE     start a descendant that calls setsid(), ignores SIGTERM and stays
//!   --escape-clean PIDFILE  the same, the descendant with an empty environment (no launch tag)
//!                        (its pid written to PIDFILE)
//!   --flood              also list flood {count,bytes} (count progress notifications on the
//!                        call's token, or log messages without one, of bytes each) and
//!                        churn {count} (count tools/list_changed notifications) and lists
//!                        (how many tools/list requests it answered)
//!   --big                also list big {bytes}: a result of two text items, the second about
//!                        `bytes` long (quotes, line ends and accented letters in it)
//!   --leak-env NAME      a careless server: the value of NAME goes into the echo tool's title,
//!                        description and annotations, serverInfo and instructions, a non-JSON
//!                        stdout line (across its first 200 bytes) and stderr (base64 of
//!                        "user:VALUE", URL-encoded)
//!   --hostile            also list the hostile tools of `fixture/hostile.rs` (sandbox tests)
//!   --header-tool        also list regional {region, q}: `region` is mirrored into the
//!                        Mcp-Param-Region header (`x-mcp-header`); returns "REGION: Q"
//! Tools: echo {text}, add {a,b}, sleep {ms}, crash {code}, pid, getenv {name}, envhash {name},
//!   leak {name}, touch {path}, stamp,
//!   exotic {raw} (a result full of things a typed model would lose, or the text of raw written
//!   as the result, unchecked), progress {steps} (progress
//!   notifications on the call's token, then a result), ask {question, relate} (a sampling request to
//!   the client, carrying the call's progress token in its _meta when relate is true; returns
//!   its answer).
//! Calls run on their own threads, so a `notifications/cancelled` is seen (and logged to stderr)
//! while the call runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests, benches and the fixture may panic
// Tests, benches and the fixture read top to bottom as the story they check or measure: the
// 100-line limit is for the product's own functions.
#![allow(clippy::too_many_lines)]

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

#[path = "fixture/catalog.rs"]
mod catalog;
#[path = "fixture/conformance.rs"]
mod conformance;
#[cfg(unix)]
#[path = "fixture/hostile.rs"]
mod hostile;
#[path = "fixture/said.rs"]
mod said;

use catalog::tools;
use conformance::conformance;

#[derive(Default, Clone)]
struct Opts {
    slow_start_ms: u64,
    no_init: bool,
    exit_on_discover: bool,
    exit_after: Option<u64>,
    exit_code: Option<i32>,
    crash_if_exists: Option<String>,
    garbage: bool,
    huge_line_mib: usize,
    ignore_term: bool,
    ignore_eof: bool,
    grandchild: bool,
    tools: usize,
    fat_tools: usize,
    list_changed: bool,
    description: Option<String>,
    /// Read at every tools/list: the echo tool's description (first line) and names of extra
    /// read-only tools (each later line).
    spec_file: Option<String>,
    conformance: bool,
    said_file: Option<String>,
    leak_env: Option<String>,
    silent: Vec<String>,
    wrong_id: bool,
    /// Lists `flood` and `churn` too.
    flood: bool,
    /// Lists `big` too.
    big: bool,
    hostile: bool,
    /// Lists `regional`, whose `region` argument has an `x-mcp-header` annotation.
    header_tool: bool,
    asks_person: bool,
    /// Starts a descendant that leaves the process group; its pid goes to this file.
    escape: Option<String>,
    /// Like `escape`, the descendant started with an empty environment.
    escape_clean: Option<String>,
    /// Be that descendant (writing the pid to this file).
    escape_daemon: Option<String>,
    /// Paths named with `--place` (the sandbox reads them from the arguments).
    #[allow(dead_code)]
    places: Vec<String>,
}

fn parse_opts() -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--slow-start" => o.slow_start_ms = num(&val("--slow-start")?)?,
            "--no-init" => o.no_init = true,
            "--exit-on-discover" => o.exit_on_discover = true,
            "--exit-after" => o.exit_after = Some(num(&val("--exit-after")?)?),
            "--exit-code" => o.exit_code = Some(num(&val("--exit-code")?)?),
            "--crash-if-exists" => o.crash_if_exists = Some(val("--crash-if-exists")?),
            "--garbage" => o.garbage = true,
            "--huge-line" => o.huge_line_mib = num(&val("--huge-line")?)?,
            "--ignore-term" => o.ignore_term = true,
            "--ignore-eof" => o.ignore_eof = true,
            "--grandchild" => o.grandchild = true,
            "--tools" => o.tools = num(&val("--tools")?)?,
            "--fat-tools" => o.fat_tools = num(&val("--fat-tools")?)?,
            "--list-changed" => o.list_changed = true,
            "--description" => o.description = Some(val("--description")?),
            "--spec-file" => o.spec_file = Some(val("--spec-file")?),
            "--escape" => o.escape = Some(val("--escape")?),
            "--escape-clean" => o.escape_clean = Some(val("--escape-clean")?),
            "--escape-daemon" => o.escape_daemon = Some(val("--escape-daemon")?),
            "--conformance" => o.conformance = true,
            "--said-file" => o.said_file = Some(val("--said-file")?),
            "--leak-env" => o.leak_env = Some(val("--leak-env")?),
            "--silent" => o.silent.push(val("--silent")?),
            "--wrong-id" => o.wrong_id = true,
            "--flood" => o.flood = true,
            "--big" => o.big = true,
            "--hostile" => o.hostile = true,
            "--header-tool" => o.header_tool = true,
            "--asks-person" => o.asks_person = true,
            // A path the server is told about (for the sandbox's tests): nothing more.
            "--place" => o.places.push(val("--place")?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(o)
}

fn num<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("not a number: {s}"))
}

fn main() {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gatehouse-fixture: {e}");
            std::process::exit(2);
        }
    };
    if opts.grandchild {
        run_wrapper();
    }
    #[cfg(unix)]
    if let Some(path) = &opts.escape_daemon {
        run_escaped(path);
    }
    #[cfg(unix)]
    if let Some(path) = opts.escape.as_ref().or(opts.escape_clean.as_ref()) {
        hostile::spawn_escape(path, opts.escape_clean.is_some());
    }
    if opts.ignore_term {
        #[cfg(unix)]
        unsafe {
            // SAFETY: installing SIG_IGN is async-signal-safe and done before any thread starts.
            let _ = nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGTERM,
                nix::sys::signal::SigHandler::SigIgn,
            );
        }
    }
    eprintln!("fixture starting (pid {})", std::process::id());
    if let Some(code) = opts.exit_code {
        eprintln!("fixture: crashing on purpose with code {code}");
        std::process::exit(code);
    }
    if let Some(path) = &opts.crash_if_exists {
        if std::path::Path::new(path).exists() {
            eprintln!("fixture: {path} exists, crashing on purpose");
            std::process::exit(3);
        }
    }
    if opts.slow_start_ms > 0 {
        std::thread::sleep(Duration::from_millis(opts.slow_start_ms));
    }
    serve(&opts);
    if opts.ignore_eof {
        eprintln!("fixture: stdin closed, staying alive on purpose");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

/// A descendant that leaves the server's process group and session (`setsid`), ignores SIGTERM
/// and stays: what a careless daemonising tool does.
#[cfg(unix)]
fn run_escaped(pidfile: &str) -> ! {
    let _ = nix::unistd::setsid();
    unsafe {
        // SAFETY: installing SIG_IGN is async-signal-safe and done before any thread starts.
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGTERM,
            nix::sys::signal::SigHandler::SigIgn,
        );
    }
    let _ = std::fs::write(pidfile, std::process::id().to_string());
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// The npx-wrapper shape: a parent that runs the real server as its child on the same stdio.
fn run_wrapper() -> ! {
    let exe = std::env::current_exe().unwrap_or_else(|_| "gatehouse-fixture".into());
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--grandchild")
        .chain(["--ignore-term".to_owned(), "--ignore-eof".to_owned()])
        .collect();
    match std::process::Command::new(exe).args(args).status() {
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(e) => {
            eprintln!("fixture wrapper: cannot start the server: {e}");
            std::process::exit(1)
        }
    }
}

/// What every call thread shares: stdout, the call counter and answers to our own requests.
struct Shared {
    out: Mutex<std::io::Stdout>,
    calls: AtomicU64,
    /// How many tools/list requests it answered.
    lists: AtomicU64,
    asks: Mutex<HashMap<String, mpsc::Sender<Value>>>,
    next_ask: AtomicU64,
}

fn serve(opts: &Opts) {
    let stdin = std::io::stdin();
    let shared = Arc::new(Shared {
        out: Mutex::new(std::io::stdout()),
        calls: AtomicU64::new(0),
        lists: AtomicU64::new(0),
        asks: Mutex::new(HashMap::new()),
        next_ask: AtomicU64::new(1),
    });
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("fixture: ignoring non-JSON input");
            continue;
        };
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let Some(id) = msg.get("id").cloned() else {
            if method == "notifications/initialized" && opts.list_changed {
                send(
                    &shared,
                    opts,
                    &json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
                );
            }
            if method == "notifications/cancelled" {
                let rid = msg
                    .pointer("/params/requestId")
                    .cloned()
                    .unwrap_or(Value::Null);
                eprintln!("fixture: cancelled request {rid}");
            }
            continue;
        };
        if method.is_empty() {
            // A response to one of our requests (ask → sampling).
            let key = id.to_string();
            let waiter = shared.asks.lock().ok().and_then(|mut a| a.remove(&key));
            if let Some(w) = waiter {
                let _ = w.send(msg.clone());
            }
            continue;
        }
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        if opts.silent.iter().any(|m| m == method) {
            continue;
        }
        if opts.exit_on_discover && method == "server/discover" {
            eprintln!("fixture: unknown method server/discover, exiting");
            std::process::exit(2);
        }
        let result = match method {
            "initialize" => {
                if opts.no_init {
                    continue;
                }
                if opts.huge_line_mib > 0 {
                    let big = "x".repeat(opts.huge_line_mib * 1024 * 1024);
                    if let Ok(mut out) = shared.out.lock() {
                        let _ = writeln!(out, "{big}");
                    }
                }
                let leaked = leaked(opts);
                if let Some(v) = &leaked {
                    let straddling = format!("{}{v} <- not JSON", "x".repeat(190));
                    if let Ok(mut out) = shared.out.lock() {
                        let _ = writeln!(out, "{straddling}");
                    }
                    eprintln!("auth: Basic {}", base64(format!("user:{v}").as_bytes()));
                    eprintln!("url: https://example.com/?key={}", url_encode(v));
                }
                let capabilities = said::capabilities(opts.conformance, opts.said_file.is_some());
                let mut init = json!({
                    "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2025-06-18")),
                    "capabilities": capabilities,
                    "serverInfo": {"name": "gatehouse-fixture", "version": "1.0.0"}
                });
                if let Some(path) = &opts.said_file {
                    init["instructions"] = said::instructions(path);
                }
                if let Some(v) = &leaked {
                    init["serverInfo"] =
                        json!({"name": format!("fixture {v}"), "version": format!("1.0+{v}")});
                    init["instructions"] = json!(format!("use the key {v}"));
                }
                Ok(init)
            }
            "ping" => Ok(json!({})),
            "tools/list" => {
                shared.lists.fetch_add(1, Ordering::Relaxed);
                match opts.fat_tools {
                    0 => Ok(json!({"tools": tools(opts)})),
                    n => Ok(catalog::fat_page(tools(opts), n, &params)),
                }
            }
            // `echo` never waits: answered here, as a single-threaded server answers (a thread
            // per call cost more than the call, in every bench row). Every other tool may wait
            // (sleep, ask the client), so it runs on a thread of its own.
            "tools/call" if params.get("name").and_then(Value::as_str) == Some("echo") => {
                run_call(&shared, opts, id, params, now_ns());
                continue;
            }
            "tools/call" => {
                let read_ns = now_ns();
                let shared = shared.clone();
                let opts = opts.clone();
                std::thread::spawn(move || run_call(&shared, &opts, id, params, read_ns));
                continue;
            }
            m if opts.conformance => conformance(m, &params),
            m if said::serves(m) && opts.said_file.is_some() => {
                said::answer(opts.said_file.as_deref().unwrap_or(""), m, &params)
            }
            _ => Err((-32601, format!("method not found: {method}"))),
        };
        send(&shared, opts, &reply(&id, result));
    }
}

fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn run_call(shared: &Shared, opts: &Opts, id: Value, params: Value, read_ns: u128) {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    if name == "exotic" {
        // Written raw: unknown content types, `execution`, `_meta`, integers above 2^53,
        // long floats and unknown keys must reach the client byte for byte. `raw: TEXT` (not in
        // the schema; for tests) is written in the result's place instead, as it is.
        let result = params
            .pointer("/arguments/raw")
            .and_then(Value::as_str)
            .unwrap_or(EXOTIC);
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}");
        if let Ok(mut out) = shared.out.lock() {
            let _ = out.write_all(format!("{line}\n").as_bytes());
            let _ = out.flush();
        }
        return;
    }
    let r = match name {
        "progress" => {
            let steps = params
                .pointer("/arguments/steps")
                .and_then(Value::as_u64)
                .unwrap_or(3);
            let token = params.pointer("/_meta/progressToken").cloned();
            for i in 1..=steps {
                if let Some(t) = &token {
                    send(
                        shared,
                        opts,
                        &json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":t,"progress":i,"total":steps,"message":format!("step {i}")}}),
                    );
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(json!({"content":[{"type":"text","text":format!("done after {steps} steps")}]}))
        }
        "ask" => {
            let q = params
                .pointer("/arguments/question")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            let mut ask = json!({"messages":[{"role":"user","content":{"type":"text","text":q}}],"maxTokens":50});
            // `relate`: the request carries the call's progress token, tying it to the call.
            if params.pointer("/arguments/relate") == Some(&Value::Bool(true)) {
                if let Some(t) = params.pointer("/_meta/progressToken") {
                    ask["_meta"] = json!({"progressToken": t});
                }
            }
            match ask_client(shared, opts, "sampling/createMessage", ask) {
                Some(answer) => match answer
                    .pointer("/result/content/text")
                    .and_then(Value::as_str)
                {
                    Some(text) => Ok(
                        json!({"content":[{"type":"text","text":format!("the client said: {text}")}]}),
                    ),
                    None => Ok(
                        json!({"content":[{"type":"text","text":format!("sampling failed: {answer}")}],"isError":true}),
                    ),
                },
                None => Ok(
                    json!({"content":[{"type":"text","text":"no answer to sampling"}],"isError":true}),
                ),
            }
        }
        // `count` log notifications of `bytes` each, as fast as the pipe takes them, then done.
        // A large result: a short item, then `bytes` of text a JSON writer must escape.
        "big" => {
            let bytes = params
                .pointer("/arguments/bytes")
                .and_then(Value::as_u64)
                .unwrap_or(1 << 20) as usize;
            let text: String = (0..)
                .map(|i| format!("line {i}: caf\u{e9} \"quoted\"\n"))
                .scan(0usize, |n, l| {
                    *n += l.len();
                    (*n <= bytes).then_some(l)
                })
                .collect();
            Ok(json!({"content":[{"type":"text","text":"big result"},{"type":"text","text":text}]}))
        }
        "flood" => {
            let count = params
                .pointer("/arguments/count")
                .and_then(Value::as_u64)
                .unwrap_or(1000);
            let bytes = params
                .pointer("/arguments/bytes")
                .and_then(Value::as_u64)
                .unwrap_or(1000) as usize;
            let token = params.pointer("/_meta/progressToken").cloned();
            let pad = "x".repeat(bytes);
            for i in 0..count {
                let note = match &token {
                    Some(t) => {
                        json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":t,"progress":i,"message":pad}})
                    }
                    None => {
                        json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":pad}})
                    }
                };
                send(shared, opts, &note);
            }
            Ok(json!({"content":[{"type":"text","text":format!("sent {count}")}]}))
        }
        // `count` tools/list_changed notifications at once.
        // How many tools/list requests this server has answered.
        "lists" => Ok(
            json!({"content":[{"type":"text","text":shared.lists.load(Ordering::Relaxed).to_string()}]}),
        ),
        "churn" => {
            let count = params
                .pointer("/arguments/count")
                .and_then(Value::as_u64)
                .unwrap_or(1000);
            for _ in 0..count {
                send(
                    shared,
                    opts,
                    &json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
                );
            }
            Ok(json!({"content":[{"type":"text","text":format!("sent {count}")}]}))
        }
        // When the request line was read from stdin (ns since the epoch), for latency benches.
        "stamp" => Ok(json!({"content":[{"type":"text","text":read_ns.to_string()}]})),
        n if opts.conformance && n.starts_with("test_") => {
            conformance::call(n, &params, &Peer(shared, opts))
                .unwrap_or_else(|| catalog::call(&params))
        }
        #[cfg(unix)]
        n if opts.hostile => {
            hostile::call(n, &params["arguments"]).unwrap_or_else(|| catalog::call(&params))
        }
        _ => catalog::call(&params),
    };
    if let Ok(v) = &r {
        if v.is_null() {
            return;
        }
    }
    let id = if opts.wrong_id {
        json!(id.as_i64().unwrap_or(0) + 1000)
    } else {
        id
    };
    send(shared, opts, &reply(&id, r));
    let n = shared.calls.fetch_add(1, Ordering::SeqCst) + 1;
    if opts.exit_after.is_some_and(|max| n >= max) {
        eprintln!("fixture: exiting after {n} calls");
        std::process::exit(1);
    }
}

/// The raw result of the `exotic` tool.
pub const EXOTIC: &str = r#"{"content":[{"type":"text","text":"plain"},{"type":"hologram","frames":[1,2,3],"x-extra":{"deep":[null,true]}}],"structuredContent":{"big":12345678901234567890123,"bigger":-98765432109876543210,"pi":0.123456789,"tiny":1e-300,"exp":6.02214076E23},"execution":{"taskSupport":"optional","id":"e-1"},"_meta":{"trace":"abc","nested":{"k":[1.0,2.50]}},"unknownKey":{"keep":"me"},"isError":false}"#;

fn reply(id: &Value, r: Result<Value, (i64, String)>) -> Value {
    match r {
        Ok(result) => json!({"jsonrpc":"2.0","id":id,"result":result}),
        Err((code, message)) => {
            json!({"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}})
        }
    }
}

/// Sends the client a request (`method`, `params`) and waits up to 30 s for its answer (the
/// whole response: `result` or `error`).
fn ask_client(shared: &Shared, opts: &Opts, method: &str, params: Value) -> Option<Value> {
    let ask_id = format!(
        "\"ask-{}\"",
        shared.next_ask.fetch_add(1, Ordering::Relaxed)
    );
    let (tx, rx) = mpsc::channel();
    if let Ok(mut a) = shared.asks.lock() {
        a.insert(ask_id.clone(), tx);
    }
    let id: Value = serde_json::from_str(&ask_id).unwrap_or(Value::Null);
    send(
        shared,
        opts,
        &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
    );
    rx.recv_timeout(Duration::from_secs(30)).ok()
}

/// The conformance tools' way to the client.
struct Peer<'a>(&'a Shared, &'a Opts);

impl conformance::Peer for Peer<'_> {
    fn notify(&self, msg: Value) {
        send(self.0, self.1, &msg);
    }
    fn ask(&self, method: &str, params: Value) -> Option<Value> {
        ask_client(self.0, self.1, method, params)
    }
}

fn send(shared: &Shared, opts: &Opts, msg: &Value) {
    let Ok(mut out) = shared.out.lock() else {
        return;
    };
    if opts.garbage {
        let _ = writeln!(out, "this is not JSON {{{{");
        let _ = writeln!(out, "{}", json!({"jsonrpc":"2.0","id":987654,"result":{}}));
    }
    // One write per message, as servers that serialise first do (stdout's line buffer would
    // split a long line into pieces).
    let _ = out.write_all(format!("{msg}\n").as_bytes());
    let _ = out.flush();
}

fn leaked(opts: &Opts) -> Option<String> {
    opts.leak_env.as_ref().and_then(|n| std::env::var(n).ok())
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                A[((n >> (18 - 6 * i)) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

//! What Gatehouse promises between a client and a server, seen through a served hub: a
//! server's own `list_changed` followed, errors passed as sent, `validate_arguments`, a
//! client's bounded self-description and what the debug log says of it, and no Gatehouse
//! token ever handed to a server.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

const T: std::time::Duration = std::time::Duration::from_secs(30);

/// A server's own `notifications/tools/list_changed` makes Gatehouse list its tools again:
/// a tool the server adds is offered to clients without a restart (were the notification
/// ignored, the new tool would never appear).
#[tokio::test]
async fn a_servers_own_list_changed_is_followed_by_a_new_listing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, "Echoes.\n").unwrap();
    let fx = fixture(&["--flood", "--spec-file", spec.to_str().unwrap()]);
    let s = serve(dir.path(), &config(&[("fx", fx)]), &["fx"]).await;
    let c = Mcp::connect(&s, "contracts").await;
    let before = c.tools().await;
    assert!(!before.iter().any(|n| n.contains("tool_new")), "{before:?}");
    std::fs::write(&spec, "Echoes.\ntool_new\n").unwrap();
    let v = c
        .request(
            2,
            "tools/call",
            json!({"name": "fx__churn", "arguments": {"count": 1}}),
        )
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "sent 1", "{v}");
    let deadline = Instant::now() + T;
    loop {
        let now = c.tools().await;
        if now.iter().any(|n| n.ends_with("tool_new")) {
            break;
        }
        assert!(Instant::now() < deadline, "never re-listed: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What Gatehouse answers on its own and what it passes: a server's JSON-RPC error reaches the
/// client with its code and message unchanged; a body that is not JSON gets -32700; `start` of
/// a running server leaves it running, same process.
#[tokio::test]
async fn errors_pass_through_and_start_of_a_running_server_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &config(&[("fx", fixture(&[]))]), &["fx"]).await;
    let c = Mcp::connect(&s, "contracts").await;
    let v = c
        .request(
            1,
            "tools/call",
            json!({"name": "fx__leak", "arguments": {"name": "GATEHOUSE_CONTRACTS_UNSET"}}),
        )
        .await;
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["error"]["code"], -32000, "{v}");
    assert_eq!(v["error"]["message"], "upstream rejected key ", "{v}");
    let (status, v) = c.raw("{\"jsonrpc\": \"2.0\", \"id\": 2, ".into()).await;
    assert_eq!(v["error"]["code"], -32700, "{status} {v}");
    assert!(v["id"].is_null(), "{v}");
    let pid = row(&s, home.path(), "fx")["pid"].clone();
    assert!(pid.is_u64());
    let out = gh_home(&s, home.path(), &["start", "fx"]);
    assert!(out.status.success(), "{}", output_text(&out));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = row(&s, home.path(), "fx");
    assert_eq!(r["state"], "running", "{r}");
    assert_eq!(r["pid"], pid, "{r}");
    assert_eq!(r["restarts"], 0, "{r}");
}

/// `validate_arguments`: where the person turned it on (the server, or one tool), a call whose
/// arguments do not match the tool's inputSchema is refused with -32602 naming the path, the
/// keyword and what the schema expects — before it is held for approval or forwarded; where
/// it is off (the default, or the tool's own `false`), the server gets the call as sent.
#[tokio::test]
async fn arguments_are_validated_only_where_asked_and_before_any_hold() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let strict = json!({"command": FIXTURE, "validate_arguments": true,
        "tools": {"echo": {"requires_approval": true}, "sleep": {"validate_arguments": false}}});
    let mut cfg: Value =
        serde_json::from_str(&config(&[("strict", strict), ("lenient", fixture(&[]))])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve(dir.path(), &cfg.to_string(), &["strict", "lenient"]).await;
    let c = Mcp::connect(&s, "contracts").await;
    let v = c
        .request(
            1,
            "tools/call",
            json!({"name": "strict__add", "arguments": {"a": "1", "b": 2}}),
        )
        .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["data"]["path"], "/a", "{v}");
    assert_eq!(v["error"]["data"]["keyword"], "type", "{v}");
    assert_eq!(v["error"]["data"]["expected"], "number", "{v}");
    let v = c
        .request(
            2,
            "tools/call",
            json!({"name": "strict__add", "arguments": {"a": 1}}),
        )
        .await;
    assert_eq!(v["error"]["data"]["keyword"], "required", "{v}");
    let v = c
        .request(
            3,
            "tools/call",
            json!({"name": "strict__add", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "3", "{v}");
    // A held tool: refused at once, nobody is asked.
    let v = c
        .request(
            4,
            "tools/call",
            json!({"name": "strict__echo", "arguments": {"text": 5}}),
        )
        .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let pending = gh_home(&s, home.path(), &["approvals", "--json"]);
    assert_eq!(String::from_utf8_lossy(&pending.stdout).trim(), "[]");
    // Off for one tool, and off by default: the server sees the call as sent.
    let v = c
        .request(
            5,
            "tools/call",
            json!({"name": "strict__sleep", "arguments": {"ms": "1"}}),
        )
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "slept 0 ms", "{v}");
    let v = c
        .request(
            6,
            "tools/call",
            json!({"name": "lenient__add", "arguments": {"a": "1", "b": 2}}),
        )
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "2", "{v}");
}

/// A client's `clientInfo` is kept bounded whatever it sends (a 1 MiB name and version with a
/// line break in them), and each activity row says who called on what: name, version and
/// protocol revision.
#[tokio::test]
async fn client_info_is_bounded_and_every_row_names_the_clients_version_and_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&config(&[("fx", fixture(&[]))])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve(dir.path(), &cfg.to_string(), &["fx"]).await;
    let huge = format!("evil\n{}", "n".repeat(1 << 20));
    let c = Mcp::open_with(
        &s.info.url,
        &s.info.token,
        json!({"name": huge, "version": huge}),
        "2025-06-18",
    )
    .await;
    let v = c.call(1, "fx__echo", json!({"text": "x"})).await;
    assert_eq!(v["result"]["content"][0]["text"], "x", "{v}");
    let deadline = Instant::now() + T;
    let row = loop {
        let out = gh_home(&s, home.path(), &["activity", "--json"]);
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(r) = rows.into_iter().next() {
            break r;
        }
        assert!(Instant::now() < deadline, "no activity row");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let name = row["client"].as_str().unwrap();
    assert!(
        name.starts_with("evil n") && name.chars().count() <= 128,
        "{name:.80}"
    );
    assert!(!name.contains('\n'));
    assert!(
        row["client_version"].as_str().unwrap().chars().count() <= 64,
        "{row}"
    );
    assert_eq!(row["client_protocol"], "2025-06-18", "{row}");
}

/// `GATEHOUSE_LOG=debug` says who connected, on what: each client's `initialize` and
/// `server/discover` with its name, version, protocol and capabilities — never arguments.
#[tokio::test]
async fn debug_logs_name_each_client_and_what_it_speaks() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg: Value = serde_json::from_str(&config(&[("fx", fixture(&[]))])).unwrap();
    cfg["approval"] = json!({"default": "flagged-only"});
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["fx"],
        &[],
        &[("GATEHOUSE_LOG", "debug")],
    )
    .await;
    let c = Mcp::connect(&s, "contracts").await;
    let v = c.request(1, "server/discover", json!({})).await;
    assert!(v["result"]["supportedVersions"].is_array(), "{v}");
    let secret_arg = "arg-canary-7f3e";
    c.request(
        2,
        "tools/call",
        json!({"name": "fx__echo", "arguments": {"text": secret_arg}}),
    )
    .await;
    let deadline = Instant::now() + T;
    let log = loop {
        let log = std::fs::read_to_string(&s.log).unwrap_or_default();
        if log.contains("client server/discover") || Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let hello = log
        .lines()
        .find(|l| l.contains("client initialize"))
        .unwrap_or_else(|| panic!("no initialize line in {log}"));
    assert!(
        hello.contains("contracts") && hello.contains("2025-11-25"),
        "{hello}"
    );
    assert!(log.contains("client server/discover"), "{log}");
    assert!(!log.contains(secret_arg), "arguments reached the log");
}

/// No server is handed one of Gatehouse's own tokens, whatever way the value comes: the
/// gateway's token as a plain env value (inside "Bearer …"), a client profile's added with
/// `gatehouse add`. Each server is refused at start, naming whose token it is; the token never
/// shows in the status.
#[tokio::test]
async fn no_server_is_handed_a_gatehouse_token() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let gateway_token = "gw-0123456789abcdef0123456789abcdef0123456789";
    let cfg = json!({
        "servers": {
            "fine": fixture(&[]),
            "leaky": {"command": FIXTURE, "env": {"T": format!("Bearer {gateway_token}")}}
        },
        "clients": {"cursor": {}}
    })
    .to_string();
    let s = serve_env(
        dir.path(),
        &cfg,
        &["fine"],
        &[],
        &[("GATEHOUSE_TOKEN", gateway_token)],
    )
    .await;
    let leaky = wait_row(&s, home.path(), "leaky", |r| r["state"] == "failed").await;
    let why = leaky["last_error"].as_str().unwrap();
    assert!(why.contains("T holds the gateway's token"), "{why}");
    assert!(!leaky.to_string().contains(gateway_token), "{leaky}");
    let profile_token = gatehouse::control::ControlClient::new(s.sock.clone())
        .request::<gatehouse::control::GatewayInfo>(&gatehouse::control::Request::Gateway {
            client: Some("cursor".into()),
        })
        .await
        .unwrap()
        .token;
    let env = format!("KEY={profile_token}");
    let out = gh_home(
        &s,
        home.path(),
        &["add", "sneaky", "--env", &env, "--", FIXTURE],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let sneaky = wait_row(&s, home.path(), "sneaky", |r| r["state"] == "failed").await;
    let why = sneaky["last_error"].as_str().unwrap();
    assert!(
        why.contains("holds the token of client profile \"cursor\""),
        "{why}"
    );
    assert_eq!(row(&s, home.path(), "fine")["state"], "running");
}

//! MCP Apps through Gatehouse, with a server built on the real extension SDK
//! (`tests/clients/apps_server.mjs`: `@modelcontextprotocol/ext-apps` 1.7.5): the server offers
//! its app because Gatehouse says it can show one, the tool's `_meta.ui` and the `ui://`
//! resource reach the client unchanged, the app's own call by the server's tool name routes —
//! and where two servers' apps share a URI, each copy is shown and read under its alias, and an
//! own name two servers share is refused naming both.

use serde_json::{json, Value};

use crate::support::*;

fn app_server() -> Value {
    let dir = peers_dir().join("clients");
    json!({"command": "node", "args": [clients_script("apps_server.mjs"), dir]})
}

/// The tool named `name` in a tools/list answer.
fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("{name} not listed: {list}"))
}

#[tokio::test]
#[ignore = "needs the real peers (ext-apps SDK): run `make test`"]
async fn an_mcp_app_works_through_gatehouse_and_two_copies_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = json!({
        "servers": {"clock": app_server(), "clock2": app_server()},
        "clients": {"cursor": {"servers": ["clock"]}},
        "approval": {"default": "flagged-only"}
    });
    let s = serve(d, &cfg.to_string(), &["clock", "clock2"]).await;

    // One copy in the profile: everything as the server gave it.
    let token = token_of(d, "cursor").await;
    let cursor = Mcp::open(&s.info.url, &token).await;
    let list = cursor.request(1, "tools/list", json!({})).await;
    let show = tool(&list, "show_clock");
    assert_eq!(
        show["_meta"]["ui"]["resourceUri"], "ui://clock/app.html",
        "{show}"
    );
    assert_eq!(
        tool(&list, "get_time")["_meta"]["ui"]["visibility"],
        json!(["app"])
    );
    let read = cursor
        .request(2, "resources/read", json!({"uri": "ui://clock/app.html"}))
        .await;
    let content = &read["result"]["contents"][0];
    assert_eq!(content["mimeType"], "text/html;profile=mcp-app", "{read}");
    assert!(content["text"]
        .as_str()
        .unwrap_or("")
        .contains("<title>Clock</title>"));
    // The app's own call, by the server's own tool name.
    let v = cursor.call(3, "get_time", json!({})).await;
    assert_eq!(v["result"]["content"][0]["text"], "12:00", "{v}");

    // Both copies in the profile: the names and the app URIs told apart.
    let all = Mcp::open(&s.info.url, &s.info.token).await;
    let list = all.request(4, "tools/list", json!({})).await;
    for server in ["clock", "clock2"] {
        let t = tool(&list, &format!("{server}__show_clock"));
        let alias = format!("ui://gatehouse.{server}/clock/app.html");
        assert_eq!(t["_meta"]["ui"]["resourceUri"], json!(alias), "{t}");
        assert_eq!(t["_meta"]["ui/resourceUri"], json!(alias), "{t}");
        let read = all
            .request(5, "resources/read", json!({"uri": alias}))
            .await;
        assert_eq!(
            read["result"]["contents"][0]["mimeType"], "text/html;profile=mcp-app",
            "{read}"
        );
    }
    let resources = all.request(6, "resources/list", json!({})).await;
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(
        uris.contains(&"ui://gatehouse.clock/clock/app.html")
            && uris.contains(&"ui://gatehouse.clock2/clock/app.html")
            && !uris.contains(&"ui://clock/app.html"),
        "{uris:?}"
    );
    // An app's call by an own name two servers share: refused, naming both.
    let v = all.call(7, "get_time", json!({})).await;
    let why = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        why.contains("clock__get_time") && why.contains("clock2__get_time"),
        "{v}"
    );
    let v = all.call(8, "clock2__get_time", json!({})).await;
    assert_eq!(v["result"]["content"][0]["text"], "12:00", "{v}");
}

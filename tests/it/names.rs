//! Names that fit: every tool a client profile sees is named within the budget of the client
//! it serves (64 minus that client's prefix), under the server's own name where it is unique, and
//! every one of them is callable by that name — with real long names from public servers.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// Through the profiles `client-config --write` makes (named after their client), each name
/// fits: Claude Code's 48, Gemini CLI's 50, Cursor's 51, the gateway token's 48. A name two
/// servers share is `server__tool` for both; the others keep their own; each one runs.
#[tokio::test]
async fn every_name_fits_its_clients_budget_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let marks = d.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let entry = |spec: String| {
        writes_in(
            json!({"command": FIXTURE, "args": ["--spec-file", spec], "requires_approval": false}),
            &marks,
        )
    };
    let cfg = json!({
        "servers": {
            "github": entry(spec(d, "github", GITHUB)),
            "gitlab": entry(spec(d, "gitlab", &["search_repositories"])),
        },
        "clients": {"claude-code": {}, "gemini": {}, "cursor": {}},
    });
    let s = serve(d, &cfg.to_string(), &["github", "gitlab"]).await;
    let url = s.info.url.clone();
    let long = "add_pull_request_review_comment_to_pending_review";
    let mut n = 0;
    for (profile, budget, prefix) in [
        (Some("claude-code"), 48, "mcp__gatehouse__"),
        (Some("gemini"), 50, "mcp_gatehouse_"),
        (Some("cursor"), 51, "gatehouse"),
        (None, 48, "mcp__gatehouse__"),
    ] {
        let token = match profile {
            Some(p) => token_of(d, p).await,
            None => s.info.token.clone(),
        };
        let c = Mcp::open(&url, &token).await;
        let names = c.tools().await;
        let who = profile.unwrap_or("the gateway token");
        for name in &names {
            assert!(
                name.len() <= budget && prefix.len() + name.len() <= 64,
                "{who}: {name} is {} characters",
                name.len()
            );
        }
        let set: HashSet<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(set.len(), names.len(), "{who}: a name twice: {names:?}");
        assert!(
            set.contains("github__search_repositories")
                && set.contains("gitlab__search_repositories"),
            "{who}: {names:?}"
        );
        assert!(
            set.contains("list_code_scanning_alerts"),
            "{who}: {names:?}"
        );
        // GitHub's 49-character name is its own where it fits (Cursor), shortened elsewhere.
        assert_eq!(set.contains(long), budget >= long.len(), "{who}: {names:?}");
        // Every listed tool of the public servers' runs by the name it is listed under.
        let theirs = |t: &str| GITHUB.iter().any(|g| t.ends_with(g)) || t.contains("_h");
        let listed: Vec<&String> = names.iter().filter(|t| theirs(t)).collect();
        assert_eq!(listed.len(), GITHUB.len() + 1, "{who}: {names:?}");
        for name in listed {
            n += 1;
            let mark = marks.join(format!("m{n}"));
            let v: Value = c.call(n, name, json!({"path": mark})).await;
            assert!(
                v["result"]["isError"] != true && mark.exists(),
                "{who}: {name}: {v}"
            );
        }
    }
    // The names stay put across a restart of the hub (they are kept in DATA/names.json).
    let before = Mcp::open(&url, &token_of(d, "claude-code").await)
        .await
        .tools()
        .await;
    drop(s);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let s = serve(d, &cfg.to_string(), &["github", "gitlab"]).await;
    let after = Mcp::open(&s.info.url, &token_of(d, "claude-code").await)
        .await
        .tools()
        .await;
    assert_eq!(before, after);

    // `gatehouse tools --client` shows the names as that profile's clients see them, within
    // its budget, and warns of one over it (here a name kept from before in DATA/names.json,
    // which the profile's next listing replaces).
    let table = crate::support::gh(&s, &["tools", "--client", "claude-code"]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(
        table.contains(
            "As client profile claude-code's clients see them (each name at most 48 characters):"
        ),
        "{table}"
    );
    for name in &after {
        assert!(table.contains(name.as_str()), "{name} missing:\n{table}");
    }
    assert!(!table.contains("warning:"), "{table}");
    let rows: Value = serde_json::from_slice(
        &crate::support::gh(&s, &["tools", "--client", "gemini", "--json"]).stdout,
    )
    .unwrap();
    let rows = rows.as_array().unwrap();
    assert!(
        rows.iter()
            .all(|r| r["budget"] == 50 && r["shown"].as_str().is_some_and(|n| n.len() <= 50)),
        "{rows:?}"
    );
    let names_file = s.log.parent().unwrap().join("data/names.json");
    let mut kept: Value =
        serde_json::from_str(&std::fs::read_to_string(&names_file).unwrap()).unwrap();
    kept["claude-code"][format!("github__{long}")] = json!(long);
    std::fs::write(&names_file, kept.to_string()).unwrap();
    let table = crate::support::gh(&s, &["tools", "--client", "claude-code"]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(
        table.contains("warning: 49 characters, over this client's 48"),
        "{table}"
    );
    // The same for the Connect view, which shows each profile's `too_long`.
    let profiles: Value =
        serde_json::from_slice(&crate::support::gh(&s, &["clients", "--json"]).stdout).unwrap();
    let of = |id: &str| {
        profiles
            .as_array()
            .and_then(|a| a.iter().find(|p| p["id"] == id))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(of("claude-code")["too_long"], json!([long]), "{profiles}");
    assert!(of("gemini").get("too_long").is_none(), "{profiles}");
}

//! The import module's unit tests: each client format, placeholders, plans, credential moves.

use super::*;
use serde_json::json;

fn parse(v: Value) -> Result<Vec<Candidate>, String> {
    parse_source(&v.to_string(), Path::new("client.json"))
}

#[test]
fn client_formats_map_onto_entries() {
    let c = parse(json!({"mcpServers": {
        "GitHub Server": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                           "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "LOG": "1"}},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}}
    }}))
    .unwrap();
    assert_eq!(c[0].id, "github-server");
    assert_eq!(c[0].credentials, ["GITHUB_PERSONAL_ACCESS_TOKEN"]);
    assert_eq!(
        c[0].command_line(),
        "npx -y @modelcontextprotocol/server-github"
    );
    assert_eq!(c[1].entry["url"], "https://example.com/mcp");
    assert_eq!(c[1].credentials, ["Authorization"]);
    let vs =
        parse(json!({"servers": {"fs": {"type": "stdio", "command": "uvx", "args": ["x y"]}}}))
            .unwrap();
    assert_eq!(vs[0].command_line(), "uvx 'x y'");
    // Credential-bearing arguments are shown without their values.
    let hidden = parse(json!({"mcpServers": {"r": {"command": "npx", "args": [
        "mcp-remote", "https://m.example/mcp", "--header", "Authorization: Bearer s3cr3t",
        "-H", "X-API-Key: k3y", "--api-key", "v4l", "--token=t0k", "--port", "8080"
    ]}}}))
    .unwrap();
    let line = hidden[0].command_line();
    for secret in ["s3cr3t", "k3y", "v4l", "t0k"] {
        assert!(!line.contains(secret), "{line}");
    }
    assert!(
        line.contains("'Authorization: (hidden)'") && line.contains("--token=(hidden)"),
        "{line}"
    );
    assert!(
        line.contains("--port 8080") && line.contains("https://m.example/mcp"),
        "{line}"
    );
    // A credential in a URL's query is hidden too, in an argument and as the entry's URL.
    let q = parse(json!({"mcpServers": {
        "a": {"command": "npx", "args": ["mcp-remote", "https://m.example/mcp?api_key=s3cr3t&region=eu"]},
        "b": {"url": "https://m.example/mcp?token=t0k"}
    }}))
    .unwrap();
    let (a, b) = (q[0].command_line(), q[1].command_line());
    assert!(!a.contains("s3cr3t") && a.contains("region=eu"), "{a}");
    assert!(
        !b.contains("t0k") && b.contains("token=%28hidden%29"),
        "{b}"
    );
    let err = parse_source("{\"mcpServers\": {", Path::new("b.json")).unwrap_err();
    assert!(err.starts_with("b.json:1:"), "{err}");
    assert!(parse(json!({"other": 1}))
        .unwrap_err()
        .contains("mcpServers"));
}

#[test]
fn gremia_manifests_keep_tools_used() {
    let c = parse(json!({"mcp_requirements": [
        {"server_id": "fs", "name": "Files", "transport": "stdio", "command": "npx",
         "args": ["-y", "x"], "tools_used": ["fs:read_file", "write_file"]}
    ]}))
    .unwrap();
    assert_eq!(c[0].id, "fs");
    assert_eq!(c[0].tools_used, ["read_file", "write_file"]);
    // Both reach the config entry that import writes.
    let entry = crate::config::parse_entry(&c[0].entry).unwrap();
    assert_eq!(entry.name.as_deref(), Some("Files"));
    assert_eq!(entry.tools_used, ["read_file", "write_file"]);
}

#[test]
fn taken_ids_are_skipped_unless_renamed() {
    let config = Config::parse(
        r#"{"servers": {"fs": {"command": "x"}}}"#,
        Path::new("g.json"),
    )
    .unwrap();
    let c = parse(json!({"mcpServers": {"fs": {"command": "a"}, "FS": {"command": "b"}, "new": {"command": "c"}}})).unwrap();
    let p = plan(&config, c.clone(), &BTreeMap::new(), &[]);
    assert!(
        p.iter()
            .filter(|(_, o)| matches!(o, Outcome::Skip(_)))
            .count()
            == 2
    );
    let mut renames = BTreeMap::new();
    renames.insert("FS".to_owned(), "fs-2".to_owned());
    let p = plan(&config, c, &renames, &[]);
    let added: Vec<_> = p
        .iter()
        .filter(|(_, o)| *o == Outcome::Add)
        .map(|(c, _)| c.id.as_str())
        .collect();
    assert_eq!(added, ["fs-2", "new"]);
}

#[test]
fn secret_names() {
    assert_eq!(secret_name("github", "GITHUB_TOKEN"), "github-github-token");
    assert!(looks_like_credential("OPENAI_API_KEY"));
    assert!(!looks_like_credential("LOG_LEVEL"));
}

/// Claude Code's `~/.claude.json`: the user scope and each project's local scope are read, each
/// server labelled; the same server in two scopes is imported once; two different servers under
/// one name are a conflict nobody picks for the person, resolved with `NAME@SCOPE` renames.
#[test]
fn claude_code_scopes_are_labelled_and_clashes_never_picked() {
    let root = json!({
        "mcpServers": {"fs": {"command": "npx", "args": ["a"]}, "same": {"command": "x"}},
        "projects": {
            "/p": {"mcpServers": {"fs": {"command": "uvx", "args": ["b"]}, "same": {"command": "x"}, "only": {"command": "y"}}},
            "/q": {"allowedTools": []}
        }
    });
    let c = parse(root).unwrap();
    let seen: Vec<(&str, &str)> = c
        .iter()
        .map(|c| (c.source_name.as_str(), c.scope.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("fs", "user"),
            ("same", "user"),
            ("fs", "local /p"),
            ("only", "local /p"),
            ("same", "local /p")
        ]
    );
    let plan_of = |renames: &[(&str, &str)]| {
        let renames = renames
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        plan(&Config::default(), c.clone(), &renames, &[])
            .into_iter()
            .map(|(c, o)| (c.id, c.scope, o))
            .collect::<Vec<_>>()
    };
    let p = plan_of(&[]);
    let outcome = |id: &str, scope: &str| {
        p.iter()
            .find(|(i, s, _)| i == id && s == scope)
            .map(|(_, _, o)| o.clone())
            .unwrap()
    };
    for scope in ["user", "local /p"] {
        let Outcome::Skip(why) = outcome("fs", scope) else {
            panic!("a clash was picked")
        };
        assert!(
            why.contains("defined differently in the local /p and user scopes"),
            "{why}"
        );
        assert!(why.contains("--rename 'fs@"), "{why}");
    }
    assert_eq!(outcome("same", "user"), Outcome::Add);
    assert!(
        matches!(outcome("same", "local /p"), Outcome::Skip(w) if w.contains("the same server as in the user scope"))
    );
    assert_eq!(outcome("only", "local /p"), Outcome::Add);
    // Each named for its scope: both come in, under the ids given.
    let p = plan_of(&[("fs@user", "fs-user"), ("fs@local /p", "fs-p")]);
    for id in ["fs-user", "fs-p"] {
        assert!(
            p.iter().any(|(i, _, o)| i == id && *o == Outcome::Add),
            "{p:?}"
        );
    }
}

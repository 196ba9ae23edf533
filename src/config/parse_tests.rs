//! The config loader's refusals: each with its position and a composed fix.
use super::*;
use crate::config::refusal::{closest, levenshtein};
use crate::config::{ServerId, StartMode, DEFAULT_IDLE_STOP_SECS};
use serde_json::json;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("gh.json"))
}

/// The one entry of `text` that cannot be read, when the rest of the file can: (its line, the
/// problem, the fix).
fn bad_entry(text: &str) -> (usize, usize, String, String) {
    let c = parse(text).unwrap_or_else(|e| panic!("the whole file was refused: {e}"));
    assert_eq!(c.invalid.len(), 1, "{:?}", c.invalid);
    let (_, e) = c.invalid.into_iter().next().unwrap();
    (e.line, 0, e.error.message, e.error.fix)
}

fn invalid(text: &str) -> (usize, usize, String, String) {
    match parse(text) {
        Err(ConfigError::Invalid {
            line,
            column,
            message,
            fix,
            ..
        }) => (line, column, message, fix),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn parses_the_design_example() {
    let c = parse(
        r#"{
  "servers": {
"fs": {
  "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"],
  "env": { "LOG_LEVEL": "info", "GITHUB_TOKEN": { "secret": "github-token" } },
  "cwd": "/home/me", "enabled": true,
  "tools": { "write_file": { "requires_approval": true }, "fs:move_file": { "enabled": false } }
},
"docs": { "url": "http://127.0.0.1:9000/mcp",
          "headers": { "Authorization": { "secret": "docs-token", "prefix": "Bearer " } } }
  },
  "approval": { "default": "ask-unless-read-only", "timeout_secs": 45 },
  "gateway": { "listen": "127.0.0.1:7723" }
}"#,
    )
    .unwrap();
    let fs = &c.servers[&ServerId::parse("fs").unwrap()];
    assert_eq!(fs.secret_refs(), vec!["github-token"]);
    assert_eq!(fs.tools["move_file"].enabled, Some(false));
    assert!(matches!(fs.transport, Transport::Stdio(_)));
    let docs = &c.servers[&ServerId::parse("docs").unwrap()];
    assert!(matches!(docs.transport, Transport::Remote(_)));
    assert_eq!(docs.startup_timeout_secs, 60);
    // Round trip through the file format.
    assert_eq!(parse(&c.to_json()).unwrap(), c);
}

#[test]
fn unknown_key_names_position_and_suggests() {
    let (line, _, msg, fix) = bad_entry("{\"servers\": {\n  \"a\": {\"comand\": \"x\"}}}");
    assert_eq!(line, 2);
    assert!(msg.contains("unknown setting `comand`"), "{msg}");
    assert!(fix.contains("did you mean \"command\""), "{fix}");
}

#[test]
fn bad_id_missing_command_wrong_type() {
    let (line, _, msg, fix) =
        bad_entry("{\"servers\": {\n\n \"My_Server\": {\"command\": \"x\"}}}");
    assert_eq!(line, 3);
    assert!(msg.contains("invalid server id \"My_Server\""), "{msg}");
    assert!(fix.contains("my-server"), "{fix}");

    let (_, _, msg, fix) = bad_entry("{\"servers\": {\"a\": {\"args\": []}}}");
    assert!(msg.contains("neither \"command\" nor \"url\""), "{msg}");
    assert!(!fix.is_empty());

    let (_, _, msg, fix) = bad_entry("{\"servers\": {\"a\": {\"command\": 5}}}");
    assert!(msg.contains("invalid type"), "{msg}");
    assert!(fix.contains("\"command\" is text in quotes"), "{fix}");

    let (_, _, msg, _) =
        bad_entry("{\"servers\": {\"a\": {\"command\": \"x\", \"url\": \"http://h\"}}}");
    assert!(msg.contains("both"), "{msg}");
}

#[test]
fn every_duration_is_bounded_with_a_clear_error() {
    for (text, key) in [
        (
            r#"{"servers": {"a": {"command": "x", "startup_timeout_secs": 18446744073709551615}}}"#,
            "startup_timeout_secs",
        ),
        (
            r#"{"servers": {"a": {"command": "x", "startup_timeout_secs": 0}}}"#,
            "startup_timeout_secs",
        ),
        (
            r#"{"servers": {"a": {"command": "x", "call_timeout_secs": 18446744073709551615}}}"#,
            "call_timeout_secs",
        ),
        (
            r#"{"approval": {"timeout_secs": 18446744073709551615}}"#,
            "timeout_secs",
        ),
        (r#"{"approval": {"timeout_secs": 0}}"#, "timeout_secs"),
    ] {
        let (_, _, msg, fix) = if text.contains("servers") {
            bad_entry(text)
        } else {
            invalid(text)
        };
        assert!(
            msg.contains(key) && msg.contains("must be between"),
            "{msg}"
        );
        assert!(fix.contains("range"), "{fix}");
    }
    let ok = parse(r#"{"servers": {"a": {"command": "x", "call_timeout_secs": 0}}, "approval": {"timeout_secs": 3600}}"#).unwrap();
    assert_eq!(ok.servers.values().next().unwrap().call_timeout_secs, 0);
}

#[test]
fn an_entry_that_is_gatehouse_itself_is_recognised() {
    use crate::config::reaches_gatehouse;
    let t = |entry: &str| {
        let c = parse(&format!("{{\"servers\": {{\"a\": {entry}}}}}")).unwrap();
        c.servers.into_values().next().unwrap().transport
    };
    for itself in [
        r#"{"url": "http://127.0.0.1:7723/mcp"}"#,
        r#"{"url": "http://localhost:7723/anything"}"#,
        r#"{"url": "http://[::1]:7723/mcp"}"#,
        r#"{"command": "gatehouse", "args": ["connect"]}"#,
        r#"{"command": "/usr/bin/gatehouse", "args": ["--control", "/x", "connect"]}"#,
        r#"{"command": "gatehouse", "args": ["serve", "--stdio", "--config", "g.json"]}"#,
        r#"{"command": "C:\\bin\\gatehouse.exe", "args": ["connect"]}"#,
        // Through a bridge or a shell, any spelling of this machine.
        r#"{"command": "npx", "args": ["-y", "mcp-remote", "http://127.0.0.1:7723/mcp", "--header", "Authorization: Bearer x"]}"#,
        r#"{"command": "npx", "args": ["-y", "supergateway", "--streamableHttp", "http://localhost:7723/mcp"]}"#,
        r#"{"command": "uvx", "args": ["mcp-proxy", "--transport=streamablehttp", "http://0.0.0.0:7723/mcp"]}"#,
        r#"{"command": "mcp-remote", "args": ["http://127.1:7723/mcp"]}"#,
        r#"{"command": "mcp-remote", "args": ["http://[::ffff:127.0.0.1]:7723/mcp"]}"#,
        r#"{"command": "bridge", "args": ["--url=ws://LOCALHOST:7723/mcp"]}"#,
        r#"{"command": "bridge", "args": ["127.0.0.1:7723"]}"#,
        r#"{"command": "sh", "args": ["-c", "exec npx mcp-remote 'http://127.0.0.1:7723/mcp'"]}"#,
        r#"{"command": "bash", "args": ["-lc", "cd /tmp && gatehouse connect --client x"]}"#,
        r#"{"command": "npx", "args": ["gatehouse", "serve", "--stdio"]}"#,
    ] {
        assert!(reaches_gatehouse(&t(itself), &[7723]).is_some(), "{itself}");
    }
    for other in [
        r#"{"url": "http://127.0.0.1:7724/mcp"}"#,
        r#"{"url": "https://example.com:7723/mcp"}"#,
        r#"{"command": "gatehouse", "args": ["status"]}"#,
        r#"{"command": "npx", "args": ["-y", "server-connect"]}"#,
        r#"{"command": "npx", "args": ["-y", "mcp-remote", "http://127.0.0.1:7724/mcp"]}"#,
        r#"{"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.example.com/mcp"]}"#,
        r#"{"command": "sh", "args": ["-c", "echo gatehouse; serve-docs --port 7723"]}"#,
        r#"{"command": "python", "args": ["server.py", "--port", "7723"]}"#,
    ] {
        assert!(reaches_gatehouse(&t(other), &[7723]).is_none(), "{other}");
    }
}

#[test]
fn syntax_error_has_fix() {
    let (line, _, _, fix) = invalid("{\"servers\": {\n \"a\": {\"command\": \"x\"\n}");
    assert!(line >= 2);
    assert!(fix.contains("JSON syntax"));
}

#[test]
fn non_loopback_listen_refused() {
    let (_, _, msg, _) = invalid("{\"gateway\": {\"listen\": \"0.0.0.0:7723\"}}");
    assert!(msg.contains("not a loopback"), "{msg}");
    assert!(parse("{\"gateway\": {\"listen\": \"[::1]:1\"}}").is_ok());
}

#[test]
fn bad_secret_reference() {
    let (_, _, msg, fix) = bad_entry(
        "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"T\": {\"secrt\": \"x\"}}}}}",
    );
    assert!(msg.contains("in a reference"), "{msg}");
    assert!(fix.contains("{\"env\": VAR}"), "{fix}");
    let (_, _, msg, _) = bad_entry(
        "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"T\": {\"secret\": \"a b\"}}}}}",
    );
    assert!(msg.contains("invalid secret name"), "{msg}");
}

/// Client-file spellings are accepted where their meaning is unambiguous: `disabled`,
/// `type`/`transport` agreeing with command/url, `name`, `tools_used`, `{"env": VAR}`.
#[test]
fn pasted_entries_are_accepted_where_unambiguous() {
    let c = Config::parse(
        r#"{"servers": {"a": {"command": "x", "type": "stdio", "disabled": true, "name": "My A", "tools_used": ["t"], "env": {"K": {"env": "HOME"}}},
                         "b": {"url": "https://e.com/mcp", "transport": "streamable-http"}}}"#,
        Path::new("t"),
    )
    .unwrap();
    let a = c.servers.values().next().unwrap();
    assert!(!a.enabled);
    assert_eq!(a.name.as_deref(), Some("My A"));
    assert_eq!(a.tools_used, vec!["t".to_owned()]);
    match &a.transport {
        Transport::Stdio(t) => {
            assert_eq!(t.env["K"], EnvValue::Env { env: "HOME".into() })
        }
        other => panic!("{other:?}"),
    }
    // Written back, it reads the same.
    assert_eq!(Config::parse(&c.to_json(), Path::new("t")).unwrap(), c);
}

/// What would be a guess is refused with the fix: a transport that disagrees with the entry,
/// `disabled` and `enabled` disagreeing.
#[test]
fn pasted_files_and_contradictions_are_refused_with_the_fix() {
    let (_, _, msg, fix) = bad_entry(r#"{"servers": {"a": {"command": "x", "type": "http"}}}"#);
    assert!(msg.contains("has a \"command\""), "{msg}");
    assert!(fix.contains("remote servers need \"url\""), "{fix}");
    let (_, _, msg, _) =
        bad_entry(r#"{"servers": {"a": {"url": "https://e.com", "type": "stdio"}}}"#);
    assert!(msg.contains("no \"command\""), "{msg}");
    let (_, _, msg, _) = bad_entry(r#"{"servers": {"a": {"command": "x", "type": "pigeon"}}}"#);
    assert!(msg.contains("unknown transport"), "{msg}");
    let (_, _, msg, _) =
        bad_entry(r#"{"servers": {"a": {"command": "x", "disabled": true, "enabled": true}}}"#);
    assert!(msg.contains("disagree"), "{msg}");
    let (_, _, msg, _) = bad_entry(
        r#"{"servers": {"a": {"command": "x", "env": {"K": {"env": "V", "secret": "s"}}}}}"#,
    );
    assert!(msg.contains("both \"env\" and \"secret\""), "{msg}");
}

#[test]
fn levenshtein_basics() {
    assert_eq!(levenshtein("comand", "command"), 1);
    assert_eq!(closest("xyzzy", &["command", "args"]), None);
}

/// Every refusal a server entry can get, with the fix line it prints: each fix is written for
/// its refusal, never cut out of the message (the old "fix: \"npx\") or \"url\"…" came from
/// slicing a sentence at its first colon).
#[test]
fn every_refusal_has_a_composed_fix() {
    let table: &[(&str, &str, &str)] = &[
        (r#"{"a": {"args": []}}"#, "the server has neither \"command\" nor \"url\"",
         "add \"command\" with the program to run for a local (stdio) server, or \"url\" with the address of a remote one"),
        (r#"{"a": {"command": " "}}"#, "\"command\" is empty", "give the program to run, for example npx"),
        (r#"{"a": {"command": "x", "url": "http://h"}}"#, "a server has both \"command\" and \"url\"",
         "keep \"command\" for a local (stdio) server or \"url\" for a remote one"),
        (r#"{"a": {"command": "x", "headers": {}}}"#, "\"headers\", \"allow_insecure\" and \"allow_private\" apply to remote (\"url\") servers only",
         "remove them from this stdio server"),
        (r#"{"a": {"command": "x", "auth": "none"}}"#, "\"auth\" and \"oauth\" apply to remote (\"url\") servers only",
         "remove them from this stdio server"),
        (r#"{"a": {"url": "http://h", "cwd": "/"}}"#, "\"args\", \"env\" and \"cwd\" apply to stdio (\"command\") servers only",
         "remove them from this remote server"),
        (r#"{"a": {"url": "ftp://h"}}"#, "invalid url \"ftp://h\"", "use an http:// or https:// address, for example https://example.com/mcp"),
        (r#"{"a": {"url": "http://h", "auth": "magic"}}"#, "unknown \"auth\" \"magic\"",
         "use \"oauth\" (sign in with the server's authorization server) or \"none\" (only the configured headers), or leave it out to sign in when the server asks"),
        (r#"{"a": {"url": "http://h", "auth": "none", "oauth": {}}}"#, "the entry has \"oauth\" settings and \"auth\": \"none\"", "remove one of them"),
        (r#"{"a": {"url": "http://h", "oauth": {"client_id": " "}}}"#, "\"oauth\".\"client_id\" must be 1 to 1000 characters",
         "give the client id the authorization server gave you, or leave it out to register automatically"),
        (r#"{"a": {"url": "http://h", "oauth": {"scopes": ["a b"]}}}"#, "invalid scope \"a b\" in \"oauth\".\"scopes\"",
         "write each scope as one word of printable ASCII (no spaces, quotes or backslashes)"),
        (r#"{"a": {"command": "x", "type": "pigeon"}}"#, "unknown transport \"pigeon\"",
         "use \"stdio\" with \"command\", or \"http\" / \"sse\" with \"url\" (or leave it out: Gatehouse tells them apart)"),
        (r#"{"a": {"url": "http://h", "type": "stdio"}}"#, "the transport is \"stdio\" but there is no \"command\"",
         "add the program to run, or set \"url\" and drop the transport"),
        (r#"{"a": {"command": "x", "enabled": true, "disabled": true}}"#, "\"disabled\" and \"enabled\" disagree",
         "keep one of them (\"enabled\": false stops the server)"),
        (r#"{"a": {"command": "x", "name": ""}}"#, "\"name\" must be 1 to 100 characters",
         "give a short display name (it is shown next to the id), or leave it out"),
        (r#"{"a": {"command": "x", "startup_timeout_secs": 0}}"#, "\"startup_timeout_secs\" is 0: it must be between 1 and 3600 seconds",
         "set \"startup_timeout_secs\" to a number in that range"),
        (r#"{"a": {"command": "x", "env": {"T": {"secrt": "x"}}}}"#, "unknown field `secrt` in a reference",
         "write {\"secret\": NAME, \"prefix\": TEXT} or {\"env\": VAR}"),
        (r#"{"a": {"command": "x", "env": {"T": {"secret": "a b"}}}}"#, "invalid secret name \"a b\"",
         "use 1 to 64 characters of a-z, A-Z, 0-9, '.', '_' and '-'"),
        (r#"{"a": {"command": "x", "env": {"T": {"prefix": "p"}}}}"#, "a secret reference has no \"secret\"",
         "name the keychain secret, for example {\"secret\": \"github-token\"}"),
        (r#"{"a": {"command": "x", "env": {"T": {"env": "A", "secret": "s"}}}}"#, "a reference has both \"env\" and \"secret\"",
         "keep one: {\"secret\": NAME} (the keychain) or {\"env\": VAR} (Gatehouse's environment), not both"),
        (r#"{"a": {"command": "x", "env": {"T": {"env": "A=B"}}}}"#, "invalid environment variable name \"A=B\"",
         "name a variable of Gatehouse's environment, without '=' or NUL"),
        (r#"{"a": {"command": "x", "env": {"T": {"env": "GATEHOUSE_TOKEN"}}}}"#, "T refers to GATEHOUSE_TOKEN, one of Gatehouse's own variables",
         "give the server its own value or secret: Gatehouse never hands its own settings or tokens to a server"),
        (r#"{"a": {"url": "http://h", "headers": {"Host": "e.com"}}}"#, "the header Host is set by Gatehouse (or by HTTP itself) for every request",
         "remove Host from \"headers\""),
        (r#"{"a": {"command": "npx", "pin": {"version": "^1"}}}"#, "\"pin\" names \"^1\", which is not an exact version",
         "pin it again with `gatehouse pin ID`"),
        (r#"{"a": {"url": "https://h", "pin": {"version": "1.0.0"}}}"#, "\"pin\" applies to local (\"command\") servers that run a package",
         "remove it from this remote server"),
        (r#"{"My_A": {"command": "x"}}"#, "invalid server id \"My_A\"", "use 1 to 32 characters of a-z, 0-9 and '-', for example \"my-a\""),
        (r#"{"a": {"comand": "x"}}"#, "unknown setting `comand`", "did you mean \"command\"? rename or remove \"comand\""),
    ];
    for (servers, message, fix) in table {
        let (_, _, m, f) = bad_entry(&format!("{{\"servers\": {servers}}}"));
        assert!(m.starts_with(message), "{servers}: message {m:?}");
        assert_eq!(&f, fix, "{servers}");
        // The same entry through the form's path gives the same two sentences.
        if let Some(entry) = serde_json::from_str::<serde_json::Value>(servers)
            .ok()
            .and_then(|v| v.get("a").cloned())
        {
            let e = crate::config::parse_entry(&entry).unwrap_err();
            assert_eq!(&e.fix, fix, "{servers}");
        }
    }
    for (text, message, fix) in [
        (
            r#"{"approval": {"timeout_secs": 0}}"#,
            "\"timeout_secs\" is 0: it must be between 1 and 3600 seconds",
            "set \"timeout_secs\" to a number in that range",
        ),
        (
            r#"{"gateway": {"listen": "0.0.0.0:1"}}"#,
            "listen address \"0.0.0.0:1\" is not a loopback address",
            "the gateway only binds 127.0.0.1 or [::1]: use for example \"127.0.0.1:7723\"",
        ),
        (
            r#"{"gateway": {"listen": "nowhere"}}"#,
            "invalid listen address \"nowhere\"",
            "use IP:PORT, for example \"127.0.0.1:7723\"",
        ),
    ] {
        let (_, _, m, f) = invalid(text);
        assert_eq!(m, message, "{text}");
        assert_eq!(f, fix, "{text}");
    }
}

/// A client's own file given as Gatehouse's config is named as such, whatever key comes first,
/// and the fix is the import of that very file.
#[test]
fn a_client_file_as_the_config_points_to_import() {
    for text in [
        r#"{"inputs": [{"id": "k", "type": "promptString"}], "servers": {"a": {"command": "x"}}}"#,
        r#"{"numStartups": 3, "mcpServers": {"a": {"command": "x"}}}"#,
        r#"{"mcp": {"a": {"type": "local", "command": ["x"]}}}"#,
        r#"{"context_servers": {}}"#,
    ] {
        let (_, _, m, f) = invalid(text);
        assert!(m.contains("AI client's own config"), "{text}: {m}");
        assert!(
            f.starts_with("run `gatehouse import gh.json`"),
            "{text}: {f}"
        );
    }
}

/// One broken entry costs one server: the file is read, the others are as written, the broken
/// one is kept as written (saved back unchanged) with its line, problem and fix; a form's edit
/// makes it a server; removing it removes it.
#[test]
fn one_broken_entry_costs_one_server() {
    let text = "{\"servers\": {\n  \"a\": {\"command\": \"x\"},\n  \"b\": {\"comand\": \"y\"},\n  \"c\": {\"url\": \"https://e.com/mcp\"}\n}, \"clients\": {\"cursor\": {\"servers\": [\"b\"]}}}";
    let c = parse(text).unwrap();
    let ids: Vec<&str> = c.servers.keys().map(ServerId::as_str).collect();
    assert_eq!(ids, ["a", "c"]);
    let b = &c.invalid["b"];
    assert_eq!(b.line, 3);
    assert!(
        b.error.message.contains("unknown setting `comand`"),
        "{b:?}"
    );
    assert!(
        b.reason().contains("did you mean \"command\""),
        "{}",
        b.reason()
    );
    // Saved back: the broken entry exactly as written.
    let again = parse(&c.to_json()).unwrap();
    assert_eq!(again.invalid["b"].raw, json!({"comand": "y"}));
    assert_eq!(again.servers, c.servers);
    // Fixed in the form: a server now.
    let fixed = c
        .with_server(Some("b"), "b", &json!({"command": "y"}))
        .unwrap();
    assert!(fixed.invalid.is_empty() && fixed.servers.len() == 3);
    // Or removed, with the profile that named it.
    let gone = c.without_server("b").unwrap();
    assert!(gone.invalid.is_empty());
    assert!(gone.clients[&ServerId::parse("cursor").unwrap()]
        .servers
        .as_ref()
        .unwrap()
        .is_empty());
    assert!(c
        .with_enabled("b", false)
        .unwrap_err()
        .contains("cannot be read"));
    // For the form: the typo read as the setting it meant, said.
    let (repaired, said) = crate::config::repair_entry(&b.raw);
    assert_eq!(repaired, json!({"command": "y"}));
    assert_eq!(said, ["\"comand\" read as \"command\""]);
}

/// A client's snippet pasted as the config works: `"mcpServers"` is read as `"servers"`, with the
/// clients' spellings (`serverUrl`, `httpUrl`, `disabled`, client-only settings) read as
/// Gatehouse's; both lists at once are refused with the fix.
#[test]
fn mcp_servers_is_read_as_servers() {
    let c = parse(r#"{"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "fs"], "env": {"K": "${HOME}"}, "timeout": 30000, "trust": true},
        "w": {"serverUrl": "https://w.example/mcp"},
        "g": {"httpUrl": "https://g.example/mcp", "disabled": true},
        "cp": {"type": "http", "url": "https://c.example/mcp", "tools": ["*"]}}}"#)
    .unwrap();
    assert!(c.invalid.is_empty(), "{:?}", c.invalid);
    assert_eq!(c.servers.len(), 4);
    let g = &c.servers[&ServerId::parse("g").unwrap()];
    assert!(!g.enabled);
    match &c.servers[&ServerId::parse("fs").unwrap()].transport {
        Transport::Stdio(t) => assert_eq!(t.env["K"], EnvValue::Env { env: "HOME".into() }),
        other => panic!("{other:?}"),
    }
    // Written back under "servers".
    assert!(c.to_json().contains("\"servers\""));
    let (_, _, m, f) = invalid(r#"{"servers": {}, "mcpServers": {}}"#);
    assert!(m.contains("both \"servers\" and \"mcpServers\""), "{m}");
    assert!(f.contains("keep one list"), "{f}");
}

/// `start`, `idle_stop_secs` and `defaults`: an entry's own word wins, then `defaults`, then at
/// launch; bounds refused with the fix; written back only when said.
#[test]
fn start_on_demand_and_defaults() {
    let c = parse(r#"{"servers": {"a": {"command": "x"}, "b": {"command": "y", "start": "at_launch", "idle_stop_secs": 30}},
                      "defaults": {"start": "on_demand"}}"#)
    .unwrap();
    let a = &c.servers[&ServerId::parse("a").unwrap()];
    let b = &c.servers[&ServerId::parse("b").unwrap()];
    assert_eq!(a.effective_start, StartMode::OnDemand);
    assert_eq!(a.start, None);
    assert_eq!(b.effective_start, StartMode::AtLaunch);
    assert_eq!(b.idle_stop_secs, 30);
    assert_eq!(a.idle_stop_secs, DEFAULT_IDLE_STOP_SECS);
    assert_eq!(parse(&c.to_json()).unwrap(), c);
    let (_, _, m, f) = bad_entry(r#"{"servers": {"a": {"command": "x", "start": "lazily"}}}"#);
    assert!(m.contains("unknown variant `lazily`"), "{m}");
    assert!(
        f.contains("\"at_launch\"") && f.contains("\"on_demand\""),
        "{f}"
    );
    let (_, _, m, _) = bad_entry(r#"{"servers": {"a": {"command": "x", "idle_stop_secs": 0}}}"#);
    assert!(m.contains("idle_stop_secs"), "{m}");
}

/// The two refusals that ended with "see examples/gatehouse.json": each names the change now.
#[test]
fn approval_refusals_name_the_change() {
    let (_, _, m, f) = invalid(r#"{"approval": {"default": "flaged-only"}}"#);
    assert!(m.contains("unknown variant `flaged-only`"), "{m}");
    assert!(
        f.starts_with("change \"flaged-only\" to \"flagged-only\""),
        "{f}"
    );
    let (_, _, m, f) = invalid(r#"{"approval": {"timeout_secs": -5}}"#);
    assert!(m.contains("-5"), "{m}");
    assert!(f.contains("0 or more"), "{f}");
    assert!(!f.contains("examples/gatehouse.json"), "{f}");
}

/// A value of the wrong type names its setting and shows the setting's right form — a string
/// given for a list shown split into one — so the fix can be followed as written.
#[test]
fn a_wrong_type_names_its_setting_and_the_right_form() {
    let (_, _, msg, fix) =
        bad_entry(r#"{"servers": {"a": {"command": "x", "args": "--root /data"}}}"#);
    assert!(msg.starts_with("\"args\": invalid type"), "{msg}");
    assert!(fix.contains(r#""args": ["--root", "/data"]"#), "{fix}");
    let (_, _, msg, fix) = bad_entry(r#"{"servers": {"a": {"command": "x", "enabled": "no"}}}"#);
    assert!(msg.starts_with("\"enabled\""), "{msg}");
    assert!(fix.contains(r#""enabled": true"#), "{fix}");
    let (_, _, msg, fix) =
        bad_entry(r#"{"servers": {"a": {"command": "x", "startup_timeout_secs": "30"}}}"#);
    assert!(msg.starts_with("\"startup_timeout_secs\""), "{msg}");
    assert!(fix.contains("whole number of seconds"), "{fix}");
    let (_, _, msg, fix) = bad_entry(r#"{"servers": {"a": {"command": "x", "env": ["A=1"]}}}"#);
    assert!(msg.contains("\"env\""), "{msg}");
    assert!(fix.contains(r#""env": {"NAME": "value"}"#), "{fix}");
}

/// `"network"` on the entry is the same as inside its `"sandbox"`; given both ways differently,
/// on a remote server, or with the sandbox off, the entry is refused naming it; a bad
/// destination is refused with its own message.
#[test]
fn network_on_the_entry_or_in_its_sandbox_reads_the_same() {
    use crate::sandbox::network::Network;
    let net = |text: &str| match &parse(text)
        .unwrap()
        .servers
        .values()
        .next()
        .unwrap()
        .transport
    {
        Transport::Stdio(t) => t.sandbox.network.clone(),
        Transport::Remote(_) => panic!("not stdio"),
    };
    let on_entry =
        net(r#"{"servers": {"a": {"command": "x", "network": {"allow": ["a.test:443"]}}}}"#);
    let in_sandbox = net(
        r#"{"servers": {"a": {"command": "x", "sandbox": {"network": {"allow": ["a.test:443"]}}}}}"#,
    );
    assert_eq!(on_entry, in_sandbox);
    assert!(on_entry.allows("a.test", 443) && !on_entry.allows("b.test", 443));
    assert_eq!(net(r#"{"servers": {"a": {"command": "x"}}}"#), Network::All);
    for (text, word) in [
        (
            r#"{"servers": {"a": {"command": "x", "network": false, "sandbox": {"network": {"allow": ["a.test:1"]}}}}}"#,
            "differently",
        ),
        (
            r#"{"servers": {"a": {"url": "https://example.com/mcp", "network": false}}}"#,
            "local",
        ),
        (
            r#"{"servers": {"a": {"command": "x", "sandbox": "off", "network": false}}}"#,
            "off",
        ),
        (
            r#"{"servers": {"a": {"command": "x", "network": {"allow": ["a.test"]}}}}"#,
            "no port",
        ),
    ] {
        let (_, _, message, fix) = bad_entry(text);
        assert!(
            format!("{message} {fix}").contains(word),
            "{text}: {message} / {fix}"
        );
    }
}

/// `"defaults": {"network": …}` fences every confined entry that says nothing of its own
/// network; an entry's own `true` wins, an unconfined entry has everything; and writing the
/// config back never copies the default into the entries.
#[test]
fn a_default_network_fences_the_entries_that_say_nothing() {
    use crate::sandbox::network::Network;
    let c = parse(
        r#"{"defaults": {"network": {"allow": ["api.example.com:443"]}}, "servers": {
            "quiet": {"command": "x"},
            "open": {"command": "x", "network": true},
            "off": {"command": "x", "sandbox": "off"}}}"#,
    )
    .unwrap();
    let net = |id: &str| match &c.servers[&ServerId::parse(id).unwrap()].transport {
        Transport::Stdio(t) => t.sandbox.network.clone(),
        Transport::Remote(_) => panic!("not stdio"),
    };
    assert!(net("quiet").allows("api.example.com", 443) && !net("quiet").allows("b.example", 443));
    assert_eq!(net("open"), Network::All);
    assert_eq!(net("off"), Network::All);
    let written = serde_json::to_value(&c).unwrap();
    assert!(
        written["servers"]["quiet"].get("sandbox").is_none(),
        "{written}"
    );
    assert_eq!(
        written["servers"]["open"]["sandbox"]["network"],
        json!(true),
        "{written}"
    );
    assert_eq!(
        written["defaults"]["network"],
        json!({"allow": ["api.example.com:443"]})
    );
}

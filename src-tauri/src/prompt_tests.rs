use super::*;
use gatehouse::approval::{ApprovalRequest, ClientRef};

fn request(args: &str) -> ApprovalRequest {
    ApprovalRequest {
        kind: gatehouse::approval::PinKind::Tool,
        goes_to: String::new(),
        id: "apr-1-1".into(),
        client: ClientRef {
            name: Some("claude-code".into()),
            session: "s".into(),
            profile: Some("cli".into()),
            session_ends_ms: None,
            covers: vec!["codex".into()],
            gives_up_after_secs: Some(60),
            imitates: None,
        },
        server: "files".into(),
        tool: "write".into(),
        exposed: "files__write".into(),
        title: None,
        description: Some("Writes a file".into()),
        annotations: None,
        arguments: serde_json::value::RawValue::from_string(args.to_owned()).unwrap(),
        arguments_digest: String::new(),
        requested_at: 1_000,
        expires_at: 121_000,
        queued: false,
        changed: None,
        reason: Default::default(),
        reason_text: "fs__write may change things".into(),
        digest: String::new(),
        hidden_characters: false,
        asked_in_client: false,
        suggested_rule: None,
    }
    .seal()
}

/// The prompt says what the window's modal says: who (the profile first, then what the client
/// says it is), where, what, why, and whom an "always" covers; a client that gives up before the
/// timeout is named with its patience.
#[test]
fn the_prompt_names_the_client_tool_reason_and_scope() {
    let f = Facts::of(&request(r#"{"path":"/tmp/x"}"#));
    assert_eq!(f.client, "client profile cli — says \"claude-code\"");
    assert_eq!(f.tool, "files__write");
    assert_eq!(f.reason, "Asking because fs__write may change things.");
    assert_eq!(f.arguments, vec![("path".to_owned(), "/tmp/x".to_owned())]);
    assert_eq!(f.size, "1 argument, 17 bytes: path");
    assert!(f.warnings.is_empty());
    assert!(f
        .always_scope
        .contains("profile cli — which codex also uses"));
    assert!(f
        .patience
        .as_deref()
        .unwrap()
        .contains("gives up after 60 s"));
    assert_eq!(countdown(121_000, 60_500), "Denied automatically in 61 s");
    assert_eq!(countdown(121_000, 200_000), "Denied automatically in 0 s");
}

/// Every key stays in view whatever the values: each is a row of its own, a long value is cut
/// (the window shows it whole), newlines are newlines, and the size line names every key.
#[test]
fn every_argument_key_is_shown_and_long_values_are_cut() {
    let big = format!(
        r#"{{"content":"{}","path":"/home/me/notes.md","mode":"line one\nline two"}}"#,
        "x".repeat(10_000)
    );
    let f = Facts::of(&request(&big));
    let keys: Vec<&str> = f.arguments.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["content", "mode", "path"]);
    assert!(f.arguments[0].1.chars().count() < ARGS_SHOWN + 50);
    assert!(f.arguments[0].1.ends_with("(open Gatehouse for the rest)"));
    assert_eq!(f.arguments[1].1, "line one\nline two");
    assert_eq!(f.size, "3 arguments, 10.1 KB: content, mode, path");
}

/// Hidden characters in the arguments, the client's name or the tool are shown as code points,
/// and the prompt says the call holds them; a name imitating another client's is flagged.
#[test]
fn hidden_characters_and_borrowed_names_are_shown_for_what_they_are() {
    let mut r = request(r#"{"path":"/tmp/evil\u202Ehs.txt"}"#);
    r.client.name = Some("Claude\u{200B} Code\u{202E}".into());
    r.client.imitates = Some("Claude Code".into());
    let r = r.seal();
    let f = Facts::of(&r);
    assert_eq!(f.arguments[0].1, "/tmp/evil⟨U+202E⟩hs.txt");
    assert_eq!(
        f.client,
        "client profile cli — says \"Claude⟨U+200B⟩ Code⟨U+202E⟩\""
    );
    assert!(f
        .warnings
        .iter()
        .any(|w| w.contains("imitates \"Claude Code\"")));
    assert!(f.warnings.iter().any(|w| w.contains("hidden characters")));
    let all = format!("{} {} {:?}", f.client, f.tool, f.arguments);
    assert!(!all.chars().any(gatehouse::text::is_hidden), "{all}");
}

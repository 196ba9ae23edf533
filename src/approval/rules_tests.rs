use super::*;
use serde_json::json;

fn rule(v: Value) -> Rule {
    Rule::read(&v).unwrap()
}

/// A tree: `home/notes` (with `a.md`, `private/`, `link_out` → `outside`, `café/`), `home/in` →
/// `home/notes`, `outside/secret`, and `home/cafe\u{301}` (NFD) → `outside`.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    let notes = root.join("home/notes");
    std::fs::create_dir_all(notes.join("private")).unwrap();
    std::fs::create_dir_all(notes.join("caf\u{e9}")).unwrap();
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::write(notes.join("a.md"), "x").unwrap();
    std::fs::write(root.join("outside/secret"), "x").unwrap();
    std::os::unix::fs::symlink(root.join("outside"), notes.join("link_out")).unwrap();
    std::os::unix::fs::symlink(&notes, root.join("home/in")).unwrap();
    std::os::unix::fs::symlink(root.join("outside"), notes.join("cafe\u{301}")).unwrap();
    (t, root)
}

/// No spelling of a path outside the directory is allowed by an `under` allow: `..`, symlinks
/// out, `~user`, relative paths, `..` past a part that does not exist, trailing dots, another
/// Unicode form that leads elsewhere, another case — while real paths inside are.
#[test]
fn an_allow_under_a_directory_lets_nothing_outside_through() {
    let (_t, root) = tree();
    let home = root.join("home");
    let notes = home.join("notes");
    let r = rule(json!({"allow": {"path": {"under": notes.to_str().unwrap()}}}));
    let n = notes.to_str().unwrap();
    let inside = [
        format!("{n}/a.md"),
        n.to_string(),
        format!("{n}/"),
        format!("{n}//a.md"),
        format!("{n}/./a.md"),
        format!("{n}/new/file.md"),
        format!("{n}/private/../a.md"),
        format!("{}/in/a.md", home.display()),
        "~/notes/a.md".into(),
        "~/in/new.md".into(),
        format!("{n}/caf\u{e9}/x"),
    ];
    for p in &inside {
        assert!(matches(&r, &json!({"path": p}), Some(&home)), "inside: {p}");
    }
    let outside = [
        format!("{n}/../outside/secret"),
        format!("{n}/link_out/secret"),
        format!("{n}/link_out"),
        format!("{n}/new/../../outside/secret"),
        format!("{n}/new/../a.md"),
        format!("{n}."),
        format!("{n}./x"),
        format!("{n}x/a.md"),
        format!("{}/NOTES/a.md", home.display()),
        format!("{n}/cafe\u{301}/secret"),
        "~root/notes/a.md".into(),
        "notes/a.md".into(),
        "../notes/a.md".into(),
        "~".into(),
        format!("{n}/a.md\0"),
        "/".into(),
    ];
    for p in &outside {
        assert!(
            !matches(&r, &json!({"path": p}), Some(&home)),
            "outside: {p:?}"
        );
    }
    // Past the kernel's longest path: no match, and no part-by-part resolving of it.
    let long = format!("{n}/{}", "x/".repeat(1 << 20));
    let t = std::time::Instant::now();
    assert!(!matches(&r, &json!({"path": long}), Some(&home)));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    // Not a string, or absent: no match.
    assert!(!matches(&r, &json!({"path": 1}), Some(&home)));
    assert!(!matches(&r, &json!({"other": n}), Some(&home)));
}

/// A deny under a directory also catches the spellings an allow refuses to trust: another case,
/// a trailing dot, another Unicode form, `..` through a part that does not exist.
#[test]
fn a_deny_under_a_directory_catches_every_spelling_of_it() {
    let (_t, root) = tree();
    let home = root.join("home");
    let n = home.join("notes");
    let n = n.to_str().unwrap();
    let r = rule(json!({"deny": {"path": {"under": format!("{n}/private")}}}));
    for p in [
        format!("{n}/private/x"),
        format!("{n}/PRIVATE/x"),
        format!("{n}/private./x"),
        format!("{n}/new/../private/x"),
        format!("{}/in/private", home.display()),
        "~/notes/private/deep/er".into(),
    ] {
        assert!(matches(&r, &json!({"path": p}), Some(&home)), "denied: {p}");
    }
    let r = rule(json!({"deny": {"path": {"under": format!("{n}/caf\u{e9}")}}}));
    assert!(matches(
        &r,
        &json!({"path": format!("{n}/cafe\u{301}/x")}),
        Some(&home)
    ));
    assert!(!matches(
        &r,
        &json!({"path": format!("{n}/a.md")}),
        Some(&home)
    ));
}

/// A deny beats an allow whatever their order, across the server's and the profile's lists; a
/// call no rule matches gets no ruling; each ruling names its rule's place in the config.
#[test]
fn a_deny_beats_an_allow_and_each_ruling_names_its_rule() {
    let server = vec![
        rule(json!({"allow": {"path": {"under": "/data"}}})),
        rule(json!({"deny": {"path": {"glob": "/data/**/*.key"}}})),
    ];
    let profile = vec![rule(json!({"allow": {"path": {"glob": "*.md"}}}))];
    let sources = [
        Source {
            at: "servers.fs.tools.write_file".into(),
            rules: &server,
        },
        Source {
            at: "clients.cursor.tools.fs__write_file".into(),
            rules: &profile,
        },
    ];
    let d = |p: &str| decide(&sources, &json!({"path": p}), None);
    let denied = d("/data/x/id.key").unwrap();
    assert_eq!(
        (denied.effect, denied.name.as_str()),
        (Effect::Deny, "servers.fs.tools.write_file.rules[1]")
    );
    let allowed = d("/data/x").unwrap();
    assert_eq!(allowed.name, "servers.fs.tools.write_file.rules[0]");
    assert_eq!(
        d("notes.md").unwrap().name,
        "clients.cursor.tools.fs__write_file.rules[0]"
    );
    assert_eq!(d("/etc/passwd"), None);
    let reversed = [Source {
        at: "p".into(),
        rules: &[server[1].clone(), server[0].clone()],
    }];
    assert_eq!(
        decide(&reversed, &json!({"path": "/data/a/b.key"}), None)
            .unwrap()
            .effect,
        Effect::Deny
    );
}

/// The value matchers: numbers by value, sets, globs that never cross `/`, ranges; every named
/// argument must match.
#[test]
fn value_matchers_and_every_named_argument() {
    let m = |v: Value, args: Value| matches(&rule(json!({"allow": v})), &args, None);
    assert!(m(json!({"n": {"equals": 1}}), json!({"n": 1.0})));
    assert!(m(json!({"n": {"equals": 1.5}}), json!({"n": 15e-1})));
    assert!(!m(json!({"n": {"equals": 1}}), json!({"n": "1"})));
    assert!(m(
        json!({"o": {"equals": {"a": [1, 2]}}}),
        json!({"o": {"a": [1.0, 2]}})
    ));
    assert!(m(json!({"s": {"one_of": ["r", "w"]}}), json!({"s": "w"})));
    assert!(!m(json!({"s": {"one_of": ["r", "w"]}}), json!({"s": "x"})));
    assert!(m(json!({"f": {"glob": "*.md"}}), json!({"f": "a.md"})));
    assert!(!m(json!({"f": {"glob": "*.md"}}), json!({"f": "dir/a.md"})));
    assert!(m(
        json!({"f": {"glob": "**/*.md"}}),
        json!({"f": "dir/a.md"})
    ));
    assert!(m(json!({"n": {"min": 1, "max": 10}}), json!({"n": 10})));
    assert!(!m(json!({"n": {"min": 1, "max": 10}}), json!({"n": 10.5})));
    assert!(!m(json!({"n": {"min": 1}}), json!({"n": "5"})));
    assert!(m(
        json!({"a": {"equals": 1}, "b": {"equals": 2}}),
        json!({"a": 1, "b": 2, "c": 3})
    ));
    assert!(!m(
        json!({"a": {"equals": 1}, "b": {"equals": 2}}),
        json!({"a": 1})
    ));
}

/// The rule offered from a held call: the first path argument's folder, never `/`, the home
/// directory or a path with `..`; none without a path argument.
#[test]
fn the_offered_rule_is_the_path_arguments_folder() {
    let s = |a: &str| suggest(a).map(|r| serde_json::to_value(r).unwrap());
    assert_eq!(
        s(r#"{"content": "x", "path": "/home/u/notes/a.md"}"#),
        Some(json!({"allow": {"path": {"under": "/home/u/notes"}}}))
    );
    assert_eq!(
        s(r#"{"dir": "~/notes/"}"#),
        Some(json!({"allow": {"dir": {"under": "~/notes"}}}))
    );
    assert_eq!(s(r#"{"path": "/a.md"}"#), None);
    assert_eq!(s(r#"{"path": "~/a.md"}"#), None);
    assert_eq!(s(r#"{"path": "/x/../etc/passwd"}"#), None);
    assert_eq!(s(r#"{"path": "notes/a.md", "n": 1}"#), None);
}

/// A deny also matches every spelling a lax server turns into the denied value — a number or a
/// boolean written as text, a boolean as 1 or 0, a one-element array — while an allow stays
/// strict: FastMCP made `{"level": "95"}` volume 95 and `{"id": true}` item 1.
#[test]
fn a_deny_matches_what_a_lax_server_coerces_and_an_allow_stays_strict() {
    let deny = |v: Value, args: Value| matches(&rule(json!({"deny": v})), &args, None);
    let allow = |v: Value, args: Value| matches(&rule(json!({"allow": v})), &args, None);
    let min = json!({"level": {"min": 90}});
    for level in [
        json!(95),
        json!("95"),
        json!(" 95 "),
        json!("9.5e1"),
        json!([95]),
        json!(["95"]),
    ] {
        assert!(deny(min.clone(), json!({ "level": level })), "{level}");
        assert!(
            level.is_number() || !allow(min.clone(), json!({ "level": level })),
            "an allow stays strict: {level}"
        );
    }
    assert!(!deny(min.clone(), json!({"level": "89"})));
    assert!(!deny(min, json!({"level": "loud"})));
    let ids = json!({"id": {"one_of": [1, 2, 3]}});
    for id in [
        json!(1),
        json!("1"),
        json!(true),
        json!(1.0),
        json!([1]),
        json!("true"),
    ] {
        assert!(deny(ids.clone(), json!({ "id": id })), "{id}");
    }
    assert!(!deny(ids.clone(), json!({"id": "4"})));
    assert!(!deny(ids, json!({"id": false})));
    let flag = json!({"force": {"equals": true}});
    for v in [
        json!(true),
        json!(1),
        json!("yes"),
        json!("True"),
        json!("on"),
    ] {
        assert!(deny(flag.clone(), json!({ "force": v })), "{v}");
    }
    assert!(!deny(flag.clone(), json!({"force": "no"})));
    assert!(!allow(flag, json!({"force": "yes"})));
    let path = json!({"path": {"under": "/vault"}});
    assert!(deny(path.clone(), json!({"path": ["/vault/k"]})));
    assert!(!allow(path, json!({"path": ["/vault/k"]})));
}

/// A path padded past the kernel's bound (`/./` repeated) is still caught by a deny: the loose
/// test reads text, however long, as a server that normalises the path would.
#[test]
fn a_deny_catches_a_path_padded_past_the_bound() {
    let r = rule(json!({"deny": {"path": {"under": "/home/u/vault"}}}));
    let padded = format!("/home/u/{}vault/secret.txt", "./".repeat(MAX_PATH_BYTES));
    assert!(padded.len() > MAX_PATH_BYTES);
    assert!(matches(&r, &json!({ "path": padded }), None));
    let slashes = format!("/home/u/vault{}secret.txt", "/".repeat(MAX_PATH_BYTES));
    assert!(matches(&r, &json!({ "path": slashes }), None));
    let allow = rule(json!({"allow": {"path": {"under": "/home/u/vault"}}}));
    let padded = format!("/home/u/{}vault/x", "./".repeat(MAX_PATH_BYTES));
    assert!(!matches(&allow, &json!({ "path": padded }), None));
}

/// A deny rule whose argument the tool no longer has makes a stale ruling naming it (the call
/// is held, never run as if the rule were not there); a matching deny still refuses; a tool
/// that still has the argument gets no stale ruling.
#[test]
fn a_deny_that_no_longer_fits_its_tool_is_a_stale_ruling() {
    let config = crate::config::Config::parse(
        r#"{"servers": {"fs": {"command": "x", "tools": {"read_file": {"rules": [
            {"deny": {"path": {"under": "/vault"}}}]}}}}}"#,
        "t".as_ref(),
    )
    .unwrap();
    let def = |schema: Value| json!({"name": "read_file", "inputSchema": schema}).to_string();
    let renamed = def(json!({"type": "object", "properties": {"file": {"type": "string"}}}));
    let r = for_call(
        &config,
        ("fs", "read_file", &renamed),
        None,
        Some(&json!({"file": "/vault/k"})),
    )
    .unwrap();
    let why = r.stale.expect("stale");
    assert!(why.contains("servers.fs.tools.read_file.rules[0]"), "{why}");
    assert!(why.contains("\"path\""), "{why}");
    let same = def(json!({"type": "object", "properties": {"path": {"type": "string"}}}));
    let r = for_call(
        &config,
        ("fs", "read_file", &same),
        None,
        Some(&json!({"path": "/vault/k"})),
    )
    .unwrap();
    assert_eq!((r.effect, r.stale), (Effect::Deny, None));
    assert!(for_call(
        &config,
        ("fs", "read_file", &same),
        None,
        Some(&json!({"path": "/tmp/k"}))
    )
    .is_none());
    assert!(for_call(&config, ("fs", "read_file", &same), None, None).is_none());
}

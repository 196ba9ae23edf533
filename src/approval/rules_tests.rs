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

use super::*;

fn seen<'a>(tools: &'a [(String, &'a str, &'a str)]) -> Vec<Seen<'a>> {
    tools
        .iter()
        .map(|(c, server, own)| Seen {
            canonical: c,
            server,
            own,
            raw: "{\"name\":\"x\",\"inputSchema\":{\"type\":\"object\"}}",
        })
        .collect()
}

fn tools(list: &[(&'static str, &'static str)]) -> Vec<(String, &'static str, &'static str)> {
    list.iter()
        .map(|(s, t)| (naming::exposed_name(s, t), *s, *t))
        .collect()
}

const GH: &str = "add_pull_request_review_comment_to_pending_review";

/// A profile sees a server's own names where they are unique and fit its client's budget,
/// `server__tool` on a collision, a hashed name past the budget — every name within it.
#[test]
fn names_are_own_where_unique_prefixed_on_a_collision_and_fit_the_budget() {
    let names = Names::default();
    let t = tools(&[
        ("github", GH),
        ("github", "search"),
        ("docs", "search"),
        ("fs", "read"),
    ]);
    let v = names.view("claude-code", 48, &seen(&t), |_| false);
    let shown: Vec<&str> = v.shown.iter().map(|(n, _)| n.as_str()).collect();
    assert!(shown.contains(&"read"), "{shown:?}");
    assert!(
        shown.contains(&"github__search") && shown.contains(&"docs__search"),
        "{shown:?}"
    );
    assert!(
        shown.iter().all(|n| n.len() <= 48 && naming::is_valid(n)),
        "{shown:?}"
    );
    assert_eq!(shown.len(), 4);
    // A client with a larger budget sees GitHub's own name.
    let wide = names.view("cursor", 51, &seen(&t), |_| false);
    assert_eq!(
        wide.resolve(GH),
        Resolved::One(naming::exposed_name("github", GH))
    );
    assert!(wide.shown.iter().any(|(n, _)| n == GH));
    // Canonical names and unique own names route; a shared own name names its candidates.
    assert_eq!(v.resolve("fs__read"), Resolved::One("fs__read".into()));
    assert_eq!(v.resolve("read"), Resolved::One("fs__read".into()));
    assert_eq!(
        v.resolve("search"),
        Resolved::Ambiguous(vec!["docs__search".into(), "github__search".into()])
    );
    assert_eq!(v.resolve("nothing"), Resolved::Unknown);
}

/// A name once given stays with its tool: when another server later lists the same name, and
/// across a restart (the names are read back from the file), and while its server is stopped.
#[test]
fn a_name_once_given_stays_while_its_tool_exists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("names.json");
    let names = Names::load(Some(path.clone()));
    let one = tools(&[("docs", "search")]);
    let v = names.view("default", 48, &seen(&one), |_| false);
    assert_eq!(v.shown_as("docs__search"), Some("search"));
    let two = tools(&[("docs", "search"), ("web", "search")]);
    let v = names.view("default", 48, &seen(&two), |_| false);
    assert_eq!(v.shown_as("docs__search"), Some("search"));
    assert_eq!(v.shown_as("web__search"), Some("web__search"));
    // Saved off the caller's thread (no runtime here: at once).
    let again = Names::load(Some(path));
    let v = again.view("default", 48, &seen(&two), |_| false);
    assert_eq!(v.shown_as("docs__search"), Some("search"));
    // docs stopped: web does not take its name; docs has it back when it returns.
    let web = tools(&[("web", "search")]);
    let v = again.view("default", 48, &seen(&web), |s| s == "docs");
    assert_eq!(v.shown_as("web__search"), Some("web__search"));
    let v = again.view("default", 48, &seen(&two), |_| false);
    assert_eq!(v.shown_as("docs__search"), Some("search"));
    // docs removed for good: its name is free again, and a fresh view may give it out.
    let v = again.view("default", 48, &seen(&web), |_| false);
    assert_eq!(v.shown_as("web__search"), Some("web__search"));
}

/// A tool's own name keeps meaning the tool it named when the client listed it: with `a.wipe`
/// and `b.wipe` both listed, `wipe` is ambiguous; once `a` stops it is still refused (naming
/// both), never routed to `b`'s; a name given to `a`'s tool alone is `Gone` while `a` is stopped
/// and once `a` is removed — and is not given to `b`'s tool.
#[test]
fn an_own_name_never_moves_to_another_server() {
    let names = Names::default();
    let both = tools(&[("a", "wipe"), ("b", "wipe")]);
    let v = names.view("p", 48, &seen(&both), |_| false);
    assert!(matches!(v.resolve("wipe"), Resolved::Ambiguous(_)));
    // `a` stops: its tools leave the view, its names are kept for it.
    let only_b = tools(&[("b", "wipe")]);
    let v = names.view("p", 48, &seen(&only_b), |s| s == "a");
    match v.resolve("wipe") {
        Resolved::Ambiguous(c) => assert!(
            c.contains(&"b__wipe".to_owned()) && c.iter().any(|n| n.starts_with("a__wipe")),
            "{c:?}"
        ),
        other => panic!("wipe after a stopped: {other:?}"),
    }
    assert_eq!(v.resolve("b__wipe"), Resolved::One("b__wipe".into()));

    // A name given to a's tool alone.
    let names = Names::default();
    let only_a = tools(&[("a", "wipe")]);
    let v = names.view("p", 48, &seen(&only_a), |_| false);
    assert_eq!(v.resolve("wipe"), Resolved::One("a__wipe".into()));
    // b appears while a is stopped: `wipe` still means a's tool.
    let v = names.view("p", 48, &seen(&only_b), |s| s == "a");
    assert_eq!(v.resolve("wipe"), Resolved::Gone("a__wipe".into()));
    assert_eq!(v.shown_as("b__wipe"), Some("b__wipe"));
    // a is removed: still a's name, refused; b keeps its prefixed name.
    let v = names.view("p", 48, &seen(&only_b), |_| false);
    assert_eq!(v.resolve("wipe"), Resolved::Gone("a__wipe".into()));
    assert_eq!(v.shown_as("b__wipe"), Some("b__wipe"));
    // A new tool of that own name does not take the retired name either.
    let c = tools(&[("b", "wipe"), ("c", "wipe2")]);
    let v = names.view("p", 48, &seen(&c), |_| false);
    assert_eq!(v.resolve("wipe"), Resolved::Gone("a__wipe".into()));
    // a comes back (configured anew): both list `wipe`, so it is ambiguous, as on a first sight.
    let v = names.view("p", 48, &seen(&both), |_| false);
    assert!(matches!(v.resolve("wipe"), Resolved::Ambiguous(_)));
    assert_eq!(v.resolve("a__wipe"), Resolved::One("a__wipe".into()));
}

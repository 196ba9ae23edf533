use super::*;

#[test]
fn member_order_does_not_change_the_hash() {
    assert_eq!(
        definition_hash(r#"{"b":1,"a":2}"#),
        definition_hash(r#"{"a":2,"b":1}"#)
    );
    assert_ne!(definition_hash(r#"{"a":1}"#), definition_hash(r#"{"a":2}"#));
}

#[test]
fn corrupt_store_is_moved_aside_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.json");
    std::fs::write(&path, "{ not json").unwrap();
    let store = Store::load(&path);
    assert!(store.pins.is_empty());
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read_to_string(aside[0].path()).unwrap(),
        "{ not json"
    );
}

fn tool(name: &str) -> std::sync::Arc<ToolDef> {
    let raw = format!(
        r#"{{"name":"{name}","inputSchema":{{"type":"object"}},"annotations":{{"readOnlyHint":true}}}}"#
    );
    definition(raw)
}

/// A tool as a server would list it, from its definition's text.
fn definition(raw: String) -> std::sync::Arc<ToolDef> {
    std::sync::Arc::new(
        ToolDef::parse(
            serde_json::value::RawValue::from_string(raw).unwrap(),
            std::sync::Arc::default(),
        )
        .unwrap(),
    )
}

#[test]
fn listings_and_changes_keep_definitions_as_text_only() {
    // Memory: a parsed tree per tool cost several KiB each (37 MiB with 5,400 tools); a
    // listing keeps text and parses nothing for good, and a change is still described.
    let mut st = Store::default();
    let tools: Vec<_> = (0..50).map(|i| tool(&format!("t{i}"))).collect();
    assert!(st.take_listing("s", "origin", &tools));
    assert!(tools.iter().all(|t| !t.meta_parsed()));
    let changed = std::sync::Arc::new(
        ToolDef::parse(
            serde_json::value::RawValue::from_string(
                r#"{"name":"t0","description":"now it deletes","inputSchema":{"type":"object"}}"#
                    .into(),
            )
            .unwrap(),
            std::sync::Arc::default(),
        )
        .unwrap(),
    );
    let (change, _) = st.check("s", &changed);
    let change = change.expect("a change");
    assert_eq!(change.fields, vec!["annotations", "description"]);
    assert_eq!(change.old["annotations"]["readOnlyHint"], true);
    assert_eq!(change.new["description"], "now it deletes");
    assert!(!changed.meta_parsed());
    // What is saved reads back the same.
    let text = st.file_text();
    let back: Store = serde_json::from_str(&text).unwrap();
    assert_eq!(back.pins.len(), 50);
    assert_eq!(
        back.pins["s/t0"].definition.get(),
        st.pins["s/t0"].definition.get()
    );
}

/// A server renaming its tools over and over keeps only the pins of what it lists now, and
/// no server keeps more than MAX_PINS_PER_SERVER.
#[test]
fn pins_follow_the_listing_and_are_bounded_per_server() {
    let mut st = Store::default();
    for round in 0..2_000 {
        let tools = vec![tool(&format!("a{round}")), tool(&format!("b{round}"))];
        st.take_listing("s", "origin", &tools);
    }
    assert_eq!(st.pins.len(), 2, "{:?}", st.pins.keys().collect::<Vec<_>>());
    assert!(st.file_text().len() < 2_000);
    let many: Vec<_> = (0..MAX_PINS_PER_SERVER + 10)
        .map(|i| tool(&format!("t{i}")))
        .collect();
    st.take_listing("s", "origin", &many);
    assert_eq!(st.pins.len(), MAX_PINS_PER_SERVER);
    // A tool past the bound is never pinned, so never trusted by its annotations.
    assert!(st.quarantined("s", &format!("t{}", MAX_PINS_PER_SERVER + 5)));
}

/// The first listing is taken as it is; what appears later is quarantined until released;
/// another origin starts afresh and drops the "always" answers.
#[test]
fn later_tools_are_quarantined_and_another_origin_starts_afresh() {
    let mut st = Store::default();
    st.take_listing("s", "one", &[tool("first")]);
    assert!(!st.quarantined("s", "first"));
    st.take_listing("s", "one", &[tool("first"), tool("later")]);
    assert!(st.quarantined("s", "later"));
    assert!(st.quarantined("s", "never-listed"));
    assert!(st.release("s", "later"));
    assert!(!st.quarantined("s", "later"));
    st.trust(None, "s", "first", tool("first").hash(), None);
    assert!(st.always_allows(None, "s", "first", tool("first").hash()));
    st.take_listing("s", "two", &[tool("first"), tool("other")]);
    assert!(!st.always_allows(None, "s", "first", tool("first").hash()));
    assert!(!st.quarantined("s", "other"), "a first listing again");
    assert!(!st.quarantined("t", "x"), "an unknown server is not known");
}

/// An "always" answer covers the client profile that gave it, and no other; it follows the
/// tool's listing and is forgotten with it.
#[test]
fn always_answers_belong_to_the_profile_that_gave_them() {
    let mut st = Store::default();
    let t = tool("t");
    st.take_listing("s", "o", std::slice::from_ref(&t));
    st.trust(Some("cursor"), "s", "t", t.hash(), None);
    assert!(st.always_allows(Some("cursor"), "s", "t", t.hash()));
    assert!(!st.always_allows(Some("code"), "s", "t", t.hash()));
    assert!(!st.always_allows(None, "s", "t", t.hash()));
    st.take_listing("s", "o", std::slice::from_ref(&t));
    assert!(
        st.always_allows(Some("cursor"), "s", "t", t.hash()),
        "still listed: kept"
    );
    assert_eq!(st.forget(|s, tool| s == "s" && tool == "t"), 1);
    assert!(!st.always_allows(Some("cursor"), "s", "t", t.hash()));
}

fn long_tool(name: &str, description: &str) -> std::sync::Arc<ToolDef> {
    definition(
        serde_json::json!({"name": name, "description": description,
            "inputSchema": {"type": "object"}})
        .to_string(),
    )
}

/// A pin is a hash and a bounded snapshot: 120 tools of 256 KiB each make a file of a few
/// MiB, not 30; a changed long description is still named; and past the file's bound new
/// tools go unpinned (asked for) rather than growing it.
#[test]
fn pins_keep_hashes_and_bounded_snapshots_and_the_file_stays_within_its_bound() {
    let mut st = Store::default();
    let big = "d".repeat(256 << 10);
    let tools: Vec<_> = (0..120)
        .map(|i| long_tool(&format!("t{i}"), &big))
        .collect();
    st.take_listing("s", "o", &tools);
    assert_eq!(st.pin_count("s"), 120);
    let text = st.file_text();
    assert!(text.len() < 120 * 2048, "{} bytes", text.len());
    // A change of the long description is named by member, its digest shown.
    let changed = long_tool("t0", &"e".repeat(256 << 10));
    let (change, _) = st.check("s", &changed);
    let change = change.expect("a changed definition is a change");
    assert_eq!(change.fields, vec!["description".to_owned()]);
    assert!(change.new.to_string().len() <= super::super::snapshot::MAX_SNAPSHOT_BYTES);
    // The bound: a store of 64 KiB pins what fits and no more.
    let mut small = Store::with_limit(64 << 10);
    let many: Vec<_> = (0..400)
        .map(|i| long_tool(&format!("m{i}"), &"x".repeat(2000)))
        .collect();
    small.take_listing("s", "o", &many);
    let pinned = small.pin_count("s");
    assert!(pinned > 10 && pinned < 400, "{pinned}");
    assert!(small.file_text().len() <= 64 << 10);
    assert!(
        small.quarantined("s", "m399"),
        "an unpinned tool of a known server is not believed"
    );
}

use std::path::Path;

use serde_json::{json, Value};

use super::*;

/// A file of `kind`'s documented format holding one other server ("other", running `uvx srv`)
/// and, where the format has them, a comment.
fn fixture(kind: ClientKind) -> (String, &'static str) {
    let other = match kind {
        ClientKind::Opencode => json!({"type": "local", "command": ["uvx", "srv"]}),
        _ => json!({"command": "uvx", "args": ["srv"]}),
    };
    match kind.format() {
        Format::Toml => (
            "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"uvx\"\nargs = [\"srv\"]\n".into(),
            "config.toml",
        ),
        Format::Yaml => (
            "GOOSE_PROVIDER: openai\nextensions:\n  other:\n    type: stdio\n    cmd: uvx\n    args: [srv]\n    enabled: true\n".into(),
            "config.yaml",
        ),
        Format::Json => (
            format!(
                "{{\n  // mine\n  \"theme\": \"dark\",\n  \"{}\": {{\"other\": {other}}}\n}}\n",
                kind.servers_key()
            ),
            "settings.json",
        ),
    }
}

/// Every client, in its own format: Gatehouse's entry written into a file that already holds
/// another server (and a comment, where the format has them) keeps both; the file reads back
/// with the entry exactly, import finds the other server, and the client counts as set up for
/// this gateway — twice written, once there.
#[test]
fn every_client_round_trips_its_own_format() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:7723/mcp";
    let tokens = vec![("default".to_owned(), "t-gw".to_owned())];
    for kind in ClientKind::ALL {
        let (text, name) = fixture(kind);
        let sub = dir.path().join(kind.id());
        std::fs::create_dir_all(&sub).unwrap();
        let path = sub.join(name);
        std::fs::write(&path, &text).unwrap();
        let entry = entry(kind, url, "t-gw", Path::new("/opt/gatehouse"));
        write_entry(&path, kind, &entry, &[]).unwrap();
        write_entry(&path, kind, &entry, &[]).unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        if kind.format() != Format::Yaml {
            assert!(
                written.contains("mine"),
                "{}: the comment was lost:\n{written}",
                kind.id()
            );
        }
        let v: Value = kind.parse_file(&written).unwrap();
        // Codex's reader gives its servers in the common shape, under `mcpServers`.
        let servers = v
            .get(kind.servers_key())
            .or_else(|| v.get("mcpServers"))
            .unwrap();
        assert!(servers.get("other").is_some(), "{}: {v}", kind.id());
        if kind.format() != Format::Toml {
            assert_eq!(servers[ENTRY_NAME], entry, "{}", kind.id());
        }
        let found = crate::import::read_source(&path).unwrap();
        let other = found.iter().find(|c| c.source_name == "other");
        assert!(
            other.is_some_and(|c| c.entry["command"] == "uvx" && c.entry["args"] == json!(["srv"])),
            "{}: {found:?}",
            kind.id()
        );
        assert_eq!(
            setup(kind, &path, url, &tokens),
            Setup::Configured {
                profile: "default".into()
            },
            "{}: {written}",
            kind.id()
        );
    }
}

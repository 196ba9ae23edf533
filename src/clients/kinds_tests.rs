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

/// A file of `kind`'s format as people leave them: comments, odd spacing, tabs, keys in their
/// own order, values a rewrite would spell differently.
fn odd_fixture(kind: ClientKind) -> String {
    match kind.format() {
        Format::Toml => "# mine\nmodel   =  \"o3\"   # the model\nver = 1.10\n\n[mcp_servers.other]\ncommand = 'uvx'\nargs = [ \"srv\" ,]   # keep\n\n[zzz]\nb = 0o17\na = true\n".into(),
        Format::Yaml => "# mine\nGOOSE_PROVIDER: openai   # the provider\nver: 1.10\nmode: 0o17\nextensions:\n  # keep me\n  other:\n    type: stdio\n    cmd: uvx\n    args: [srv]\n    enabled: true\nzzz: 'quoted'\n".into(),
        Format::Json => {
            let other = match kind {
                ClientKind::Opencode => "{\"type\": \"local\", \"command\": [\"uvx\",\"srv\"]}",
                _ => "{ \"command\" : \"uvx\",\t\"args\": [\"srv\"] }",
            };
            format!(
                "{{\n\t// mine\n\t\"theme\" :   \"dark\" ,\n\t\"{}\": {{\n\t\t\"other\": {other}  // keep me\n\t}},\n\t\"zzz\": [1,2,   3.10]\n}}\n",
                kind.servers_key()
            )
        }
    }
}

/// Whether `after` is `before` with text added only: every character of `before` is still
/// there, in order (nothing taken away, nothing respelled).
fn only_added(before: &str, after: &str) -> bool {
    let mut rest = after.chars();
    before.chars().all(|c| rest.any(|a| a == c))
}

/// Every client's file, with comments, odd formatting, and — in JSON, as Windows editors save
/// it — a byte-order mark and CRLF line ends: after Gatehouse's entry is written, only that entry
/// differs; nothing of the file was taken away or respelled, and the BOM and line ends are kept.
#[test]
fn only_the_managed_entry_differs_in_every_clients_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:7723/mcp";
    for kind in ClientKind::ALL {
        let windows = [false, kind.format() == Format::Json];
        for (n, bom_crlf) in windows.into_iter().enumerate() {
            let mut text = odd_fixture(kind);
            if bom_crlf {
                text = format!("\u{feff}{}", text.replace('\n', "\r\n"));
            }
            let ext = match kind.format() {
                Format::Toml => "toml",
                Format::Yaml => "yaml",
                Format::Json => "json",
            };
            let path = dir.path().join(format!("{}-{n}.{ext}", kind.id()));
            std::fs::write(&path, &text).unwrap();
            // Import reads it as it is (a byte-order mark is no "invalid JSON at line 1").
            let found =
                crate::import::read_source(&path).unwrap_or_else(|e| panic!("{}: {e}", kind.id()));
            assert!(
                found.iter().any(|c| c.source_name == "other"),
                "{}",
                kind.id()
            );
            let entry = entry(kind, url, "t-gw", Path::new("/opt/gatehouse"));
            write_entry(&path, kind, &entry, &[]).unwrap_or_else(|e| panic!("{}: {e}", kind.id()));
            let written = std::fs::read_to_string(&path).unwrap();
            assert!(
                only_added(&text, &written),
                "{}: something of the file was taken away or respelled:\n{text}\n---\n{written}",
                kind.id()
            );
            // What was added is the entry and the structure around it, nothing more.
            assert!(
                written.len() - text.len() < 400,
                "{}: more than the entry was added:\n{written}",
                kind.id()
            );
            if bom_crlf {
                assert!(
                    written.starts_with('\u{feff}'),
                    "{}: the BOM went",
                    kind.id()
                );
                assert!(
                    !written.replace("\r\n", "").contains('\n'),
                    "{}: a bare LF was written:\n{written:?}",
                    kind.id()
                );
            }
            // Read as its client reads it, the entry is exactly Gatehouse's.
            let v = kind
                .parse_file(written.trim_start_matches('\u{feff}'))
                .unwrap();
            let servers = v
                .get(kind.servers_key())
                .or_else(|| v.get("mcpServers"))
                .unwrap();
            assert!(servers.get("other").is_some(), "{}: {v}", kind.id());
            if kind.format() != Format::Toml {
                assert_eq!(servers[ENTRY_NAME], entry, "{}", kind.id());
            }
        }
    }
}

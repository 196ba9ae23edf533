use super::*;

fn named(written: &str) -> Named {
    Named {
        written: written.into(),
        from: "argument 1".into(),
    }
}

/// A scratch home with a credential store, a startup file, a project and a data folder.
fn home() -> tempfile::TempDir {
    let h = tempfile::tempdir().unwrap();
    for d in [
        ".ssh",
        "projects/app",
        "data",
        ".config/autostart",
        ".config/gcloud",
    ] {
        std::fs::create_dir_all(h.path().join(d)).unwrap();
    }
    std::fs::write(h.path().join(".bashrc"), "x").unwrap();
    std::fs::write(h.path().join("memory.json"), "").unwrap();
    h
}

/// Paths a server is told about open as the README says: a folder itself, a file's folder, a
/// path not there yet its nearest existing folder.
#[test]
fn named_paths_open_their_folder() {
    let h = home();
    let hp = h.path();
    let real = |p: &str| std::fs::canonicalize(hp.join(p)).unwrap();
    let o = open(
        &[
            named("~/projects/app"),
            named("~/data/new.db"),
            named("~/data/deeper/still/new.db"),
        ],
        Some(hp),
        &[],
    );
    assert_eq!(o.write, vec![real("projects/app"), real("data")]);
    assert!(o.left_out.is_empty(), "{:?}", o.left_out);
    assert!(!o.home_entries);
}

/// Never opened for writing from an argument: `/`, a system directory, a shared temp
/// directory, a credential store (however it is spelled), a directory holding one, a startup
/// file, Gatehouse's own files, a new file directly in the home directory — each left out with
/// why and the entry line that opens it. The home directory itself opens entry by entry.
#[test]
fn nothing_wider_than_asked_is_opened() {
    let h = home();
    let hp = h.path();
    let gatehouse = hp.join("data/gatehouse");
    std::fs::create_dir_all(&gatehouse).unwrap();
    let cases = [
        ("/", "root of the filesystem"),
        ("/etc", "system directory"),
        ("/etc/cron.d/evil", "system directory"),
        ("/var/tmp", "system directory"),
        ("/tmp", "shared by everyone"),
        ("~/.ssh/id_rsa", "credential store (~/.ssh)"),
        ("~/projects/../.ssh", "credential store (~/.ssh)"),
        ("~/.config", "holds a credential store"),
        ("~/.bashrc", "runs code at login"),
        ("~/.config/autostart/x.desktop", "runs code at login"),
        ("~/new.db", "home directory itself"),
        ("~/data/gatehouse/x", "among Gatehouse's own files"),
    ];
    for (path, why) in cases {
        let o = open(&[named(path)], Some(hp), std::slice::from_ref(&gatehouse));
        assert!(o.write.is_empty(), "{path} opened {:?}", o.write);
        let l = o
            .left_out
            .first()
            .unwrap_or_else(|| panic!("{path} not left out"));
        assert!(l.why.contains(why), "{path}: {}", l.why);
        assert!(l.allow.starts_with("\"sandbox\""), "{path}: {}", l.allow);
        assert!(l.line().contains(path), "{}", l.line());
    }
    // The home directory, however spelled, opens entry by entry (never whole).
    for path in ["~", "~/.ssh/..", "~/projects/.."] {
        let o = open(&[named(path)], Some(hp), &[]);
        assert!(o.home_entries && o.write.is_empty(), "{path}: {o:?}");
    }
    // An existing file directly in the home directory opens alone.
    let o = open(&[named("~/memory.json")], Some(hp), &[]);
    assert_eq!(
        o.write,
        vec![std::fs::canonicalize(hp.join("memory.json")).unwrap()]
    );
}

/// A symbolic link into a credential store is a credential store.
#[test]
fn a_link_into_a_store_is_the_store() {
    let h = home();
    let hp = h.path();
    std::os::unix::fs::symlink(hp.join(".ssh"), hp.join("projects/keys")).unwrap();
    let o = open(&[named("~/projects/keys")], Some(hp), &[]);
    assert!(o.write.is_empty(), "{o:?}");
    assert!(o.left_out[0].why.contains("credential store"));
}

/// Arguments (`--flag=/x` too), plain environment values and the working directory are named;
/// search paths and values that are not paths are not.
#[test]
fn paths_are_named_in_arguments_environment_and_cwd() {
    let args = vec![
        "--db-path".to_owned(),
        "~/data/new.db".to_owned(),
        "--root=/srv/x".to_owned(),
        "plain".to_owned(),
    ];
    let env = vec![
        (
            "MEMORY_FILE_PATH".to_owned(),
            "~/data/memory.json".to_owned(),
        ),
        ("PATH".to_owned(), "/usr/bin".to_owned()),
        ("LIST".to_owned(), "/a:/b".to_owned()),
        ("LEVEL".to_owned(), "info".to_owned()),
    ];
    let n = super::named(&args, &env, Some("/work"));
    let got: Vec<(&str, &str)> = n
        .iter()
        .map(|n| (n.written.as_str(), n.from.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("~/data/new.db", "argument 2"),
            ("/srv/x", "argument 3"),
            ("~/data/memory.json", "env MEMORY_FILE_PATH"),
            ("/work", "cwd"),
        ]
    );
}

/// Places never include what runs code later: a settings folder of the home, a Python package
/// folder, a folder on PATH are left out with why; inside a project folder given, its
/// `.git/hooks`, `.git/config`, `.mcp.json`, `.vscode/` and `.claude/` (at its top and one level
/// down) are kept read-only, said in `left_out` with the line that opens the folder whole.
#[test]
fn what_runs_code_later_is_never_a_place() {
    let h = home();
    let hp = h.path();
    for d in [
        "projects/app/.git/hooks",
        "projects/app/.vscode",
        "projects/app/.claude",
        "work/repo/.git/hooks",
        ".local/share/applications",
        "venv/lib/python3.11/site-packages/pkg",
    ] {
        std::fs::create_dir_all(hp.join(d)).unwrap();
    }
    std::fs::write(hp.join("projects/app/.git/config"), "").unwrap();
    std::fs::write(hp.join("projects/app/.mcp.json"), "{}").unwrap();
    let o = open(
        &[
            named("~/projects/app"),
            named("~/work"),
            named("~/.local/share/applications/evil.desktop"),
            named("~/venv/lib/python3.11/site-packages/pkg/__init__.py"),
        ],
        Some(hp),
        &[],
    );
    let real = |p: &str| std::fs::canonicalize(hp.join(p)).unwrap();
    for p in [
        "projects/app/.git/hooks",
        "projects/app/.git/config",
        "projects/app/.mcp.json",
        "projects/app/.vscode",
        "projects/app/.claude",
        "work/repo/.git/hooks",
    ] {
        assert!(
            o.protected
                .iter()
                .any(|x| std::fs::canonicalize(x).unwrap() == real(p)),
            "{p} not protected: {:?}",
            o.protected
        );
    }
    assert!(o.write.contains(&real("projects/app")) && o.write.contains(&real("work")));
    let why = |w: &str| {
        o.left_out
            .iter()
            .find(|l| l.path == w)
            .map(|l| l.why.clone())
            .unwrap_or_default()
    };
    assert!(
        why("~/projects/app").contains(".mcp.json"),
        "{:?}",
        o.left_out
    );
    assert!(
        why("~/.local/share/applications/evil.desktop").contains("settings"),
        "{:?}",
        o.left_out
    );
    assert!(
        why("~/venv/lib/python3.11/site-packages/pkg/__init__.py")
            .contains("Python's installed packages"),
        "{:?}",
        o.left_out
    );
    assert!(!o.write.iter().any(|w| w.starts_with(real(".local"))));
}

/// The line a left-out path gives opens what the server writes, never wider: a new file
/// directly in the home moves into a folder of its own (made at the next start, written with a
/// final `/`), a file in a shared system folder opens that folder, `/` turns the sandbox off.
#[test]
fn the_opening_line_names_a_folder_that_works() {
    let h = home();
    let hp = h.path();
    let one = |p: &str| open(&[named(p)], Some(hp), &[]).left_out.remove(0);
    let db = one("~/new.db");
    assert_eq!(db.allow, "\"sandbox\": {\"write\": [\"~/new/\"]}");
    assert_eq!(db.rename.as_deref(), Some("~/new/new.db"));
    assert!(
        db.line()
            .contains("name \"~/new/new.db\" in place of \"~/new.db\" and add"),
        "{}",
        db.line()
    );
    let tmp = one("/var/tmp/gatehouse-x-none.json");
    assert_eq!(tmp.allow, "\"sandbox\": {\"write\": [\"/var/tmp\"]}");
    assert_eq!(tmp.rename, None);
    assert_eq!(one("/").allow, "\"sandbox\": \"off\"");
}

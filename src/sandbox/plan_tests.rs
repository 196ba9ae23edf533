use super::*;

fn touch(p: &Path) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, b"x").unwrap();
}

/// Whether `plan` lets a read of `p` through (some rule at or above it).
fn reads(plan: &Plan, p: &Path) -> bool {
    let p = std::fs::canonicalize(p).unwrap();
    plan.read
        .iter()
        .chain(&plan.write)
        .any(|r| p.starts_with(r))
}

fn writes(plan: &Plan, p: &Path) -> bool {
    let p = std::fs::canonicalize(p).unwrap();
    plan.write.iter().any(|r| p.starts_with(r))
}

/// The default plan reads by an allow-list — the system, its places, what its entry grants —
/// never the rest of the home directory (a credential file nobody listed is unreadable because
/// nothing opened it), never a runner's shared cache, never Gatehouse's own places — not through
/// a symbolic link either — and writes only to the server's places.
#[test]
fn the_default_plan_reads_by_allow_list_and_writes_only_its_places() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let guarded = dir.path().join("gatehouse-data");
    let data = guarded.join("servers/fs/data");
    let tmp = guarded.join("servers/fs/tmp");
    for f in [
        ".ssh/id_ed25519",
        ".config/gcloud/credentials.db",
        ".config/other/settings.json",
        "notes/todo.md",
        ".claude.json",
        ".npm/_cacache/index",
        ".npmrc",
        ".lmstudio/mcp.json",
        ".claude.json.20261201.bak",
        "snap/firefox/common/.mozilla/firefox/p/cookies.sqlite",
    ] {
        touch(&home.join(f));
    }
    touch(&guarded.join("approvals.json"));
    touch(&guarded.join("servers/other/data/secret"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
    let places = Places {
        home: Some(home.clone()),
        guarded: vec![guarded.clone()],
        data: data.clone(),
        tmp: tmp.clone(),
        program: None,
        artifact: None,
        opened: crate::sandbox::places::open(
            &crate::sandbox::places::named(&["--root=~/notes".into(), "-v".into()], &[], None),
            Some(&home),
            std::slice::from_ref(&guarded),
        ),
    };
    let plan = plan(&SandboxPolicy::default(), &places).unwrap();
    assert!(plan.network);
    assert!(reads(&plan, &home.join("notes/todo.md")));
    assert!(reads(&plan, Path::new("/usr")));
    for denied in [
        home.join(".ssh/id_ed25519"),
        home.join(".config/gcloud/credentials.db"),
        home.join(".config/other/settings.json"),
        home.join(".claude.json"),
        home.join(".npmrc"),
        home.join(".lmstudio/mcp.json"),
        home.join(".claude.json.20261201.bak"),
        home.join("snap/firefox/common/.mozilla/firefox/p/cookies.sqlite"),
        home.join(".npm/_cacache/index"),
        guarded.join("approvals.json"),
        guarded.join("servers/other/data/secret"),
    ] {
        assert!(!reads(&plan, &denied), "{} is readable", denied.display());
    }
    assert!(
        !plan.read.iter().any(|r| r.ends_with("keys")),
        "a link into ~/.ssh was opened"
    );
    // Writes: its own places and the directory its arguments name; never a shared cache.
    assert!(writes(&plan, &data) && writes(&plan, &tmp));
    assert!(!writes(&plan, &home.join(".npm/_cacache")));
    assert!(writes(&plan, &home.join("notes")));
    assert!(!writes(&plan, &home.join(".config/other")));
    assert!(!writes(&plan, Path::new("/usr")));
    // Off plans nothing; strict reads the same allow-list.
    assert!(super::plan(&SandboxPolicy::of(Level::Off), &places).is_none());
    let strict = super::plan(&SandboxPolicy::of(Level::Strict), &places).unwrap();
    assert!(reads(&strict, Path::new("/usr")));
    assert!(reads(&strict, &home.join("notes/todo.md")));
    assert!(!reads(&strict, &home.join(".config/other/settings.json")));
    // Its artifact in the store (among Gatehouse's guarded files) is read, never written.
    let artifact = guarded.join("store/npm/pkg@1.0.0-abc");
    touch(&artifact.join("node_modules/pkg/index.js"));
    let with = Places {
        artifact: Some(artifact.clone()),
        ..places.clone()
    };
    let stored = super::plan(&SandboxPolicy::default(), &with).unwrap();
    assert!(reads(&stored, &artifact.join("node_modules/pkg/index.js")));
    assert!(!writes(&stored, &artifact));
    assert!(!reads(&stored, &guarded.join("approvals.json")));
    // What the entry itself names is opened even in a store: the person asked for it.
    let mut asked = SandboxPolicy::default();
    asked.read.push("~/.ssh".into());
    let asked = super::plan(&asked, &places).unwrap();
    assert!(reads(&asked, &home.join(".ssh/id_ed25519")));
}

/// The default plan for a server given `named` (`~`-relative), in a home holding `files`: the
/// plan and the home.
fn plan_with(dir: &Path, files: &[&str], named: &str) -> (Plan, std::path::PathBuf) {
    let home = dir.join("home");
    for f in files {
        touch(&home.join(f));
    }
    let own = dir.join("own");
    std::fs::create_dir_all(&own).unwrap();
    let places = Places {
        home: Some(home.clone()),
        guarded: Vec::new(),
        data: own.clone(),
        tmp: own.clone(),
        program: None,
        artifact: None,
        opened: crate::sandbox::places::open(
            &crate::sandbox::places::named(&[named.into()], &[], None),
            Some(&home),
            &[],
        ),
    };
    (plan(&SandboxPolicy::default(), &places).unwrap(), home)
}

/// The home directory named as a whole: its folders and ordinary files writable, its startup
/// files read-only, its dot-entries (settings, caches, credentials) closed; no terminal,
/// console or shared memory device is even readable.
#[test]
fn a_home_given_whole_opens_its_files_not_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ".ssh/id_ed25519",
        ".bashrc",
        ".config/autostart/x.desktop",
        ".local/bin/tool",
        "notes/todo.md",
        "photo.jpg",
    ];
    let (plan, home) = plan_with(dir.path(), &files, "~");
    assert!(writes(&plan, &home.join("notes/todo.md")));
    assert!(writes(&plan, &home.join("photo.jpg")));
    for closed in [".bashrc", ".config/autostart/x.desktop", ".local/bin/tool"] {
        assert!(!reads(&plan, &home.join(closed)), "{closed} readable");
        assert!(!writes(&plan, &home.join(closed)), "{closed} writable");
    }
    assert!(!reads(&plan, &home.join(".ssh/id_ed25519")));
    assert!(
        !writes(&plan, &home),
        "the home directory itself was opened"
    );
    for dev in ["/dev/shm", "/dev/pts", "/dev/tty", "/dev/ptmx"] {
        if Path::new(dev).exists() {
            assert!(!reads(&plan, Path::new(dev)), "{dev} readable");
        }
    }
    assert!(writes(&plan, Path::new("/dev/null")));
}

/// Inside a project folder given to a server, what runs code later stays readable and never
/// writable — and the folder opens entry by entry, so none can be renamed aside or made anew at
/// its top — while the rest of the project is writable.
#[test]
fn a_projects_hooks_and_settings_stay_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        "proj/.git/hooks/pre-commit",
        "proj/.git/config",
        "proj/.git/HEAD",
        "proj/.mcp.json",
        "proj/.vscode/tasks.json",
        "proj/src/main.rs",
    ];
    let (plan, home) = plan_with(dir.path(), &files, "~/proj");
    for ro in [
        ".git/hooks/pre-commit",
        ".git/config",
        ".mcp.json",
        ".vscode/tasks.json",
    ] {
        assert!(reads(&plan, &home.join("proj").join(ro)), "{ro} unreadable");
        assert!(!writes(&plan, &home.join("proj").join(ro)), "{ro} writable");
    }
    assert!(writes(&plan, &home.join("proj/src/main.rs")));
    assert!(writes(&plan, &home.join("proj/.git/HEAD")));
    assert!(
        !writes(&plan, &home.join("proj")),
        "the project folder itself was opened"
    );
    assert!(
        !writes(&plan, &home.join("proj/.git")),
        ".git itself was opened"
    );
}

//! The house keeps its shape by itself: `cargo test` fails when a source file passes 650 lines,
//! a module imports one that imports it back, a module with children is a `mod.rs`, or the
//! codemap in ARCHITECTURE.md does not name a source file. Read from the files as text (the `mod`
//! declarations that make each crate's tree, and the `crate::`/`super::`/`self::` paths a module
//! names outside its tests), so it stays fast.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a source file may have.
const MAX_LINES: usize = 650;
/// Where the sources are, and which files count as source.
const SOURCE_DIRS: &[&str] = &[
    "src",
    "tests",
    "benches",
    "ui",
    "scripts",
    "src-tauri/src",
    "src-tauri/tests",
    "src-tauri/benches",
];
const SOURCE_EXTS: &[&str] = &["rs", "js", "mjs", "css", "html", "py", "sh"];
/// The crates whose module trees must have no cycle: (root file, name for messages).
const CRATES: &[&str] = &[
    "src/lib.rs",
    "src/bin/gatehouse/main.rs",
    "src-tauri/src/lib.rs",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() {
            if name != "node_modules" && name != "fixtures" {
                files(&p, out);
            }
        } else if p
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| SOURCE_EXTS.contains(&x))
        {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_is_over_650_lines() {
    let root = repo();
    let mut all = Vec::new();
    for d in SOURCE_DIRS {
        files(&root.join(d), &mut all);
    }
    assert!(
        all.len() > 100,
        "the source files were not found under {}",
        root.display()
    );
    let over: Vec<String> = all
        .iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).ok()?.lines().count();
            (n > MAX_LINES).then(|| {
                format!(
                    "{} ({n} lines)",
                    p.strip_prefix(&root).unwrap_or(p).display()
                )
            })
        })
        .collect();
    assert!(
        over.is_empty(),
        "over {MAX_LINES} lines — split each along its seam: {}",
        over.join(", ")
    );
}

/// The codemap names every source file: as its path (`` `src/gateway/tools.rs` ``), or by the
/// rest of its path on a row that names the folder before it (`` `tests/it/` `` … `` `calls.rs` ``,
/// `` `src-tauri/src/prompt.rs`, `prompt/native.rs` ``). A file added without its row fails here.
#[test]
fn the_codemap_names_every_source_file() {
    let root = repo();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_default();
    let map = text
        .split_once("## Codemap")
        .map(|(_, rest)| rest.split_once("\n## ").map_or(rest, |(map, _)| map))
        .unwrap_or("");
    assert!(map.lines().count() > 100, "no codemap in ARCHITECTURE.md");
    let rows: Vec<&str> = map.lines().filter(|l| l.starts_with('|')).collect();
    let named = |path: &str| {
        let parts: Vec<&str> = path.split('/').collect();
        rows.iter().any(|row| {
            row.contains(&format!("`{path}`"))
                || (1..parts.len()).any(|i| {
                    let folder = format!("{}/", parts[..i].join("/"));
                    let rest = parts[i..].join("/");
                    row.contains(&format!("`{rest}`")) && row.contains(&folder)
                })
        })
    };
    let mut all = Vec::new();
    for d in SOURCE_DIRS {
        files(&root.join(d), &mut all);
    }
    let unnamed: Vec<String> = all
        .iter()
        .filter_map(|p| p.strip_prefix(&root).ok())
        .map(|p| p.display().to_string())
        .filter(|p| !named(p))
        .collect();
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md's codemap does not name (give each its row, or its name on its folder's): {}",
        unnamed.join(", ")
    );
}

/// One convention for a module with children: `foo.rs` beside `foo/`, never `foo/mod.rs`.
#[test]
fn a_module_with_children_is_a_file_beside_its_folder() {
    let root = repo();
    let mut all = Vec::new();
    for d in ["src", "src-tauri/src"] {
        files(&root.join(d), &mut all);
    }
    let mod_rs: Vec<String> = all
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "mod.rs"))
        .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
        .collect();
    assert!(
        mod_rs.is_empty(),
        "move each to the folder's name plus .rs, beside the folder: {}",
        mod_rs.join(", ")
    );
}

/// One crate's modules: path (`["gateway", "tools"]`) → its file.
fn tree(root_file: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut todo = vec![(Vec::<String>::new(), root_file.to_path_buf())];
    while let Some((module, file)) = todo.pop() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        // A `mod.rs`, `lib.rs` or `main.rs` holds its children beside it; `a.rs` in `a/`.
        let children_dir = if ["mod", "lib", "main"].contains(&stem) {
            dir.clone()
        } else {
            dir.join(stem)
        };
        let mut path_attr: Option<String> = None;
        for line in text.lines().map(str::trim) {
            if let Some(p) = line
                .strip_prefix("#[path = \"")
                .and_then(|r| r.strip_suffix("\"]"))
            {
                path_attr = Some(p.to_owned());
                continue;
            }
            let decl = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .or_else(|| line.strip_prefix("pub(super) mod "))
                .or_else(|| line.strip_prefix("mod "));
            if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
                let child = match path_attr.take() {
                    Some(p) => dir.join(p),
                    None => {
                        let flat = children_dir.join(format!("{name}.rs"));
                        if flat.is_file() {
                            flat
                        } else {
                            children_dir.join(name).join("mod.rs")
                        }
                    }
                };
                let mut m = module.clone();
                m.push(name.to_owned());
                todo.push((m, child));
            } else if !line.starts_with("#[") {
                path_attr = None;
            }
        }
        out.insert(module, file);
    }
    out
}

/// The modules `text` (module `module` of `tree`) names, outside its tests and comments.
fn named(
    module: &[String],
    text: &str,
    tree: &BTreeMap<Vec<String>, PathBuf>,
) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("#[cfg(test)]") {
            break; // the rest is the module's tests
        }
        if line.starts_with("//") {
            continue;
        }
        for path in paths_in(line) {
            let mut segs: Vec<String> = Vec::new();
            let mut parts = path.split("::");
            match parts.next() {
                Some("crate") => {}
                Some("super") => {
                    segs = module.to_vec();
                    segs.pop();
                }
                Some("self") => segs = module.to_vec(),
                _ => continue,
            }
            for p in parts {
                if p == "super" {
                    segs.pop();
                    continue;
                }
                let mut longer = segs.clone();
                longer.push(p.to_owned());
                if !tree.contains_key(&longer) {
                    break;
                }
                segs = longer;
            }
            // The crate's root is its front door (re-exports), not a room of its own.
            if !segs.is_empty() && segs != module {
                out.insert(segs);
            }
        }
    }
    out
}

/// `crate::a::b`, `super::x` and `self::y` paths in a line, with a `use …::{a, b::c}` group's
/// members each made whole.
fn paths_in(line: &str) -> Vec<String> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let chars: Vec<char> = line.chars().collect();
    let run = |from: usize| {
        let mut j = from;
        while j < chars.len() && word(chars[j]) {
            j += 1;
        }
        j
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..chars.len().min(i + 7)].iter().collect();
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|k| rest.starts_with(k));
        if !starts || (i > 0 && word(chars[i - 1])) {
            i += 1;
            continue;
        }
        let j = run(i);
        let head: String = chars[i..j].iter().collect();
        let head = head.trim_end_matches(':').to_owned();
        if chars.get(j) == Some(&'{') {
            // A group: each member (up to the group's end) after the head.
            let mut depth = 0;
            let mut k = j;
            while k < chars.len() {
                match chars[k] {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    c if depth == 1
                        && (c.is_ascii_alphanumeric() || c == '_')
                        && !word(chars[k - 1]) =>
                    {
                        let end = run(k);
                        let member: String = chars[k..end].iter().collect();
                        if member != "self" {
                            out.push(format!("{head}::{}", member.trim_end_matches(':')));
                        }
                        k = end;
                        continue;
                    }
                    _ => {}
                }
                k += 1;
            }
        }
        out.push(head);
        i = j.max(i + 1);
    }
    out
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let root = repo();
    let mut cycles = Vec::new();
    for crate_root in CRATES {
        let tree = tree(&root.join(crate_root));
        assert!(tree.len() > 3, "no module tree read from {crate_root}");
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (module, file) in &tree {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            edges.insert(module.clone(), named(module, &text, &tree));
        }
        // Every pair of modules that reach each other: a cycle, named by its two ends.
        let reach = |from: &Vec<String>| {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.clone()];
            while let Some(m) = todo.pop() {
                for n in edges.get(&m).into_iter().flatten() {
                    if seen.insert(n.clone()) {
                        todo.push(n.clone());
                    }
                }
            }
            seen
        };
        for (a, outs) in &edges {
            for b in outs {
                if a < b && reach(b).contains(a) {
                    let file = |m: &Vec<String>| {
                        tree[m]
                            .strip_prefix(&root)
                            .unwrap_or(&tree[m])
                            .display()
                            .to_string()
                    };
                    cycles.push(format!("{} ⇄ {}", file(a), file(b)));
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "modules that import each other back (move what both need to the lower one): {}",
        cycles.join("; ")
    );
}

/// The gateway and the hub are doors: each has one `impl` of its handle, in its own file, and
/// none of its rooms (the files under `gateway/`, `hub/`) reaches the handle's private state.
#[test]
fn a_room_reaches_the_gateway_and_the_hub_only_through_their_doors() {
    let root = repo();
    let mut wrong = Vec::new();
    for (door, rooms, handle) in [
        ("src/gateway.rs", "src/gateway", "Gateway"),
        ("src/hub.rs", "src/hub", "HubHandle"),
    ] {
        let mut files_of = Vec::new();
        files(&root.join(rooms), &mut files_of);
        files_of.push(root.join(door));
        for file in files_of {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let shown = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            let is_door = shown == door;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.starts_with("#[cfg(test)]") {
                    break;
                }
                if line.starts_with("//") {
                    continue;
                }
                if !is_door && line.contains(".inner.") {
                    wrong.push(format!(
                        "{shown}:{}: reaches {handle}'s private state",
                        n + 1
                    ));
                }
                if !is_door && line.starts_with(&format!("impl {handle} ")) {
                    wrong.push(format!(
                        "{shown}:{}: an impl {handle} outside {door}",
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a room takes what it needs in its signature (the door hands it over): {}",
        wrong.join("; ")
    );
}

/// The integration tests have a floor: what several feature tests share lives under
/// `tests/it/support` (and `support.rs`), and no feature test imports another — a helper that
/// moves or changes for one feature never breaks another's test.
#[test]
fn no_feature_test_imports_another() {
    let dir = repo().join("tests/it");
    let mut reaching = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".rs") || name == "main.rs" || name == "support.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("crate::") {
                let module: String = line[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if module != "support" {
                    reaching.push(format!("tests/it/{name}:{} reaches crate::{module}", i + 1));
                }
            }
        }
    }
    assert!(
        reaching.is_empty(),
        "feature tests importing another (move what they share to tests/it/support): {}",
        reaching.join("; ")
    );
}

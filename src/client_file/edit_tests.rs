use super::*;

fn add_line(text: &str) -> Result<Change<()>, String> {
    Ok(Change::new(format!("{text}added\n"), ()))
}

/// A byte-order mark, CRLF line ends and the file's mode survive an edit; the copy kept is what
/// was there; an edit that changes nothing writes nothing.
#[test]
fn bom_crlf_and_mode_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("mcp.json");
    std::fs::write(&f, "\u{feff}line one\r\nline two\r\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let (_, done) = edit(&f, &Options::default(), |t| {
        assert_eq!(t, "line one\nline two\n", "the editor sees plain text");
        add_line(t)
    })
    .unwrap();
    let bytes = std::fs::read(&f).unwrap();
    assert_eq!(
        bytes,
        "\u{feff}line one\r\nline two\r\nadded\r\n".as_bytes()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }
    let copy = std::fs::read(done.backup.unwrap()).unwrap();
    assert_eq!(copy, "\u{feff}line one\r\nline two\r\n".as_bytes());
    let (_, none) = edit(&f, &Options::default(), |t| {
        Ok(Change::new(t.to_owned(), ()))
    })
    .unwrap();
    assert_eq!(none.backup, None);
    // A private file stays private; a file that did not exist is made.
    let new = dir.path().join("new.json");
    edit(
        &new,
        &Options {
            private: true,
            ..Options::default()
        },
        add_line,
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&new).unwrap(), "added\n");
}

/// A save that lands between the read and the replacement is never lost: the edit sees the file
/// changed, reads it again and redoes itself on top of the save.
#[test]
fn a_save_in_between_is_kept_and_the_edit_redone() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("settings.json");
    std::fs::write(&f, "base\n").unwrap();
    let mut first = true;
    let (_, done) = edit(&f, &Options::default(), |t| {
        if std::mem::take(&mut first) {
            // The client saves while Gatehouse is editing (an atomic save, as editors do).
            let tmp = dir.path().join("client.tmp");
            std::fs::write(&tmp, "base\nclient's save\n").unwrap();
            std::fs::rename(&tmp, &f).unwrap();
        }
        add_line(t)
    })
    .unwrap();
    assert_eq!(done.redone, 1);
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "base\nclient's save\nadded\n"
    );
    // A file that keeps changing: refused after the tries, nothing written by the edit.
    let e = edit(&f, &Options::default(), |t| {
        std::fs::write(&f, format!("{t}x")).unwrap();
        add_line(t)
    })
    .unwrap_err();
    assert!(e.contains("kept changing"), "{e}");
}

/// A link is followed: the file it points at is edited, the link stays a link.
#[cfg(unix)]
#[test]
fn a_link_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles-settings.json");
    std::fs::write(&real, "x\n").unwrap();
    let link = dir.path().join("settings.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    edit(&link, &Options::default(), add_line).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "x\nadded\n");
}

/// A file with another name (a hard link) is not replaced: the refusal names them, and both
/// names keep what they held. A read-only file is written and stays read-only (a private one
/// loses the group's and others' bits only: 0444 becomes 0400, never 0600).
#[cfg(unix)]
#[test]
fn a_hard_link_is_refused_by_name_and_a_read_only_file_stays_so() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("mcp.json");
    std::fs::write(&f, "{}\n").unwrap();
    let other = dir.path().join("dotfiles-mcp.json");
    std::fs::hard_link(&f, &other).unwrap();
    let why = edit(&f, &Options::default(), add_line).unwrap_err();
    assert!(
        why.contains("2 hard links") && why.contains("nothing was written"),
        "{why}"
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "{}\n");
    std::fs::remove_file(&other).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
    let private = Options {
        private: true,
        ..Options::default()
    };
    edit(&f, &private, add_line).unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "{}\nadded\n");
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o400, "read-only kept, made private");
}

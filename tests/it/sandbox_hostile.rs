//! The sandbox opens nothing wider than asked, against a hostile server (`--hostile`): told
//! about `/`, the home directory, `/etc`, `~/.ssh/..` and `~/.config`, it still cannot write the
//! person's startup files, keys, system directories or a new file in the home directory, and
//! `status` lists each path left out; it cannot type into a terminal (`TIOCSTI`) — not one it
//! opens, not its own descriptors — and two confined servers cannot pass data through
//! `/dev/shm`. The same server with `"sandbox": "off"` does what it asks in the scratch home (so
//! each check can fail).

use std::path::Path;

use serde_json::{json, Value};

use crate::support::*;

/// A new pseudo-terminal: its master (read here) and its slave's path (given to the server).
fn pty() -> (std::fs::File, String) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls on a descriptor this function owns; the path buffer outlives
    // ptsname_r, which writes at most its length.
    unsafe {
        let fd = nix::libc::posix_openpt(nix::libc::O_RDWR | nix::libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt");
        assert_eq!(nix::libc::grantpt(fd), 0);
        assert_eq!(nix::libc::unlockpt(fd), 0);
        let mut buf = [0 as nix::libc::c_char; 128];
        assert_eq!(nix::libc::ptsname_r(fd, buf.as_mut_ptr(), buf.len()), 0);
        let path = std::ffi::CStr::from_ptr(buf.as_ptr())
            .to_string_lossy()
            .into_owned();
        (std::fs::File::from_raw_fd(fd), path)
    }
}

#[tokio::test]
async fn a_hostile_server_told_about_everything_still_opens_only_its_places() {
    let dir = tempfile::tempdir().unwrap();
    let home = scratch_home(dir.path());
    std::fs::create_dir_all(home.join(".config/gcloud")).unwrap();
    let places = ["/", "~", "/etc", "~/.ssh/..", "~/.config"];
    let entry = |sandbox: &str| {
        let mut args = vec![json!("--hostile")];
        for p in places {
            args.push(json!("--place"));
            args.push(json!(p));
        }
        json!({"command": FIXTURE, "args": args, "sandbox": sandbox})
    };
    let cfg = json!({
        "servers": {"evil": entry("default"), "evil2": entry("default"), "open": entry("off")},
        "approval": {"default": "flagged-only"}
    });
    let home_var = home.to_string_lossy().into_owned();
    let s = serve_env(
        dir.path(),
        &cfg.to_string(),
        &["evil", "evil2", "open"],
        &[],
        &[("HOME", &home_var)],
    )
    .await;
    let evil = status_json(&s)
        .into_iter()
        .find(|v| v["id"] == "evil")
        .unwrap();
    let left: Vec<&str> = evil["sandbox"]["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for p in places {
        assert!(left.contains(&p), "{p} not listed as left out: {evil}");
    }
    let c = Client::connect(&s, "c").await;
    let h = |p: &str| home.join(p).to_string_lossy().into_owned();
    let stamp = std::process::id();
    let targets = [
        h(".bashrc"),
        h(".ssh/authorized_keys"),
        h(".config/autostart.desktop"),
        h("new-top-level.txt"),
        format!("/etc/gatehouse-sandbox-test-{stamp}"),
        format!("/var/tmp/gatehouse-sandbox-test-{stamp}"),
    ];
    for (i, t) in targets.iter().enumerate() {
        let v = c
            .call(
                i as u64 + 1,
                "evil__write",
                json!({"path": t, "text": "evil"}),
            )
            .await;
        let (failed, text) = said(&v);
        assert!(failed, "evil wrote {t}: {text}");
        assert!(text.contains("sandbox"), "no sandbox named for {t}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        "# the person's shell\n"
    );
    for t in &targets[1..] {
        assert!(!Path::new(t).exists(), "{t} exists");
    }
    // Unconfined, the same writes in the scratch home go through.
    for (i, t) in targets[..4].iter().enumerate() {
        let v = c
            .call(
                i as u64 + 10,
                "open__write",
                json!({"path": t, "text": "x"}),
            )
            .await;
        assert!(
            !said(&v).0,
            "the unconfined server could not write {t}: {v}"
        );
    }

    // Shared memory: one confined server cannot leave data there for another.
    let shm = format!("/dev/shm/gatehouse-sandbox-test-{stamp}");
    let v = c
        .call(20, "evil__write", json!({"path": shm, "text": "passed"}))
        .await;
    assert!(said(&v).0, "a confined server wrote {shm}");
    let _ = c
        .call(21, "open__write", json!({"path": shm, "text": "passed"}))
        .await;
    let v = c.call(22, "evil2__read", json!({"path": shm})).await;
    let (failed, text) = said(&v);
    assert!(
        failed && !text.contains("passed"),
        "a confined server read {shm}: {text}"
    );
    let _ = std::fs::remove_file(&shm);

    // A terminal: the server's own descriptors and /dev/tty (no controlling terminal), and a
    // terminal it is pointed at.
    let v = c.call(30, "evil__type", json!({})).await;
    let (_, text) = said(&v);
    assert!(!text.contains("typed"), "the confined server typed: {text}");
    assert!(
        text.contains("fd 0: refused: Permission denied"),
        "TIOCSTI on its own descriptors was not refused by the filter: {text}"
    );
    let (mut master, slave) = pty();
    let v = c.call(31, "evil__type", json!({"path": slave})).await;
    let (_, text) = said(&v);
    assert!(
        text.contains("open refused") && !text.contains("typed"),
        "the confined server opened {slave}: {text}"
    );
    // Unconfined: it has no controlling terminal either (its own session); as root it can
    // still type into a terminal it opens — the one thing only the sandbox stops.
    let v = c.call(32, "open__type", json!({})).await;
    let (_, text) = said(&v);
    assert!(
        text.contains("/dev/tty: open refused"),
        "an unconfined server has a controlling terminal: {text}"
    );
    let v = c.call(33, "open__type", json!({"path": slave})).await;
    let (_, text) = said(&v);
    if text.contains("typed") {
        use std::io::Read;
        nix::fcntl::fcntl(
            &master,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .unwrap();
        let mut buf = [0u8; 16];
        // What was pushed into the terminal's input echoes on its master side.
        let n = master.read(&mut buf).unwrap_or(0);
        assert!(n > 0, "typed, but nothing reached the terminal");
    } else {
        eprintln!("note: this kernel refuses TIOCSTI to an unconfined server too: {text}");
    }
}

/// A server, even one the sandbox does not confine, has no controlling terminal: started from a
/// terminal (the hub runs under `script`, on a pseudo-terminal of its own), it cannot open
/// `/dev/tty` to read the person's keystrokes or type into their shell.
#[tokio::test]
async fn no_server_reaches_the_terminal_the_hub_was_started_from() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "servers": {"open": {"command": FIXTURE, "args": ["--hostile"], "sandbox": "off"}},
        "approval": {"default": "flagged-only"}
    });
    let inner = serve_command(dir.path(), &cfg.to_string());
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
    let line = std::iter::once(inner.get_program())
        .chain(inner.get_args())
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &format!("exec {line}"), "/dev/null"]);
    let s = serve_spawned(dir.path(), cmd, &["open"]).await;
    let c = Client::connect(&s, "c").await;
    let v = c.call(1, "type", json!({})).await;
    let (_, text) = said(&v);
    assert!(
        text.contains("/dev/tty: open refused") && !text.contains("typed"),
        "a server reached the hub's terminal: {text}"
    );
}

//! The X server and the process table, as the tests see them: native windows by title, the
//! app's descendants by name, signals.

use std::process::Command;
use std::time::{Duration, Instant};

/// Whether the native window `id` is on screen.
pub fn native_shown(id: &str) -> bool {
    native_windows(".").iter().any(|w| w == id)
}

/// The main window's title, as xdotool matches it (a regex).
pub const MAIN_WINDOW: &str = "^Gatehouse$";

/// Sends WM_DELETE_WINDOW to `windows`, as a window manager does when the close button is clicked
/// (Xvfb has no window manager to do it).
pub fn close_windows(windows: &[String]) {
    let status = Command::new("python3")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/desktop/xwin.py"))
        .arg("close")
        .args(windows)
        .status()
        .expect("xwin.py");
    assert!(status.success(), "xwin.py close failed");
}

/// X ids of the mapped windows whose title matches `title` (a regex).
pub fn native_windows(title: &str) -> Vec<String> {
    let out = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--name", title])
        .output()
        .expect("xdotool (make deps installs it)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

pub fn nix_kill(pid: u32, sig: i32) -> bool {
    Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Whether `pid` is a live process (zombies count as gone: PID 1 here does not reap).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .map(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Live processes descended from `pid` whose name starts with `prefix` (e.g. WebKit's web
/// process, `WebKitWebProces` as the kernel shortens it).
pub fn descendants_named(pid: u32, prefix: &str) -> Vec<u32> {
    let parent_of = |p: u32| -> Option<(u32, String)> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let (head, rest) = stat.rsplit_once(") ")?;
        let name = head.split_once(" (")?.1.to_owned();
        let mut fields = rest.split_whitespace();
        let state = fields.next()?;
        if state == "Z" || state == "X" {
            return None;
        }
        Some((fields.next()?.parse().ok()?, name))
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            let Some((_, name)) = parent_of(p) else {
                return false;
            };
            if !name.starts_with(prefix) {
                return false;
            }
            // Walk up to `pid` (or the root).
            let mut at = p;
            for _ in 0..64 {
                match parent_of(at) {
                    Some((pp, _)) if pp == pid => return true,
                    Some((pp, _)) if pp > 1 => at = pp,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// The running processes whose executable is `exe` (an app left by an earlier test, or this one's).
pub fn processes_of(exe: &std::path::Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let running = std::fs::read_link(e.path().join("exe")).ok()?;
            (running == exe && alive(pid)).then_some(pid)
        })
        .collect()
}

/// No app left from an earlier test before one starts (the tests run one at a time): an app
/// still stopping holds the single-instance name, and a new one would hand over to it and exit,
/// leaving its driver without a window. Waits for it up to 20 s, then ends it (TERM, then KILL).
pub fn no_app_left(exe: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !processes_of(exe).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for pid in processes_of(exe) {
        eprintln!("e2e: an app ({pid}) from an earlier test is still running; ending it");
        nix_kill(pid, 15);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_of(exe).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for pid in processes_of(exe) {
        nix_kill(pid, 9);
    }
}

/// Answers a native window titled `title` (a regex) with a key press: focus it, then type.
pub async fn answer_native(title: &str, key: &str) {
    let id = wait_native(title).await;
    let ok = Command::new("xdotool")
        .args(["windowfocus", "--sync", &id, "key", "--clearmodifiers", key])
        .status()
        .expect("xdotool");
    assert!(ok.success(), "xdotool could not answer the dialog");
}

/// Answers the native approval prompt with `key` as a person does: once it shows, after its
/// answers come alive (they are inert for a second after a call appears — `prompt::GUARD`).
pub async fn answer_prompt(key: &str) {
    wait_native(PROMPT).await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    answer_native(PROMPT, key).await;
}

/// The native prompt's title, as xdotool matches it (a regex).
pub const PROMPT: &str = "Allow this call\\? — Gatehouse";

/// Waits for a visible native window whose title matches `title` (a regex); its X id.
pub async fn wait_native(title: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(id) = native_windows(title).into_iter().next() {
            return id;
        }
        assert!(Instant::now() < deadline, "no window \"{title}\" appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the native window `id` is no longer on screen.
pub async fn wait_native_gone(id: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while native_shown(id) {
        assert!(Instant::now() < deadline, "window {id} is still on screen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Saves a PNG of native window `id` under `target/e2e-shots/NAME.png` (what WebDriver cannot
/// see: the approval prompt), for the README.
pub fn shot_native(id: &str, name: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/e2e-shots");
    let _ = std::fs::create_dir_all(&dir);
    let ok = Command::new("python3")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/desktop/xwin.py"))
        .arg("shot")
        .arg(id)
        .arg(dir.join(format!("{name}.png")))
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("screenshot {name} failed");
    }
}

//! The main window: created when it is first shown (from the tray, a second launch, an
//! approval) and destroyed when closed, so that while Gatehouse sits in the tray no webview — and
//! no WebKit process — is alive. The hub keeps serving; a new window reads the state afresh
//! (waiting approvals included) when it loads. WebKit keeps its network process after the last
//! webview on Linux (tauri#14626), so it is ended here once the window is gone; a new window
//! starts another.

use tauri::{Manager, Runtime, WebviewWindow};

/// Shows, un-minimises and focuses the main window, creating it first if it is closed.
pub fn show_main<R: Runtime>(app: &tauri::AppHandle<R>) {
    let window = match app.get_webview_window("main") {
        Some(w) => w,
        None => match create_main(app) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "cannot open the window");
                return;
            }
        },
    };
    let _ = window.show();
    let _ = window.unminimize();
    let _ = window.set_focus();
}

/// Whether the main window exists and is on screen (not closed, hidden or minimised).
pub fn main_visible<R: Runtime>(app: &tauri::AppHandle<R>) -> bool {
    app.get_webview_window("main")
        .is_some_and(|w| w.is_visible().unwrap_or(false) && !w.is_minimized().unwrap_or(false))
}

/// The main window from its entry in `tauri.conf.json` (`create: false` there: nothing opens it
/// at start but this).
fn create_main<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::Result<WebviewWindow<R>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == "main")
        .cloned()
        .unwrap_or_default();
    tauri::WebviewWindowBuilder::from_config(app, &config)?.build()
}

/// After the window is destroyed: ends WebKit's network process (a child of ours, ~35 MiB) when
/// no webview is left. Runs on the main thread, where webviews are made, so none can appear
/// between the check and the signal. WebKit starts a new one with the next webview.
pub fn end_idle_webkit<R: Runtime>(app: &tauri::AppHandle<R>) {
    // Under WebDriver (tauri-driver sets this), WebKit ends the automation session with its
    // network process: the driver's session outlives windows, so the process is kept.
    if std::env::var("TAURI_WEBVIEW_AUTOMATION").as_deref() == Ok("true") {
        return;
    }
    let handle = app.clone();
    std::thread::spawn(move || {
        // The web process leaves first; the network process serves it until then.
        std::thread::sleep(std::time::Duration::from_secs(1));
        let again = handle.clone();
        let _ = handle.run_on_main_thread(move || {
            if again.webview_windows().is_empty() {
                #[cfg(target_os = "linux")]
                {
                    end_children_named("WebKitNetworkPr");
                    release_webview_pages();
                }
            }
        });
    });
}

/// Libraries only a webview runs (WebKit, its JavaScript engine, the GL stack it loaded): their
/// pages stay resident in the tray unless handed back.
#[cfg(target_os = "linux")]
const WEBVIEW_LIBRARIES: &[&str] = &[
    "libwebkit2gtk",
    "libjavascriptcoregtk",
    "libLLVM",
    "_dri.so",
];

/// Hands the pages of the webview's libraries back to the kernel (`MADV_PAGEOUT`): with no
/// webview left, nothing runs them, and they are read back from the page cache if a window comes
/// again. Their contents never change: these are mappings of files.
#[cfg(target_os = "linux")]
fn release_webview_pages() {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut released = 0usize;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(path)) = (fields.next(), fields.nth(4)) else {
            continue;
        };
        if !WEBVIEW_LIBRARIES.iter().any(|l| path.contains(l)) {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        let Some(addr) = std::ptr::NonNull::new(start as *mut std::ffi::c_void) else {
            continue;
        };
        // SAFETY: `addr..end` is a whole mapping of this process, as the kernel listed it; PAGEOUT
        // only reclaims its pages (file pages are re-read, private copies kept or swapped) and
        // never changes what the memory holds.
        let done = unsafe {
            nix::sys::mman::madvise(
                addr,
                end.saturating_sub(start),
                nix::sys::mman::MmapAdvise::MADV_PAGEOUT,
            )
        };
        if done.is_ok() {
            released += end.saturating_sub(start);
        }
    }
    tracing::debug!(
        mapped_kib = released / 1024,
        "handed the webview's library pages back"
    );
}

/// Sends SIGTERM to this process's children whose name (`/proc/PID/comm`, 15 bytes) is `name`.
#[cfg(target_os = "linux")]
fn end_children_named(name: &str) {
    let me = std::process::id();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses; the last ") " ends it.
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let comm = head.split_once(" (").map(|(_, c)| c).unwrap_or_default();
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(me) && comm == name {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
            tracing::debug!(pid, "ended WebKit's network process: no webview left");
        }
    }
}

//! The desktop e2e harness: a private config with fixture servers, tauri-driver driving the real
//! `gatehouse-app` binary in a real WebKitGTK window (Xvfb), and helpers to read the page, talk to
//! the gateway with a real MCP client (Python SDK) and use the `gatehouse` CLI against the app.

#![allow(dead_code)]

pub use crate::xproc::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// One app at a time: the app is single-instance per D-Bus session, and tauri-driver binds ports.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub const TOKEN: &str = "e2e-token-0123456789abcdef0123456789abcdef";

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `target/debug` (or wherever this test binary was built): the app, the CLI and the fixture.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe path");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("target dir")
}

pub fn bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.is_file(),
        "{} is missing: build it first (`cargo build --bins` at the repo root; `make test` does)",
        p.display()
    );
    p
}

pub fn peers_dir() -> PathBuf {
    std::env::var_os("GATEHOUSE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/gatehouse-peers")
        })
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A fixture server entry (the repo's own MCP server with switchable behaviours).
pub fn fixture() -> Value {
    json!({ "command": bin("gatehouse-fixture").to_string_lossy() })
}

pub struct Desktop {
    pub dir: tempfile::TempDir,
    pub config_path: PathBuf,
    pub control: PathBuf,
    pub url: String,
    driver: Child,
    pub client: Client,
    pub shots: PathBuf,
}

impl Desktop {
    /// Starts tauri-driver and, through it, the app on a config holding `servers`.
    pub async fn launch(servers: Value) -> Desktop {
        Self::launch_with(servers, |_| {}).await
    }

    /// Like `launch`; `prepare` may put files in the test dir (e.g. a client's config under a
    /// private HOME) before the app starts. The app's HOME is the test dir.
    pub async fn launch_with(servers: Value, prepare: impl FnOnce(&Path)) -> Desktop {
        Self::launch_full(servers, prepare, &[]).await
    }

    /// Like `launch_with`, the app started with `args` on its command line.
    pub async fn launch_full(
        servers: Value,
        prepare: impl FnOnce(&Path),
        args: &[String],
    ) -> Desktop {
        let dir = tempfile::tempdir().expect("tempdir");
        prepare(dir.path());
        let config_path = dir.path().join("gatehouse.json");
        let port = free_port();
        let config = json!({
            "servers": servers,
            "approval": { "default": "ask-unless-read-only", "timeout_secs": 60 },
            "gateway": { "listen": format!("127.0.0.1:{port}") }
        });
        std::fs::write(
            &config_path,
            serde_json::to_string_pretty(&config).expect("config json"),
        )
        .expect("write config");
        let control = dir.path().join("control.sock");
        crate::xproc::no_app_left(&bin("gatehouse-app"));
        let driver_port = free_port();
        let native_port = free_port();
        let driver = Command::new(tauri_driver())
            .args([
                "--port",
                &driver_port.to_string(),
                "--native-port",
                &native_port.to_string(),
            ])
            // tauri-driver → WebKitWebDriver → the app: the environment reaches the app.
            .env("GATEHOUSE_CONFIG", &config_path)
            .env("GATEHOUSE_DATA_DIR", dir.path().join("data"))
            .env("GATEHOUSE_CONTROL", &control)
            .env("GATEHOUSE_TOKEN", TOKEN)
            .env("GATEHOUSE_LOG", "info")
            // The native prompt writes the text it shows here (what a person reads).
            .env("GATEHOUSE_E2E_PROMPT_TEXT", dir.path().join("prompt.txt"))
            // The tray menu writes its entries here on every change.
            .env("GATEHOUSE_E2E_TRAY_TEXT", dir.path().join("tray.txt"))
            // Sign-in pages are "opened" by a stand-in browser that follows them back.
            .env("GATEHOUSE_BROWSER", repo().join("tests/clients/browser.py"))
            .env("HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join(".config"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.path().join("driver.log")).expect("driver log"),
            ))
            .spawn()
            .expect("tauri-driver (cargo install tauri-driver --locked; make test installs it)");
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("wry"));
        caps.insert(
            "tauri:options".into(),
            json!({ "application": bin("gatehouse-app").to_string_lossy(), "args": args }),
        );
        let webdriver = format!("http://127.0.0.1:{driver_port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            // Bounded: if the app never comes up (e.g. it handed over to another instance), the
            // driver may never answer.
            let attempt = tokio::time::timeout(
                Duration::from_secs(60),
                ClientBuilder::new(connector)
                    .capabilities(caps.clone())
                    .connect(&webdriver),
            )
            .await;
            match attempt {
                Ok(Ok(c)) => break c,
                Ok(Err(e)) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Ok(Err(e)) => panic!("no WebDriver session with the app: {e}"),
                Err(_) => panic!(
                    "the WebDriver session did not start within 60 s; the driver's log:\n{}",
                    std::fs::read_to_string(dir.path().join("driver.log")).unwrap_or_default()
                ),
            }
        };
        let shots = repo().join("target").join("e2e-shots");
        let _ = std::fs::create_dir_all(&shots);
        let d = Desktop {
            url: format!("http://127.0.0.1:{port}/mcp"),
            dir,
            config_path,
            control,
            driver,
            client,
            shots,
        };
        d.wait_js(
            "the hub running",
            "return document.body.dataset.phase === 'running'",
        )
        .await;
        d
    }

    /// Follows the app's window after it was closed and opened again (a new webview: the old
    /// one is destroyed on close). Waits (15 s) for the driver to list a window it can script.
    pub async fn follow_new_window(&self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(handles) = self.client.windows().await {
                for h in handles {
                    if self.client.switch_to_window(h).await.is_ok()
                        && self
                            .client
                            .execute("return document.readyState === 'complete'", vec![])
                            .await
                            .is_ok_and(|v| v == json!(true))
                    {
                        return;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "the driver never saw the reopened window"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs `script` in the page and returns its value.
    pub async fn js(&self, script: &str) -> Value {
        tokio::time::timeout(Duration::from_secs(20), self.client.execute(script, vec![]))
            .await
            .unwrap_or_else(|_| panic!("the driver did not answer within 20 s:\n{script}"))
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Waits (15 s) until `script` returns something truthy; returns it.
    pub async fn wait_js(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let v =
                tokio::time::timeout(Duration::from_secs(20), self.client.execute(script, vec![]))
                    .await
                    .unwrap_or_else(|_| {
                        panic!("the driver did not answer within 20 s waiting for {what}")
                    })
                    .unwrap_or(Value::Null);
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!("") && v != json!(0);
            if truthy {
                return v;
            }
            if Instant::now() > deadline {
                let _ = self
                    .shot(&format!("timeout-{}", what.replace(' ', "-")))
                    .await;
                panic!("timed out waiting for {what}; last value {v}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clicks the element `css` names, waiting (up to 10 s) for a view still rendering to make it.
    /// The text `css`'s element shows, as WebDriver reads it off the rendered page (not the
    /// DOM's raw value).
    pub async fn text(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
            .text()
            .await
            .unwrap_or_else(|e| panic!("no text of {css}: {e}"))
    }

    /// Clicks `css` at once, enabled or not — a click already on its way when something changes.
    pub async fn click_now(&self, css: &str) {
        let e = self
            .client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"));
        let _ = e.click().await;
    }

    /// Clicks an element once it is there and enabled, as a person would (the approval modal's
    /// buttons are inert for a second after a call appears).
    pub async fn click(&self, css: &str) {
        self.try_click(css)
            .await
            .unwrap_or_else(|e| panic!("cannot click {css}: {e}"));
    }

    /// [`Desktop::click`], with the driver's refusal of the click itself returned.
    async fn try_click(&self, css: &str) -> Result<(), fantoccini::error::CmdError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let element = loop {
            match self.client.find(Locator::Css(css)).await {
                Ok(e) if e.is_enabled().await.unwrap_or(true) => break e,
                Ok(_) if Instant::now() > deadline => panic!("{css} stayed disabled"),
                Err(e) if Instant::now() > deadline => panic!("no element {css}: {e}"),
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        element.click().await
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
            .send_keys(text)
            .await
            .unwrap_or_else(|e| panic!("cannot type into {css}: {e}"));
    }

    /// Runs a server row's action as a person would: its one shown action when that is `act`,
    /// else from the row's menu (opened with its button).
    pub async fn row_action(&self, id: &str, act: &str) {
        let primary = format!("article.server[data-id={id}] .primary-act[data-act={act}]");
        let shown = self
            .js(&format!("return !!document.querySelector('{primary}');"))
            .await;
        if shown == Value::Bool(true) {
            self.click(&primary).await;
            return;
        }
        self.click(&format!("article.server[data-id={id}] .menu-button"))
            .await;
        self.click(&format!(
            "article.server[data-id={id}] .menu [data-act={act}]"
        ))
        .await;
    }

    /// Picks an option of a `<select>` by value, as a person would.
    pub async fn select(&self, css: &str, value: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
            .select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("cannot select {value} in {css}: {e}"));
    }

    /// Presses a key on the focused element (WebDriver key codes, e.g. "\u{E00C}" for Escape).
    pub async fn press_on_focused(&self, key: &str) {
        self.client
            .active_element()
            .await
            .expect("a focused element")
            .send_keys(key)
            .await
            .expect("key press");
    }

    /// Opens a view from the navigation. Opening a view twice is opening it once, so a click
    /// the driver fails to deliver is sent again, as a person clicks again when nothing
    /// happened: WebKitWebDriver has refused one with an empty message ("cannot click
    /// .nav[data-view=connect]: webdriver returned error: ", in two CI runs, each time straight
    /// after a native dialog — which, timed in passing runs, is off the screen by then).
    pub async fn view(&self, name: &str) {
        let css = format!(".nav[data-view={name}]");
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Err(e) = self.try_click(&css).await {
            assert!(Instant::now() < deadline, "cannot click {css}: {e}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.wait_js(
            &format!("the {name} view"),
            &format!("return !document.getElementById('view-{name}').hidden"),
        )
        .await;
    }

    /// Resizes the window and waits until the page has the new width.
    pub async fn resize(&self, width: u32, height: u32) {
        self.client
            .set_window_size(width, height)
            .await
            .expect("resize the window");
        self.wait_js(
            "the new width",
            &format!("return window.innerWidth <= {width} && window.innerWidth > {width} - 40;"),
        )
        .await;
    }

    /// A server row's fields as the page shows them.
    pub async fn row(&self, id: &str) -> Value {
        self.js(&format!(
            "const r = document.querySelector('article.server[data-id=\"{id}\"]');
             if (!r) return null;
             return {{ state: r.dataset.state,
                      pid: r.querySelector('.pid').dataset.pid,
                      restarts: Number(r.querySelector('.restarts').dataset.restarts),
                      tools: Number(r.querySelector('.tools-count').dataset.tools),
                      error: r.querySelector('.last-error').textContent }};"
        ))
        .await
    }

    pub async fn wait_state(&self, id: &str, state: &str) -> Value {
        self.wait_js(
            &format!("{id} {state}"),
            &format!(
                "const r = document.querySelector('article.server[data-id=\"{id}\"]');
                 return r && r.dataset.state === '{state}';"
            ),
        )
        .await;
        self.row(id).await
    }

    /// Saves PNGs of the window's page under `target/e2e-shots/`: `NAME.png` in the light theme
    /// and `NAME-dark.png` in the dark one (the page's own theme is restored after).
    /// `make screenshots` copies them into `docs/`.
    pub async fn shot(&self, name: &str) -> PathBuf {
        let before = self
            .js("return document.documentElement.dataset.theme || ''")
            .await;
        let mut first = None;
        for (theme, file) in [("light", name.to_owned()), ("dark", format!("{name}-dark"))] {
            let path = self.shots.join(format!("{file}.png"));
            // Switch the theme, then let the page paint what the last step changed.
            let _ = self
                .client
                .execute_async(
                    "const [theme, done] = arguments;
                     document.documentElement.dataset.theme = theme;
                     requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 50)));",
                    vec![json!(theme)],
                )
                .await;
            match self.client.screenshot().await {
                Ok(png) => {
                    let _ = std::fs::write(&path, png);
                }
                Err(e) => eprintln!("screenshot {file} failed: {e}"),
            }
            first.get_or_insert(path);
        }
        let _ = self
            .client
            .execute(
                "document.documentElement.dataset.theme = arguments[0]; return true;",
                vec![before],
            )
            .await;
        first.unwrap_or_else(|| self.shots.join(format!("{name}.png")))
    }

    /// Runs a `gatehouse` CLI verb against the app's control socket.
    pub fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(bin("gatehouse"))
            .arg("--control")
            .arg(&self.control)
            .args(args)
            .output()
            .expect("run gatehouse");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Like `cli`, with `input` on its stdin (a secret's value).
    pub fn cli_stdin(&self, args: &[&str], input: &str) -> (i32, String, String) {
        use std::io::Write;
        let mut child = Command::new(bin("gatehouse"))
            .arg("--control")
            .arg(&self.control)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run gatehouse");
        if let Some(mut i) = child.stdin.take() {
            let _ = i.write_all(input.as_bytes());
        }
        let out = child.wait_with_output().expect("gatehouse output");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Starts a real MCP client (Python SDK, Streamable HTTP + bearer token) making `calls`;
    /// `finish` returns its JSON output.
    pub fn client_call(&self, calls: Value) -> McpClient {
        self.client_call_as(TOKEN, calls)
    }

    /// Like `client_call`, the client calling itself `name` (its `clientInfo.name`).
    pub fn client_call_named(&self, token: &str, name: &str, calls: Value) -> McpClient {
        let python = peers_dir().join("venv/bin/python");
        let child = Command::new(python)
            .arg(repo().join("tests/clients/py_client.py"))
            .args(["http", &self.url, token, &calls.to_string()])
            .env("MCP_CLIENT_NAME", name)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python client (make peers installs it)");
        McpClient { child: Some(child) }
    }

    /// The token of client profile `id` (made with `gatehouse clients add`), as the snippet
    /// `client-config` prints carries it.
    pub fn profile_token(&self, id: &str) -> String {
        let (code, out, err) = self.cli(&["client-config", "cursor", "--client", id]);
        assert_eq!(code, 0, "{err}");
        let at = out.find("Bearer ").expect("a bearer token in the snippet") + 7;
        out[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect()
    }

    /// Like `client_call`, with another bearer token (a client profile's).
    pub fn client_call_as(&self, token: &str, calls: Value) -> McpClient {
        mcp_client(&self.url, token, calls)
    }

    /// The app's own process (the one WebKitWebDriver started for this test).
    pub fn app_pid(&self) -> Option<u32> {
        let app = bin("gatehouse-app");
        let marker = format!("GATEHOUSE_CONTROL={}", self.control.display());
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let exe = std::fs::read_link(e.path().join("exe")).ok()?;
            if exe != app {
                return None;
            }
            let env = std::fs::read(e.path().join("environ")).ok()?;
            env.split(|b| *b == 0)
                .any(|kv| kv == marker.as_bytes())
                .then_some(pid)
        })
    }

    /// Answers a native (GTK) dialog titled `title` with a key press: focus it, then type.
    pub async fn answer_native_dialog(&self, title: &str, key: &str) {
        answer_native(title, key).await
    }

    /// X window ids of the app's main window that are currently mapped (visible).
    pub fn visible_windows(&self) -> Vec<String> {
        native_windows(MAIN_WINDOW)
    }

    /// Clicks the window's close button, as far as X is concerned: WM_DELETE_WINDOW.
    pub fn close_window(&self) {
        let windows = self.visible_windows();
        assert!(!windows.is_empty(), "no visible Gatehouse window to close");
        close_windows(&windows);
    }

    /// Ends the WebDriver session; dropping then stops the driver and makes sure the app is gone.
    pub async fn quit(self) {
        // Bounded: when the app is already gone, the driver may never answer.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.client.clone().close()).await;
    }
}

impl Drop for Desktop {
    /// Also runs when a test panics, so one failure never leaves an app behind for the next test
    /// (whose app would then be a second instance that hands over and exits).
    fn drop(&mut self) {
        let app = self.app_pid();
        // SIGTERM, not SIGKILL: tauri-driver then stops WebKitWebDriver too.
        let _ = nix_kill(self.driver.id(), 15);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.driver.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        // The app usually exits with its driver, but may still be stopping its servers: wait
        // for it, and end it the way Quit does if it lingers.
        if let Some(pid) = app {
            let deadline = Instant::now() + Duration::from_secs(5);
            while alive(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if alive(pid) {
                eprintln!("e2e: the app ({pid}) outlived its driver; quitting it");
                nix_kill(pid, 15);
                let deadline = Instant::now() + Duration::from_secs(15);
                while alive(pid) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                }
                if alive(pid) {
                    nix_kill(pid, 9);
                }
            }
        }
    }
}

fn tauri_driver() -> PathBuf {
    let cargo_bin =
        PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/bin/tauri-driver");
    if cargo_bin.is_file() {
        cargo_bin
    } else {
        PathBuf::from("tauri-driver")
    }
}

/// Starts a real MCP client (Python SDK, Streamable HTTP + bearer token) making `calls` to the
/// gateway at `url`.
pub fn mcp_client(url: &str, token: &str, calls: Value) -> McpClient {
    let python = peers_dir().join("venv/bin/python");
    let child = Command::new(python)
        .arg(repo().join("tests/clients/py_client.py"))
        .args(["http", url, token, &calls.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python client (make peers installs it)");
    McpClient { child: Some(child) }
}

pub struct McpClient {
    child: Option<Child>,
}

impl McpClient {
    pub fn finish(mut self) -> Value {
        let child = self.child.take().expect("client");
        let out = child.wait_with_output().expect("client output");
        assert!(
            out.status.success(),
            "MCP client failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "client printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

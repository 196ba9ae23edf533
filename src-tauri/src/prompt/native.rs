//! The prompt in GTK: one window, refilled for the call at the front of the queue. Everything
//! here runs on the main thread (where the app's event loop runs GTK).

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use gatehouse::approval::ApprovalRequest;
use gtk::glib;
use gtk::prelude::*;
use tauri::{AppHandle, Manager, Runtime};

use super::{countdown, Facts, GUARD};
use crate::state::{AppState, Choice};

/// The prompt's window, made once and kept hidden between calls (a GTK window costs little, and
/// reusing it paints sooner).
struct Prompt {
    window: gtk::Window,
    /// The request shown (`None`: hidden), and its digest (what an answer carries).
    id: Option<String>,
    digest: String,
    /// Answers are taken once this is set — by the same timer that makes the buttons sensitive,
    /// so a button shown live is never a click dropped: the call shown just appeared or replaced
    /// another, and a click or key meant for what was there must not land on it. Its own cell
    /// per call shown (the timer of one replaced cannot make the next one live early).
    live: std::rc::Rc<std::cell::Cell<bool>>,
    /// Ticks the countdown; removed with the content it updates.
    tick: Option<glib::SourceId>,
    /// Reports the first draw of the content shown.
    drawn: Option<glib::SignalHandlerId>,
    /// The heading, which counts the calls waiting.
    head: Option<gtk::Label>,
}

thread_local! {
    static PROMPT: RefCell<Option<Prompt>> = const { RefCell::new(None) };
}

/// Shows the front of the queue (creating the prompt when `create`), or closes the prompt when
/// nothing waits. A prompt already showing the front is left as it is.
pub fn refresh<R: Runtime>(app: &AppHandle<R>, create: bool) {
    if !gtk::is_initialized_main_thread() {
        return;
    }
    let pending = app
        .state::<Arc<AppState>>()
        .hub()
        .map(|h| h.approvals().pending())
        .unwrap_or_default();
    let waiting = pending.len();
    let Some(front) = pending.into_iter().next() else {
        close();
        return;
    };
    let shown = PROMPT.with(|p| p.borrow().as_ref().and_then(|p| p.id.clone()));
    if shown.as_deref() == Some(front.id.as_str()) {
        // The same call in front; the count of those waiting may have changed.
        PROMPT.with(|p| {
            if let Some(head) = p.borrow().as_ref().and_then(|p| p.head.as_ref()) {
                head.set_markup(&heading(waiting));
            }
        });
        return;
    }
    if shown.is_none() && (!create || crate::window::main_visible(app)) {
        return;
    }
    // Another call replaces the one on screen: the prompt says so.
    show(app, &front, waiting, shown.is_some());
}

/// Hides the prompt (the call stays in the queue).
pub fn close() {
    if let Some(window) = PROMPT.with(|p| p.borrow_mut().as_mut().map(clear)) {
        window.hide();
    }
}

/// Forgets what the prompt shows (its countdown, its draw report); returns its window.
fn clear(p: &mut Prompt) -> gtk::Window {
    p.id = None;
    if let Some(t) = p.tick.take() {
        t.remove();
    }
    if let Some(h) = p.drawn.take() {
        p.window.disconnect(h);
    }
    p.head = None;
    p.window.clone()
}

fn show<R: Runtime>(app: &AppHandle<R>, req: &ApprovalRequest, waiting: usize, replaced: bool) {
    let existing = PROMPT.with(|p| p.borrow_mut().as_mut().map(clear));
    let window = existing.unwrap_or_else(|| new_window(app));
    if let Some(child) = window.child() {
        window.remove(&child);
    }
    let (content, head, countdown_label, deny, answers) = content(app, req, waiting, replaced);
    window.add(&content);
    // The buttons stay inert for GUARD after the call appears (a click meant for the call that
    // was there lands on nothing), then come alive.
    for b in &answers {
        b.set_sensitive(false);
    }
    let live = std::rc::Rc::new(std::cell::Cell::new(false));
    let comes_alive = live.clone();
    let deny_focus = deny.clone();
    glib::timeout_add_local_once(GUARD, move || {
        comes_alive.set(true);
        for b in &answers {
            b.set_sensitive(true);
        }
        // An inert button takes no focus: Deny gets it back now (Enter denies, as in the
        // window's modal), not the argument text that held it meanwhile.
        deny_focus.grab_focus();
    });
    let expires = req.expires_at;
    let label = countdown_label.clone();
    let tick = glib::timeout_add_local(Duration::from_millis(500), move || {
        label.set_text(&countdown(expires, now_ms()));
        glib::ControlFlow::Continue
    });
    // The moment it is drawn is what the person waits for (the desktop bench reads this).
    let id = req.id.clone();
    let timing = app.clone();
    let drawn = std::cell::Cell::new(false);
    let drawn = window.connect_draw(move |w, _| {
        if !drawn.replace(true) {
            timing
                .state::<crate::ui_timing::UiTiming>()
                .shown(&id, "native prompt");
            dump_texts(w);
        }
        glib::Propagation::Proceed
    });
    window.show_all();
    window.present();
    // Deny has the focus (Enter denies), as in the window's modal.
    window.set_focus(Some(&deny));
    PROMPT.with(|p| {
        *p.borrow_mut() = Some(Prompt {
            window,
            id: Some(req.id.clone()),
            digest: req.digest.clone(),
            live,
            tick: Some(tick),
            drawn: Some(drawn),
            head: Some(head),
        })
    });
}

fn new_window<R: Runtime>(app: &AppHandle<R>) -> gtk::Window {
    // The arguments can be selected to copy, but are not selected whole when shown.
    if let Some(settings) = gtk::Settings::default() {
        settings.set_gtk_label_select_on_focus(false);
    }
    let window = gtk::Window::new(gtk::WindowType::Toplevel);
    window.set_title("Allow this call? — Gatehouse");
    window.set_keep_above(true);
    window.set_position(gtk::WindowPosition::Center);
    window.set_default_size(520, -1);
    window.set_type_hint(gtk::gdk::WindowTypeHint::Dialog);
    // Closing it, or Esc, denies: never "dismiss and leave the call hanging" (but not within
    // the guard after a call appears: that key or click was meant for what was there).
    let on_close = app.clone();
    window.connect_delete_event(move |_, _| {
        answer_front(&on_close, Choice::Deny);
        glib::Propagation::Stop
    });
    let on_key = app.clone();
    window.connect_key_press_event(move |_, ev| {
        if ev.keyval() == gtk::gdk::keys::constants::Escape {
            answer_front(&on_key, Choice::Deny);
            return glib::Propagation::Stop;
        }
        glib::Propagation::Proceed
    });
    window
}

/// The heading: the question, and how many calls wait.
fn heading(waiting: usize) -> String {
    if waiting > 1 {
        format!("<b><big>Allow this call?</big></b>   1 of {waiting} waiting")
    } else {
        "<b><big>Allow this call?</big></b>".to_owned()
    }
}

/// The prompt's content for `req`; returns it with its heading, the countdown label and the
/// Deny button.
fn content<R: Runtime>(
    app: &AppHandle<R>,
    req: &ApprovalRequest,
    waiting: usize,
    replaced: bool,
) -> (
    gtk::Box,
    gtk::Label,
    gtk::Label,
    gtk::Button,
    Vec<gtk::Button>,
) {
    let f = Facts::of(req);
    let root = gtk::Box::new(gtk::Orientation::Vertical, 8);
    root.set_border_width(16);
    let head = label("");
    head.set_markup(&heading(waiting));
    root.add(&head);
    if replaced {
        root.add(&strong(
            "This is a different call from the one shown a moment ago: read it before answering.",
        ));
    }
    for w in &f.warnings {
        root.add(&strong(w));
    }
    let grid = gtk::Grid::new();
    grid.set_column_spacing(12);
    grid.set_row_spacing(4);
    let mut rows = vec![("Client", f.client.clone())];
    if let Some(p) = &f.patience {
        rows.push(("Waits", p.clone()));
    }
    rows.push(("Server", f.server.clone()));
    if !f.goes_to.is_empty() {
        rows.push(("Goes to", f.goes_to.clone()));
    }
    rows.push(("Tool", f.tool.clone()));
    for (i, (k, v)) in rows.iter().enumerate() {
        let key = label(k);
        key.style_context().add_class("dim-label");
        grid.attach(&key, 0, i as i32, 1, 1);
        grid.attach(&label(v), 1, i as i32, 1, 1);
    }
    root.add(&grid);
    root.add(&label(&f.reason));
    if let Some(d) = &f.description {
        let l = label(d);
        l.set_lines(3);
        l.set_ellipsize(gtk::pango::EllipsizeMode::End);
        root.add(&l);
    }
    if let Some(c) = &f.changed {
        let l = label(&format!("<b>{}</b>", glib::markup_escape_text(c)));
        l.set_use_markup(true);
        root.add(&l);
    }
    root.add(&label(&f.size));
    root.add(&arguments_view(&f.arguments));
    let count = label(&countdown(req.expires_at, now_ms()));
    root.add(&count);
    let scope = label(&f.always_scope);
    scope.style_context().add_class("dim-label");
    root.add(&scope);
    let buttons = gtk::Box::new(gtk::Orientation::Horizontal, 6);
    let open = gtk::Button::with_mnemonic("Open _Gatehouse…");
    let to_open = app.clone();
    open.connect_clicked(move |_| {
        crate::window::show_main(&to_open);
        close();
    });
    buttons.pack_start(&open, false, false, 0);
    let mut deny = None;
    let mut answers = Vec::new();
    // Packed from the right: the exact call always and this session, Always, Session, Once, Deny
    // (Deny leftmost of the answers).
    for (text, decision) in [
        ("This e_xact call, always", Choice::ExactAlways),
        ("This _exact call", Choice::Exact),
        ("_Always allow", Choice::Always),
        ("Allow for this _session", Choice::Session),
        ("Allow _once", Choice::Once),
        ("_Deny", Choice::Deny),
    ] {
        let b = gtk::Button::with_mnemonic(text);
        let handle = app.clone();
        let (id, digest) = (req.id.clone(), req.digest.clone());
        b.connect_clicked(move |_| answer(&handle, &id, &digest, decision));
        answers.push(b.clone());
        if decision == Choice::Deny {
            b.style_context().add_class("destructive-action");
            deny = Some(b.clone());
        } else if decision == Choice::Once {
            b.style_context().add_class("suggested-action");
        }
        buttons.pack_end(&b, false, false, 0);
    }
    root.add(&buttons);
    let deny = deny.unwrap_or_else(|| gtk::Button::with_label("Deny"));
    (root, head, count, deny, answers)
}

/// The arguments, one row per key: the key, then its value (a string's line breaks kept). A long
/// value scrolls in its own box, so no value pushes the other keys out of sight; the whole list
/// scrolls past a few rows.
fn arguments_view(rows: &[(String, String)]) -> gtk::ScrolledWindow {
    let grid = gtk::Grid::new();
    grid.set_column_spacing(12);
    grid.set_row_spacing(6);
    for (i, (k, v)) in rows.iter().enumerate() {
        let key = label(k);
        key.style_context().add_class("monospace");
        key.set_yalign(0.0);
        key.set_markup(&format!("<b>{}</b>", glib::markup_escape_text(k)));
        grid.attach(&key, 0, i as i32, 1, 1);
        let value = label(v);
        value.set_selectable(true);
        value.set_line_wrap_mode(gtk::pango::WrapMode::WordChar);
        value.style_context().add_class("monospace");
        value.set_hexpand(true);
        let scroll = gtk::ScrolledWindow::new(gtk::Adjustment::NONE, gtk::Adjustment::NONE);
        scroll.set_policy(gtk::PolicyType::Never, gtk::PolicyType::Automatic);
        scroll.set_max_content_height(96);
        scroll.set_propagate_natural_height(true);
        scroll.add(&value);
        grid.attach(&scroll, 1, i as i32, 1, 1);
    }
    let outer = gtk::ScrolledWindow::new(gtk::Adjustment::NONE, gtk::Adjustment::NONE);
    outer.set_policy(gtk::PolicyType::Never, gtk::PolicyType::Automatic);
    outer.set_max_content_height(280);
    outer.set_propagate_natural_height(true);
    outer.add(&grid);
    outer
}

/// A line that must be read: bold.
fn strong(text: &str) -> gtk::Label {
    let l = label("");
    l.set_markup(&format!("<b>{}</b>", glib::markup_escape_text(text)));
    l
}

/// For the desktop e2e tests (`GATEHOUSE_E2E_PROMPT_TEXT=FILE`): every label's text as GTK lays
/// it out, one per line, written when the prompt is drawn — what the person reads, as an
/// accessibility reader would get it.
fn dump_texts(window: &gtk::Window) {
    let Some(path) = std::env::var_os("GATEHOUSE_E2E_PROMPT_TEXT") else {
        return;
    };
    fn walk(w: &gtk::Widget, out: &mut Vec<String>) {
        if let Some(l) = w.downcast_ref::<gtk::Label>() {
            out.push(
                l.layout()
                    .map_or_else(|| l.text().to_string(), |p| p.text().to_string()),
            );
        } else if let Some(b) = w.downcast_ref::<gtk::Button>() {
            out.push(format!("[{}]", b.label().unwrap_or_default()));
        }
        if let Some(c) = w.downcast_ref::<gtk::Container>() {
            for child in c.children() {
                walk(&child, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(window.upcast_ref(), &mut out);
    if let Err(e) = std::fs::write(&path, out.join("\n")) {
        tracing::debug!(error = %e, "cannot write the prompt's text for the tests");
    }
}

fn label(text: &str) -> gtk::Label {
    let l = gtk::Label::new(Some(text));
    l.set_xalign(0.0);
    l.set_line_wrap(true);
    l.set_max_width_chars(72);
    l
}

/// Esc or the close button: deny the call shown — unless it appeared within the guard, when the
/// key or click was meant for what was there and answers nothing.
fn answer_front<R: Runtime>(app: &AppHandle<R>, decision: Choice) {
    let shown = PROMPT.with(|p| {
        p.borrow().as_ref().and_then(|p| {
            p.id.clone()
                .filter(|_| p.live.get())
                .map(|id| (id, p.digest.clone()))
        })
    });
    if let Some((id, digest)) = shown {
        answer(app, &id, &digest, decision);
    }
}

/// Answers `id` (the call shown, with its digest) as the person chose, then shows what is next
/// (the hub's resolution event would too; this is at once).
fn answer<R: Runtime>(app: &AppHandle<R>, id: &str, digest: &str, decision: Choice) {
    if let Err(e) = app
        .state::<Arc<AppState>>()
        .answer(id, digest, decision, None)
    {
        // Answered elsewhere or timed out meanwhile: the next refresh shows what is left.
        tracing::debug!(error = %e, "the prompt's answer came too late");
    }
    refresh(app, false);
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

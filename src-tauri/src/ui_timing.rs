//! Moments the UI reports so the desktop benchmark can measure what a person waits for: the first
//! paint of the Servers panel, and an approval request becoming visible (the window's modal, or the
//! native prompt while the window is closed). Logged at info
//! level with fixed messages the bench reads from stderr.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use tauri::State;

#[derive(Default)]
pub struct UiTiming {
    /// Guards one insert or removal: when each approval request reached the app.
    arrived: Mutex<HashMap<String, Instant>>,
}

impl UiTiming {
    pub fn approval_arrived(&self, id: &str) {
        let mut map = gatehouse::sync::lock(&self.arrived);
        if map.len() > 1000 {
            map.clear();
        }
        map.insert(id.to_owned(), Instant::now());
    }

    /// The approval `id` is on screen, in `surface` (the window's modal, the native prompt).
    pub fn shown(&self, id: &str, surface: &str) {
        let arrived = gatehouse::sync::lock(&self.arrived).remove(id);
        if let Some(t) = arrived {
            tracing::info!(
                id,
                surface,
                latency_us = t.elapsed().as_micros() as u64,
                "approval modal visible"
            );
        }
    }
}

/// The Servers panel painted its first rows (once per page: each window made afresh paints).
#[tauri::command]
pub fn ui_painted(servers: usize) {
    tracing::info!(servers, "servers panel painted");
}

/// The approval modal for `id` is on screen.
#[tauri::command]
pub fn approval_shown(timing: State<'_, UiTiming>, id: String) {
    timing.shown(&id, "window");
}

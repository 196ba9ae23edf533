//! Moments the UI reports so the desktop benchmark can measure what a person waits for: the first
//! paint of the Servers panel, and an approval request becoming a visible modal. Logged at info
//! level with fixed messages the bench reads from stderr.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use tauri::State;

#[derive(Default)]
pub struct UiTiming {
    /// Guards one insert or removal: when each approval request reached the app.
    arrived: Mutex<HashMap<String, Instant>>,
    painted: std::sync::atomic::AtomicBool,
}

impl UiTiming {
    pub fn approval_arrived(&self, id: &str) {
        let mut map = self.arrived.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() > 1000 {
            map.clear();
        }
        map.insert(id.to_owned(), Instant::now());
    }
}

/// The Servers panel painted its first rows (once per process).
#[tauri::command]
pub fn ui_painted(timing: State<'_, UiTiming>, servers: usize) {
    if !timing
        .painted
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        tracing::info!(servers, "servers panel painted");
    }
}

/// The approval modal for `id` is on screen.
#[tauri::command]
pub fn approval_shown(timing: State<'_, UiTiming>, id: String) {
    let arrived = timing
        .arrived
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id);
    if let Some(t) = arrived {
        tracing::info!(
            id,
            latency_us = t.elapsed().as_micros() as u64,
            "approval modal visible"
        );
    }
}

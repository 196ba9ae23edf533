//! The one lock helper: a poisoned mutex is still used (a panic elsewhere never takes a table
//! away from the rest of the hub; every guarded unit of work leaves it consistent).

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, poisoned or not.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

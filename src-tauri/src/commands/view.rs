//! The window's own look that lives on this computer only: its text size (the webview's zoom),
//! chosen in Settings and kept by the page beside the theme.

use crate::error::{CommandError, CommandResult};

/// The text sizes Settings offers (a share of the normal size).
pub const TEXT_SIZES: &[f64] = &[1.0, 1.1, 1.25, 1.5];

/// Sets the window's text size: every length of the page scaled, as a browser's zoom does, so
/// the layout reflows for the width that is left (only the sizes Settings offers).
#[tauri::command]
pub fn set_text_size<R: tauri::Runtime>(
    webview: tauri::Webview<R>,
    scale: f64,
) -> CommandResult<f64> {
    let Some(scale) = TEXT_SIZES
        .iter()
        .copied()
        .find(|s| (s - scale).abs() < 1e-6)
    else {
        return Err(CommandError::invalid(format!(
            "a text size of {scale} is not offered: one of 100 %, 110 %, 125 %, 150 %"
        )));
    };
    webview.set_zoom(scale).map_err(CommandError::failed)?;
    Ok(scale)
}

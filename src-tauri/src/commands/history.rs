//! The Activity view's commands: recent calls with their decision group, and the export of
//! every call matching the filters into a new file.

use super::AppStateRef;
use crate::error::CommandError;
use crate::error::CommandResult;
use serde::Serialize;

/// One Activity row: the record plus the group its decision belongs to (what the view filters
/// and colours by).
#[derive(Serialize)]
pub struct ActivityRow {
    #[serde(flatten)]
    record: gatehouse::activity::CallRecord,
    group: gatehouse::activity::DecisionGroup,
}

#[tauri::command]
pub async fn activity(
    state: AppStateRef<'_>,
    limit: Option<usize>,
    server: Option<String>,
    client: Option<String>,
) -> CommandResult<Vec<ActivityRow>> {
    let rows = state
        .hub()?
        .activity()
        .recent_of(
            limit.unwrap_or(200).min(2000),
            server.filter(|s| !s.is_empty()),
            client.filter(|s| !s.is_empty()),
        )
        .await
        .map_err(CommandError::failed)?;
    Ok(rows
        .into_iter()
        .map(|record| ActivityRow {
            group: record.decision.group(),
            record,
        })
        .collect())
}

/// Where an export went and how many calls it holds.
#[derive(Serialize)]
pub struct Exported {
    path: String,
    rows: usize,
}

/// Writes every call matching the Activity view's filters (not only the rows on screen) to a
/// new file in the person's Downloads folder.
#[tauri::command]
pub async fn export_activity(
    state: AppStateRef<'_>,
    format: gatehouse::activity::export::Format,
    server: Option<String>,
    client: Option<String>,
    group: Option<gatehouse::activity::DecisionGroup>,
) -> CommandResult<Exported> {
    use gatehouse::activity::export;
    let mut rows = state
        .hub()?
        .activity()
        .recent_of(
            gatehouse::activity::MAX_ROWS as usize,
            server.filter(|s| !s.is_empty()),
            client.filter(|s| !s.is_empty()),
        )
        .await
        .map_err(CommandError::failed)?;
    if let Some(group) = group {
        rows.retain(|r| r.decision.group() == group);
    }
    let dir = export::default_dir()
        .ok_or_else(|| CommandError::failed("there is no home folder to export to"))?;
    let n = rows.len();
    let path = tauri::async_runtime::spawn_blocking(move || export::write(&dir, &rows, format))
        .await
        .map_err(CommandError::failed)?
        .map_err(|e| CommandError::failed(format!("the export could not be written: {e}")))?;
    Ok(Exported {
        path: path.display().to_string(),
        rows: n,
    })
}

//! What the skip filters see of a stored task: the same fields at intake, in the analyzer and in
//! `reanalyze`, so a rule means the same thing wherever it is evaluated.

use crate::domain::Task;
use crate::filter::TaskFields;

/// The task's raw object from its source (`None` when it has none or it is not JSON: the `raw.*` fields
/// then read as empty).
pub fn raw_of(task: &Task) -> Option<serde_json::Value> {
    task.raw_json.as_deref().and_then(|j| serde_json::from_str(j).ok())
}

/// The filter fields of `task`, borrowing `raw` (from [`raw_of`]).
pub fn task_fields<'a>(task: &'a Task, raw: Option<&'a serde_json::Value>) -> TaskFields<'a> {
    TaskFields {
        description: task.description.as_deref().unwrap_or(""),
        notes: task.notes.as_deref().unwrap_or(""),
        source: task.source.as_deref().unwrap_or(""),
        completed: task.completed,
        assignee: task.assignee.as_deref().filter(|a| !a.is_empty()),
        modified_at: task.source_modified_at,
        raw,
    }
}

/// The task's title: the first non-empty line of its description, at most 120 characters.
pub fn title(task: &Task) -> String {
    let text = task.description.as_deref().unwrap_or("");
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().chars().take(120).collect()
}

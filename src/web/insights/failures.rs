//! Expensive failures: the runs given up in the window after spending more than
//! `insights.expensive_failure_usd`, costliest first, with why as recorded (the abandonment's reason and
//! the run's last decision, shown as stored: no fact is read out of their words). Pure.

use crate::store::ExpensiveFailure;

/// The most runs listed: the costliest, which are the ones worth a look.
pub const LIMIT: i64 = 50;

/// The list and the threshold it was made with.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Failures {
    pub threshold_usd: f64,
    pub runs: Vec<ExpensiveFailure>,
}

/// The longest task text shown in a row; the task's page has the rest.
const TASK_CHARS: usize = 80;

/// The column names of [`table_rows`].
pub const COLUMNS: [&str; 6] = ["run", "task", "cost", "abandoned", "why", "last decision"];

/// One run as text, the same on the page (which links the run and the task) and in `executor insights`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub run_id: i64,
    pub task_gid: String,
    /// The task's first line, shortened.
    pub task: String,
    pub cost: String,
    pub abandoned: String,
    pub why: String,
    pub last_decision: String,
}

pub fn rows(f: &Failures) -> Vec<Row> {
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    f.runs
        .iter()
        .map(|r| Row {
            run_id: r.run_id,
            task_gid: r.task_gid.clone(),
            task: r.task.as_deref().and_then(|t| t.lines().next()).map_or_else(|| "-".into(), short),
            cost: format!("${:.2}", r.cost_usd),
            abandoned: r.abandoned_at.map_or_else(|| "-".into(), |t| t.format("%Y-%m-%d %H:%M").to_string()),
            why: dash(&r.reason),
            last_decision: dash(&r.last_decision),
        })
        .collect()
}

/// `text` cut to [`TASK_CHARS`] characters, with an ellipsis when cut.
fn short(text: &str) -> String {
    match text.char_indices().nth(TASK_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// [`rows`] as cells in [`COLUMNS`]' order.
pub fn table_rows(f: &Failures) -> Vec<Vec<String>> {
    rows(f)
        .into_iter()
        .map(|r| vec![format!("#{}", r.run_id), r.task, r.cost, r.abandoned, r.why, r.last_decision])
        .collect()
}

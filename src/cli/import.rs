//! `executor import FILE`: v1's executor_queue and executor_runs rows brought into executor (Phase 1 of
//! the seed's migration), with a plan printed first when asked (`--dry-run`).

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use super::output::json;
use super::{Context, UsageError};
use crate::import::{ImportReport, TableCounts, import, plan, read_export};

const EXAMPLE: &str = r#"A v1 export is either one JSON object holding both tables' rows, by v1 column name:

  {
    "executor_queue": [
      {"id": 1, "task_gid": "1203", "source": "user_reports", "description": "Fix tab crash",
       "notes": "Crashes on close", "user_context": "Only on Sonoma", "status": "approved",
       "priority": 2, "complexity": "low", "feasibility": "high", "analysis_summary": "…",
       "executor_run_id": 7}
    ],
    "executor_runs": [
      {"id": 7, "task_gid": "1203", "state": "ci_running", "worktree_path": "/wt/1203",
       "branch_name": "executor/1203", "pr_url": "https://github.com/o/r/pull/9", "pr_number": 9,
       "ci_attempts": 1, "worker_pid": 4242}
    ]
  }

or a directory holding executor_queue.csv and executor_runs.csv: a header line of v1 column
names, an empty cell is NULL, as `\copy executor_queue TO 'executor_queue.csv' CSV HEADER` writes.

Mapping:
  status       for_review, awaiting_go, approved, skip, done as they are; in_progress → approved
               (its run carries on); NULL or unknown → pending. A task v1 left before approval
               whose run v1 had started is approved; one whose run is complete is done
  state        queued, in_progress, pr, complete, abandoned as they are; ci_running → pr (CI
               pending) and awaiting_review → pr (review to come): waiting holds no worker slot,
               the runner watches CI and starts the review; an unknown state refuses the row
  user_context appended to notes
  kept         v1's times (added_at, started_at, completed_at, updated_at) on what the import adds;
               each run's branch, worktree, pull request, CI attempts and worker fields (worker_pid,
               worker_session_id, worker_last_update, worker_stuck_count) as v1's record: a v1
               process is not adopted, the runner starts its own worker when a run needs one
  history      a task v1 ran more than once keeps every run: the one the queue row's
               executor_run_id names (else the last) is its current run, the others go in
               before it as ended runs (abandoned, with v1's fields, times and states on the
               way), as executor keeps a run superseded by `queue retry` (`runs list --task GID`)
  not imported a column executor does not know (asana_url, section, …) is named in the output,
               by table and column, with its values left behind

Each bad row (no task_gid, an unknown state, a run whose task is not approved, …) is refused
alone, named in the output, and the rest is imported: one odd row in a live v1 database should not
hold back the others. A database error stops the import; running it again imports what it had not reached.

Running it twice changes nothing the second time: tasks are matched by gid, v1's status and
analysis (priority included) apply only to a task executor has not triaged (new or pending), and
a task's runs (its current one and its history) are created together, only for a task that has
no run yet.

Examples:
  executor import v1.json --dry-run     # the plan: added / updated / unchanged / refused, and why
  executor import v1.json               # apply it and print the same summary
  executor import v1-export/ --json     # the CSV pair, summary as JSON
  executor import v1.json --repo browser  # with several [repos]: where these tasks' work happens"#;

/// Import v1's executor_queue and executor_runs rows (a JSON export or a CSV pair).
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLE)]
pub struct ImportArgs {
    /// The v1 export: a JSON file, or a directory holding executor_queue.csv and executor_runs.csv.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the plan without writing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// The repository (a key of [repos] in the config) of the tasks whose row names none (v1 had one
    /// repository and no repo column). Not needed when the config has exactly one.
    #[arg(long, value_name = "NAME")]
    pub repo: Option<String>,
}

pub async fn run(ctx: &Context, args: ImportArgs, as_json: bool) -> anyhow::Result<()> {
    let export =
        read_export(&args.file).with_context(|| format!("reading the v1 export {}", args.file.display()))?;
    let mut plan = plan(&export);
    if let Some(repo) = &args.repo {
        if !ctx.config.repos.contains_key(repo) {
            let known: Vec<&str> = ctx.config.repos.keys().map(String::as_str).collect();
            return Err(UsageError(format!(
                "--repo {repo:?} is not under [repos] in the config (configured: {})",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ))
            .into());
        }
        for task in &mut plan.tasks {
            task.fields.repo.get_or_insert_with(|| repo.clone());
        }
    }
    let report = import(&ctx.store, &plan, args.dry_run).await.context("importing the v1 export")?;
    if as_json {
        return json(&report);
    }
    print_report(&report, &args.file.display().to_string());
    Ok(())
}

fn print_report(r: &ImportReport, origin: &str) {
    if r.dry_run {
        say!("Plan for importing {origin} (dry run: nothing written)");
    } else {
        say!("Imported {origin}");
    }
    let counts = |c: &TableCounts| {
        format!("{} added, {} updated, {} unchanged, {} refused", c.added, c.updated, c.unchanged, c.refused)
    };
    say!("  executor_queue: {}", counts(&r.executor_queue));
    say!("  executor_runs:  {}", counts(&r.executor_runs));
    if !r.refused.is_empty() {
        say!("Refused:");
        for refusal in &r.refused {
            say!("  {refusal}");
        }
    }
    let mapping = |title: &str, m: &std::collections::BTreeMap<String, usize>| {
        if !m.is_empty() {
            say!("{title}:");
            for (pair, n) in m {
                say!("  {pair}: {n}");
            }
        }
    };
    mapping("Status mapping (v1 → executor)", &r.status_mapping);
    mapping("State mapping (v1 → executor)", &r.state_mapping);
    if !r.kept_status.is_empty() {
        say!("Kept (already triaged in executor):");
        for line in &r.kept_status {
            say!("  {line}");
        }
    }
    say!("Kept from v1:");
    for line in &r.kept_from_v1 {
        say!("  {line}");
    }
    say!("Not imported:");
    for line in &r.not_imported {
        say!("  {line}");
    }
    for c in &r.unknown_columns {
        // The export's own text: no control character of it reaches a terminal.
        let column: String = c.column.chars().filter(|ch| !ch.is_control()).take(80).collect();
        say!("  {}.{column}: a column executor does not know; its values are left behind", c.table);
    }
}

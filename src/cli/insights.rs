//! `executor insights`: whether the runs pay, from the shell — how many pull requests landed, at what
//! cost, how fast and how many were reverted, for all runs, by repository and agent, and sliced by
//! repository, agent, worker kind, source and label; and the runs given up after spending much. The same figures as the dashboard's
//! insights page and `GET /api/v1/insights` (`--json` prints that document whole).

use clap::Args;

use super::Context;
use super::output::{json, table};
use crate::web::insights::{self, failures, landed, slices};

#[derive(Debug, Args)]
pub struct InsightsArgs {
    /// The window, in days ending today: 7, 30 or 90.
    #[arg(long, default_value = "30", value_name = "DAYS")]
    days: String,
}

pub async fn run(ctx: &Context, args: InsightsArgs, as_json: bool) -> anyhow::Result<()> {
    let days = insights::window(Some(&args.days)).map_err(|e| super::UsageError(format!("--days: {e}")))?;
    let github = ctx.config.repos.values().any(|r| r.forge == "github");
    let figures = insights::gather(&ctx.store, &ctx.config, days, github).await?;
    if as_json {
        return json(&figures);
    }
    say!("Runs that ended in the last {days} days (merged, or given up):");
    table(&landed::COLUMNS, &landed::table_rows(&figures.landed));
    say!(
        "(reverted: found reverted on the base branch within {} days of the merge)",
        figures.revert_window_days
    );
    for s in &figures.slices {
        let columns = slices::columns(s.by);
        say!();
        say!("By {}:", columns[0]);
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        table(&columns, &slices::table_rows(s));
    }
    let f = &figures.expensive_failures;
    say!();
    say!("Runs given up after spending more than ${:.2}:", f.threshold_usd);
    if f.runs.is_empty() {
        say!("none");
    } else {
        table(&failures::COLUMNS, &failures::table_rows(f));
    }
    Ok(())
}

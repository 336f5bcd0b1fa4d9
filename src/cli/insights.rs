//! `executor insights`: whether the runs pay, from the shell — how many pull requests landed, at what
//! cost and how fast, for all runs and by repository and agent. The same figures as the dashboard's
//! insights page and `GET /api/v1/insights` (`--json` prints that document whole).

use clap::Args;

use super::Context;
use super::output::{json, table};
use crate::web::insights::{self, landed};

#[derive(Debug, Args)]
pub struct InsightsArgs {
    /// The window, in days ending today: 7, 30 or 90.
    #[arg(long, default_value = "30", value_name = "DAYS")]
    days: String,
}

pub async fn run(ctx: &Context, args: InsightsArgs, as_json: bool) -> anyhow::Result<()> {
    let days = insights::window(Some(&args.days)).map_err(|e| super::UsageError(format!("--days: {e}")))?;
    let github = ctx.config.repos.values().any(|r| r.forge == "github");
    let figures = insights::gather(&ctx.store, days, github, ctx.config.github.reserve_points).await?;
    if as_json {
        return json(&figures);
    }
    say!("Runs that ended in the last {days} days (merged, or given up):");
    table(&landed::COLUMNS, &landed::table_rows(&figures.landed));
    Ok(())
}

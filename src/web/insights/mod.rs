//! Insights: the figures that answer "is this worth it?" over a window of 7, 30 or 90 days — tasks in
//! and out, cost per day and per completed pull request, time from approval to a pull request and to
//! completion, how each worker kind ends, how many pull requests landed and at what cost (by repository
//! and agent), GitHub points used per hour. Read with five aggregate
//! statements (`store/insights.rs`, `store/github_usage.rs`), assembled by pure functions (`figures`),
//! drawn as SVG with a table of the same numbers (`views`), and served as JSON for scripts.

pub mod figures;
pub mod landed;
#[cfg(test)]
mod tests;
pub mod views;

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::store::{DayFlow, GITHUB_GRAPHQL, Result, Store, now, start_of_day};
use figures::{CostDay, CostTotal, KindOutcomes, LeadTimes, PointsHour};

/// The windows offered, in days; the first is the default.
pub const WINDOWS: [u32; 3] = [30, 7, 90];

/// The GitHub chart's window: GitHub's budget is hourly, and more than two days of hours do not read.
pub const GITHUB_HOURS: i64 = 48;

/// The window a query string asks for: `days` absent is the default (30); anything but 7, 30 or 90 is
/// refused with the reason, so a shared link never silently shows another window.
pub fn window(days: Option<&str>) -> Result<u32, String> {
    match days.map(str::trim).filter(|d| !d.is_empty()) {
        None => Ok(WINDOWS[0]),
        Some(raw) => match raw.parse::<u32>() {
            Ok(d) if WINDOWS.contains(&d) => Ok(d),
            _ => Err(format!("days must be 7, 30 or 90, not '{}'", crate::domain::shown(raw, 40))),
        },
    }
}

/// Everything the insights page and `GET /api/v1/insights` show.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Insights {
    pub days: u32,
    /// Midnight UTC of the window's first day; the window ends now, today included.
    pub since: DateTime<Utc>,
    pub flow: Vec<DayFlow>,
    pub cost: Vec<CostDay>,
    pub cost_total: CostTotal,
    pub lead_times: LeadTimes,
    pub workers: Vec<KindOutcomes>,
    /// The runs that ended in the window — merged or given up — for all runs, then by repository and
    /// agent ([`landed::landed`]).
    pub landed: Vec<landed::Landed>,
    pub github: GitHubPoints,
}

/// GitHub points used per hour window over the last [`GITHUB_HOURS`] hours.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GitHubPoints {
    /// Whether this configuration uses GitHub at all.
    pub configured: bool,
    pub hours: Vec<PointsHour>,
    /// The points executor leaves for the agents (`github.reserve_points`): executor waits once the
    /// points used reach the limit less this.
    pub reserve: i64,
}

/// The UTC days of a `days`-day window ending today, oldest first.
pub fn window_days(days: u32, today: NaiveDate) -> Vec<NaiveDate> {
    (0..i64::from(days)).rev().map(|back| today - Duration::days(back)).collect()
}

/// Reads and assembles the insights for a `days`-day window ending now.
pub async fn gather(store: &Store, days: u32, github_configured: bool, reserve: u32) -> Result<Insights> {
    let now = now();
    let today = start_of_day(now);
    let since = today - Duration::days(i64::from(days) - 1);
    let day_list = window_days(days, today.date_naive());
    let flows = figures::flow_days(&day_list, &store.day_flows(since).await?);
    let (cost, cost_total) = figures::cost_days(&day_list, &store.day_costs(since).await?, &flows);
    let lead_times = figures::lead_times(&store.run_leads(since).await?, since);
    let workers = figures::outcomes(&store.worker_ends(since).await?);
    let landed = landed::landed(&store.run_outcomes(since).await?);
    // A window ends at its reset: the windows ending in the last 48 hours, this hour's included.
    let hours = store.github_usage(GITHUB_GRAPHQL, now - Duration::hours(GITHUB_HOURS)).await?;
    let github = GitHubPoints {
        configured: github_configured,
        hours: figures::points_hours(&hours),
        reserve: i64::from(reserve),
    };
    Ok(Insights { days, since, flow: flows, cost, cost_total, lead_times, workers, landed, github })
}

//! Insights: the figures that answer "is this worth it?" over a window of 7, 30 or 90 days — tasks in
//! and out, cost per day and per completed pull request, time from approval to a pull request and to
//! completion, how each worker kind ends, how many pull requests landed, at what cost and how many were
//! reverted (by repository and agent, and sliced by worker kind, source and label), the runs given up
//! after spending much, GitHub points used per hour. Read with a few aggregate statements
//! (`store/insights.rs`, `store/reverts.rs`, `store/github_usage.rs`), assembled by pure functions
//! (`figures`, `landed`, `slices`, `failures`), drawn as SVG with a table of the same numbers
//! (`views`), and served as JSON for scripts.

pub mod failures;
pub mod figures;
pub mod landed;
pub mod slices;
#[cfg(test)]
mod tests;
pub mod views;

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::config::Config;
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
    /// The same runs sliced one way at a time: repository, agent, worker kind, source, label.
    pub slices: Vec<slices::Slices>,
    /// Days after a merge within which a revert counts (`insights.revert_window_days`): a pull request
    /// merged more recently may still be reverted.
    pub revert_window_days: u32,
    /// Runs given up after spending more than `insights.expensive_failure_usd`.
    pub expensive_failures: failures::Failures,
    pub github: GitHubPoints,
    /// How the captions name a change: "merge request" when every repository is on GitLab. Words for
    /// people, not a figure: the JSON leaves them out.
    #[serde(skip)]
    pub words: crate::domain::ChangeWords,
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

/// Reads and assembles the insights for a `days`-day window ending now, with `config`'s thresholds.
pub async fn gather(store: &Store, config: &Config, days: u32, github_configured: bool) -> Result<Insights> {
    let now = now();
    let today = start_of_day(now);
    let since = today - Duration::days(i64::from(days) - 1);
    let day_list = window_days(days, today.date_naive());
    let flows = figures::flow_days(&day_list, &store.day_flows(since).await?);
    let (cost, cost_total) = figures::cost_days(&day_list, &store.day_costs(since).await?, &flows);
    let lead_times = figures::lead_times(&store.run_leads(since).await?, since);
    let workers = figures::outcomes(&store.worker_ends(since).await?);
    let outcomes = store.run_outcomes(since).await?;
    let (landed, slices) = (landed::landed(&outcomes), slices::slices(&outcomes));
    let threshold_usd = config.insights.expensive_failure_usd;
    let runs = store.expensive_failures(since, threshold_usd, failures::LIMIT).await?;
    let expensive_failures = failures::Failures { threshold_usd, runs };
    // A window ends at its reset: the windows ending in the last 48 hours, this hour's included.
    let hours = store.github_usage(GITHUB_GRAPHQL, now - Duration::hours(GITHUB_HOURS)).await?;
    let github = GitHubPoints {
        configured: github_configured,
        hours: figures::points_hours(&hours),
        reserve: i64::from(config.github.reserve_points),
    };
    let revert_window_days = config.insights.revert_window_days;
    Ok(Insights {
        days,
        since,
        flow: flows,
        cost,
        cost_total,
        lead_times,
        workers,
        landed,
        slices,
        revert_window_days,
        expensive_failures,
        github,
        words: config.words_everywhere(),
    })
}

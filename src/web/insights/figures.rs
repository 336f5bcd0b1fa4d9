//! From the store's aggregates to the figures the page and the API show: every day of the window (a
//! quiet day is a zero, not a gap), cost per completed pull request, lead-time buckets with their
//! medians, worker outcomes, GitHub points used per hour. Pure: the window and the rows are given.

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::domain::{EndClass, EndReason, ReviewVerdict, WorkerKind};
use crate::store::{DayCost, DayFlow, GitHubHour, RunLead, WorkerEnds};

/// One day's spend, with what it bought.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CostDay {
    pub day: NaiveDate,
    pub workers_usd: f64,
    pub triage_usd: f64,
    pub total_usd: f64,
    /// Runs completed that day.
    pub completed: i64,
    /// The day's spend over its completed pull requests; none on a day that completed none.
    pub per_completed_usd: Option<f64>,
}

/// The spend over the whole window, over the pull requests completed in it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CostTotal {
    pub total_usd: f64,
    pub completed: i64,
    pub per_completed_usd: Option<f64>,
}

/// Every day of `days`, oldest first, with the flows of the days that had any.
pub fn flow_days(days: &[NaiveDate], rows: &[DayFlow]) -> Vec<DayFlow> {
    days.iter()
        .map(|d| {
            rows.iter().find(|r| r.day == *d).cloned().unwrap_or(DayFlow { day: *d, ..Default::default() })
        })
        .collect()
}

/// Every day's spend against the runs it completed, and the window's total.
pub fn cost_days(days: &[NaiveDate], costs: &[DayCost], flows: &[DayFlow]) -> (Vec<CostDay>, CostTotal) {
    let per = |usd: f64, n: i64| if n > 0 { Some(usd / n as f64) } else { None };
    let out: Vec<CostDay> = days
        .iter()
        .map(|d| {
            let c = costs.iter().find(|c| c.day == *d);
            let (workers_usd, triage_usd) = c.map_or((0.0, 0.0), |c| (c.workers_usd, c.triage_usd));
            let completed = flows.iter().find(|f| f.day == *d).map_or(0, |f| f.completed);
            let total_usd = workers_usd + triage_usd;
            CostDay {
                day: *d,
                workers_usd,
                triage_usd,
                total_usd,
                completed,
                per_completed_usd: per(total_usd, completed),
            }
        })
        .collect();
    let total_usd: f64 = out.iter().map(|d| d.total_usd).sum();
    let completed: i64 = out.iter().map(|d| d.completed).sum();
    (out, CostTotal { total_usd, completed, per_completed_usd: per(total_usd, completed) })
}

/// Lead-time buckets: each holds durations below its bound (in hours) and at or above the previous one.
pub const LEAD_BOUNDS_HOURS: [f64; 7] = [1.0, 4.0, 12.0, 24.0, 48.0, 96.0, 168.0];

/// How many durations fell in one bucket.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LeadBucket {
    pub label: String,
    /// The bucket's upper bound in hours; none for the last, open one.
    pub below_hours: Option<f64>,
    pub to_pr: i64,
    pub to_complete: i64,
}

/// A distribution's size and its median and 90th percentile, in hours.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Spread {
    pub count: usize,
    pub p50_hours: Option<f64>,
    pub p90_hours: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LeadTimes {
    pub buckets: Vec<LeadBucket>,
    pub to_pr: Spread,
    pub to_complete: Spread,
}

/// Time from approval to the first pull request (for the runs whose first PR came in the window) and to
/// completion (for the runs completed in it).
pub fn lead_times(leads: &[RunLead], since: DateTime<Utc>) -> LeadTimes {
    let hours = |from: DateTime<Utc>, to: DateTime<Utc>| (to - from).num_milliseconds().max(0) as f64 / 3.6e6;
    let to_pr: Vec<f64> = leads
        .iter()
        .filter_map(|l| l.pr_at.filter(|at| *at >= since).map(|at| hours(l.approved_at, at)))
        .collect();
    let to_complete: Vec<f64> = leads
        .iter()
        .filter_map(|l| l.completed_at.filter(|at| *at >= since).map(|at| hours(l.approved_at, at)))
        .collect();
    let bucket_of = |h: f64| LEAD_BOUNDS_HOURS.iter().position(|b| h < *b).unwrap_or(LEAD_BOUNDS_HOURS.len());
    let mut buckets: Vec<LeadBucket> = (0..=LEAD_BOUNDS_HOURS.len())
        .map(|i| LeadBucket {
            label: bucket_label(i),
            below_hours: LEAD_BOUNDS_HOURS.get(i).copied(),
            to_pr: 0,
            to_complete: 0,
        })
        .collect();
    for h in &to_pr {
        buckets[bucket_of(*h)].to_pr += 1;
    }
    for h in &to_complete {
        buckets[bucket_of(*h)].to_complete += 1;
    }
    LeadTimes { buckets, to_pr: spread(to_pr), to_complete: spread(to_complete) }
}

/// "< 1 h", "1–4 h", …, "≥ 7 d".
fn bucket_label(i: usize) -> String {
    let show = |h: f64| if h >= 24.0 { format!("{} d", h / 24.0) } else { format!("{h} h") };
    match (i.checked_sub(1).map(|j| LEAD_BOUNDS_HOURS[j]), LEAD_BOUNDS_HOURS.get(i)) {
        (None, Some(hi)) => format!("< {}", show(*hi)),
        (Some(lo), Some(hi)) if (lo >= 24.0) == (*hi >= 24.0) => {
            let unit = if lo >= 24.0 { (lo / 24.0, hi / 24.0, "d") } else { (lo, *hi, "h") };
            format!("{}–{} {}", unit.0, unit.1, unit.2)
        }
        (Some(lo), Some(hi)) => format!("{}–{}", show(lo), show(*hi)),
        (Some(lo), None) => format!("≥ {}", show(lo)),
        (None, None) => String::new(),
    }
}

/// The nearest-rank median and 90th percentile of `values`.
pub fn spread(mut values: Vec<f64>) -> Spread {
    values.sort_by(f64::total_cmp);
    let rank = |q: f64| {
        let n = values.len();
        (n > 0).then(|| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1])
    };
    Spread { count: values.len(), p50_hours: rank(0.5), p90_hours: rank(0.9) }
}

/// How the sessions of one worker kind ended, as a person reads it: a worker that exited cleanly
/// without getting anything done did not succeed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct KindOutcomes {
    pub kind: String,
    /// Finished and did its job: moved its branch, answered, planned or asked; a review that passed.
    pub succeeded: i64,
    /// Finished, yet changed nothing (the runner judged it no progress); a review with no verdict.
    pub no_progress: i64,
    /// A review that finished with the verdict "fail": its job done, the pull request not good yet.
    pub review_failed: i64,
    /// Its own failure: exited with an error, crashed, could not start.
    pub failed: i64,
    /// Killed by the watchdog: silent too long, ran too long, printed too much.
    pub stuck: i64,
    /// Stopped by executor or the world: a budget stop, a human's abandon, a lost host, a failed resume.
    pub interrupted: i64,
}

impl KindOutcomes {
    pub fn total(&self) -> i64 {
        self.succeeded + self.no_progress + self.review_failed + self.failed + self.stuck + self.interrupted
    }
}

/// The worker ends grouped by kind and by what they came to, kinds in the order given: the class of
/// the end reason, then, for those that finished, the stored evidence (no progress, a review's verdict).
pub fn outcomes(ends: &[WorkerEnds]) -> Vec<KindOutcomes> {
    let mut out: Vec<KindOutcomes> = Vec::new();
    for e in ends {
        let i = match out.iter().position(|o| o.kind == e.kind) {
            Some(i) => i,
            None => {
                out.push(KindOutcomes { kind: e.kind.clone(), ..Default::default() });
                out.len() - 1
            }
        };
        let o = &mut out[i];
        let review = e.kind == WorkerKind::PrReview.as_str();
        // A reason this build does not know (a newer build's) is neither a success nor provably the
        // worker's failure: it counts as interrupted.
        match e.end_reason.parse::<EndReason>().map(EndReason::class) {
            Ok(EndClass::Ok) if e.no_progress => o.no_progress += e.count,
            Ok(EndClass::Ok) if review => match e.verdict.as_deref().map(str::parse::<ReviewVerdict>) {
                Some(Ok(ReviewVerdict::Pass)) => o.succeeded += e.count,
                Some(Ok(ReviewVerdict::Fail)) => o.review_failed += e.count,
                _ => o.no_progress += e.count,
            },
            Ok(EndClass::Ok) => o.succeeded += e.count,
            Ok(EndClass::Failed) => o.failed += e.count,
            Ok(EndClass::Stuck) => o.stuck += e.count,
            Ok(EndClass::Interrupted) | Err(_) => o.interrupted += e.count,
        }
    }
    out
}

/// GitHub's documented hourly budget for a user's token, used when GitHub did not state the limit.
pub const DEFAULT_HOURLY_POINTS: i64 = 5000;

/// One GitHub hour window: the points used in it at most, against its budget.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PointsHour {
    /// The window's start (an hour before GitHub's reset).
    pub from: DateTime<Utc>,
    pub used: i64,
    pub limit: i64,
}

/// Points used per hour window: the budget less the fewest points seen left.
pub fn points_hours(hours: &[GitHubHour]) -> Vec<PointsHour> {
    hours
        .iter()
        .map(|h| {
            let limit = h.hour_limit.unwrap_or(DEFAULT_HOURLY_POINTS);
            PointsHour {
                from: h.reset_at - Duration::hours(1),
                used: (limit - h.lowest_remaining).clamp(0, limit),
                limit,
            }
        })
        .collect()
}

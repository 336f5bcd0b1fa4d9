//! Tasks in and out per UTC day (the insights' first figure), counted in the database one day at a
//! time through the events' index by kind and time (migration 23).
//!
//! Why not one `GROUP BY day`: at 100,000 tasks the window holds 100,000 intake events, and grouping
//! them by a day computed from each row made SQLite sort all of them (159 ms for 90 days). Counting
//! each day's range of one kind reads only the index, already in order: no row, no sort. The days are
//! given as bound values (the window's first day starts at `since`, not at its midnight), so the
//! statement is the same on SQLite and PostgreSQL and no text of ours is spliced in but literals.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use sqlx::Row;

use super::events::kind;
use super::insights::{DayFlow, parse_day};
use super::row::Cols;
use super::{Result, Store, now, on_pool, start_of_day};

/// Days counted by one statement: three bound values a day stay far below either database's limit.
const DAYS_PER_STATEMENT: usize = 400;

/// One day of the window: its label and the half-open range `[from, until)` of times counted in it.
struct DayRange {
    day: NaiveDate,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
}

/// The UTC days from `since`'s to `today`'s, the first starting at `since` itself.
fn day_ranges(since: DateTime<Utc>, today: DateTime<Utc>) -> Vec<DayRange> {
    let mut out = Vec::new();
    let mut midnight = start_of_day(since);
    while midnight <= today {
        let until = midnight + Duration::days(1);
        out.push(DayRange { day: midnight.date_naive(), from: midnight.max(since), until });
        midnight = until;
    }
    out
}

/// The statement for `n` days: a table of the days from bound values, then per day one count of each
/// kind from the index. Each run completes or is abandoned once a day in the figures, however often
/// it came back.
fn statement(n: usize) -> String {
    let rows: Vec<String> =
        (0..n).map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3)).collect();
    let count = |what: &str, kind: &str, to: Option<&str>| {
        let to = to.map_or_else(String::new, |s| format!(" AND e.to_state = '{s}'"));
        format!(
            "(SELECT {what} FROM executor_events e WHERE e.kind = '{kind}' \
               AND e.at >= d.from_at AND e.at < d.until_at{to})"
        )
    };
    format!(
        "WITH d (day, from_at, until_at) AS (VALUES {}) \
         SELECT d.day AS day, {} AS intake, {} AS skipped, {} AS approved, {} AS completed, {} AS abandoned \
         FROM d",
        rows.join(", "),
        count("count(*)", kind::TASK_ADDED, None),
        count("count(*)", kind::QUEUE_STATUS, Some("skip")),
        count("count(*)", kind::QUEUE_STATUS, Some("approved")),
        count("count(DISTINCT e.run_id)", kind::RUN_STATE, Some("complete")),
        count("count(DISTINCT e.run_id)", kind::RUN_STATE, Some("abandoned")),
    )
}

impl Store {
    /// Tasks in and out per UTC day from `since` to today, oldest day first; days with no event are
    /// absent (the figures fill them in as zeros).
    pub async fn day_flows(&self, since: DateTime<Utc>) -> Result<Vec<DayFlow>> {
        let ranges = day_ranges(since, now());
        let mut flows = Vec::new();
        for chunk in ranges.chunks(DAYS_PER_STATEMENT) {
            let sql = statement(chunk.len());
            let rows = on_pool!(self, |p| {
                let mut q = sqlx::query(&sql);
                for r in chunk {
                    q = q.bind(r.day.format("%Y-%m-%d").to_string()).bind(r.from).bind(r.until);
                }
                q.fetch_all(p)
                    .await?
                    .iter()
                    .map(|r| {
                        Ok(DayFlow {
                            day: parse_day(&r.req_text("day")?)?,
                            intake: r.try_get("intake")?,
                            skipped: r.try_get("skipped")?,
                            approved: r.try_get("approved")?,
                            completed: r.try_get("completed")?,
                            abandoned: r.try_get("abandoned")?,
                        })
                    })
                    .collect::<Result<Vec<DayFlow>>>()?
            });
            flows.extend(
                rows.into_iter()
                    .filter(|f| f.intake + f.skipped + f.approved + f.completed + f.abandoned > 0),
            );
        }
        Ok(flows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_day_starts_at_since_and_every_day_ends_at_the_next_midnight() {
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let ranges = day_ranges(at("2026-11-01T08:30:00Z"), at("2026-11-03T00:00:00Z"));
        let shown: Vec<_> = ranges.iter().map(|r| (r.day.to_string(), r.from, r.until)).collect();
        assert_eq!(
            shown,
            [
                ("2026-11-01".into(), at("2026-11-01T08:30:00Z"), at("2026-11-02T00:00:00Z")),
                ("2026-11-02".into(), at("2026-11-02T00:00:00Z"), at("2026-11-03T00:00:00Z")),
                ("2026-11-03".into(), at("2026-11-03T00:00:00Z"), at("2026-11-04T00:00:00Z")),
            ]
        );
        assert!(day_ranges(at("2026-11-04T00:00:00Z"), at("2026-11-03T00:00:00Z")).is_empty());
        assert!(statement(2).contains("VALUES ($1, $2, $3), ($4, $5, $6)"));
    }
}

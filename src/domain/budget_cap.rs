//! Which dollar cap stopped a run. Stored as such on the run (`executor_runs.budget_stopped`: 0 none,
//! 1 the run's, 2 the day's), so a page offers what can help — Resume for a run's cap, a higher cap or
//! the next UTC day for the day's — without reading it back from the words of a decision.

use chrono::{DateTime, Days, Utc};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetCap {
    /// `budget.per_run_usd`: a human's resume gives the run a fresh allowance.
    Run,
    /// `budget.per_day_usd`: shared by every run, it goes on only when the day turns or the cap is raised.
    Day,
}

super::named_enum!(BudgetCap, "budget cap", {
    Run => "run",
    Day => "day",
});

impl BudgetCap {
    /// The column's value (0 is "not stopped").
    pub fn stored(self) -> i64 {
        match self {
            BudgetCap::Run => 1,
            BudgetCap::Day => 2,
        }
    }

    /// The cap a stored value names. A stop recorded before the day's had a value of its own (1 for
    /// either) reads as the run's until the runner's next look at the caps records which.
    pub fn from_stored(v: i64) -> Option<Self> {
        match v {
            0 => None,
            2 => Some(BudgetCap::Day),
            _ => Some(BudgetCap::Run),
        }
    }

    /// The config key that sets this cap.
    pub fn key(self) -> &'static str {
        match self {
            BudgetCap::Run => "budget.per_run_usd",
            BudgetCap::Day => "budget.per_day_usd",
        }
    }
}

/// When the daily cap starts afresh after `now`: the next midnight, UTC.
pub fn next_budget_day(now: DateTime<Utc>) -> DateTime<Utc> {
    let today = now.date_naive();
    let next = today.checked_add_days(Days::new(1)).unwrap_or(today);
    next.and_hms_opt(0, 0, 0).map(|d| d.and_utc()).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_round_trips_through_its_stored_value_and_the_day_turns_at_utc_midnight() {
        for c in BudgetCap::ALL {
            assert_eq!(BudgetCap::from_stored(c.stored()), Some(*c));
        }
        assert_eq!(BudgetCap::from_stored(0), None);
        let now = "2026-12-04T20:15:00Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(next_budget_day(now).to_rfc3339(), "2026-12-05T00:00:00+00:00");
    }
}

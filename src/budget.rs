//! What is left of the dollar caps (`budget.per_run_usd`, `budget.per_day_usd`), summed from what the
//! agents reported. The runner and the analyzer's triage give an agent no more than this.

use chrono::{DateTime, Utc};

use crate::config::{Budget, Config};
use crate::domain::{BudgetCap, Run, next_budget_day};
use crate::store::{Store, StoreError, start_of_day};

/// The least a worker is ever started with, whatever `budget.min_launch_usd` says: agent CLIs refuse a
/// cap that rounds to zero.
pub const MIN_WORKER_BUDGET_USD: f64 = 0.0001;

/// Which cap leaves too little for a worker to start.
pub type Exhausted = BudgetCap;

/// A cap that leaves too little for a worker, with the amounts that say by how much: what a decision
/// tells the human (the cap itself is stored on the run, as a [`BudgetCap`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BudgetStop {
    pub cap: BudgetCap,
    /// The cap, in dollars.
    pub limit: f64,
    /// Spent under it: by the run since its last resume, or by every worker today (UTC).
    pub spent: f64,
    /// The least a worker is started with under this cap (`budget.min_launch_usd`, see [`too_little`]).
    pub min_launch: f64,
}

impl BudgetStop {
    /// Which cap, by how much, and what lets the run go on, e.g. "Run 7 has spent $0.96 of its $1.00
    /// budget (budget.per_run_usd): $0.04 left is below the $0.05 minimum launch (budget.min_launch_usd);
    /// no worker starts until …".
    pub fn describe(&self, run_id: i64, now: DateTime<Utc>) -> String {
        let (spent, limit, key) = (usd(self.spent), usd(self.limit), self.cap.key());
        let left = self.limit - self.spent;
        let short = if left <= 0.0 {
            format!("${} over", usd(-left))
        } else {
            format!(
                "${} left is below the ${} minimum launch (budget.min_launch_usd)",
                usd(left),
                usd(self.min_launch)
            )
        };
        match self.cap {
            BudgetCap::Run => format!(
                "Run {run_id} has spent ${spent} of its ${limit} budget ({key}): {short}; no worker starts until {key} is raised or `executor runs resume {run_id}`."
            ),
            BudgetCap::Day => format!(
                "Workers have spent ${spent} today of the ${limit} daily budget ({key}): {short}; no worker starts until the day turns at {} or {key} is raised (resuming the run does not help).",
                next_budget_day(now).format("%Y-%m-%d %H:%M UTC")
            ),
        }
    }
}

/// Dollars to the cent, or to a hundredth of a cent when a cent would hide them ($0.005 left).
fn usd(x: f64) -> String {
    let cents = format!("{x:.2}");
    if (x - cents.parse::<f64>().unwrap_or(x)).abs() < 1e-9 { cents } else { format!("{x:.4}") }
}

/// The cap (the run's first) that leaves too little for a worker, with its amounts, given what the run
/// has spent since its last resume and what every worker has spent today.
pub fn budget_stop(b: &Budget, run_spent: f64, day_spent: f64) -> Option<BudgetStop> {
    let cap = exhausted(b, b.per_run_usd - run_spent, b.per_day_usd - day_spent)?;
    let (limit, spent) = match cap {
        BudgetCap::Run => (b.per_run_usd, run_spent),
        BudgetCap::Day => (b.per_day_usd, day_spent),
    };
    Some(BudgetStop { cap, limit, spent, min_launch: launch_floor(b, limit) })
}

/// The least a worker is started with under a cap of `cap` dollars.
fn launch_floor(b: &Budget, cap: f64) -> f64 {
    b.min_launch_usd.min(cap).max(MIN_WORKER_BUDGET_USD)
}

/// Whether `left` of a cap of `cap` dollars is too little to start a worker with: less than
/// `budget.min_launch_usd` (an agent given less spends it on one message and does nothing), unless the
/// cap itself is smaller, so a cap below the minimum still lets its first worker start.
pub fn too_little(b: &Budget, cap: f64, left: f64) -> bool {
    left < launch_floor(b, cap)
}

/// The cap (the run's first) that leaves too little for a worker, given what is left of each.
pub fn exhausted(b: &Budget, run_left: f64, day_left: f64) -> Option<Exhausted> {
    if too_little(b, b.per_run_usd, run_left) {
        Some(Exhausted::Run)
    } else if too_little(b, b.per_day_usd, day_left) {
        Some(Exhausted::Day)
    } else {
        None
    }
}

/// Dollars a new worker may spend: what is left of the day's cap and, for a run, of the run's.
pub async fn budget_left(config: &Config, store: &Store, run: Option<&Run>) -> Result<f64, StoreError> {
    let b = &config.budget;
    let today = store.spent_since(start_of_day(Utc::now())).await?;
    let run_cost = match run {
        Some(r) => r.cost_usd - store.run_memory(r.id).await?.budget_base_usd,
        None => 0.0,
    };
    Ok((b.per_run_usd - run_cost).min(b.per_day_usd - today).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remainder_below_the_minimum_is_a_stop_but_a_small_cap_still_starts() {
        let b = Budget { per_run_usd: 1.0, per_day_usd: 50.0, min_launch_usd: 0.05 };
        assert_eq!(exhausted(&b, 0.005, 10.0), Some(Exhausted::Run));
        assert_eq!(exhausted(&b, 0.05, 10.0), None);
        assert_eq!(exhausted(&b, 0.5, 0.01), Some(Exhausted::Day));
        let small = Budget { per_run_usd: 0.01, ..b.clone() };
        assert_eq!(exhausted(&small, 0.01, 10.0), None, "a fresh run under a cap below the minimum");
        assert_eq!(exhausted(&small, 0.0025, 10.0), Some(Exhausted::Run));
        let none = Budget { min_launch_usd: 0.0, ..b };
        assert_eq!(exhausted(&none, 0.00001, 10.0), Some(Exhausted::Run), "never below what a CLI takes");
    }

    /// Issue 35, item 5: the stop says which cap and by how much, and a remainder under the minimum
    /// launch says so.
    #[test]
    fn a_stop_says_which_cap_and_by_how_much() {
        let b = Budget { per_run_usd: 1.0, per_day_usd: 50.0, min_launch_usd: 0.05 };
        let now = "2026-12-04T20:15:00Z".parse::<DateTime<Utc>>().unwrap();
        let run = budget_stop(&b, 0.96, 3.0).unwrap();
        assert_eq!(run.cap, BudgetCap::Run);
        let said = run.describe(7, now);
        assert!(said.contains("$0.04 left is below the $0.05 minimum launch"), "{said}");
        assert!(said.contains("$0.96 of its $1.00 budget (budget.per_run_usd)"), "{said}");
        assert!(said.contains("`executor runs resume 7`"), "{said}");
        let over = budget_stop(&b, 1.2345, 3.0).unwrap().describe(7, now);
        assert!(over.contains("$0.2345 over"), "{over}");
        let day = budget_stop(&b, 0.1, 49.96).unwrap();
        assert_eq!((day.cap, day.limit, day.spent), (BudgetCap::Day, 50.0, 49.96));
        let said = day.describe(7, now);
        assert!(said.contains("$0.04 left is below the $0.05 minimum launch"), "{said}");
        assert!(
            said.contains("until the day turns at 2026-12-05 00:00 UTC or budget.per_day_usd is raised"),
            "{said}"
        );
        assert!(!said.contains("executor runs resume"), "{said}");
        assert_eq!(budget_stop(&b, 0.5, 10.0), None);
    }
}

//! What is left of the dollar caps (`budget.per_run_usd`, `budget.per_day_usd`), summed from what the
//! agents reported. The runner and the analyzer's triage give an agent no more than this.

use chrono::Utc;

use crate::config::{Budget, Config};
use crate::domain::Run;
use crate::store::{Store, StoreError, start_of_day};

/// The least a worker is ever started with, whatever `budget.min_launch_usd` says: agent CLIs refuse a
/// cap that rounds to zero.
pub const MIN_WORKER_BUDGET_USD: f64 = 0.0001;

/// Which cap leaves too little for a worker to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    Run,
    Day,
}

/// Whether `left` of a cap of `cap` dollars is too little to start a worker with: less than
/// `budget.min_launch_usd` (an agent given less spends it on one message and does nothing), unless the
/// cap itself is smaller, so a cap below the minimum still lets its first worker start.
pub fn too_little(b: &Budget, cap: f64, left: f64) -> bool {
    left < b.min_launch_usd.min(cap).max(MIN_WORKER_BUDGET_USD)
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
}

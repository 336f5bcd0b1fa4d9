//! What is left of the dollar caps (`budget.per_run_usd`, `budget.per_day_usd`), summed from what the
//! agents reported. The runner and the analyzer's triage give an agent no more than this.

use chrono::Utc;

use crate::config::Config;
use crate::domain::Run;
use crate::store::{Store, StoreError, start_of_day};

/// The least a worker is started with: below it (a tenth of a cent) the remaining budget counts as
/// spent. Agent CLIs refuse a cap that rounds to zero.
pub const MIN_WORKER_BUDGET_USD: f64 = 0.0001;

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

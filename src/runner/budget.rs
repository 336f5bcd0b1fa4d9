//! Dollar caps, summed from what the agents report: per run (`budget.per_run_usd`) and per UTC day
//! (`budget.per_day_usd`). A run over a cap starts no worker until a human raises the cap.

use chrono::Utc;

use super::decision::{Notice, NoticeKind};
use super::engine::{Runner, RunnerError};
use crate::config::Config;
use crate::domain::Run;
use crate::store::{RunMemory, Store, StoreError, start_of_day};

/// The least a worker is started with: below it (a tenth of a cent) the remaining budget counts as
/// spent. Agent CLIs refuse a cap that rounds to zero.
pub const MIN_WORKER_BUDGET_USD: f64 = 0.0001;

impl Runner {
    /// Why a worker must not start for this run now, if a cap says so (and tells the human, once).
    pub(super) async fn budget_block(
        &self,
        run: &Run,
        memory: &RunMemory,
    ) -> Result<Option<String>, RunnerError> {
        let b = &self.config.budget;
        let now = Utc::now();
        let spent_today = self.store.spent_since(start_of_day(now)).await?;
        let run_spent = run.cost_usd - memory.budget_base_usd;
        // A remainder too small for an agent to be given is no budget at all: the human is told, rather
        // than an agent started with nothing (which the CLI refuses, and which would count as a crash).
        let (why, key) = if b.per_run_usd - run_spent < MIN_WORKER_BUDGET_USD {
            (
                format!(
                    "Run {} has spent ${run_spent:.4} of its ${} budget; no worker starts until budget.per_run_usd is raised or `executor runs resume {}`.",
                    run.id, b.per_run_usd, run.id
                ),
                format!("budget_run:{}:{}", b.per_run_usd, memory.budget_base_usd),
            )
        } else if b.per_day_usd - spent_today < MIN_WORKER_BUDGET_USD {
            (
                format!(
                    "Workers have spent ${spent_today:.4} today of the ${} daily budget; no worker starts until tomorrow (UTC) or until budget.per_day_usd is raised.",
                    b.per_day_usd
                ),
                format!("budget_day:{}:{}", now.date_naive(), b.per_day_usd),
            )
        } else {
            if memory.budget_stopped {
                self.store.set_budget_stopped(run.id, Some(&self.owner), false).await?;
            }
            return Ok(None);
        };
        if !memory.budget_stopped {
            self.store.set_budget_stopped(run.id, Some(&self.owner), true).await?;
        }
        self.notify(run, &Notice { kind: NoticeKind::NeedsHuman, key, text: why.clone() }).await?;
        Ok(Some(why))
    }

    /// Dollars a new worker of this run may spend: what is left of the run's and the day's caps.
    pub(super) async fn budget_left(&self, run: &Run) -> Result<f64, RunnerError> {
        Ok(budget_left(&self.config, &self.store, Some(run)).await?)
    }
}

/// Dollars a new worker may spend: what is left of the day's cap and, for a run, of the run's.
pub(crate) async fn budget_left(
    config: &Config,
    store: &Store,
    run: Option<&Run>,
) -> Result<f64, StoreError> {
    let b = &config.budget;
    let today = store.spent_since(start_of_day(Utc::now())).await?;
    let run_cost = match run {
        Some(r) => r.cost_usd - store.run_memory(r.id).await?.budget_base_usd,
        None => 0.0,
    };
    Ok((b.per_run_usd - run_cost).min(b.per_day_usd - today).max(0.0))
}

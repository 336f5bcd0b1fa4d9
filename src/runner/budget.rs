//! Dollar caps, summed from what the agents report: per run (`budget.per_run_usd`) and per UTC day
//! (`budget.per_day_usd`). A run over a cap starts no worker until a human raises the cap (or resumes
//! the run, for its own cap; or the day turns, for the day's).

use chrono::Utc;

use super::decision::{Notice, NoticeKind};
use super::state::{Runner, RunnerError};
use crate::budget::{BudgetStop, budget_left, budget_stop};
use crate::domain::{BudgetCap, Run};
use crate::store::{RunMemory, start_of_day};

impl Runner {
    /// The cap that keeps a worker from starting for this run now, if one does: recorded on the run
    /// (which cap, so pages offer what helps) and told to the human once. Asked only when a worker would
    /// otherwise start, slot or not, so a budget stop is never explained as a wait for a slot.
    pub(super) async fn budget_block(
        &self,
        run: &Run,
        memory: &RunMemory,
    ) -> Result<Option<BudgetStop>, RunnerError> {
        let b = &self.config.budget;
        let now = Utc::now();
        let spent_today = self.store.spent_since(start_of_day(now)).await?;
        let run_spent = run.cost_usd - memory.budget_base_usd;
        // A remainder too small to do anything with (`budget.min_launch_usd`) is no budget at all: the
        // human is told, rather than an agent started to spend it on one message and stop.
        let stop = budget_stop(b, run_spent, spent_today);
        let cap = stop.as_ref().map(|s| s.cap);
        if memory.budget_cap != cap {
            self.store.set_budget_stop(run.id, Some(&self.owner), cap).await?;
        }
        let Some(stop) = stop else { return Ok(None) };
        let key = match stop.cap {
            BudgetCap::Run => format!("budget_run:{}:{}", b.per_run_usd, memory.budget_base_usd),
            BudgetCap::Day => format!("budget_day:{}:{}", now.date_naive(), b.per_day_usd),
        };
        let text = stop.describe(run.id, now);
        self.notify(run, &Notice { kind: NoticeKind::NeedsHuman, key, text }).await?;
        Ok(Some(stop))
    }

    /// Dollars a new worker of this run may spend: what is left of the run's and the day's caps.
    pub(super) async fn budget_left(&self, run: &Run) -> Result<f64, RunnerError> {
        Ok(budget_left(&self.config, &self.store, Some(run)).await?)
    }
}

//! Dollar caps, summed from what the agents report: per run (`budget.per_run_usd`) and per UTC day
//! (`budget.per_day_usd`). A run over a cap starts no worker until a human raises the cap.

use chrono::Utc;

use super::decision::{Notice, NoticeKind};
use super::state::{Runner, RunnerError};
use crate::budget::{Exhausted, budget_left, exhausted};
use crate::domain::Run;
use crate::store::{RunMemory, start_of_day};

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
        // A remainder too small to do anything with (`budget.min_launch_usd`) is no budget at all: the
        // human is told, rather than an agent started to spend it on one message and stop.
        let stop = exhausted(b, b.per_run_usd - run_spent, b.per_day_usd - spent_today);
        let (why, key) = if stop == Some(Exhausted::Run) {
            (
                format!(
                    "Run {} has spent ${run_spent:.4} of its ${} budget; no worker starts until budget.per_run_usd is raised or `executor runs resume {}`.",
                    run.id, b.per_run_usd, run.id
                ),
                format!("budget_run:{}:{}", b.per_run_usd, memory.budget_base_usd),
            )
        } else if stop == Some(Exhausted::Day) {
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

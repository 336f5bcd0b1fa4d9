//! What a run waits for from a person, gathered for the decision: where its plan stands (a `queued` run
//! whose task needs one approved before code), the question a worker asked that nobody has answered,
//! and which workers handed something to a person (a plan, a question): those did their job, whatever
//! the branch shows. A trusted author's comment on the pull request after a question was asked answers
//! it, like an answer given on the page or the command line, and so does a comment in the task's tracker
//! by one of its source's `answerers`.

use chrono::SubsecRound;

use crate::config::Repo;
use crate::domain::{Actor, AnswerVia, By, PlanMode, PlanStatus, Run, RunState};
use crate::forge::PrSnapshot;
use crate::runner::decision::{OpenQuestion, PlanStage};
use crate::runner::state::{Runner, RunnerError};

/// How much of a question a notice and a decision quote.
const QUESTION_IN_NOTICE: usize = 2000;

/// Where a run's plan stands, its open question, and the sessions that handed a person something.
pub(super) type Asks = (Option<PlanStage>, Option<OpenQuestion>, Vec<i64>);

impl Runner {
    pub(super) async fn asks(
        &self,
        run: &Run,
        repo: &Repo,
        pr: Option<&PrSnapshot>,
    ) -> Result<Asks, RunnerError> {
        let plans = self.store.plans(run.id).await?;
        let mut handed: Vec<i64> = plans.iter().map(|p| p.session_id).collect();
        let plan = if run.state == RunState::Queued {
            let mode = self.store.task_plan_mode(&run.task_gid).await?.unwrap_or(repo.plan);
            (mode == PlanMode::Required).then(|| match plans.last() {
                None => PlanStage::None,
                Some(p) => match p.status {
                    PlanStatus::AwaitingApproval => PlanStage::Awaiting { id: p.id, revision: p.revision },
                    PlanStatus::ChangesRequested => PlanStage::ChangesRequested { revision: p.revision },
                    PlanStatus::Approved => PlanStage::Approved,
                },
            })
        } else {
            None
        };
        let questions = self.store.questions(run.id).await?;
        handed.extend(questions.iter().map(|q| q.session_id));
        let Some(open) = questions.into_iter().rev().find(|q| q.answered_at.is_none()) else {
            return Ok((plan, None, handed));
        };
        // GitHub stamps comments in whole seconds: a comment in the second the question was asked counts.
        let asked = open.asked_at.trunc_subsecs(0);
        let answer = pr.and_then(|pr| {
            pr.comments.iter().find(|c| c.created_at >= asked && c.is_by_trusted_human(&repo.trust()))
        });
        if let Some(c) = answer {
            let by = c.author.as_str();
            self.store
                .answer_question(run.id, &c.body, AnswerVia::Forge, By::person(Actor::Runner, by))
                .await?;
            return Ok((plan, None, handed));
        }
        if let Some(a) = self.tracker_answer(run, open.asked_at).await? {
            self.store
                .answer_question(run.id, &a.text, AnswerVia::Tracker, By::person(Actor::Runner, &a.by))
                .await?;
            return Ok((plan, None, handed));
        }
        let text = crate::domain::shown(&open.question, QUESTION_IN_NOTICE).into_owned();
        Ok((plan, Some(OpenQuestion { id: open.id, asked_at: open.asked_at, text }), handed))
    }

    /// An answer in the task's tracker (a comment by one of its source's `answerers`). A tracker that
    /// fails is passed over: the run waits on, and the next tick asks again.
    async fn tracker_answer(
        &self,
        run: &Run,
        asked_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<crate::writeback::TrackerAnswer>, RunnerError> {
        let task = self.store.task(&run.task_gid).await?;
        match self.outbox.tracker_answer(&task, asked_at).await {
            Ok(answer) => Ok(answer),
            Err(e) => {
                tracing::warn!(run = run.id, task = %run.task_gid, "reading the tracker for an answer: {e}");
                Ok(None)
            }
        }
    }
}

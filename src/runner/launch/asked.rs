//! What a person said that a worker's prompt carries: the plan they approved (or sent back, with what to
//! change, for the `plan` worker that rewrites it) and the answers to questions the run's workers asked.

use crate::domain::{PlanStatus, WorkerKind};
use crate::store::{RunPlan, RunQuestion, Store, StoreError};
use crate::worker::prompt::AnsweredQuestion;

/// A person's words for a worker's prompt, all fenced there as data.
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked {
    pub plan: Option<String>,
    pub plan_feedback: Option<String>,
    pub answers: Vec<AnsweredQuestion>,
}

/// What a worker of `kind` is told: a `plan` worker rewriting a plan gets the one sent back and the
/// feedback; every other worker the approved plan, if any. Every worker gets the answers so far.
pub(crate) fn asked_of(kind: WorkerKind, plans: &[RunPlan], questions: &[RunQuestion]) -> Asked {
    let (plan, plan_feedback) = match kind {
        WorkerKind::Plan => match plans.last().filter(|p| p.status == PlanStatus::ChangesRequested) {
            Some(p) => (Some(p.body.clone()), p.feedback.clone()),
            None => (None, None),
        },
        _ => (plans.iter().rev().find(|p| p.status == PlanStatus::Approved).map(|p| p.body.clone()), None),
    };
    let answers = questions
        .iter()
        .filter_map(|q| {
            Some(AnsweredQuestion {
                question: q.question.clone(),
                answer: q.answer.clone()?,
                by: q.answered_by.clone().or(q.answered_via.map(|v| v.to_string())).unwrap_or_default(),
            })
        })
        .collect();
    Asked { plan, plan_feedback, answers }
}

/// [`asked_of`] for a run, read from the store.
pub(crate) async fn asked_for(store: &Store, run_id: i64, kind: WorkerKind) -> Result<Asked, StoreError> {
    Ok(asked_of(kind, &store.plans(run_id).await?, &store.questions(run_id).await?))
}

//! The two ways a run waits on a person's word: a plan written before any code, approved or sent back
//! with what should change; and a question a worker asked instead of guessing, answered once. Each is
//! recorded once per worker session (a worker collected twice records nothing new), and each human act
//! is one conditional update with its event: two people answering at once, one answer stands.

use chrono::{DateTime, Utc};

use super::events::{NewEvent, kind, update_one_with_event};
use super::row::Cols;
use super::{Result, Store, StoreError, now, on_pool};
use crate::domain::{AnswerVia, By, PlanMode, PlanStatus, Run, TaskGid, WorkerKind};

/// One revision of a run's plan.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunPlan {
    pub id: i64,
    pub run_id: i64,
    pub session_id: i64,
    /// 1 for the first plan, one more for each rewrite after changes were requested.
    pub revision: i64,
    /// Markdown, redacted.
    pub body: String,
    pub created_at: DateTime<Utc>,
    pub status: PlanStatus,
    /// Who approved it or sent it back: the actor (`cli`, `web`) and, where known, the person.
    pub decided_actor: Option<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub feedback: Option<String>,
}

/// A person's word on the plan that waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanVerdict {
    Approve,
    /// Send it back: a `plan` worker writes the next revision with this in its prompt.
    RequestChanges(String),
}

/// A question a worker ended with, and its answer once someone gave one.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunQuestion {
    pub id: i64,
    pub run_id: i64,
    pub session_id: i64,
    pub worker_kind: WorkerKind,
    pub question: String,
    pub asked_at: DateTime<Utc>,
    pub answer: Option<String>,
    pub answered_via: Option<AnswerVia>,
    pub answered_by: Option<String>,
    pub answered_at: Option<DateTime<Utc>>,
}

const PLAN_COLUMNS: &str = "id, run_id, session_id, revision, body, created_at, status, decided_actor, decided_by, decided_at, feedback";
const QUESTION_COLUMNS: &str =
    "id, run_id, session_id, worker_kind, question, asked_at, answer, answered_via, answered_by, answered_at";

fn parsed<T: std::str::FromStr<Err = crate::domain::UnknownName>>(raw: String) -> Result<T> {
    raw.parse().map_err(|e: crate::domain::UnknownName| StoreError::Corrupt(e.to_string()))
}

fn plan_from_row(r: &impl Cols) -> Result<RunPlan> {
    Ok(RunPlan {
        id: r.req_int("id")?,
        run_id: r.req_int("run_id")?,
        session_id: r.req_int("session_id")?,
        revision: r.req_int("revision")?,
        body: r.req_text("body")?,
        created_at: r.req_time("created_at")?,
        status: parsed(r.req_text("status")?)?,
        decided_actor: r.text("decided_actor")?,
        decided_by: r.text("decided_by")?,
        decided_at: r.time("decided_at")?,
        feedback: r.text("feedback")?,
    })
}

fn question_from_row(r: &impl Cols) -> Result<RunQuestion> {
    Ok(RunQuestion {
        id: r.req_int("id")?,
        run_id: r.req_int("run_id")?,
        session_id: r.req_int("session_id")?,
        worker_kind: parsed(r.req_text("worker_kind")?)?,
        question: r.req_text("question")?,
        asked_at: r.req_time("asked_at")?,
        answer: r.text("answer")?,
        answered_via: r.text("answered_via")?.map(parsed).transpose()?,
        answered_by: r.text("answered_by")?,
        answered_at: r.time("answered_at")?,
    })
}

/// The history's line for a person's word on a run: who (`by`, where known) said what.
fn person_said<'a>(by: By<'a>, run: &'a Run, reason: &'a str) -> NewEvent<'a> {
    NewEvent {
        actor: by.actor,
        actor_id: by.name,
        task_gid: Some(run.task_gid.as_str()),
        run_id: Some(run.id),
        kind: kind::NOTE,
        from_state: None,
        to_state: None,
        reason: Some(reason),
    }
}

impl Store {
    /// Records the plan a `plan` worker wrote as the run's next revision, awaiting approval. Once per
    /// session.
    pub async fn record_plan(&self, run_id: i64, session_id: i64, body: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_run_plans (run_id, session_id, revision, body, created_at, status) \
                 SELECT $1, $2, COALESCE(max(revision), 0) + 1, $3, $4, $5 FROM executor_run_plans \
                 WHERE run_id = $1 ON CONFLICT (session_id) DO NOTHING",
            )
            .bind(run_id)
            .bind(session_id)
            .bind(self.scrub.apply(body))
            .bind(now())
            .bind(PlanStatus::AwaitingApproval.as_str())
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// The run's plans, first revision first.
    pub async fn plans(&self, run_id: i64) -> Result<Vec<RunPlan>> {
        let sql =
            format!("SELECT {PLAN_COLUMNS} FROM executor_run_plans WHERE run_id = $1 ORDER BY revision");
        on_pool!(self, |p| {
            sqlx::query(&sql).bind(run_id).fetch_all(p).await?.iter().map(plan_from_row).collect()
        })
    }

    /// The run's newest plan: the one that counts.
    pub async fn latest_plan(&self, run_id: i64) -> Result<Option<RunPlan>> {
        Ok(self.plans(run_id).await?.pop())
    }

    /// A person approves the run's waiting plan, or sends it back. Refused when no plan waits (none
    /// written yet, or someone decided first), naming what the plan's state is.
    pub async fn decide_plan(
        &self,
        run_id: i64,
        verdict: &PlanVerdict,
        by: impl Into<By<'_>>,
    ) -> Result<RunPlan> {
        let by = by.into();
        let run = self.run(run_id).await?;
        let Some(plan) = self.latest_plan(run_id).await? else {
            return Err(StoreError::Refused(format!("run {run_id} has no plan yet; nothing to approve")));
        };
        if plan.status != PlanStatus::AwaitingApproval {
            return Err(StoreError::Refused(format!(
                "plan revision {} of run {run_id} is {} already, not awaiting approval",
                plan.revision, plan.status
            )));
        }
        let (status, feedback, said) = match verdict {
            PlanVerdict::Approve => (PlanStatus::Approved, None, "approved".to_string()),
            PlanVerdict::RequestChanges(f) => {
                (PlanStatus::ChangesRequested, Some(self.scrub.apply(f)), "sent back for changes".to_string())
            }
        };
        let reason = format!("plan revision {} {said}", plan.revision);
        let ev = person_said(by, &run, &reason);
        let changed = update_one_with_event!(
            self,
            ev,
            "UPDATE executor_run_plans SET status = $1, decided_actor = $2, decided_by = $3, decided_at = $4, \
               feedback = $5 WHERE id = $6 AND status = $7",
            status.as_str(),
            by.actor.as_str(),
            by.name,
            now(),
            feedback.as_deref(),
            plan.id,
            PlanStatus::AwaitingApproval.as_str(),
        );
        if !changed {
            return Err(StoreError::Conflict(format!("plan revision {} of run {run_id}", plan.revision)));
        }
        Ok(self.latest_plan(run_id).await?.unwrap_or(plan))
    }

    /// A task's own plan setting (`None`: the repository's).
    pub async fn set_task_plan_mode(
        &self,
        gid: &TaskGid,
        mode: Option<PlanMode>,
        by: impl Into<crate::domain::By<'_>>,
    ) -> Result<()> {
        self.task(gid).await?;
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_queue SET plan_mode = $1 WHERE task_gid = $2")
                .bind(mode.map(PlanMode::as_str))
                .bind(gid.as_str())
                .execute(p)
                .await?;
        });
        let said = mode.map_or("follows its repository".to_string(), |m| format!("is {m}"));
        self.record_note(by, Some(gid), None, &format!("the task's plan setting {said}")).await
    }

    /// A task's own plan setting, if it has one.
    pub async fn task_plan_mode(&self, gid: &TaskGid) -> Result<Option<PlanMode>> {
        let raw: Option<Option<String>> = on_pool!(self, |p| {
            sqlx::query_scalar("SELECT plan_mode FROM executor_queue WHERE task_gid = $1")
                .bind(gid.as_str())
                .fetch_optional(p)
                .await?
        });
        raw.flatten().map(parsed).transpose()
    }

    /// Records the question a worker ended with. Once per session.
    pub async fn ask_question(
        &self,
        run_id: i64,
        session_id: i64,
        kind: WorkerKind,
        question: &str,
    ) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_run_questions (run_id, session_id, worker_kind, question, asked_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (session_id) DO NOTHING",
            )
            .bind(run_id)
            .bind(session_id)
            .bind(kind.as_str())
            .bind(self.scrub.apply(question))
            .bind(now())
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// The run's questions, oldest first.
    pub async fn questions(&self, run_id: i64) -> Result<Vec<RunQuestion>> {
        let sql =
            format!("SELECT {QUESTION_COLUMNS} FROM executor_run_questions WHERE run_id = $1 ORDER BY id");
        on_pool!(self, |p| {
            sqlx::query(&sql).bind(run_id).fetch_all(p).await?.iter().map(question_from_row).collect()
        })
    }

    /// Answers the run's open question: the first answer stands. Refused when none is open.
    pub async fn answer_question(
        &self,
        run_id: i64,
        answer: &str,
        via: AnswerVia,
        by: impl Into<By<'_>>,
    ) -> Result<RunQuestion> {
        let by = by.into();
        let run = self.run(run_id).await?;
        let answer = answer.trim();
        if answer.is_empty() {
            return Err(StoreError::Refused(
                "an empty answer answers nothing; say what the agent should do".into(),
            ));
        }
        let open = self.questions(run_id).await?.into_iter().rev().find(|q| q.answered_at.is_none());
        let Some(question) = open else {
            return Err(StoreError::Refused(format!("run {run_id} has no open question")));
        };
        let who = by.name.map_or(String::new(), |b| format!(" by {b}"));
        let reason = format!("question {} answered{who} ({via})", question.id);
        let ev = person_said(by, &run, &reason);
        let changed = update_one_with_event!(
            self,
            ev,
            "UPDATE executor_run_questions SET answer = $1, answered_via = $2, answered_by = $3, answered_at = $4 \
             WHERE id = $5 AND answered_at IS NULL",
            self.scrub.apply(answer),
            via.as_str(),
            by.name,
            now(),
            question.id,
        );
        if !changed {
            return Err(StoreError::Refused(format!(
                "question {} of run {run_id} was answered already",
                question.id
            )));
        }
        let answered = self.questions(run_id).await?.into_iter().find(|q| q.id == question.id);
        answered.ok_or(StoreError::UnknownRun(run_id))
    }
}

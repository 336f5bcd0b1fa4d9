//! What `executor runs show --json` and `GET /api/v1/runs/{id}` both answer: one function, so the two
//! shapes cannot drift apart.

use serde_json::{Value, json};

use super::{EventFilter, Result, Store};

impl Store {
    /// A run with its memory (last decision, budget stop), its pull request as last observed (the
    /// forge-neutral snapshot, as stored, with its diff stat when the forge gave one), its cost so far,
    /// its newest review, its plans (first revision first) and its workers' questions, its workers,
    /// notices and history.
    pub async fn run_view(&self, id: i64) -> Result<Value> {
        let run = self.run(id).await?;
        let events = self.events(&EventFilter { run_id: Some(id), ..Default::default() }).await?;
        let memory = self.run_memory(id).await?;
        let pr: Option<Value> = memory.last_snapshot.as_deref().and_then(|j| serde_json::from_str(j).ok());
        let workers = self.worker_sessions(id).await?;
        let notices = self.notices(Some(id)).await?;
        let plans = self.plans(id).await?;
        let questions = self.questions(id).await?;
        // What the sessions spent, a live one's so far included (an imported run's cost came without).
        let spent: f64 = workers.iter().map(|w| w.cost_usd).sum();
        // The newest review with its findings, as its agent handed them back.
        let review = workers
            .iter()
            .rev()
            .find(|w| w.kind == crate::domain::WorkerKind::PrReview && w.verdict.is_some())
            .map(|w| {
                json!({
                    "session": w.id,
                    "verdict": w.verdict,
                    "head": w.start_sha,
                    "ended_at": w.ended_at,
                    "posted_at": w.review_posted_at,
                    "result": w.result_json.as_deref().and_then(|j| serde_json::from_str::<Value>(j).ok()),
                })
            });
        Ok(json!({
            "run": run,
            "last_decision": memory.last_decision,
            "last_decision_at": memory.last_decision_at,
            "budget_stopped": memory.budget_stopped,
            "budget_cap": memory.budget_cap,
            "pull_request": pr,
            "cost_so_far_usd": spent.max(run.cost_usd),
            "latest_review": review,
            "plans": plans,
            "questions": questions,
            "workers": workers,
            "notices": notices,
            "events": events,
        }))
    }
}

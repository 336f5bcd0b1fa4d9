//! After a crash: workers whose supervisor died are adopted when still running (checked by pid and
//! process start time, so a reused pid is never touched) or recorded as ended from their output.

use std::path::PathBuf;

use super::launch::thread_baseline;
use super::recording::{Recording, supervise_recorded};
use super::state::{Runner, RunnerError};
use crate::domain::{EndReason, Run};
use crate::store::{WorkerEnd, WorkerSession};
use crate::worker::{self, AdoptSpec, PromptKind, is_same_process};
use crate::worker::{agent_named, worker_timeouts};
use crate::workspace;

impl Runner {
    /// Supervises (or records the end of) a worker whose runner died; the caller holds its run.
    pub(super) async fn take_over(&mut self, s: WorkerSession) -> Result<(), RunnerError> {
        let (Some(pid), Some(output), Some(log)) = (s.pid, s.output_path.clone(), s.log_path.clone()) else {
            // The previous runner died before recording the process; the agent only runs once its
            // process is recorded (it waits behind a gate until then), so nothing ran.
            let end = WorkerEnd::new(EndReason::NeverStarted);
            self.store.end_worker_session(s.id, Some(&self.owner), &end).await?;
            return Ok(());
        };
        let run = self.store.run(s.run_id).await?;
        let spec = self.adopt_spec(&s, &run, pid, PathBuf::from(output), PathBuf::from(log)).await?;
        let start_time = spec.pid_start_time;
        // A review's verdict is recorded for the head its session started at, never the run's head now.
        let recording = Recording {
            store: self.store.clone(),
            session: s.id,
            run_id: run.id,
            kind: s.kind,
            holder: Some(self.owner.clone()),
            redactor: self.redactor.clone(),
        };
        if is_same_process(pid, start_time) {
            tracing::info!(run = run.id, pid, "adopting a worker left running by a previous runner");
            if let Some(fence) = &self.fence {
                fence.guard(pid);
            }
            self.spawn_supervised(recording, move |tx, stop| worker::adopt(spec, tx, stop));
        } else {
            tracing::info!(run = run.id, pid, "recording a worker that died with the previous runner");
            let _ = supervise_recorded(recording, |tx| worker::collect(spec, tx)).await;
        }
        Ok(())
    }

    /// How a worker's output is read when its supervisor is gone: the accounting and limits its own
    /// supervisor used.
    pub(super) async fn adopt_spec(
        &self,
        s: &WorkerSession,
        run: &Run,
        pid: i32,
        output_path: PathBuf,
        log_path: PathBuf,
    ) -> Result<AdoptSpec, RunnerError> {
        // Read back from the database: used (read, cut back, removed) only where executor keeps them.
        let output_path = workspace::path_under(&self.config.data_dir().join("workers"), &output_path)?;
        let log_path = workspace::path_under(&self.config.logs_dir(), &log_path)?;
        let sessions = self.store.worker_sessions(run.id).await?;
        let (agent, env) = (agent_named(&self.config, &s.agent), self.worker_env(run, s.kind));
        Ok(AdoptSpec {
            task_gid: run.task_gid.clone(),
            run_id: run.id,
            kind: PromptKind::Worker(s.kind),
            agent: agent.clone(),
            pid,
            pid_start_time: s.pid_start_time.and_then(|t| u64::try_from(t).ok()).unwrap_or(0),
            output_path,
            offset: u64::try_from(s.output_offset).unwrap_or(0),
            log_path,
            started_at: s.started_at,
            cost_cap_usd: Some(self.budget_left(run).await?),
            secrets: env.secret_values(),
            session_root: worker::session_root(&agent, &env),
            timeouts: worker_timeouts(&self.config),
            max_output_bytes: self.config.worker.max_output_bytes,
            pricing: self.config.pricing.clone(),
            usage_baseline: thread_baseline(&sessions, s.resumed_session.as_deref(), s.id),
        })
    }
}

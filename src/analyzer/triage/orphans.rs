//! Cleaning up after an analyzer that died mid-triage: its agents, its sessions, its scratch checkouts.

use std::path::Path;

use super::{Triager, scratch_path};
use crate::domain::EndReason;
use crate::store::{AnalysisEnd, AnalysisSession, StoreError};
use crate::worker::{is_same_process, process};
use crate::workspace;

/// See [`Triager::stop_orphans`].
pub(super) async fn stop_orphans(t: &Triager) -> Result<usize, StoreError> {
    // `t.host` is this analyzer's `HOST:PID`: the sessions of the same machine are looked at, and those
    // of another analyzer still at work (several data directories may share one database) are left.
    let machine = t.host.rsplit_once(':').map_or(t.host.as_str(), |(machine, _)| machine);
    let mut open = Vec::new();
    for s in t.store.open_analysis_sessions(machine).await? {
        if s.host != t.host && analyzer_alive(t, &s).await? {
            continue;
        }
        open.push(s);
    }
    for s in &open {
        let reason = stop_agent(s, t.config.worker.kill_grace.std()).await;
        let end = AnalysisEnd {
            reason: Some(reason),
            session_id: s.session_id.clone(),
            cost_usd: s.cost_usd,
            input_tokens: s.input_tokens,
            output_tokens: s.output_tokens,
            result_error: Some(format!(
                "the analyzer running this session died; ended by the next analyzer on {}: {}",
                t.host,
                reason.describe()
            )),
        };
        t.store.end_analysis_session(s.id, &end).await?;
        remove_leftovers(t, s).await;
        tracing::info!(session = s.id, task = %s.task_gid, "ended an orphaned analysis session ({reason})");
    }
    Ok(open.len())
}

/// Whether the analyzer that opened the session still works on it: its process is alive and still
/// holds an unexpired claim on the session's task (a reused pid holds no claim).
async fn analyzer_alive(t: &Triager, s: &AnalysisSession) -> Result<bool, StoreError> {
    let Some(pid) = s.host.rsplit_once(':').and_then(|(_, pid)| pid.parse::<i32>().ok()) else {
        return Ok(false);
    };
    if !process::is_alive(pid) {
        return Ok(false);
    }
    let task = t.store.find_task(&s.task_gid).await?;
    Ok(task.is_some_and(|task| {
        task.claim_owner.as_deref() == Some(s.host.as_str())
            && task.claim_expires_at.is_some_and(|at| at > chrono::Utc::now())
    }))
}

/// Stops the session's agent if it still runs (the very process recorded: pid and start time), and
/// says how the session ended.
async fn stop_agent(s: &AnalysisSession, grace: std::time::Duration) -> EndReason {
    let (Some(pid), Some(start)) = (s.pid, s.pid_start_time) else {
        // Its process was never recorded, so its gate never opened: the agent did not run.
        return EndReason::NeverStarted;
    };
    let start = u64::try_from(start).unwrap_or(0);
    if !is_same_process(pid, start) {
        return EndReason::Crashed;
    }
    // The agent, its group and everything it started (see `worker::stop_recorded`).
    crate::worker::stop_recorded(pid, start, None, grace).await;
    EndReason::Interrupted
}

/// The orphan's scratch checkout, and its raw output (which may hold secrets the agent printed; the
/// redacted work log stays).
async fn remove_leftovers(t: &Triager, s: &AnalysisSession) {
    let scratch = scratch_path(&t.config, &s.task_gid, s.id);
    if scratch.exists() {
        let repo = match t.store.find_task(&s.task_gid).await {
            Ok(Some(task)) => t
                .config
                .repo_for(task.repo.as_deref(), "")
                .ok()
                .map(|(_, r)| crate::config::expand_home(&r.path)),
            _ => None,
        };
        let removed = tokio::task::spawn_blocking(move || match repo {
            Some(repo) => workspace::remove_scratch(&repo, &scratch).map_err(|e| e.to_string()),
            // Its repository is not known any more: the directory goes; git prunes its record later.
            None => std::fs::remove_dir_all(&scratch).map_err(|e| e.to_string()),
        })
        .await;
        if let Ok(Err(e)) = removed {
            tracing::warn!(session = s.id, "removing an orphaned analysis checkout: {e}");
        }
    }
    if let Some(dir) = s.log_path.as_deref().and_then(|l| private_files(t, s, Path::new(l))) {
        let _ = tokio::fs::remove_dir_all(dir).await;
    }
}

/// `{data_dir}/workers/{gid}/{log stem}`: where `worker::start` put the session's prompt and raw output.
fn private_files(t: &Triager, s: &AnalysisSession, log: &Path) -> Option<std::path::PathBuf> {
    let stem = log.file_stem()?.to_str()?;
    (!stem.is_empty() && stem.starts_with("analyzer"))
        .then(|| t.config.data_dir().join("workers").join(s.task_gid.as_str()).join(stem))
}

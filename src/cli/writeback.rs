//! `executor writeback [GID]`: what the trackers were told — each message recorded for a task's
//! tracker (Asana, GitHub Issues), whether it was delivered, and why not.

use super::Context;
use super::output::{ago, json, short, table};
use crate::domain::Run;
use crate::store::now;

pub async fn list(ctx: &Context, gid: Option<&str>, as_json: bool) -> anyhow::Result<()> {
    let rows = ctx.store.writebacks(gid).await?;
    if as_json {
        return json(&rows);
    }
    if rows.is_empty() {
        say!("no write-back recorded{}", gid.map(|g| format!(" for task {g}")).unwrap_or_default());
        return Ok(());
    }
    let now = now();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|w| {
            let state = match (w.status.as_str(), &w.remote_id, &w.last_error) {
                ("delivered", Some(id), _) => format!("delivered ({id})"),
                ("pending", _, Some(e)) => {
                    format!("retried {}: {}", ago(w.next_attempt_at, now), short(e, 60))
                }
                (status, _, Some(e)) => format!("{status}: {}", short(e, 80)),
                (status, _, None) => status.to_string(),
            };
            vec![
                w.task_gid.clone(),
                w.source.clone(),
                w.event.to_string(),
                w.run_id.map(|r| r.to_string()).unwrap_or_default(),
                w.attempts.to_string(),
                ago(w.created_at, now),
                state,
            ]
        })
        .collect();
    table(&["GID", "SOURCE", "EVENT", "RUN", "TRIES", "RECORDED", "STATE"], &rows);
    Ok(())
}

/// Records, before `executor runs abandon` abandons `run` for `reason`, the message its tracker is owed.
pub async fn record_abandoned(ctx: &Context, run: &Run, reason: &str) -> anyhow::Result<()> {
    let outbox =
        crate::writeback::Outbox::new(std::sync::Arc::new(ctx.config.clone()), ctx.store.clone(), None);
    outbox.record_human_abandon(run, &crate::store::human_abandon_reason(reason)).await?;
    Ok(())
}

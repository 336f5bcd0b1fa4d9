//! `executor queue show`: every field of a task, its analysis, its run and its full history.

use chrono::{DateTime, Utc};

use super::super::Context;
use super::super::output::{ago, json, money, opt, print_events, short, table};
use crate::domain::{QueueStatus, SkippedBy, Task, TaskGid};
use crate::store::{AnalysisSession, EventFilter, RunFilter, now};

pub(super) async fn show(ctx: &Context, gid: &TaskGid, as_json: bool) -> anyhow::Result<()> {
    let task = ctx.store.task(gid).await?;
    let runs = ctx.store.list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let events = ctx.store.events(&EventFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let sessions = ctx.store.analysis_sessions(gid).await?;
    if as_json {
        return json(&serde_json::json!({
            "task": task, "runs": runs, "events": events, "analysis_sessions": sessions,
        }));
    }
    let now = now();
    let field = |name: &str, value: String| say!("{:<18}{value}", format!("{name}:"));
    field("gid", task.task_gid.to_string());
    field("status", task.status.to_string());
    if let Some(skipped) = skipped_by(&task) {
        field("skipped by", skipped);
    }
    field("source", opt(&task.source));
    field("repo", opt(&task.repo));
    field("added", format!("{} ({})", task.added_at.to_rfc3339(), ago(task.added_at, now)));
    field("updated", format!("{} ({})", task.updated_at.to_rfc3339(), ago(task.updated_at, now)));
    field("priority", opt(&task.priority));
    field("complexity", opt(&task.complexity));
    field("feasibility", opt(&task.feasibility));
    say!("\ndescription:\n{}", indent(task.description.as_deref().unwrap_or("-")));
    say!("\nnotes:\n{}", indent(task.notes.as_deref().unwrap_or("-")));
    if let Some(at) = task.revision_at {
        say!(
            "\nrevision received {} ({}), NOT approved — agents are told the text above; {}. The \
             revision:",
            at.to_rfc3339(),
            ago(at, now),
            super::super::output::revision_advice(gid, task.status)
        );
        let unchanged = "- (unchanged)";
        say!(
            "  description:\n{}",
            indent(&indent(task.revision_description.as_deref().unwrap_or(unchanged)))
        );
        say!("  notes:\n{}", indent(&indent(task.revision_notes.as_deref().unwrap_or(unchanged))));
    }
    print_analysis(&task, &sessions, ctx.config.analyzer.max_attempts, now);
    say!("\nruns:");
    if runs.is_empty() {
        say!("  none");
    }
    for r in &runs {
        say!(
            "  #{} {} branch {} {} {} cost {} started {}",
            r.id,
            r.state,
            opt(&r.branch_name),
            ctx.config.words_for(r.repo.as_deref()).short.to_lowercase(),
            opt(&r.pr_url),
            money(r.cost_usd, r.cost_estimated),
            ago(r.started_at, now)
        );
    }
    say!("\nhistory:");
    print_events(&events, now);
    Ok(())
}

/// What skipped a skipped task: "filter not_macos: not a macOS task", the triage, v1, or a human.
fn skipped_by(task: &Task) -> Option<String> {
    if task.status != QueueStatus::Skip {
        return None;
    }
    // Who made the last decision, as recorded with the skip (a human's skip is a human's, whatever
    // the triage said before).
    Some(match (task.skipped_by, &task.skip_rule, &task.skip_why) {
        (Some(SkippedBy::Filter), Some(rule), Some(why)) if !why.is_empty() => {
            format!("filter {rule}: {why}")
        }
        (Some(SkippedBy::Filter), Some(rule), _) => format!("filter {rule}"),
        (Some(SkippedBy::Triage), _, _) => "triage (see the analysis below)".to_string(),
        (Some(SkippedBy::Imported), _, _) => "imported skipped from v1 (see the history)".to_string(),
        _ => "a human (see the history)".to_string(),
    })
}

/// The triage's answer, the last failed analysis (`max_attempts`: `analyzer.max_attempts`, after which
/// it is given up on), and every analysis session.
fn print_analysis(task: &Task, sessions: &[AnalysisSession], max_attempts: u32, now: DateTime<Utc>) {
    say!("\nanalysis:");
    match task.analyzed_at {
        Some(at) => {
            say!("  analyzed {} ({}), round {}", at.to_rfc3339(), ago(at, now), task.analysis_round)
        }
        None => say!("  not analyzed yet (round {})", task.analysis_round),
    }
    if let Some(summary) = &task.analysis_summary {
        say!("{}", indent(summary));
    }
    if !task.acceptance_criteria.is_empty() {
        say!("  acceptance criteria:");
        for c in &task.acceptance_criteria {
            say!("    - {}", short(c, 200));
        }
    }
    if let Some(error) = &task.analysis_error {
        let gid = &task.task_gid;
        let retry = match task.analysis_retry_at {
            _ if task.status != QueueStatus::Pending => "no longer pending".to_string(),
            _ if task.analysis_attempts >= i64::from(max_attempts) => format!(
                "given up on; `executor queue requeue {gid}` or `executor reanalyze --failed` tries again"
            ),
            Some(at) if at > now => format!("next try {} ({})", at.to_rfc3339(), ago(at, now)),
            Some(_) | None => "may be tried now".to_string(),
        };
        say!("  last analysis failed ({} failed attempts; {retry}):", task.analysis_attempts);
        say!("{}", indent(&indent(error)));
    }
    if sessions.is_empty() {
        return;
    }
    say!("  sessions:");
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            vec![
                format!("  {}", s.started_at.format("%Y-%m-%d %H:%M:%S")),
                s.agent.clone(),
                match (s.end_reason, s.ended_at) {
                    (Some(r), _) => r.to_string(),
                    (None, Some(_)) => "ended".to_string(),
                    (None, None) => "running (or killed)".to_string(),
                },
                money(s.cost_usd, false),
                s.result_error.as_deref().map(|e| short(e, 60)).unwrap_or_default(),
                opt(&s.log_path),
            ]
        })
        .collect();
    table(&["  STARTED (UTC)", "AGENT", "END", "COST", "ANSWER ERROR", "LOG"], &rows);
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

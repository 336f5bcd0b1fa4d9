use clap::Subcommand;

use super::Context;
use super::output::{ago, json, money, money_long, opt, short, table};
use crate::domain::{ChangeWords, RunState};
use crate::forge::{PrSnapshot, PrState};
use crate::store::{EventFilter, RunFilter, now};

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// List runs, newest first.
    List {
        /// Only runs in this state: queued, in_progress, pr, complete or abandoned.
        #[arg(long, value_parser = parse_state)]
        state: Option<RunState>,
        /// Only the runs of this task.
        #[arg(long, value_name = "GID")]
        task: Option<String>,
        /// Show at most this many.
        #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
        limit: Option<i64>,
    },
    /// Every field of a run and its history.
    Show {
        /// The run's id (`executor runs` lists them).
        #[arg(value_name = "RUN_ID")]
        id: i64,
    },
    /// Give up a run (queued, in_progress or pr): a runner stops its worker; the local pull request is
    /// closed. The task stays approved with this run recorded.
    Abandon {
        /// The run's id (`executor runs` lists them).
        #[arg(value_name = "RUN_ID")]
        id: i64,
        /// Why, for the history.
        #[arg(long)]
        reason: String,
    },
    /// Let a run stopped by its budget cap go on: `budget.per_run_usd` applies afresh from now.
    Resume {
        /// The run's id (`executor runs` lists them).
        #[arg(value_name = "RUN_ID")]
        id: i64,
    },
}

fn parse_state(s: &str) -> Result<RunState, String> {
    s.parse().map_err(|e: crate::domain::UnknownName| e.to_string())
}

pub async fn run(ctx: &Context, command: RunsCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        RunsCommand::List { state, task, limit } => {
            let task_gid = task.as_deref().map(super::parse::parse_gid).transpose()?;
            let listed = ctx.store.list_runs_with_decisions(&RunFilter { state, task_gid, limit }).await?;
            if as_json {
                return json(&listed.iter().map(|(run, _)| run).collect::<Vec<_>>());
            }
            if listed.is_empty() {
                say!(
                    "no runs{}",
                    if state.is_some() {
                        " match"
                    } else {
                        " yet: approved tasks become runs when the runner starts"
                    }
                );
                return Ok(());
            }
            let now = now();
            let mut rows = Vec::with_capacity(listed.len());
            for (r, why) in &listed {
                let why = why.clone().unwrap_or_default();
                rows.push(vec![
                    r.id.to_string(),
                    r.task_gid.to_string(),
                    r.state.to_string(),
                    opt(&r.pr_number.map(|n| ctx.config.words_for(r.repo.as_deref()).reference(n))),
                    r.ci_attempts.to_string(),
                    opt(&r.worker_pid),
                    money(r.cost_usd, r.cost_estimated),
                    ago(r.updated_at, now),
                    short(&why, 60),
                ]);
            }
            let change = ctx.config.words_everywhere().short;
            table(
                &["RUN", "GID", "STATE", change, "CI TRIES", "PID", "COST", "UPDATED", "LAST DECISION"],
                &rows,
            );
            Ok(())
        }
        RunsCommand::Abandon { id, reason } => {
            // Recorded before the run moves: the tracker hears of it once, whatever happens next.
            super::writeback::record_abandoned(ctx, &ctx.store.run(id).await?, &reason).await?;
            let run = ctx.store.abandon_run(id, ctx.by(), &reason).await?;
            if as_json {
                return json(&run);
            }
            say!("run {id} abandoned; a running runner stops its worker at its next tick");
            Ok(())
        }
        RunsCommand::Resume { id } => {
            let memory = ctx.store.resume_run_budget(id, ctx.by()).await?;
            if as_json {
                return json(&memory);
            }
            say!(
                "run {id} may spend another {} (budget.per_run_usd) from {}; the runner picks it up on its next start",
                money(ctx.config.budget.per_run_usd, false),
                money(memory.budget_base_usd, false)
            );
            Ok(())
        }
        RunsCommand::Show { id } => {
            if as_json {
                return json(&ctx.store.run_view(id).await?);
            }
            let run = ctx.store.run(id).await?;
            let events = ctx.store.events(&EventFilter { run_id: Some(id), ..Default::default() }).await?;
            let memory = ctx.store.run_memory(id).await?;
            let pr: Option<PrSnapshot> =
                memory.last_snapshot.as_deref().and_then(|j| serde_json::from_str(j).ok());
            let workers = ctx.store.worker_sessions(id).await?;
            let notices = ctx.store.notices(Some(id)).await?;
            let now = now();
            // The run's change in its repository's forge's words ("pull request #12", "merge request !12").
            let words = ctx.config.words_for(run.repo.as_deref());
            let field = |name: &str, value: String| say!("{:<20}{value}", format!("{name}:"));
            field("run", run.id.to_string());
            field("task", run.task_gid.to_string());
            field("state", run.state.to_string());
            field("repo", opt(&run.repo));
            field("branch", opt(&run.branch_name));
            field("worktree", opt(&run.worktree_path));
            field(words.noun, opt(&run.pr_url));
            field("head", opt(&run.head_sha));
            field("review", format!("{} at {}", opt(&run.review_verdict), opt(&run.review_sha)));
            field("ci attempts", run.ci_attempts.to_string());
            field("worker pid", opt(&run.worker_pid));
            field("worker session", opt(&run.worker_session_id));
            field("worker output", run.worker_last_update.map(|t| ago(t, now)).unwrap_or_else(|| "-".into()));
            field("stuck count", run.worker_stuck_count.to_string());
            field(
                "cost",
                format!(
                    "{} ({} in / {} out tokens)",
                    money_long(run.cost_usd, run.cost_estimated),
                    run.input_tokens,
                    run.output_tokens
                ),
            );
            field(
                "lease",
                match (&run.lease_owner, run.lease_expires_at) {
                    (Some(o), Some(t)) => format!("{o} until {}", ago(t, now)),
                    _ => "-".into(),
                },
            );
            field("started", ago(run.started_at, now));
            field("completed", run.completed_at.map(|t| ago(t, now)).unwrap_or_else(|| "-".into()));
            let decided = memory.last_decision_at.map(|t| format!(" ({})", ago(t, now))).unwrap_or_default();
            field("last decision", format!("{}{decided}", opt(&memory.last_decision)));
            // Which cap says what helps: a resume for the run's own, the day's turn or a raise for the day's.
            match memory.budget_cap {
                Some(crate::domain::BudgetCap::Day) => field(
                    "budget",
                    "stopped by the daily cap (budget.per_day_usd): it goes on when the day turns (00:00 UTC) or the cap is raised; see the last decision".into(),
                ),
                Some(crate::domain::BudgetCap::Run) => field(
                    "budget",
                    format!("stopped by its own cap (budget.per_run_usd): `executor runs resume {}` or raise the cap; see the last decision", run.id),
                ),
                None => {}
            }
            if let Some(pr) = &pr {
                print_pr(pr, words, now);
            }
            say!("\nworkers:");
            if workers.is_empty() {
                say!("  none yet");
            }
            for w in &workers {
                let end = match (&w.ended_at, &w.end_reason) {
                    (Some(t), Some(r)) => format!("{r} {}", ago(*t, now)),
                    _ => format!("running (pid {})", opt(&w.pid)),
                };
                say!(
                    "  #{} {:<12} {:<8} started {:<9} {end}; {}; log {}",
                    w.id,
                    w.kind.as_str(),
                    w.agent,
                    ago(w.started_at, now),
                    money_long(w.cost_usd, w.cost_estimated),
                    opt(&w.log_path)
                );
                if let Some(e) = &w.result_error {
                    say!("      result: {e}");
                }
            }
            if !notices.is_empty() {
                say!("\nnotices:");
                for n in &notices {
                    say!("  {} {}: {} [{}]", ago(n.created_at, now), n.kind, n.message, opt(&n.delivery));
                }
            }
            say!("\nhistory:");
            super::output::print_events(&events, now);
            Ok(())
        }
    }
}

/// The pull request as the runner last saw it: state, CI at the head, and the conversation.
fn print_pr(pr: &PrSnapshot, words: ChangeWords, now: chrono::DateTime<chrono::Utc>) {
    let state = match pr.state {
        PrState::Open if pr.draft => "open (draft)",
        PrState::Open => "open",
        PrState::Merged => "merged",
        PrState::Closed => "closed",
    };
    say!(
        "\n{} {} — {state}, head {}, seen {}",
        words.noun_ref(pr.number),
        pr.url,
        short_sha(&pr.head_sha),
        ago(pr.observed_at, now)
    );
    if !pr.labels.is_empty() {
        say!("  labels: {}", pr.labels.join(", "));
    }
    let checks = pr.checks_at_head();
    if checks.is_empty() {
        say!("  CI: no checks at the head");
    }
    for c in checks {
        say!("  CI {}: {:?}", c.name, c.status);
    }
    for c in &pr.comments {
        let reply = c.in_reply_to.as_ref().map(|r| format!(" ↳ {r}")).unwrap_or_default();
        say!(
            "  comment {}{reply} by {} {}: {}",
            c.id,
            c.author,
            ago(c.created_at, now),
            super::output::short(&c.body, 70)
        );
    }
}

fn short_sha(sha: &str) -> &str {
    &sha[..sha.len().min(10)]
}

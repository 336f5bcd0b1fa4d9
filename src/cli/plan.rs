//! `executor plan` and `executor answer`: a person's word on a run that waits for one — the plan its
//! agent wrote before any code (approve it, or send it back with what to change), a task's own plan
//! setting, and the answer to a question an agent asked instead of guessing. The runner acts on each at
//! its next tick.

use clap::{Args, Subcommand};

use super::Context;
use super::output::json;
use crate::domain::{AnswerVia, PlanMode};
use crate::store::PlanVerdict;

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Print a run's plans, newest last, with who approved or sent each back.
    Show {
        /// The run's id (`executor runs` lists them).
        #[arg(value_name = "RUN_ID")]
        run: i64,
    },
    /// Approve the plan that waits: the implementation starts with it in its prompt.
    Approve {
        #[arg(value_name = "RUN_ID")]
        run: i64,
    },
    /// Send the plan that waits back: an agent writes the next revision with your comment.
    Revise {
        #[arg(value_name = "RUN_ID")]
        run: i64,
        /// What should change.
        #[arg(long)]
        comment: String,
    },
    /// Whether a task's runs write a plan for approval first: `required`, `off`, or `default` (its
    /// repository's `plan`). Takes effect for a run that has not started its implementation.
    Set {
        /// The task's gid.
        #[arg(value_name = "GID")]
        gid: String,
        #[arg(value_name = "required|off|default")]
        mode: String,
    },
}

/// `executor answer RUN_ID TEXT`.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The run whose worker asked (`executor status` and the dashboard's Needs you list them).
    #[arg(value_name = "RUN_ID")]
    run: i64,
    /// The answer; the next worker of the run gets it in its prompt.
    #[arg(value_name = "TEXT")]
    text: String,
}

pub async fn plan(ctx: &Context, command: PlanCommand, as_json: bool) -> anyhow::Result<()> {
    let decide = |run: i64, verdict: PlanVerdict| async move {
        let plan = ctx.store.decide_plan(run, &verdict, ctx.by()).await?;
        if as_json {
            return json(&plan);
        }
        match verdict {
            PlanVerdict::Approve => say!(
                "plan revision {} of run {run} approved; the runner starts the implementation at its next tick",
                plan.revision
            ),
            PlanVerdict::RequestChanges(_) => say!(
                "plan revision {} of run {run} sent back; the runner has revision {} written at its next tick",
                plan.revision,
                plan.revision + 1
            ),
        }
        Ok(())
    };
    match command {
        PlanCommand::Show { run } => {
            let plans = ctx.store.plans(run).await?;
            if as_json {
                return json(&plans);
            }
            if plans.is_empty() {
                say!("run {run} has no plan (its task needs none, or its plan worker has not finished)");
            }
            for p in plans {
                let who = p.decided_by.or(p.decided_actor).map(|w| format!(" by {w}")).unwrap_or_default();
                say!("## Revision {}: {}{who}\n\n{}", p.revision, p.status, p.body.trim_end());
                if let Some(f) = p.feedback {
                    say!("\nChanges asked for: {f}");
                }
                say!("");
            }
            Ok(())
        }
        PlanCommand::Approve { run } => decide(run, PlanVerdict::Approve).await,
        PlanCommand::Revise { run, comment } => {
            if comment.trim().is_empty() {
                return Err(super::UsageError("--comment: say what should change in the plan".into()).into());
            }
            decide(run, PlanVerdict::RequestChanges(comment)).await
        }
        PlanCommand::Set { gid, mode } => {
            let gid = super::parse::parse_gid(&gid)?;
            let mode = match mode.as_str() {
                "default" => None,
                m => Some(m.parse::<PlanMode>().map_err(|e| super::UsageError(format!("{e}, default")))?),
            };
            ctx.store.set_task_plan_mode(&gid, mode, ctx.by()).await?;
            if as_json {
                return json(&serde_json::json!({ "task_gid": gid.as_str(), "plan": mode }));
            }
            match mode {
                Some(m) => say!("task {gid}: plan {m}"),
                None => say!("task {gid}: plan as its repository says"),
            }
            Ok(())
        }
    }
}

pub async fn answer(ctx: &Context, args: AnswerArgs, as_json: bool) -> anyhow::Result<()> {
    let q = ctx.store.answer_question(args.run, &args.text, AnswerVia::Cli, ctx.by()).await?;
    if as_json {
        return json(&q);
    }
    say!("question {} of run {} answered; its next worker starts with the answer", q.id, args.run);
    Ok(())
}

//! `executor analyzer`: intake from the sources, then triage until nothing is pending.

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::bail;

use crate::analyzer::triage::BlockedBy;
use clap::Args;

use super::Context;
use super::output::json;
use crate::analyzer::triage::Triager;
use crate::analyzer::{Analyzer, Progress, Summary};
use crate::instance_lock::{InstanceLock, LockError};
use crate::runner::{load_prompts, shutdown_on_signals};

#[derive(Debug, Args)]
pub struct AnalyzerArgs {
    /// Only triage what is already pending: do not fetch from the sources first.
    #[arg(long)]
    no_intake: bool,
}

/// Runs one analyzer pass. A second analyzer on the same data directory exits 0 at once.
pub async fn analyzer(ctx: &Context, args: AnalyzerArgs, as_json: bool) -> anyhow::Result<()> {
    let _lock = match InstanceLock::acquire(&ctx.config.data_dir(), "analyzer") {
        Ok(lock) => lock,
        Err(e @ LockError::Held { .. }) => {
            say!("{e}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let intake = if !args.no_intake && !ctx.config.sources.is_empty() {
        let report = super::intake::fetch(ctx, None, false).await?;
        if !as_json {
            super::intake::print(&report)?;
        }
        Some(report)
    } else {
        None
    };
    let intake_failed: Vec<String> = intake.iter().flat_map(|r| r.failed()).map(|s| s.name.clone()).collect();
    let config = Arc::new(ctx.config.clone());
    let prompts = Arc::new(load_prompts(&config)?);
    let owner = crate::analyzer::owner(&config);
    let triager =
        Triager::new(config.clone(), prompts, ctx.store.clone(), owner.clone(), std::env::current_exe().ok());
    let analyzer = Analyzer::new(config, ctx.store.clone(), triager, owner)?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let pass = tokio::spawn({
        let analyzer = analyzer.clone();
        let stop = shutdown_on_signals();
        async move { analyzer.run_until_idle(tx, stop).await }
    });
    let mut printer = Printer { done: 0, events: Vec::new(), terminal: std::io::stdout().is_terminal() };
    while let Some(event) = rx.recv().await {
        printer.show(event, as_json);
    }
    let summary = pass.await??;
    if as_json {
        json(&serde_json::json!({ "intake": intake, "summary": &summary, "events": printer.events }))?;
    } else {
        say!("{}", summary_line(&summary));
    }
    if let Some(blocked) = &summary.blocked {
        let why = &blocked.why;
        match blocked.by {
            // Only time or a human ends it: no error for cron (`status` and each task say it).
            BlockedBy::Budget => say_err!("the analyzer waits: {why}"),
            BlockedBy::Stop | BlockedBy::Database | BlockedBy::Agent => {
                bail!("the analyzer stopped before the queue was empty: {why}")
            }
        }
    }
    if summary.failed > 0 || !intake_failed.is_empty() {
        // Cron reads the exit status: failures are recorded on each task (`queue show`), and said here.
        let mut what = Vec::new();
        if summary.failed > 0 {
            what.push(format!("{} analysis(es) failed (see `executor queue show GID`)", summary.failed));
        }
        if !intake_failed.is_empty() {
            what.push(format!("source(s) failed: {}", intake_failed.join(", ")));
        }
        bail!("the analyzer met errors: {}", what.join("; "));
    }
    Ok(())
}

/// One line per task as it is decided; with --json the events are kept for the final document.
struct Printer {
    done: u64,
    events: Vec<Progress>,
    terminal: bool,
}

impl Printer {
    fn show(&mut self, event: Progress, as_json: bool) {
        if as_json {
            self.events.push(event);
            return;
        }
        let line = match &event {
            Progress::Started { task_gid, title, pending } => {
                // Only a terminal gets the "now analyzing" line; a log gets outcomes only.
                if self.terminal {
                    say!("… {task_gid} {title:?}: analyzing ({pending} pending)");
                }
                return;
            }
            Progress::Filtered { task_gid, rule, why } if why.is_empty() => {
                format!("{task_gid}: skip — filter {rule}")
            }
            Progress::Filtered { task_gid, rule, why } => format!("{task_gid}: skip — filter {rule}: {why}"),
            Progress::Triaged { task_gid, status, priority, summary } => {
                format!("{task_gid}: {status} (priority {priority}) — {}", one_line(summary, 100))
            }
            Progress::Failed { task_gid, error, attempts, gave_up } => {
                let next = if *gave_up {
                    "given up: approve with --skip-triage, skip it, or `executor reanalyze --failed`"
                        .to_string()
                } else {
                    "tried again after analyzer.retry_backoff".to_string()
                };
                format!("{task_gid}: analysis failed (attempt {attempts}; {next}): {}", one_line(error, 160))
            }
            Progress::Overtaken { task_gid } => {
                format!(
                    "{task_gid}: decided elsewhere while analyzed (a human or another analyzer); result dropped"
                )
            }
        };
        self.done += 1;
        say!("[{}] {line}", self.done);
    }
}

fn summary_line(s: &Summary) -> String {
    format!(
        "analyzer idle: {} triaged, {} skipped by filters, {} failed, {} decided elsewhere",
        s.triaged, s.filtered, s.failed, s.overtaken
    )
}

/// `text` on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max { flat } else { flat.chars().take(max).collect::<String>() + "…" }
}

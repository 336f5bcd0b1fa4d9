//! `executor reanalyze`: the current filters over the skipped tasks; those that pass go back to pending.

use anyhow::Context as _;
use clap::Args;

use super::Context;
use super::output::{json, table};
use super::parse::parse_gid;
use crate::analyzer::reanalyze::{Counts, ReanalyzeOptions, Report, reanalyze};

#[derive(Debug, Args)]
#[command(after_long_help = "\
A skipped task passes when no filter of the current config (nor intake.qualifying_sources)
skips it as it is stored now. Who made the last decision to skip it is its rule:
  a filter's name   the filter that skipped it (also one removed from the config since)
  triage            the analyzer's agent skipped it; it passed the filters then too, so it is
                    triaged again (one model call each); --no-triage leaves these as they are
  imported          imported skipped from v1
  human             a human skipped it (executor skip, the dashboard), whatever decided before;
                    what a human decided stays decided: only --rule human looks at these

Tasks sent back are analyzed after every new task: the analyzer takes tasks by analysis round
(0 for a new task, one more each time a task is sent back), then by arrival. A large
re-analysis never holds up what arrives meanwhile.

Examples:
  executor reanalyze --dry-run           # what would change, by source and by rule
  executor reanalyze --rule not_macos    # send back what that rule skipped and no longer does
  executor reanalyze --failed            # try afresh the tasks whose analysis was given up on
")]
pub struct ReanalyzeArgs {
    /// Only tasks from this source (repeatable).
    #[arg(long = "source", value_name = "NAME")]
    sources: Vec<String>,
    /// Only tasks skipped before by this rule: a filter's name (also one removed from the config since),
    /// "triage", "imported" or "human" (repeatable). Human skips are looked at only when named.
    #[arg(long = "rule", value_name = "NAME")]
    rules: Vec<String>,
    /// Only this task (repeatable).
    #[arg(long = "task", value_name = "GID")]
    tasks: Vec<String>,
    /// Instead of skipped tasks, the pending ones whose analysis failed analyzer.max_attempts times:
    /// they are tried afresh (the filters are not asked again).
    #[arg(long, conflicts_with = "rules")]
    failed: bool,
    /// Leave the tasks the analyzer's agent skipped as they are.
    #[arg(long)]
    no_triage: bool,
    /// Report what would change; write nothing.
    #[arg(long)]
    dry_run: bool,
}

pub async fn run(ctx: &Context, args: ReanalyzeArgs, as_json: bool) -> anyhow::Result<()> {
    let filters = ctx.config.compiled_filters().context("the config's [[filters]]")?;
    let tasks = args.tasks.iter().map(|g| parse_gid(g)).collect::<anyhow::Result<Vec<_>>>()?;
    let opts = ReanalyzeOptions {
        failed: args.failed,
        max_attempts: ctx.config.analyzer.max_attempts,
        sources: args.sources,
        rules: args.rules,
        tasks,
        dry_run: args.dry_run,
        include_triage_skips: !args.no_triage,
    };
    let report = reanalyze(&ctx.store, &filters, &opts).await?;
    if as_json {
        return json(&report);
    }
    print_report(&report);
    Ok(())
}

fn print_report(r: &Report) {
    if r.human_skips_kept > 0 {
        say!(
            "{} skipped by a human left as they are (--rule human looks at them)\n",
            tasks(r.human_skips_kept)
        );
    }
    if r.examined == 0 {
        let what = if r.looked_at == "failed" { "pending tasks given up on" } else { "skipped tasks" };
        say!("no {what} match");
        return;
    }
    let what = if r.looked_at == "failed" { "given-up pending" } else { "skipped" };
    let noun = if r.examined == 1 { "task" } else { "tasks" };
    say!("{} {what} {noun} looked at\n", r.examined);
    print_counts("SOURCE", &r.by_source);
    say!();
    print_counts("SKIPPED BEFORE BY", &r.by_rule);
    say!();
    if r.dry_run {
        say!("dry run: {} would be sent back to pending", tasks(r.totals.would_pass));
    } else {
        say!("{} sent back to pending", tasks(r.sent_back));
        if r.sent_back < r.totals.would_pass {
            say!(
                "({} passed but had changed meanwhile and were left as they are)",
                r.totals.would_pass - r.sent_back
            );
        }
    }
}

fn print_counts(first: &str, by: &std::collections::BTreeMap<String, Counts>) {
    let rows: Vec<Vec<String>> = by
        .iter()
        .map(|(key, c)| {
            let by_rule: Vec<String> =
                c.still_skipped_by.iter().map(|(rule, n)| format!("{rule} {n}")).collect();
            vec![key.clone(), c.would_pass.to_string(), c.still_skipped.to_string(), by_rule.join(", ")]
        })
        .collect();
    table(&[first, "PASS NOW", "STILL SKIPPED", "BY (NOW)"], &rows);
}

/// "1 task", "2 tasks".
fn tasks(n: u64) -> String {
    if n == 1 { "1 task".to_string() } else { format!("{n} tasks") }
}

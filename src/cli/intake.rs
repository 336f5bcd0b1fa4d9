//! `executor intake`: fetch the configured sources into the queue and say, source by source, what came in.

use std::io::Write;
use std::sync::Arc;

use anyhow::bail;
use clap::Args;

use super::output::json;
use super::{Context, UsageError};
use crate::github::GitHubClient;
use crate::intake::run::{IntakeError, IntakeReport, SourceReport, intake};
use crate::intake::source::process_env;

/// Refusals listed one per line; the rest are counted (`--json` lists every one).
const REFUSALS_SHOWN: usize = 10;

#[derive(Debug, Args)]
pub struct IntakeArgs {
    /// Only the source with this name (its `name` in the config).
    #[arg(long, value_name = "NAME")]
    source: Option<String>,
    /// Fetch everything the source has, not only what changed since its last fetch (after adding a
    /// project or section to a source, whose older tasks would otherwise never come). Tasks already in
    /// the queue are updated, never duplicated.
    #[arg(long)]
    full: bool,
}

pub async fn run(ctx: &Context, args: IntakeArgs, as_json: bool) -> anyhow::Result<()> {
    let config = &ctx.config;
    if config.sources.is_empty() && args.source.is_none() && !as_json {
        let file = config.source.as_ref().map_or("executor.toml".into(), |p| p.display().to_string());
        say!(
            "no task sources are configured: add a [[sources]] table to {file} (kind = \"asana\", \
             \"github_issues\", \"gitlab_issues\", \"linear\", \"jira\" or \"file\"; the config's comments show each), then run `executor intake` \
             again. Until then, `executor queue add` takes tasks in by hand."
        );
        return Ok(());
    }
    let report = fetch(ctx, args.source.as_deref(), args.full).await?;
    if as_json {
        json(&report)?;
    } else {
        print(&report)?;
    }
    let failed: Vec<&str> = report.failed().map(|s| s.name.as_str()).collect();
    if !failed.is_empty() {
        let others = report.sources.len() - failed.len();
        bail!(
            "{} of {} sources failed ({}); {others} other{} taken in; run `executor intake` again once fixed",
            failed.len(),
            report.sources.len(),
            failed.join(", "),
            if others == 1 { " was" } else { "s were" }
        );
    }
    Ok(())
}

/// Every configured source (or only `only`) into the queue: the GitHub client is made only when a
/// GitHub Issues source is among them.
pub(super) async fn fetch(ctx: &Context, only: Option<&str>, full: bool) -> anyhow::Result<IntakeReport> {
    let config = &ctx.config;
    let needs_github =
        config.sources.iter().any(|s| s.kind == "github_issues" && only.is_none_or(|name| name == s.name));
    let github = if needs_github {
        let client = GitHubClient::new(&config.github).map_err(|e| anyhow::anyhow!("[github]: {e}"))?;
        client.share_blocks(
            ctx.store.shared_blocks(crate::shared_blocks::github_scope(&config.github.api_url)),
        );
        Some(Arc::new(client))
    } else {
        None
    };
    match intake(config, &ctx.store, only, full, process_env(), github).await {
        Ok(report) => Ok(report),
        Err(e @ IntakeError::UnknownSource { .. }) => bail!(UsageError(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// One line per source, and what needs a human.
pub(super) fn print(report: &IntakeReport) -> std::io::Result<()> {
    let mut out = super::output::Shown::new(std::io::BufWriter::new(std::io::stdout()));
    for source in &report.sources {
        write_source(&mut out, source)?;
    }
    out.flush()
}

/// `inbox (asana): 120 fetched — 3 added, 2 updated, 115 unchanged; 1 refused: …`, then what needs a
/// human: each pending revision, each refusal (up to [`REFUSALS_SHOWN`]).
fn write_source(out: &mut impl Write, s: &SourceReport) -> std::io::Result<()> {
    if let Some(error) = &s.error {
        return writeln!(out, "{} ({}): failed: {error}", s.name, s.kind);
    }
    let revised = if s.revised > 0 { format!(", {} revised", s.revised) } else { String::new() };
    write!(
        out,
        "{} ({}): {} fetched — {} added, {} updated{revised}, {} unchanged",
        s.name, s.kind, s.fetched, s.added, s.updated, s.unchanged
    )?;
    match s.refused.as_slice() {
        [] => writeln!(out)?,
        [one] => writeln!(out, "; 1 refused: {}: {}", one.place, one.why)?,
        many => {
            writeln!(out, "; {} refused:", many.len())?;
            for r in many.iter().take(REFUSALS_SHOWN) {
                writeln!(out, "  {}: {}", r.place, r.why)?;
            }
            if many.len() > REFUSALS_SHOWN {
                writeln!(out, "  … and {} more (`--json` lists every one)", many.len() - REFUSALS_SHOWN)?;
            }
        }
    }
    for gid in &s.revisions_pending {
        let status = match s.revisions_of_done.contains(gid) {
            true => crate::domain::QueueStatus::Done,
            false => crate::domain::QueueStatus::Approved,
        };
        writeln!(out, "  revision received for task {gid}: {}", super::output::revision_advice(gid, status))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intake::run::Refusal;

    fn line(s: &SourceReport) -> String {
        let mut out = Vec::new();
        write_source(&mut out, s).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_line_per_source_with_its_refusal() {
        let s = SourceReport {
            name: "inbox".into(),
            kind: "asana".into(),
            fetched: 120,
            added: 3,
            updated: 2,
            unchanged: 115,
            refused: vec![Refusal { place: "inbox line 4".into(), why: "it has no gid".into() }],
            ..SourceReport::default()
        };
        assert_eq!(
            line(&s),
            "inbox (asana): 120 fetched — 3 added, 2 updated, 115 unchanged; 1 refused: inbox line 4: it has no gid\n"
        );
    }

    #[test]
    fn many_refusals_are_listed_up_to_a_limit() {
        let refusal = Refusal { place: "f line 1".into(), why: "bad".into() };
        let s = SourceReport {
            name: "f".into(),
            kind: "file".into(),
            refused: vec![refusal; 12],
            ..Default::default()
        };
        let text = line(&s);
        assert!(
            text.starts_with("f (file): 0 fetched — 0 added, 0 updated, 0 unchanged; 12 refused:\n"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1 + REFUSALS_SHOWN + 1, "{text}");
        assert!(text.ends_with("  … and 2 more (`--json` lists every one)\n"), "{text}");
    }

    #[test]
    fn a_failure_is_named_with_its_message() {
        let s = SourceReport {
            name: "inbox".into(),
            kind: "asana".into(),
            error: Some("Asana refused the token in ASANA_TOKEN".into()),
            ..SourceReport::default()
        };
        assert_eq!(line(&s), "inbox (asana): failed: Asana refused the token in ASANA_TOKEN\n");
    }
}

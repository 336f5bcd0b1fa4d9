//! Whether the runs pay (issue 34 item 5): of the runs that ended in the window — their pull request
//! merged, or given up — how many landed, how long from approval to merge, what each merged pull
//! request cost counting the runs given up on the way, and how many CI fixes and reviews it took; for
//! all runs and by repository and agent; and how many merged ones were reverted. Pure: assembled from
//! [`RunOutcome`] rows.

use std::collections::BTreeMap;

use super::figures::spread;
use crate::store::RunOutcome;

/// The figures of one slice of the runs that ended in the window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Landed {
    /// `None` for the row of all repositories; else the repository's name.
    pub repo: Option<String>,
    /// `None` for the row of all agents; else the agent whose code the pull request held.
    pub agent: Option<String>,
    #[serde(flatten)]
    pub figures: Figures,
}

/// What a set of ended runs came to.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Figures {
    pub merged: u32,
    pub abandoned: u32,
    /// Merged of those that ended (`None` when none did).
    pub merge_rate: Option<f64>,
    /// Merged pull requests found reverted on their base branch (`insights.revert_window_days`).
    pub reverted: u32,
    /// Reverted of the merged (`None` when none merged).
    pub revert_rate: Option<f64>,
    /// Median hours from the task's approval to its pull request's merge.
    pub p50_hours_to_merge: Option<f64>,
    /// Every ended run's cost over the merged pull requests: what one merged pull request costs, the
    /// runs given up on included.
    pub cost_per_merged_usd: Option<f64>,
    /// Mean `fix_ci` attempts and `pr_review` workers per merged pull request.
    pub ci_fixes_per_merged: Option<f64>,
    pub reviews_per_merged: Option<f64>,
}

/// The row of all runs first, then one per repository and agent, by name.
pub fn landed(runs: &[RunOutcome]) -> Vec<Landed> {
    let mut slices: BTreeMap<(Option<String>, Option<String>), Vec<&RunOutcome>> = BTreeMap::new();
    for run in runs {
        // A run of a single-repository config names none: it is the config's one repository.
        let repo = Some(run.repo.clone().unwrap_or_else(|| "(default)".into()));
        let agent = Some(run.agent.clone().unwrap_or_else(|| "-".into()));
        slices.entry((repo, agent)).or_default().push(run);
    }
    let all: Vec<&RunOutcome> = runs.iter().collect();
    std::iter::once(Landed { repo: None, agent: None, figures: figures_of(&all) })
        .chain(slices.into_iter().map(|((repo, agent), runs)| Landed {
            repo,
            agent,
            figures: figures_of(&runs),
        }))
        .collect()
}

/// The column names of [`table_rows`].
pub const COLUMNS: [&str; 11] = [
    "repo",
    "agent",
    "merged",
    "abandoned",
    "merge rate",
    "reverted",
    "revert rate",
    "to merge (p50)",
    "per merged PR",
    "CI fixes",
    "reviews",
];

/// The rows as text, the same on the page and in `executor insights`.
pub fn table_rows(rows: &[Landed]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|l| {
            let names = [&l.repo, &l.agent].map(|n| n.clone().unwrap_or_else(|| "(all)".into()));
            names.into_iter().chain(figure_cells(&l.figures)).collect()
        })
        .collect()
}

/// The figures' cells, in [`COLUMNS`]' order after the names.
pub fn figure_cells(f: &Figures) -> Vec<String> {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let percent = |r: Option<f64>| or_dash(r.map(|r| format!("{:.0}%", r * 100.0)));
    vec![
        f.merged.to_string(),
        f.abandoned.to_string(),
        percent(f.merge_rate),
        f.reverted.to_string(),
        percent(f.revert_rate),
        or_dash(f.p50_hours_to_merge.map(|h| format!("{h:.1} h"))),
        or_dash(f.cost_per_merged_usd.map(|c| format!("${c:.2}"))),
        or_dash(f.ci_fixes_per_merged.map(|n| format!("{n:.1}"))),
        or_dash(f.reviews_per_merged.map(|n| format!("{n:.1}"))),
    ]
}

/// The figures of `runs`.
pub fn figures_of(runs: &[&RunOutcome]) -> Figures {
    let merged: Vec<&&RunOutcome> = runs.iter().filter(|r| r.merged_at.is_some()).collect();
    let (m, ended) = (merged.len(), runs.len());
    let reverted = merged.iter().filter(|r| r.reverted_at.is_some()).count();
    let per_merged = |total: f64| (m > 0).then(|| total / m as f64);
    let hours = merged
        .iter()
        .filter_map(|r| Some((r.merged_at? - r.approved_at?).num_seconds() as f64 / 3600.0))
        .collect();
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Figures {
        merged: count(m),
        abandoned: count(ended - m),
        merge_rate: (ended > 0).then(|| m as f64 / ended as f64),
        reverted: count(reverted),
        revert_rate: per_merged(reverted as f64),
        p50_hours_to_merge: spread(hours).p50_hours,
        cost_per_merged_usd: per_merged(runs.iter().map(|r| r.cost_usd).sum()),
        ci_fixes_per_merged: per_merged(merged.iter().map(|r| r.ci_attempts as f64).sum()),
        reviews_per_merged: per_merged(merged.iter().map(|r| r.reviews as f64).sum()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Duration, Utc};

    fn run(id: i64, agent: &str, merged_after_hours: Option<i64>, cost: f64) -> RunOutcome {
        let approved: DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
        RunOutcome {
            run_id: id,
            repo: Some("app".into()),
            agent: Some(agent.into()),
            merged_at: merged_after_hours.map(|h| approved + Duration::hours(h)),
            approved_at: Some(approved),
            cost_usd: cost,
            ci_attempts: 1,
            reviews: 2,
            reverted_at: None,
            source: None,
            labels: Vec::new(),
            kinds: Vec::new(),
        }
    }

    #[test]
    fn a_merged_pull_request_costs_what_every_ended_run_spent() {
        let runs = [
            run(1, "claude", Some(2), 3.0),
            RunOutcome { reverted_at: Some(chrono::Utc::now()), ..run(2, "claude", Some(6), 1.0) },
            run(3, "claude", None, 4.0),
            run(4, "codex", None, 2.0),
        ];
        let rows = landed(&runs);
        assert_eq!(rows.len(), 3, "all, then app/claude and app/codex: {rows:#?}");
        let (all, f) = (&rows[0], &rows[0].figures);
        assert_eq!((all.repo.as_deref(), f.merged, f.abandoned), (None, 2, 2));
        assert_eq!(f.merge_rate, Some(0.5));
        assert_eq!(f.cost_per_merged_usd, Some(5.0), "$10 over 2 merged");
        assert_eq!(f.p50_hours_to_merge, Some(2.0), "nearest rank of 2 h and 6 h");
        assert_eq!((f.ci_fixes_per_merged, f.reviews_per_merged), (Some(1.0), Some(2.0)));
        assert_eq!((f.reverted, f.revert_rate), (1, Some(0.5)), "run 2 was reverted");
        let claude = &rows[1];
        let c = &claude.figures;
        assert_eq!((claude.agent.as_deref(), c.merged, c.abandoned), (Some("claude"), 2, 1));
        assert_eq!(c.cost_per_merged_usd, Some(4.0));
        let codex = &rows[2].figures;
        assert_eq!(
            (codex.merge_rate, codex.cost_per_merged_usd, codex.p50_hours_to_merge, codex.revert_rate),
            (Some(0.0), None, None, None)
        );
        let cells = &table_rows(&rows)[0];
        assert_eq!(cells.len(), COLUMNS.len());
        assert_eq!(cells[..7], ["(all)", "(all)", "2", "2", "50%", "1", "50%"]);
        assert_eq!(landed(&[]), vec![Landed::default()], "nothing ended: one empty row, no division");
    }
}

//! The landed figures ([`Figures`]) sliced one way at a time: by repository, agent, worker kind, task
//! source and label. A run used several worker kinds and its task may carry several labels: it counts
//! in each of them, so a table's rows can add up to more than the runs. Pure.

use std::collections::BTreeMap;

use super::landed::{Figures, figure_cells, figures_of};
use crate::store::RunOutcome;

/// One way of slicing, as a table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Slices {
    /// `repo`, `agent`, `worker_kind`, `source`, `label`.
    pub by: &'static str,
    pub rows: Vec<Slice>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Slice {
    /// The repository, agent, kind, source or label; a word in parentheses where there is none.
    pub name: String,
    #[serde(flatten)]
    pub figures: Figures,
}

/// Each way of slicing, in the page's order, and what each table's first column is called.
const WAYS: [(&str, &str); 5] = [
    ("repo", "repo"),
    ("agent", "agent"),
    ("worker_kind", "worker kind"),
    ("source", "source"),
    ("label", "label"),
];

/// Every slicing of `runs`, rows by name.
pub fn slices(runs: &[RunOutcome]) -> Vec<Slices> {
    WAYS.iter()
        .map(|&(by, _)| {
            let mut groups: BTreeMap<String, Vec<&RunOutcome>> = BTreeMap::new();
            for run in runs {
                for name in names(by, run) {
                    groups.entry(name).or_default().push(run);
                }
            }
            let rows = groups.into_iter().map(|(name, runs)| Slice { name, figures: figures_of(&runs) });
            Slices { by, rows: rows.collect() }
        })
        .collect()
}

/// The names `run` counts under when sliced `by`.
fn names(by: &str, run: &RunOutcome) -> Vec<String> {
    let one = |v: &Option<String>, none: &str| vec![v.clone().unwrap_or_else(|| none.into())];
    let many = |v: &[String]| if v.is_empty() { vec!["(none)".into()] } else { v.to_vec() };
    match by {
        // A run of a single-repository config names none: it is the config's one repository.
        "repo" => one(&run.repo, "(default)"),
        "agent" => one(&run.agent, "-"),
        "worker_kind" => many(&run.kinds),
        "source" => one(&run.source, "(by hand)"),
        _ => many(&run.labels),
    }
}

/// The column names of a slicing's [`table_rows`].
pub fn columns(by: &str) -> Vec<String> {
    let first = WAYS.iter().find(|(b, _)| *b == by).map_or(by, |(_, name)| *name);
    std::iter::once(first).chain(super::landed::COLUMNS[2..].iter().copied()).map(str::to_string).collect()
}

/// A slicing's rows as text, the same on the page and in `executor insights`.
pub fn table_rows(s: &Slices) -> Vec<Vec<String>> {
    s.rows.iter().map(|r| std::iter::once(r.name.clone()).chain(figure_cells(&r.figures)).collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, merged: bool, kinds: &[&str], labels: &[&str]) -> RunOutcome {
        RunOutcome {
            run_id: id,
            repo: None,
            agent: Some("claude".into()),
            merged_at: merged.then(chrono::Utc::now),
            approved_at: None,
            cost_usd: 1.0,
            ci_attempts: 0,
            reviews: 1,
            reverted_at: None,
            source: (id == 1).then(|| "issues".into()),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
        }
    }

    #[test]
    fn a_run_counts_under_each_of_its_labels_and_worker_kinds() {
        let runs = [
            run(1, true, &["fix_ci", "queued"], &["bug", "small"]),
            run(2, false, &["queued"], &["bug"]),
            run(3, true, &[], &[]),
        ];
        let all = slices(&runs);
        assert_eq!(
            all.iter().map(|s| s.by).collect::<Vec<_>>(),
            ["repo", "agent", "worker_kind", "source", "label"]
        );
        let rows = |by: &str| -> Vec<(String, u32, u32)> {
            let s = all.iter().find(|s| s.by == by).unwrap();
            s.rows.iter().map(|r| (r.name.clone(), r.figures.merged, r.figures.abandoned)).collect()
        };
        let row = |n: &str, m, a| (n.to_string(), m, a);
        assert_eq!(rows("label"), [row("(none)", 1, 0), row("bug", 1, 1), row("small", 1, 0)]);
        assert_eq!(rows("worker_kind"), [row("(none)", 1, 0), row("fix_ci", 1, 0), row("queued", 1, 1)]);
        assert_eq!(rows("source"), [row("(by hand)", 1, 1), row("issues", 1, 0)]);
        assert_eq!(rows("repo"), [row("(default)", 2, 1)]);
        let label = all.iter().find(|s| s.by == "label").unwrap();
        assert_eq!(columns("label")[0], "label");
        assert_eq!(table_rows(label)[1][..4], ["bug", "1", "1", "50%"]);
        assert_eq!(columns("worker_kind").len(), table_rows(label)[0].len());
    }
}

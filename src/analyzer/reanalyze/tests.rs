//! The pure part of `reanalyze`: what counts where, and which tasks go back.

use chrono::{TimeZone, Utc};

use super::{HUMAN, IMPORTED, ReanalyzeOptions, TRIAGE, Tally, prior_rule};
use crate::domain::{QueueStatus, SkippedBy, Task, TaskGid};
use crate::filter::{Filters, RulesConfig};

/// A skipped task. `by` is who skipped it; a filter's name is `skip_rule`.
fn task(gid: &str, source: &str, description: &str, skip_rule: Option<&str>, by: SkippedBy) -> Task {
    let at = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
    Task {
        id: 0,
        added_at: at,
        updated_at: at,
        source: Some(source.into()),
        description: Some(description.into()),
        skip_rule: skip_rule.map(String::from),
        skipped_by: Some(by),
        analyzed_at: (by != SkippedBy::Imported).then_some(at),
        ..Task::for_test(gid, QueueStatus::Skip)
    }
}

/// One filter, `figma`: skips a description containing "figma.com".
fn filters() -> Filters {
    let config: RulesConfig = toml::from_str(
        "[[filters]]\nname = \"figma\"\nwhy = \"a design task\"\nwhen = { field = \"description\", contains = \"figma.com\" }\n",
    )
    .unwrap();
    Filters::compile(&config.intake, &config.filters).unwrap()
}

fn sample() -> Vec<Task> {
    vec![
        // Skipped by a filter the config no longer has: passes now.
        task("1", "inbox", "fix the menu", Some("not_macos"), SkippedBy::Filter),
        // Skipped by figma, still a Figma task.
        task("2", "inbox", "see figma.com/file/x", Some("figma"), SkippedBy::Filter),
        // Triage skipped it.
        task("3", "reports", "crash on start", None, SkippedBy::Triage),
        // v1 skipped it.
        task("4", "reports", "old idea", None, SkippedBy::Imported),
        // v1 skipped a Figma task.
        task("5", "reports", "figma.com/y", None, SkippedBy::Imported),
        // The triage sent it for review and a human then skipped it (analyzed, no rule): a human's.
        task("6", "inbox", "duplicate of 3", None, SkippedBy::Human),
    ]
}

fn run(opts: &ReanalyzeOptions, tasks: &[Task]) -> (super::Report, Vec<String>) {
    let filters = filters();
    let mut tally = Tally::new(&filters, opts, Utc::now());
    tally.add_page(tasks);
    let (report, passing) = tally.finish();
    let mut gids: Vec<String> = passing.values().flatten().map(|g| g.to_string()).collect();
    gids.sort();
    (report, gids)
}

#[test]
fn what_skipped_a_task_before_is_who_made_the_last_decision() {
    let t = sample();
    assert_eq!(prior_rule(&t[0]), "not_macos");
    assert_eq!(prior_rule(&t[2]), TRIAGE);
    assert_eq!(prior_rule(&t[3]), IMPORTED);
    // Analyzed by the triage, then skipped by a human: the human's decision is the last.
    assert_eq!(prior_rule(&t[5]), HUMAN);
    // A skip that says nothing of who made it stands like a human's.
    let unknown = Task { skipped_by: None, ..t[2].clone() };
    assert_eq!(prior_rule(&unknown), HUMAN);
}

#[test]
fn counts_by_source_and_by_earlier_rule_split_into_passing_and_still_skipped() {
    let (r, gids) = run(&ReanalyzeOptions::default(), &sample());
    assert_eq!(gids, ["1", "3", "4"]);
    assert_eq!((r.examined, r.totals.would_pass, r.totals.still_skipped), (5, 3, 2));
    assert_eq!(r.totals.still_skipped_by.get("figma"), Some(&2));
    let inbox = &r.by_source["inbox"];
    assert_eq!((inbox.would_pass, inbox.still_skipped), (1, 1));
    let reports = &r.by_source["reports"];
    assert_eq!((reports.would_pass, reports.still_skipped), (2, 1));
    assert_eq!(r.by_rule["not_macos"].would_pass, 1);
    assert_eq!(r.by_rule["figma"].still_skipped_by["figma"], 1);
    assert_eq!(r.by_rule[TRIAGE].would_pass, 1);
    assert_eq!((r.by_rule[IMPORTED].would_pass, r.by_rule[IMPORTED].still_skipped), (1, 1));
    assert_eq!(r.looked_at, "skip");
    assert_eq!(r.sent_back, 0);
}

#[test]
fn a_plain_run_leaves_human_skips_alone_and_rule_human_takes_them() {
    let (r, gids) = run(&ReanalyzeOptions::default(), &sample());
    assert!(!gids.contains(&"6".to_string()), "a human's skip went back: {gids:?}");
    assert!(!r.by_rule.contains_key(HUMAN), "{:?}", r.by_rule);
    assert_eq!(r.human_skips_kept, 1);
    let no_triage = ReanalyzeOptions { include_triage_skips: false, ..Default::default() };
    assert!(!run(&no_triage, &sample()).1.contains(&"6".to_string()));

    let (r, gids) = run(&ReanalyzeOptions { rules: vec![HUMAN.into()], ..Default::default() }, &sample());
    assert_eq!(gids, ["6"]);
    assert_eq!((r.examined, r.human_skips_kept, r.by_rule[HUMAN].would_pass), (1, 0, 1));
    // Another rule named: the human skips are narrowed out, not "kept".
    let (r, _) = run(&ReanalyzeOptions { rules: vec![TRIAGE.into()], ..Default::default() }, &sample());
    assert_eq!(r.human_skips_kept, 0);
}

#[test]
fn source_rule_gid_and_triage_options_narrow() {
    let narrow = |opts: ReanalyzeOptions| run(&opts, &sample()).1;
    assert_eq!(
        narrow(ReanalyzeOptions { sources: vec!["reports".into()], ..Default::default() }),
        ["3", "4"]
    );
    assert_eq!(
        narrow(ReanalyzeOptions { rules: vec!["not_macos".into(), HUMAN.into()], ..Default::default() }),
        ["1", "6"]
    );
    assert_eq!(
        narrow(ReanalyzeOptions { tasks: vec![TaskGid::parse("3").unwrap()], ..Default::default() }),
        ["3"]
    );
    assert_eq!(narrow(ReanalyzeOptions { include_triage_skips: false, ..Default::default() }), ["1", "4"]);
    let (r, _) = run(&ReanalyzeOptions { sources: vec!["nowhere".into()], ..Default::default() }, &sample());
    assert_eq!(r.examined, 0);
}

#[test]
fn failed_takes_only_pending_tasks_given_up_on_without_the_filters() {
    let mut tasks = sample();
    for (k, t) in tasks.iter_mut().enumerate().take(5) {
        t.status = QueueStatus::Pending;
        t.analysis_attempts = k as i64; // 0, 1, 2, 3, 4
    }
    tasks.push(task("7", "inbox", "figma.com/z", None, SkippedBy::Imported));
    let opts = ReanalyzeOptions { failed: true, max_attempts: 3, ..Default::default() };
    let (r, gids) = run(&opts, &tasks);
    // Task 5 is a Figma task: the filters are not asked again. Tasks 6 and 7 are skipped, not pending.
    assert_eq!(gids, ["4", "5"]);
    assert_eq!(r.looked_at, "failed");
    assert_eq!(r.by_rule[super::GIVEN_UP].would_pass, 2);
}

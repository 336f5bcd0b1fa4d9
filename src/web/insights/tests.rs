//! The figures from hand-made rows: zero-filled days, cost per completed pull request, lead-time
//! buckets and percentiles, worker outcomes, GitHub points, the window's query string.

use chrono::{DateTime, NaiveDate, Utc};

use super::figures::*;
use super::views::{chart_views, duration};
use super::*;
use crate::store::{DayCost, DayFlow, GitHubHour, RunLead, WorkerEnds};

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, d).unwrap()
}

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

#[test]
fn the_window_is_7_30_or_90_days_and_says_why_not() {
    assert_eq!(window(None), Ok(30));
    assert_eq!(window(Some("")), Ok(30));
    assert_eq!(window(Some("7")), Ok(7));
    assert_eq!(window(Some("90")), Ok(90));
    for bad in ["8", "-7", "x", "1000000000000"] {
        let err = window(Some(bad)).unwrap_err();
        assert!(err.contains("7, 30 or 90") && err.contains(bad), "{err}");
    }
    assert_eq!(window_days(3, day(2)), [NaiveDate::from_ymd_opt(2026, 10, 31).unwrap(), day(1), day(2)]);
}

#[test]
fn every_day_is_shown_and_cost_is_divided_by_the_days_completions() {
    let days = window_days(3, day(3));
    let flows = flow_days(&days, &[DayFlow { day: day(2), intake: 4, completed: 2, ..Default::default() }]);
    assert_eq!(
        flows.iter().map(|f| (f.day, f.intake)).collect::<Vec<_>>(),
        [(day(1), 0), (day(2), 4), (day(3), 0)]
    );
    let costs = [
        DayCost { day: day(1), workers_usd: 1.5, triage_usd: 0.5 },
        DayCost { day: day(2), workers_usd: 3.0, triage_usd: 1.0 },
    ];
    let (per_day, total) = cost_days(&days, &costs, &flows);
    assert_eq!(per_day[0].per_completed_usd, None, "nothing completed on day 1");
    assert_eq!((per_day[1].total_usd, per_day[1].per_completed_usd), (4.0, Some(2.0)));
    assert_eq!((per_day[2].total_usd, per_day[2].completed), (0.0, 0));
    assert_eq!(total, CostTotal { total_usd: 6.0, completed: 2, per_completed_usd: Some(3.0) });
}

#[test]
fn lead_times_fall_in_buckets_with_nearest_rank_percentiles() {
    let since = at("2026-11-01T00:00:00Z");
    let lead = |id, approved: &str, pr: Option<&str>, done: Option<&str>| RunLead {
        run_id: id,
        approved_at: at(approved),
        pr_at: pr.map(at),
        completed_at: done.map(at),
    };
    let leads = [
        // 30 min to a PR, 5 h to complete.
        lead(1, "2026-11-02T10:00:00Z", Some("2026-11-02T10:30:00Z"), Some("2026-11-02T15:00:00Z")),
        // 2 h to a PR, not complete.
        lead(2, "2026-11-02T10:00:00Z", Some("2026-11-02T12:00:00Z"), None),
        // First PR before the window: only its completion (8 days after approval) counts.
        lead(3, "2026-10-25T00:00:00Z", Some("2026-10-31T00:00:00Z"), Some("2026-11-02T00:00:00Z")),
    ];
    let l = lead_times(&leads, since);
    let counts: Vec<(String, i64, i64)> =
        l.buckets.iter().map(|b| (b.label.clone(), b.to_pr, b.to_complete)).collect();
    assert_eq!(
        counts,
        [
            ("< 1 h".to_string(), 1, 0),
            ("1–4 h".into(), 1, 0),
            ("4–12 h".into(), 0, 1),
            ("12 h–1 d".into(), 0, 0),
            ("1–2 d".into(), 0, 0),
            ("2–4 d".into(), 0, 0),
            ("4–7 d".into(), 0, 0),
            ("≥ 7 d".into(), 0, 1),
        ]
    );
    assert_eq!(l.to_pr, Spread { count: 2, p50_hours: Some(0.5), p90_hours: Some(2.0) });
    assert_eq!(l.to_complete, Spread { count: 2, p50_hours: Some(5.0), p90_hours: Some(192.0) });
    assert_eq!(spread(vec![]), Spread::default());
    let ten: Vec<f64> = (1..=10).map(f64::from).collect();
    assert_eq!(spread(ten), Spread { count: 10, p50_hours: Some(5.0), p90_hours: Some(9.0) });
    assert_eq!(
        (duration(0.5), duration(5.0), duration(192.0)),
        ("30 min".into(), "5.0 h".into(), "8.0 d".into())
    );
}

#[test]
fn worker_ends_are_grouped_by_kind_and_class() {
    let end = |kind: &str, reason: &str, count| WorkerEnds {
        kind: kind.into(),
        end_reason: reason.into(),
        count,
        ..Default::default()
    };
    let o = outcomes(&[
        end("fix_ci", "failed", 2),
        end("fix_ci", "finished", 5),
        end("queued", "crashed", 1),
        end("queued", "finished", 3),
        end("queued", "hard_timeout", 1),
        end("queued", "idle_timeout", 2),
        end("queued", "host_lost", 1),
        end("queued", "a_reason_of_a_newer_build", 4),
    ]);
    let kind = |k: &str, [succeeded, failed, stuck, interrupted]: [i64; 4]| KindOutcomes {
        kind: k.into(),
        succeeded,
        failed,
        stuck,
        interrupted,
        ..Default::default()
    };
    assert_eq!(o, [kind("fix_ci", [5, 2, 0, 0]), kind("queued", [3, 1, 3, 5])]);
}

/// Issue 35, item 8: 24 of 26 workers were "succeeded" while a run was abandoned for no progress. A
/// worker that finished without changing anything made no progress; a review that failed is a failed
/// review; a review is a success only when it passed.
#[test]
fn finished_workers_count_as_what_they_came_to() {
    let end = |kind: &str, verdict: Option<&str>, no_progress, count| WorkerEnds {
        kind: kind.into(),
        end_reason: "finished".into(),
        verdict: verdict.map(String::from),
        no_progress,
        count,
    };
    let o = outcomes(&[
        end("pr_review", None, false, 1),
        end("pr_review", Some("fail"), false, 4),
        end("pr_review", Some("pass"), false, 2),
        end("queued", None, false, 3),
        end("queued", None, true, 6),
    ]);
    let review = &o[0];
    assert_eq!(
        (review.succeeded, review.review_failed, review.no_progress),
        (2, 4, 1),
        "a review passed, failed, or gave no verdict"
    );
    let queued = &o[1];
    assert_eq!((queued.succeeded, queued.no_progress, queued.total()), (3, 6, 9));
}

#[test]
fn github_points_used_are_the_budget_less_the_fewest_left() {
    let hour = |reset: &str, left, limit| GitHubHour {
        resource: "graphql".into(),
        reset_at: at(reset),
        lowest_remaining: left,
        hour_limit: limit,
    };
    let p = points_hours(&[
        hour("2026-11-02T11:00:00Z", 3800, None),
        hour("2026-11-02T12:00:00Z", 9000, Some(12500)),
    ]);
    assert_eq!(p[0], PointsHour { from: at("2026-11-02T10:00:00Z"), used: 1200, limit: 5000 });
    assert_eq!(p[1], PointsHour { from: at("2026-11-02T11:00:00Z"), used: 3500, limit: 12500 });
}

#[test]
fn each_view_has_a_drawing_a_caption_and_a_table_of_the_same_numbers() {
    let days = window_days(2, day(2));
    let flow = flow_days(
        &days,
        &[DayFlow { day: day(2), intake: 7, approved: 3, completed: 2, ..Default::default() }],
    );
    let (cost, cost_total) =
        cost_days(&days, &[DayCost { day: day(2), workers_usd: 5.0, triage_usd: 1.0 }], &flow);
    let i = Insights {
        days: 2,
        since: at("2026-11-01T00:00:00Z"),
        flow,
        cost,
        cost_total,
        lead_times: lead_times(&[], at("2026-11-01T00:00:00Z")),
        workers: vec![],
        landed: vec![],
        slices: vec![],
        revert_window_days: 14,
        expensive_failures: failures::Failures { threshold_usd: 5.0, runs: vec![] },
        github: GitHubPoints { configured: false, hours: vec![], reserve: 1000 },
        words: crate::domain::ChangeWords::PULL_REQUEST,
    };
    let views = chart_views(&i);
    assert_eq!(views.iter().map(|v| v.id).collect::<Vec<_>>(), ["flow", "cost", "lead", "workers", "github"]);
    for v in &views {
        let first = &v.panels[0].svg;
        let id = if v.id == "flow" { "flow-in" } else { v.id };
        assert!(first.contains(&format!(r#"aria-labelledby="{id}-title {id}-desc""#)), "{}", v.id);
        assert!(!v.table.caption.is_empty() && !v.table.columns.is_empty());
    }
    assert_eq!(views[0].table.rows[1], ["2026-11-02", "7", "3", "0", "2", "0"]);
    assert_eq!(
        views[1].caption,
        "$3.00 per completed pull request: $6.00 spent over 2 days, 2 pull requests completed."
    );
    assert_eq!(views[1].table.rows.last().unwrap()[5], "$3.00");
    assert!(
        views[2].caption.starts_with("From approval: no run reached a pull request"),
        "{}",
        views[2].caption
    );
    assert_eq!(views[3].caption, "No worker ended in the last 2 days.");
    assert_eq!(views[4].caption, "This configuration does not use GitHub.");
}

/// The drawn heights of the bars of one series (`class`) in an SVG, in drawing order.
fn bar_heights(svg: &str, class: &str) -> Vec<f64> {
    svg.split(&format!(r#"<rect class="{class}"#))
        .skip(1)
        .filter_map(|r| r.split("height=\"").nth(1)?.split('"').next()?.parse().ok())
        .collect()
}

fn insights_of(flow: Vec<DayFlow>, workers: Vec<KindOutcomes>) -> Insights {
    let days = flow.iter().map(|f| f.day).collect::<Vec<_>>();
    let (cost, cost_total) = cost_days(&days, &[], &flow);
    Insights {
        days: u32::try_from(days.len()).unwrap(),
        since: at("2026-11-01T00:00:00Z"),
        flow,
        cost,
        cost_total,
        lead_times: lead_times(&[], at("2026-11-01T00:00:00Z")),
        workers,
        landed: vec![],
        slices: vec![],
        revert_window_days: 14,
        expensive_failures: failures::Failures { threshold_usd: 5.0, runs: vec![] },
        github: GitHubPoints { configured: false, hours: vec![], reserve: 1000 },
        words: crate::domain::ChangeWords::PULL_REQUEST,
    }
}

/// Issue 35, item 11: with a thousand tasks in a day and eight done, the work done drew as hairlines
/// under the intake's scale. In and out are two panels, each on its own scale.
#[test]
fn tasks_in_and_out_are_drawn_on_scales_of_their_own() {
    let flow = vec![
        DayFlow { day: day(1), intake: 1000, skipped: 400, approved: 10, completed: 8, abandoned: 2 },
        DayFlow { day: day(2), intake: 800, skipped: 300, approved: 5, completed: 4, abandoned: 1 },
    ];
    let views = chart_views(&insights_of(flow, vec![]));
    let panels = &views[0].panels;
    assert_eq!(panels.len(), 2, "in, then out");
    let names = |p: &views::Panel| p.legend.iter().map(|l| l.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&panels[0]), ["intake", "skipped"]);
    assert_eq!(names(&panels[1]), ["approved", "completed", "abandoned"]);
    assert!(panels.iter().all(|p| p.title.is_some()), "each panel says what it shows");
    // The plot is 206 px tall. Day 1's intake (1,000 of an axis to 1,000) and its 10 approvals (of an
    // axis to 10) both fill it; on one scale the approvals were 2 px.
    assert_eq!(bar_heights(&panels[0].svg, "s0")[0], 206.0);
    let approved = bar_heights(&panels[1].svg, "s3");
    assert_eq!(approved, [206.0, 103.0], "{}", panels[1].svg);
    assert!(bar_heights(&panels[1].svg, "s1")[0] > 150.0, "8 completed of an axis to 10");
}

/// Issue 35, item 11: stacked segments differed by hue alone. Their legend lists them in the order they
/// are stacked, top first, and says so; a chart side by side keeps its order and says nothing.
#[test]
fn a_stacked_legend_is_in_the_order_of_the_segments() {
    let workers = vec![KindOutcomes { kind: "queued".into(), succeeded: 3, failed: 1, ..Default::default() }];
    let views = chart_views(&insights_of(vec![DayFlow { day: day(1), ..Default::default() }], workers));
    let w = &views.iter().find(|v| v.id == "workers").unwrap().panels[0];
    let names: Vec<_> = w.legend.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["interrupted", "stuck", "failed", "review failed", "no progress", "succeeded"]);
    assert_eq!(w.legend_order, Some(views::STACK_ORDER));
    // Drawn bottom up: succeeded first, failed on top of it.
    let svg = &w.svg;
    assert!(svg.find("queued · succeeded").unwrap() < svg.find("queued · failed").unwrap());
    let lead = &views.iter().find(|v| v.id == "lead").unwrap().panels[0];
    assert_eq!(lead.legend_order, None);
    assert_eq!(lead.legend[0].name, "to pull request");
}

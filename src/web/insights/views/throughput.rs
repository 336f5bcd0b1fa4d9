//! The figures of the work's throughput: tasks in and out per day, and time from approval.

use super::super::Insights;
use super::{BLUE, ChartView, GREEN, GREY, PURPLE, RED, Table, chart, count, duration, panel, series, view};
use crate::web::charts::{Layout, Unit};
use crate::web::insights::figures::Spread;

/// Tasks in and out per day, in two panels over the same days, each on its own scale: the intake can
/// be a hundred times what is done in a day, and on one scale the work done was a row of hairlines.
pub(super) fn flow(i: &Insights) -> ChartView {
    let of =
        |f: fn(&crate::store::DayFlow) -> i64| -> Vec<f64> { i.flow.iter().map(|d| f(d) as f64).collect() };
    let sum = |f: fn(&crate::store::DayFlow) -> i64| i.flow.iter().map(f).sum::<i64>();
    let caption = format!(
        "Over {} days: {} in, {} approved, {} skipped; {} completed, {} abandoned.",
        i.days,
        count(sum(|d| d.intake), "task"),
        sum(|d| d.approved),
        sum(|d| d.skipped),
        count(sum(|d| d.completed), i.words.noun),
        count(sum(|d| d.abandoned), "run")
    );
    let days: Vec<String> = i.flow.iter().map(|d| d.day.format("%m-%d").to_string()).collect();
    let tasks_in = chart(
        "flow-in",
        "Tasks in per day: added and skipped",
        days.clone(),
        series(&["intake", "skipped"], &[BLUE, GREY], vec![of(|d| d.intake), of(|d| d.skipped)]),
        Layout::Grouped,
        Unit::Count,
    );
    let work_out = chart(
        "flow-out",
        "Work out per day: approved, completed and abandoned",
        days,
        series(
            &["approved", "completed", "abandoned"],
            &[PURPLE, GREEN, RED],
            vec![of(|d| d.approved), of(|d| d.completed), of(|d| d.abandoned)],
        ),
        Layout::Grouped,
        Unit::Count,
    );
    let table = Table {
        caption: "Tasks in and out per day (UTC)".into(),
        columns: ["Day", "Intake", "Approved", "Skipped", "Completed", "Abandoned"]
            .map(String::from)
            .to_vec(),
        rows: i
            .flow
            .iter()
            .map(|d| {
                let n = [d.intake, d.approved, d.skipped, d.completed, d.abandoned];
                std::iter::once(d.day.to_string()).chain(n.iter().map(|v| v.to_string())).collect()
            })
            .collect(),
    };
    ChartView {
        id: "flow",
        heading: "Tasks in and out".into(),
        caption,
        panels: vec![
            panel(Some("In: tasks added and skipped".into()), tasks_in),
            panel(Some("Out: approved, completed and abandoned (a scale of its own)".into()), work_out),
        ],
        table,
    }
}

pub(super) fn lead(i: &Insights) -> ChartView {
    let l = &i.lead_times;
    let say = |what: &str, s: &Spread| match (s.p50_hours, s.p90_hours) {
        (Some(p50), Some(p90)) => {
            format!(
                "to {what}, median {}, 90% within {} ({})",
                duration(p50),
                duration(p90),
                count(s.count as i64, "run")
            )
        }
        _ => format!("no run reached {what}"),
    };
    let caption = format!(
        "From approval: {}; {}.",
        say(&format!("a {}", i.words.noun), &l.to_pr),
        say("complete", &l.to_complete)
    );
    let labels = l.buckets.iter().map(|b| b.label.clone()).collect();
    let columns = vec![
        l.buckets.iter().map(|b| b.to_pr as f64).collect(),
        l.buckets.iter().map(|b| b.to_complete as f64).collect(),
    ];
    let to_change = format!("to {}", i.words.noun);
    let s = series(&[to_change.as_str(), "to complete"], &[BLUE, GREEN], columns);
    let c =
        chart("lead", "Time from approval, in runs per duration", labels, s, Layout::Grouped, Unit::Count);
    let mut rows: Vec<Vec<String>> = l
        .buckets
        .iter()
        .map(|b| vec![b.label.clone(), b.to_pr.to_string(), b.to_complete.to_string()])
        .collect();
    let p = |v: Option<f64>| v.map_or_else(|| "–".into(), duration);
    rows.push(vec!["Median (p50)".into(), p(l.to_pr.p50_hours), p(l.to_complete.p50_hours)]);
    rows.push(vec!["90th percentile (p90)".into(), p(l.to_pr.p90_hours), p(l.to_complete.p90_hours)]);
    let table = Table {
        caption: format!("Runs by time from approval to their first {} and to complete", i.words.noun),
        columns: vec!["Time from approval".into(), format!("To {}", i.words.noun), "To complete".into()],
        rows,
    };
    view("lead", c, "Time from approval", caption, table)
}

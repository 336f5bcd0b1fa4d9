//! The figures of what executor spends: dollars per day and per completed pull request, how workers
//! end, GitHub points per hour.

use super::super::{GITHUB_HOURS, Insights};
use super::{BLUE, ChartView, GREEN, GREY, ORANGE, PURPLE, RED, Table, chart, count, money, series, view};
use crate::web::charts::{Layout, Reference, Unit};
use crate::web::insights::figures::{DEFAULT_HOURLY_POINTS, KindOutcomes};

pub(super) fn cost(i: &Insights) -> ChartView {
    let t = &i.cost_total;
    let caption = match t.per_completed_usd {
        Some(per) => format!(
            "{} per completed {}: {} spent over {} days, {} completed.",
            money(per),
            i.words.noun,
            money(t.total_usd),
            i.days,
            count(t.completed, i.words.noun)
        ),
        None => {
            format!("{} spent over {} days; no {} completed yet.", money(t.total_usd), i.days, i.words.noun)
        }
    };
    let columns =
        vec![i.cost.iter().map(|d| d.workers_usd).collect(), i.cost.iter().map(|d| d.triage_usd).collect()];
    let days = i.cost.iter().map(|d| d.day.format("%m-%d").to_string()).collect();
    let s = series(&["workers", "triage"], &[BLUE, PURPLE], columns);
    let c = chart("cost", "Cost per day", days, s, Layout::Stacked, Unit::Dollars);
    let mut rows: Vec<Vec<String>> = i
        .cost
        .iter()
        .map(|d| {
            vec![
                d.day.to_string(),
                money(d.workers_usd),
                money(d.triage_usd),
                money(d.total_usd),
                d.completed.to_string(),
                d.per_completed_usd.map_or_else(|| "–".into(), money),
            ]
        })
        .collect();
    rows.push(vec![
        format!("All {} days", i.days),
        money(i.cost.iter().map(|d| d.workers_usd).sum()),
        money(i.cost.iter().map(|d| d.triage_usd).sum()),
        money(t.total_usd),
        t.completed.to_string(),
        t.per_completed_usd.map_or_else(|| "–".into(), money),
    ]);
    let table = Table {
        caption: format!("Dollars spent per day (UTC) and per completed {}", i.words.noun),
        columns: ["Day", "Workers", "Triage", "Total"]
            .map(String::from)
            .into_iter()
            .chain([format!("Completed {}s", i.words.short), format!("Per completed {}", i.words.short)])
            .collect(),
        rows,
    };
    view("cost", c, "Cost", caption, table)
}

pub(super) fn workers(i: &Insights) -> ChartView {
    let w = &i.workers;
    let total: i64 = w.iter().map(KindOutcomes::total).sum();
    let sum = |f: fn(&KindOutcomes) -> i64| -> i64 { w.iter().map(f).sum() };
    let succeeded = sum(|k| k.succeeded);
    let caption = if total == 0 {
        format!("No worker ended in the last {} days.", i.days)
    } else {
        format!(
            "{succeeded} of {total} workers succeeded ({:.0}%); {} made no progress, {} reviews failed, {} got stuck.",
            100.0 * succeeded as f64 / total as f64,
            sum(|k| k.no_progress),
            sum(|k| k.review_failed),
            sum(|k| k.stuck),
        )
    };
    let of = |f: fn(&KindOutcomes) -> i64| w.iter().map(|k| f(k) as f64).collect();
    let columns = vec![
        of(|k| k.succeeded),
        of(|k| k.no_progress),
        of(|k| k.review_failed),
        of(|k| k.failed),
        of(|k| k.stuck),
        of(|k| k.interrupted),
    ];
    let s = series(
        &["succeeded", "no progress", "review failed", "failed", "stuck", "interrupted"],
        &[GREEN, BLUE, PURPLE, RED, ORANGE, GREY],
        columns,
    );
    let kinds = w.iter().map(|k| k.kind.clone()).collect();
    let c = chart("workers", "How workers ended, by kind", kinds, s, Layout::Stacked, Unit::Count);
    let rows = w
        .iter()
        .map(|k| {
            let n = k.total();
            let rate =
                if n > 0 { format!("{:.0}%", 100.0 * k.succeeded as f64 / n as f64) } else { "–".into() };
            vec![
                k.kind.clone(),
                k.succeeded.to_string(),
                k.no_progress.to_string(),
                k.review_failed.to_string(),
                k.failed.to_string(),
                k.stuck.to_string(),
                k.interrupted.to_string(),
                rate,
            ]
        })
        .collect();
    let table = Table {
        caption: "Ended worker sessions by kind and what they came to".into(),
        columns: [
            "Kind",
            "Succeeded",
            "No progress",
            "Review failed",
            "Failed",
            "Stuck",
            "Interrupted",
            "Success rate",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };
    view("workers", c, "Workers", caption, table)
}

pub(super) fn github(i: &Insights) -> ChartView {
    let g = &i.github;
    let limit = g.hours.last().map_or(DEFAULT_HOURLY_POINTS, |h| h.limit);
    let busiest = g.hours.iter().max_by_key(|h| h.used);
    let caption = match (g.configured, busiest) {
        (false, None) => "This configuration does not use GitHub.".to_string(),
        (true, None) => format!(
            "No GitHub answer recorded in the last {} hours: the runner records the points left each time it asks GitHub about pull requests.",
            GITHUB_HOURS
        ),
        (_, Some(h)) => format!(
            "Busiest hour: {} of {} points ({:.0}%), the agents' own use included.",
            h.used,
            h.limit,
            100.0 * h.used as f64 / h.limit.max(1) as f64
        ),
    };
    let hours = g.hours.iter().map(|h| h.from.format("%H:00").to_string()).collect();
    let used = vec![g.hours.iter().map(|h| h.used as f64).collect()];
    let mut c = chart(
        "github",
        "GitHub points used per hour",
        hours,
        series(&["points used"], &[BLUE], used),
        Layout::Stacked,
        Unit::Count,
    );
    c.references = vec![
        Reference { label: "hourly budget".into(), value: limit as f64 },
        Reference { label: "executor waits above".into(), value: (limit - g.reserve).max(0) as f64 },
    ];
    let table = Table {
        caption: format!("GitHub GraphQL points used per hour (UTC), last {} hours", GITHUB_HOURS),
        columns: ["Hour from (UTC)", "Points used", "Hourly budget"].map(String::from).to_vec(),
        rows: g
            .hours
            .iter()
            .map(|h| {
                vec![h.from.format("%Y-%m-%d %H:%M").to_string(), h.used.to_string(), h.limit.to_string()]
            })
            .collect(),
    };
    view("github", c, "GitHub points", caption, table)
}

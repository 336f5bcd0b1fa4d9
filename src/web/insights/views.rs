//! The insights as the page shows them: for each figure a heading, a one-sentence answer, the SVG
//! chart, its legend and a table of the same numbers. Pure: the SVG comes from `web::charts`, which
//! escapes it; every other text is escaped by the template.

use super::Insights;
use crate::web::charts::{self, BarChart, Layout, Reference, Series, Unit};

/// One figure of the page.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChartView {
    /// The element id (and the SVG's label ids' prefix); a literal of this file.
    pub id: &'static str,
    pub heading: String,
    /// The answer in one sentence, the figure's caption.
    pub caption: String,
    /// The drawing, already escaped by `charts`.
    pub svg: String,
    pub legend: Vec<Legend>,
    pub table: Table,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Legend {
    /// The series' CSS class (`s0`…), the same as its bars'.
    pub class: String,
    pub name: String,
}

/// A data table: a caption, column headings, and rows headed by their first cell.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Table {
    pub caption: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Every figure, in the page's order.
pub fn chart_views(i: &Insights) -> Vec<ChartView> {
    vec![flow(i), cost(i), lead(i), workers(i), github(i)]
}

/// Named series coloured in `colours` order (indexes into the palette `s0`…`s5`).
fn series(names: &[&str], colours: &[usize], columns: Vec<Vec<f64>>) -> Vec<Series> {
    names
        .iter()
        .zip(colours)
        .zip(columns)
        .map(|((n, colour), values)| Series { name: n.to_string(), values, colour: *colour })
        .collect()
}

/// The palette's meanings (see the chart colours in `app.css`).
const BLUE: usize = 0;
const GREEN: usize = 1;
const ORANGE: usize = 2;
const PURPLE: usize = 3;
const RED: usize = 4;
const GREY: usize = 5;

fn view(id: &'static str, chart: BarChart, heading: &str, caption: String, table: Table) -> ChartView {
    let series = chart.series.iter().map(|s| Legend { class: s.class(), name: s.name.clone() });
    let references = chart.references.iter().map(|r| Legend { class: "ref".into(), name: r.label.clone() });
    let legend = series.chain(references).collect();
    ChartView { id, heading: heading.into(), caption, svg: charts::render(&chart), legend, table }
}

fn chart(
    id: &'static str,
    title: &str,
    categories: Vec<String>,
    series: Vec<Series>,
    layout: Layout,
    unit: Unit,
) -> BarChart {
    BarChart {
        id: id.into(),
        title: title.into(),
        description: format!("{title}. The numbers are in the table below the chart."),
        categories,
        series,
        layout,
        unit,
        references: Vec::new(),
    }
}

/// "1 run", "2 runs".
fn count(n: i64, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

fn money(v: f64) -> String {
    format!("${v:.2}")
}

/// Hours as people say them: minutes under an hour, hours under two days, then days.
pub fn duration(hours: f64) -> String {
    if hours < 1.0 {
        format!("{:.0} min", hours * 60.0)
    } else if hours < 48.0 {
        format!("{hours:.1} h")
    } else {
        format!("{:.1} d", hours / 24.0)
    }
}

fn flow(i: &Insights) -> ChartView {
    const NAMES: [&str; 5] = ["intake", "approved", "skipped", "completed", "abandoned"];
    let columns = vec![
        i.flow.iter().map(|d| d.intake as f64).collect(),
        i.flow.iter().map(|d| d.approved as f64).collect(),
        i.flow.iter().map(|d| d.skipped as f64).collect(),
        i.flow.iter().map(|d| d.completed as f64).collect(),
        i.flow.iter().map(|d| d.abandoned as f64).collect(),
    ];
    let sum = |f: fn(&crate::store::DayFlow) -> i64| i.flow.iter().map(f).sum::<i64>();
    let caption = format!(
        "Over {} days: {} in, {} approved, {} skipped; {} completed, {} abandoned.",
        i.days,
        count(sum(|d| d.intake), "task"),
        sum(|d| d.approved),
        sum(|d| d.skipped),
        count(sum(|d| d.completed), "pull request"),
        count(sum(|d| d.abandoned), "run")
    );
    let days = i.flow.iter().map(|d| d.day.format("%m-%d").to_string()).collect();
    let c = chart(
        "flow",
        "Tasks in and out per day",
        days,
        series(&NAMES, &[BLUE, PURPLE, GREY, GREEN, RED], columns),
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
    view("flow", c, "Tasks in and out", caption, table)
}

fn cost(i: &Insights) -> ChartView {
    let t = &i.cost_total;
    let caption = match t.per_completed_usd {
        Some(per) => format!(
            "{} per completed pull request: {} spent over {} days, {} completed.",
            money(per),
            money(t.total_usd),
            i.days,
            count(t.completed, "pull request")
        ),
        None => format!("{} spent over {} days; no pull request completed yet.", money(t.total_usd), i.days),
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
        caption: "Dollars spent per day (UTC) and per completed pull request".into(),
        columns: ["Day", "Workers", "Triage", "Total", "Completed PRs", "Per completed PR"]
            .map(String::from)
            .to_vec(),
        rows,
    };
    view("cost", c, "Cost", caption, table)
}

fn lead(i: &Insights) -> ChartView {
    let l = &i.lead_times;
    let say = |what: &str, s: &super::figures::Spread| match (s.p50_hours, s.p90_hours) {
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
    let caption =
        format!("From approval: {}; {}.", say("a pull request", &l.to_pr), say("complete", &l.to_complete));
    let labels = l.buckets.iter().map(|b| b.label.clone()).collect();
    let columns = vec![
        l.buckets.iter().map(|b| b.to_pr as f64).collect(),
        l.buckets.iter().map(|b| b.to_complete as f64).collect(),
    ];
    let s = series(&["to pull request", "to complete"], &[BLUE, GREEN], columns);
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
        caption: "Runs by time from approval to their first pull request and to complete".into(),
        columns: ["Time from approval", "To pull request", "To complete"].map(String::from).to_vec(),
        rows,
    };
    view("lead", c, "Time from approval", caption, table)
}

fn workers(i: &Insights) -> ChartView {
    let w = &i.workers;
    let total: i64 = w.iter().map(|k| k.succeeded + k.failed + k.stuck + k.interrupted).sum();
    let succeeded: i64 = w.iter().map(|k| k.succeeded).sum();
    let stuck: i64 = w.iter().map(|k| k.stuck).sum();
    let caption = if total == 0 {
        format!("No worker ended in the last {} days.", i.days)
    } else {
        format!(
            "{} of {total} workers succeeded ({:.0}%); {stuck} got stuck.",
            succeeded,
            100.0 * succeeded as f64 / total as f64
        )
    };
    let columns = vec![
        w.iter().map(|k| k.succeeded as f64).collect(),
        w.iter().map(|k| k.failed as f64).collect(),
        w.iter().map(|k| k.stuck as f64).collect(),
        w.iter().map(|k| k.interrupted as f64).collect(),
    ];
    let s = series(&["succeeded", "failed", "stuck", "interrupted"], &[GREEN, RED, ORANGE, GREY], columns);
    let kinds = w.iter().map(|k| k.kind.clone()).collect();
    let c = chart("workers", "How workers ended, by kind", kinds, s, Layout::Stacked, Unit::Count);
    let rows = w
        .iter()
        .map(|k| {
            let n = k.succeeded + k.failed + k.stuck + k.interrupted;
            let rate =
                if n > 0 { format!("{:.0}%", 100.0 * k.succeeded as f64 / n as f64) } else { "–".into() };
            vec![
                k.kind.clone(),
                k.succeeded.to_string(),
                k.failed.to_string(),
                k.stuck.to_string(),
                k.interrupted.to_string(),
                rate,
            ]
        })
        .collect();
    let table = Table {
        caption: "Ended worker sessions by kind and how they ended".into(),
        columns: ["Kind", "Succeeded", "Failed", "Stuck", "Interrupted", "Success rate"]
            .map(String::from)
            .to_vec(),
        rows,
    };
    view("workers", c, "Workers", caption, table)
}

fn github(i: &Insights) -> ChartView {
    let g = &i.github;
    let limit = g.hours.last().map_or(super::figures::DEFAULT_HOURLY_POINTS, |h| h.limit);
    let busiest = g.hours.iter().max_by_key(|h| h.used);
    let caption = match (g.configured, busiest) {
        (false, None) => "This configuration does not use GitHub.".to_string(),
        (true, None) => format!(
            "No GitHub answer recorded in the last {} hours: the runner records the points left each time it asks GitHub about pull requests.",
            super::GITHUB_HOURS
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
        caption: format!("GitHub GraphQL points used per hour (UTC), last {} hours", super::GITHUB_HOURS),
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

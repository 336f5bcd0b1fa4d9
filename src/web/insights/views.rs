//! The insights as the page shows them: for each figure a heading, a one-sentence answer, the SVG
//! chart, its legend and a table of the same numbers. Pure: the SVG comes from `web::charts`, which
//! escapes it; every other text is escaped by the template.

mod spend;
mod throughput;

use super::Insights;
use crate::web::charts::{self, BarChart, Layout, Series, Unit};

/// One figure of the page.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChartView {
    /// The element id (and the SVG's label ids' prefix); a literal of this file.
    pub id: &'static str,
    pub heading: String,
    /// The answer in one sentence, the figure's caption.
    pub caption: String,
    /// One drawing, or several over the same categories, each on a scale of its own.
    pub panels: Vec<Panel>,
    pub table: Table,
}

/// One drawing of a figure, with its legend.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Panel {
    /// Shown above the drawing when a figure has several.
    pub title: Option<String>,
    /// The drawing, already escaped by `charts`.
    pub svg: String,
    pub legend: Vec<Legend>,
    /// Said before a stacked chart's legend, whose entries are in the order of the segments, top first,
    /// so that each is found by its place as well as by its colour.
    pub legend_order: Option<&'static str>,
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
    vec![throughput::flow(i), spend::cost(i), throughput::lead(i), spend::workers(i), spend::github(i)]
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

/// What a stacked chart's legend says first.
pub const STACK_ORDER: &str = "Top of each bar first:";

fn view(id: &'static str, chart: BarChart, heading: &str, caption: String, table: Table) -> ChartView {
    ChartView { id, heading: heading.into(), caption, panels: vec![panel(None, chart)], table }
}

/// `chart` drawn, with its legend: a stacked chart's series top segment first, as drawn.
fn panel(title: Option<String>, chart: BarChart) -> Panel {
    let stacked = chart.layout == Layout::Stacked && chart.series.len() > 1;
    let mut legend: Vec<Legend> =
        chart.series.iter().map(|s| Legend { class: s.class(), name: s.name.clone() }).collect();
    if stacked {
        legend.reverse();
    }
    legend.extend(chart.references.iter().map(|r| Legend { class: "ref".into(), name: r.label.clone() }));
    let legend_order = stacked.then_some(STACK_ORDER);
    Panel { title, svg: charts::render(&chart), legend, legend_order }
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

//! The bar chart: a value axis with round ticks, one band per category, its series side by side or
//! stacked, reference lines across, and a tooltip (`<title>`) on every bar. The SVG scales to its
//! container's width (a `viewBox`, no fixed size), so one drawing serves a desktop and a phone.

use std::fmt::Write as _;

use super::{BarChart, Layout, Scale, drawable, escape, format_value};

/// The drawing's coordinate space; CSS sets the shown size.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 260.0;
/// Room for the value labels on the left, the category labels below.
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;
/// At most this many category labels under the axis; the others are in the table and the tooltips.
const MAX_LABELS: usize = 8;

/// The chart as an `<svg>` element with `role="img"`, a `<title>` and a `<desc>` that label it.
pub fn render(chart: &BarChart) -> String {
    let id = escape(&chart.id);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="{id}-title {id}-desc" xmlns="http://www.w3.org/2000/svg">"#
    );
    let _ = write!(svg, r#"<title id="{id}-title">{}</title>"#, escape(&chart.title));
    let _ = write!(svg, r#"<desc id="{id}-desc">{}</desc>"#, escape(&chart.description));

    let totals = category_totals(chart);
    let biggest = totals.iter().copied().fold(0.0, f64::max);
    let reference_max = chart.references.iter().map(|r| drawable(r.value)).fold(0.0, f64::max);
    let scale = Scale::for_max(biggest.max(reference_max), chart.unit);
    axes(&mut svg, chart, &scale);
    if biggest == 0.0 {
        let _ = write!(
            svg,
            r#"<text class="empty" x="{}" y="{}" text-anchor="middle">No data in this window</text>"#,
            LEFT + plot_width() / 2.0,
            TOP + plot_height() / 2.0
        );
    } else {
        bars(&mut svg, chart, &scale);
    }
    references(&mut svg, chart, &scale);
    svg.push_str("</svg>");
    svg
}

fn plot_width() -> f64 {
    WIDTH - LEFT - RIGHT
}

fn plot_height() -> f64 {
    HEIGHT - TOP - BOTTOM
}

/// The y coordinate of value `v`.
fn y_of(scale: &Scale, v: f64) -> f64 {
    TOP + plot_height() * (1.0 - scale.fraction(v))
}

/// The height of each category's tallest drawing: the sum when stacked, the largest series otherwise.
fn category_totals(chart: &BarChart) -> Vec<f64> {
    (0..chart.categories.len())
        .map(|i| {
            let values = chart.series.iter().map(|s| drawable(s.values.get(i).copied().unwrap_or(0.0)));
            match chart.layout {
                Layout::Stacked => values.sum(),
                Layout::Grouped => values.fold(0.0, f64::max),
            }
        })
        .collect()
}

/// Grid lines and value labels at each tick, the base line, and a thinned row of category labels.
fn axes(svg: &mut String, chart: &BarChart, scale: &Scale) {
    let right = LEFT + plot_width();
    for tick in scale.ticks() {
        let y = y_of(scale, tick);
        let _ = write!(svg, r#"<line class="grid" x1="{LEFT}" x2="{right}" y1="{y:.1}" y2="{y:.1}"/>"#);
        let _ = write!(
            svg,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            y + 4.0,
            escape(&format_value(tick, chart.unit))
        );
    }
    let base = TOP + plot_height();
    let _ = write!(svg, r#"<line class="axis" x1="{LEFT}" x2="{right}" y1="{base}" y2="{base}"/>"#);
    let n = chart.categories.len();
    if n == 0 {
        return;
    }
    let every = n.div_ceil(MAX_LABELS);
    let band = plot_width() / n as f64;
    for (i, label) in chart.categories.iter().enumerate() {
        // The last category is always labelled: it is the one people look for (today, the slowest).
        if i % every != 0 && i != n - 1 {
            continue;
        }
        if i != n - 1 && n - 1 - i < every {
            continue; // too close to the last label: they would overlap
        }
        let x = LEFT + band * (i as f64 + 0.5);
        let _ = write!(
            svg,
            r#"<text class="label" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            base + 18.0,
            escape(label)
        );
    }
}

/// Every non-zero value as a rectangle with its tooltip.
fn bars(svg: &mut String, chart: &BarChart, scale: &Scale) {
    let n = chart.categories.len();
    let band = plot_width() / n as f64;
    let series = chart.series.len().max(1);
    for (i, category) in chart.categories.iter().enumerate() {
        let left = LEFT + band * i as f64;
        let mut stacked = 0.0;
        for (s, serie) in chart.series.iter().enumerate() {
            let v = drawable(serie.values.get(i).copied().unwrap_or(0.0));
            let (x, width, low) = match chart.layout {
                Layout::Stacked => (left + band * 0.15, band * 0.7, stacked),
                Layout::Grouped => {
                    let width = band * 0.8 / series as f64;
                    (left + band * 0.1 + width * s as f64, width, 0.0)
                }
            };
            stacked += v;
            if v == 0.0 {
                continue;
            }
            let (y_top, y_low) = (y_of(scale, low + v), y_of(scale, low));
            // A value too small for a pixel still shows as a hairline.
            let height = (y_low - y_top).max(0.5);
            let _ = write!(
                svg,
                r#"<rect class="{}" x="{x:.2}" y="{:.2}" width="{:.2}" height="{height:.2}"><title>{} · {}: {}</title></rect>"#,
                serie.class(),
                y_low - height,
                (width - 0.5).max(0.5),
                escape(category),
                escape(&serie.name),
                escape(&format_value(v, chart.unit)),
            );
        }
    }
}

/// Each reference as a dashed line across the plot, labelled at its right end.
fn references(svg: &mut String, chart: &BarChart, scale: &Scale) {
    let right = LEFT + plot_width();
    for r in &chart.references {
        let y = y_of(scale, r.value);
        let _ = write!(svg, r#"<line class="ref" x1="{LEFT}" x2="{right}" y1="{y:.1}" y2="{y:.1}"/>"#);
        let _ = write!(
            svg,
            r#"<text class="ref-label" x="{:.1}" y="{:.1}" text-anchor="end">{}: {}</text>"#,
            right - 2.0,
            y - 4.0,
            escape(&r.label),
            escape(&format_value(r.value, chart.unit))
        );
    }
}

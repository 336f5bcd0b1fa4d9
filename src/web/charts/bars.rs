//! The bar chart: a value axis with round ticks, one band per category, its series side by side or
//! stacked, reference lines across, and a tooltip (`<title>`) on every bar.
//!
//! The SVG is as wide as its container and a fixed number of pixels tall, without a `viewBox`: every
//! x is a percentage of the width and every y a pixel, so the text keeps its CSS size (11 px) on a
//! phone. (Scaled by a `viewBox` 720 units wide, the axis text of a chart 400 px wide came out ~5 px.)

use std::fmt::Write as _;

use super::{BarChart, Layout, Scale, drawable, escape, format_value};

/// The left and right margins, in percent of the width: room for the value labels on the left.
const LEFT: f64 = 12.0;
const RIGHT: f64 = 2.0;
/// The plot's height and the room above and below it, in pixels.
const PLOT_HEIGHT: f64 = 206.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;
/// At most this many category labels under the axis; the others are in the table and the tooltips.
const MAX_LABELS: usize = 8;
/// The narrowest chart the labels must fit (a phone's, in pixels), and the width of a character of
/// the 11 px axis text, generously: category labels wider than their band there are drawn slanted.
const NARROW_PX: f64 = 320.0;
const CHAR_PX: f64 = 6.5;
/// A slanted label's slope: it takes this share of its length in height.
const SLANT_SIN: f64 = 0.58;

/// The chart as an `<svg>` element with `role="img"`, a `<title>` and a `<desc>` that label it.
pub fn render(chart: &BarChart) -> String {
    let id = escape(&chart.id);
    let frame = Frame::of(chart);
    let mut svg = String::new();
    let slanted = if frame.slanted { " slanted" } else { "" };
    let _ = write!(
        svg,
        r#"<svg class="chart{slanted}" width="100%" height="{}" role="img" aria-labelledby="{id}-title {id}-desc" xmlns="http://www.w3.org/2000/svg">"#,
        frame.height()
    );
    let _ = write!(svg, r#"<title id="{id}-title">{}</title>"#, escape(&chart.title));
    let _ = write!(svg, r#"<desc id="{id}-desc">{}</desc>"#, escape(&chart.description));

    let totals = category_totals(chart);
    let biggest = totals.iter().copied().fold(0.0, f64::max);
    let reference_max = chart.references.iter().map(|r| drawable(r.value)).fold(0.0, f64::max);
    let scale = Scale::for_max(biggest.max(reference_max), chart.unit);
    axes(&mut svg, chart, &scale, &frame);
    if biggest == 0.0 {
        let _ = write!(
            svg,
            r#"<text class="empty" x="{:.3}%" y="{}" text-anchor="middle">No data in this window</text>"#,
            LEFT + plot_width() / 2.0,
            TOP + PLOT_HEIGHT / 2.0
        );
    } else {
        bars(&mut svg, chart, &scale);
    }
    references(&mut svg, chart, &scale);
    svg.push_str("</svg>");
    svg
}

/// How the category labels are drawn, which sets the room below the plot.
struct Frame {
    /// Every how many categories one is labelled.
    every: usize,
    /// The labels are drawn slanted, as they would overlap flat on a phone.
    slanted: bool,
    /// The longest label, in characters.
    longest: usize,
}

impl Frame {
    fn of(chart: &BarChart) -> Frame {
        let n = chart.categories.len();
        let every = n.div_ceil(MAX_LABELS).max(1);
        let shown = n.div_ceil(every).max(1);
        let longest = chart.categories.iter().map(|c| c.chars().count()).max().unwrap_or(0);
        let band_px = NARROW_PX * plot_width() / 100.0 / shown as f64;
        Frame { every, slanted: longest as f64 * CHAR_PX > band_px, longest }
    }

    /// The room below the plot: a line of text, or the height of the longest slanted label.
    fn bottom(&self) -> f64 {
        if self.slanted {
            (16.0 + self.longest as f64 * CHAR_PX * SLANT_SIN).ceil().max(BOTTOM)
        } else {
            BOTTOM
        }
    }

    fn height(&self) -> f64 {
        TOP + PLOT_HEIGHT + self.bottom()
    }
}

/// The plot's width, in percent of the chart's.
fn plot_width() -> f64 {
    100.0 - LEFT - RIGHT
}

/// The y coordinate of value `v`, in pixels.
fn y_of(scale: &Scale, v: f64) -> f64 {
    TOP + PLOT_HEIGHT * (1.0 - scale.fraction(v))
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
fn axes(svg: &mut String, chart: &BarChart, scale: &Scale, frame: &Frame) {
    let right = LEFT + plot_width();
    for tick in scale.ticks() {
        let y = y_of(scale, tick);
        let _ = write!(svg, r#"<line class="grid" x1="{LEFT}%" x2="{right}%" y1="{y:.1}" y2="{y:.1}"/>"#);
        let _ = write!(
            svg,
            r#"<text class="tick" x="{LEFT}%" dx="-6" y="{:.1}" text-anchor="end">{}</text>"#,
            y + 4.0,
            escape(&format_value(tick, chart.unit))
        );
    }
    let base = TOP + PLOT_HEIGHT;
    let _ = write!(svg, r#"<line class="axis" x1="{LEFT}%" x2="{right}%" y1="{base}" y2="{base}"/>"#);
    let n = chart.categories.len();
    if n == 0 {
        return;
    }
    let every = frame.every;
    let band = plot_width() / n as f64;
    // A slanted label ends under its bar and rises to the left (CSS turns it about that end).
    let (dy, anchor) = if frame.slanted { (14.0, "end") } else { (18.0, "middle") };
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
            r#"<text class="label" x="{x:.3}%" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
            base + dy,
            escape(label)
        );
    }
}

/// Every non-zero value as a rectangle with its tooltip. Stacked segments are outlined in the
/// background's colour (`app.css`), so neighbours are told apart by a gap, not by hue alone.
fn bars(svg: &mut String, chart: &BarChart, scale: &Scale) {
    let n = chart.categories.len();
    let band = plot_width() / n as f64;
    let series = chart.series.len().max(1);
    let stacked_class = if chart.layout == Layout::Stacked { " stacked" } else { "" };
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
                r#"<rect class="{}{stacked_class}" x="{x:.3}%" y="{:.2}" width="{width:.3}%" height="{height:.2}"><title>{} · {}: {}</title></rect>"#,
                serie.class(),
                y_low - height,
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
        let _ = write!(svg, r#"<line class="ref" x1="{LEFT}%" x2="{right}%" y1="{y:.1}" y2="{y:.1}"/>"#);
        let _ = write!(
            svg,
            r#"<text class="ref-label" x="{right}%" dx="-2" y="{:.1}" text-anchor="end">{}: {}</text>"#,
            y - 4.0,
            escape(&r.label),
            escape(&format_value(r.value, chart.unit))
        );
    }
}

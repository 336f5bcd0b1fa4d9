//! Charts as inline SVG, built on the server from numbers: data in, SVG text out, no I/O and no
//! JavaScript. One builder, bars (stacked or side by side, with optional horizontal reference lines such
//! as a budget), serves every chart of the insights page; a histogram is bars over buckets.
//!
//! Every text that reaches the SVG (titles, category and series names, numbers) is escaped here, so the
//! result may be marked safe in a template. Colours are CSS classes (`s0`…`s5`, `ref`), styled through
//! CSS variables in `app.css`, so a dark theme restyles them without touching this code.

mod bars;
mod scale;
#[cfg(test)]
mod tests;

pub use bars::render;
pub use scale::{Scale, format_value};

/// How the values of a chart read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Whole things: tasks, runs, sessions, points.
    Count,
    /// US dollars.
    Dollars,
}

/// Several series over the same categories: side by side in each category, or stacked into one bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Grouped,
    Stacked,
}

/// One named series: a value per category (a missing one reads as 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub values: Vec<f64>,
    /// Which of the six colours (`s0`…`s5`) it is drawn in: a chart picks them for meaning (green for
    /// succeeded, red for failed), not by position.
    pub colour: usize,
}

impl Series {
    /// The CSS class of the series' bars and its legend swatch.
    pub fn class(&self) -> String {
        format!("s{}", self.colour % 6)
    }
}

/// A horizontal line across the chart at `value`, labelled (a budget, a reserve).
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub label: String,
    pub value: f64,
}

/// Everything a bar chart shows.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// The element id prefix: `{id}-title` and `{id}-desc` label the SVG. A literal of the caller's.
    pub id: String,
    /// The accessible name, read first by a screen reader.
    pub title: String,
    /// One sentence saying what the chart shows and where its table is.
    pub description: String,
    /// The x axis, one label per bar or group.
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    pub layout: Layout,
    pub unit: Unit,
    pub references: Vec<Reference>,
}

/// `text` safe inside SVG (XML) text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 at all.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A value as a chart draws it: not a number, infinite or negative reads as 0 (every chart here is of
/// counts, dollars or durations).
pub(crate) fn drawable(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 { v } else { 0.0 }
}

//! The chart builder, from numbers to SVG text: scales, empty and one-point charts, huge values,
//! labels, escaping.

use super::*;

fn chart(categories: &[&str], series: &[(&str, &[f64])]) -> BarChart {
    BarChart {
        id: "c".into(),
        title: "Tasks per day".into(),
        description: "The same numbers are in the table below.".into(),
        categories: categories.iter().map(|c| c.to_string()).collect(),
        series: series
            .iter()
            .enumerate()
            .map(|(i, (n, v))| Series { name: n.to_string(), values: v.to_vec(), colour: i })
            .collect(),
        layout: Layout::Grouped,
        unit: Unit::Count,
        references: vec![],
    }
}

/// The `height` attributes of the bars, in drawing order.
fn heights(svg: &str) -> Vec<f64> {
    svg.split("<rect ")
        .skip(1)
        .map(|r| {
            let h = r.split("height=\"").nth(1).unwrap().split('"').next().unwrap();
            h.parse().unwrap()
        })
        .collect()
}

/// The texts of the elements of `class`.
fn texts(svg: &str, class: &str) -> Vec<String> {
    let open = format!("<text class=\"{class}\"");
    svg.split(&open)
        .skip(1)
        .map(|t| t.split('>').nth(1).unwrap().split('<').next().unwrap().to_string())
        .collect()
}

#[test]
fn the_scale_is_the_smallest_round_axis_that_holds_the_largest_value() {
    assert_eq!(Scale::for_max(7.0, Unit::Count), Scale { top: 8.0, step: 2.0 });
    assert_eq!(Scale::for_max(10.0, Unit::Count), Scale { top: 10.0, step: 2.0 });
    assert_eq!(Scale::for_max(101.0, Unit::Count), Scale { top: 150.0, step: 50.0 });
    assert_eq!(Scale::for_max(1.0, Unit::Count), Scale { top: 1.0, step: 1.0 }, "counts never step below 1");
    assert_eq!(Scale::for_max(0.3, Unit::Dollars).round(), Scale { top: 0.3, step: 0.1 });
    assert_eq!(Scale::for_max(5000.0, Unit::Count).ticks(), [0.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0]);
    for bad in [0.0, -3.0, f64::NAN, f64::INFINITY] {
        assert_eq!(Scale::for_max(bad, Unit::Count), Scale { top: 1.0, step: 1.0 }, "{bad}");
    }
}

impl Scale {
    /// Steps like 0.1 come out of powers of ten as 0.1000000001: compared after rounding.
    fn round(self) -> Scale {
        Scale { top: (self.top * 1e9).round() / 1e9, step: (self.step * 1e9).round() / 1e9 }
    }
}

#[test]
fn values_are_written_short_for_an_axis() {
    assert_eq!(format_value(0.0, Unit::Count), "0");
    assert_eq!(format_value(42.0, Unit::Count), "42");
    assert_eq!(format_value(2.5, Unit::Count), "2.5");
    assert_eq!(format_value(1500.0, Unit::Count), "1.5k");
    assert_eq!(format_value(2_000_000.0, Unit::Count), "2M");
    assert_eq!(format_value(3.2e13, Unit::Count), "32T");
    assert_eq!(format_value(0.5, Unit::Dollars), "$0.50");
    assert_eq!(format_value(123.4, Unit::Dollars), "$123");
    assert_eq!(format_value(12_345.0, Unit::Dollars), "$12.3k");
    assert_eq!(format_value(f64::NAN, Unit::Dollars), "$0.00");
}

#[test]
fn bars_are_as_tall_as_their_value_on_the_axis() {
    let svg = render(&chart(&["a", "b", "c"], &[("n", &[2.0, 4.0, 8.0])]));
    let h = heights(&svg);
    assert_eq!(h.len(), 3);
    // The axis is 0..8: the plot is 206 units tall.
    assert!((h[2] - 206.0).abs() < 0.01, "{h:?}");
    assert!((h[1] - 103.0).abs() < 0.01, "{h:?}");
    assert!((h[0] - 51.5).abs() < 0.01, "{h:?}");
    assert_eq!(texts(&svg, "tick"), ["0", "2", "4", "6", "8"]);
    assert_eq!(texts(&svg, "label"), ["a", "b", "c"]);
}

#[test]
fn stacked_series_sum_to_one_bar_per_category() {
    let mut c = chart(&["mon"], &[("workers", &[3.0]), ("triage", &[1.0])]);
    c.layout = Layout::Stacked;
    c.unit = Unit::Dollars;
    let svg = render(&c);
    let h = heights(&svg);
    assert_eq!(h.len(), 2);
    // 0..4 dollars: 3 is three quarters of the plot, 1 the last quarter, stacked on top.
    assert!((h[0] - 154.5).abs() < 0.01 && (h[1] - 51.5).abs() < 0.01, "{h:?}");
    assert!(svg.contains(r#"class="s0 stacked""#) && svg.contains(r#"class="s1 stacked""#));
    assert!(svg.contains("<title>mon · triage: $1.00</title>"), "{svg}");
}

#[test]
fn an_empty_chart_says_so_and_still_has_its_accessible_name() {
    for c in [chart(&[], &[]), chart(&["a", "b"], &[("n", &[0.0, 0.0])])] {
        let svg = render(&c);
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
        assert!(svg.contains(r#"role="img""#) && svg.contains(r#"aria-labelledby="c-title c-desc""#));
        assert!(svg.contains(r#"<title id="c-title">Tasks per day</title>"#));
        assert_eq!(texts(&svg, "empty"), ["No data in this window"]);
        assert!(heights(&svg).is_empty());
    }
}

#[test]
fn one_point_fills_the_plot_and_is_labelled() {
    let svg = render(&chart(&["2026-12-01"], &[("intake", &[1.0])]));
    assert_eq!(heights(&svg), [206.0]);
    assert_eq!(texts(&svg, "label"), ["2026-12-01"]);
}

#[test]
fn huge_values_and_garbage_stay_inside_the_drawing() {
    let svg = render(&chart(&["a", "b", "c", "d"], &[("n", &[1e15, f64::NAN, -5.0, f64::INFINITY])]));
    let h = heights(&svg);
    assert_eq!(h.len(), 1, "not a number, negative and infinite draw nothing: {h:?}");
    assert!((h[0] - 206.0).abs() < 0.01);
    assert_eq!(texts(&svg, "tick").last().map(String::as_str), Some("1000T"));
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
}

#[test]
fn many_categories_get_a_few_labels_and_the_last_one_always() {
    let days: Vec<String> = (1..=30).map(|d| format!("d{d}")).collect();
    let names: Vec<&str> = days.iter().map(String::as_str).collect();
    let svg = render(&chart(&names, &[("n", &[1.0; 30])]));
    let labels = texts(&svg, "label");
    assert!(labels.len() <= 8, "{labels:?}");
    assert_eq!(labels.first().map(String::as_str), Some("d1"));
    assert_eq!(labels.last().map(String::as_str), Some("d30"));
    assert_eq!(heights(&svg).len(), 30, "every day still has its bar");
}

#[test]
fn a_reference_line_raises_the_axis_to_show_itself() {
    let mut c = chart(&["10:00"], &[("used", &[1200.0])]);
    c.references = vec![Reference { label: "hourly budget".into(), value: 5000.0 }];
    let svg = render(&c);
    assert_eq!(texts(&svg, "tick").last().map(String::as_str), Some("5k"));
    assert_eq!(texts(&svg, "ref-label"), ["hourly budget: 5k"]);
}

#[test]
fn every_text_is_escaped() {
    let mut c = chart(&["<script>alert(1)</script>"], &[("a\"b&c", &[1.0])]);
    c.title = "</title><script>x</script>".into();
    c.id = "x\" onload=\"y".into();
    let svg = render(&c);
    assert!(!svg.contains("<script>"), "{svg}");
    assert!(svg.contains("&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;"));
    assert!(svg.contains("a&quot;b&amp;c"));
    assert!(!svg.contains("\" onload=\""), "{svg}");
    assert_eq!(escape("a\u{0}b"), "a\u{fffd}b", "control characters are not XML");
}

/// The value of attribute `name` in the first element that has it.
fn attribute<'a>(svg: &'a str, name: &str) -> Option<&'a str> {
    svg.split(&format!(" {name}=\"")).nth(1)?.split('"').next()
}

/// Issue 35, item 11: scaled into a 400 px phone by a `viewBox` 720 units wide, the axis text was ~5 px.
/// With no `viewBox` the SVG's units are CSS pixels: it is as wide as its box (every x a percentage)
/// and a fixed number of pixels tall, so its text keeps the 11 px `app.css` gives it at any width.
#[test]
fn the_drawing_is_not_scaled_so_its_text_keeps_its_size() {
    let svg = render(&chart(&["a", "b", "c"], &[("n", &[2.0, 4.0, 8.0])]));
    let open = &svg[..svg.find('>').unwrap()];
    assert!(!open.contains("viewBox"), "{open}");
    assert_eq!(attribute(open, "width"), Some("100%"));
    assert_eq!(attribute(open, "height"), Some("260"));
    for element in
        svg.split('<').filter(|e| e.starts_with("rect ") || e.starts_with("text ") || e.starts_with("line "))
    {
        for x in ["x", "x1", "x2", "width"] {
            if let Some(v) = attribute(element, x) {
                assert!(v.ends_with('%'), "{x}={v} in <{element}>");
            }
        }
    }
    let css = include_str!("../static/app.css");
    assert!(css.contains("svg.chart text { font: 11px"), "the text's size in CSS pixels");
}

/// Worker kinds under six bars would overlap on a phone: they are slanted, and the drawing grows below
/// the plot to hold them. Short labels (days) stay flat.
#[test]
fn long_labels_are_slanted_with_room_below() {
    let kinds = ["queued", "in_progress", "fix_ci", "fix_comments", "pr_review", "fix_conflicts"];
    let svg = render(&chart(&kinds, &[("n", &[1.0; 6])]));
    assert!(svg.starts_with(r#"<svg class="chart slanted""#), "{}", &svg[..80]);
    let height: f64 = attribute(&svg, "height").unwrap().parse().unwrap();
    assert!(height >= 14.0 + 206.0 + 13.0 * 6.5 * 0.5, "{height}");
    assert_eq!(texts(&svg, "label").len(), 6);
    let days: Vec<String> = (1..=30).map(|d| format!("11-{d:02}")).collect();
    let names: Vec<&str> = days.iter().map(String::as_str).collect();
    let flat = render(&chart(&names, &[("n", &[1.0; 30])]));
    assert!(flat.starts_with(r#"<svg class="chart" "#));
    let css = include_str!("../static/app.css");
    assert!(css.contains("svg.chart.slanted .label {"), "the slant is styled");
}

/// The relative luminance of `#rrggbb` (WCAG 2).
fn luminance(hex: &str) -> f64 {
    let channel = |i: usize| {
        let v = f64::from(u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap()) / 255.0;
        if v <= 0.03928 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
    };
    0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2)
}

fn contrast(a: &str, b: &str) -> f64 {
    let (a, b) = (luminance(a), luminance(b));
    (a.max(b) + 0.05) / (a.min(b) + 0.05)
}

/// The colour (`#rrggbb`) of the first `name: #…` in `css`.
fn css_colour(css: &str, name: &str) -> String {
    let at = css.find(&format!("{name}: #")).unwrap_or_else(|| panic!("{name} in app.css"));
    let hex: String = css[at + name.len() + 3..].chars().take_while(char::is_ascii_hexdigit).collect();
    match hex.len() {
        3 => format!("#{}", hex.chars().flat_map(|c| [c, c]).collect::<String>()),
        _ => format!("#{hex}"),
    }
}

/// Issue 35, item 11: stacked neighbours differed by hue only (contrast 1.04 to 1.21 between them). Every
/// bar is outlined in the figure's background, so two neighbours are parted by a line of it, and that
/// line stands out at 3:1 or more from every series colour, in the light theme and the dark.
#[test]
fn stacked_neighbours_are_parted_by_a_line_of_the_background() {
    let mut c = chart(&["mon"], &[("a", &[3.0]), ("b", &[1.0])]);
    c.layout = Layout::Stacked;
    let svg = render(&c);
    assert_eq!(svg.matches(r#" stacked" "#).count(), 2, "{svg}");
    let css = include_str!("../static/app.css");
    assert!(css.contains("svg.chart rect { stroke: var(--chart-bg); stroke-width: 1.5px; }"));
    // Light: the figure's background is --chart-bg. Dark (the charts' own block, last): the surface.
    let light_bg = css_colour(css, "--chart-bg");
    let dark_surface = css_colour(&css[css.find("--surface: #").unwrap() + 1..], "--surface");
    let dark_charts = &css[css.rfind("prefers-color-scheme: dark").unwrap()..];
    for (theme, bg) in [(css, light_bg), (dark_charts, dark_surface)] {
        for n in 1..=6 {
            let fill = css_colour(theme, &format!("--chart-{n}"));
            let ratio = contrast(&fill, &bg);
            assert!(ratio >= 3.0, "--chart-{n} {fill} against {bg}: {ratio:.2}");
        }
    }
}

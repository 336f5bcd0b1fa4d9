//! The value axis: a top that is a round number above the largest value, ticks at round steps, and
//! numbers written short enough for an axis (`1.2k`, `$3.40`, `7M`).

use super::Unit;

/// The value axis from 0 to `top`, in `ticks` equal steps of `step`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub top: f64,
    pub step: f64,
}

/// At most this many steps on the value axis.
const MAX_STEPS: f64 = 5.0;

impl Scale {
    /// The smallest round axis (steps of 1, 2 or 5 × 10ⁿ, at most five) that holds `max`. An empty or
    /// all-zero chart gets the axis 0 to 1, so that it still draws.
    pub fn for_max(max: f64, unit: Unit) -> Scale {
        let max = super::drawable(max);
        if max == 0.0 {
            return Scale { top: 1.0, step: 1.0 };
        }
        let rough = max / MAX_STEPS;
        let magnitude = 10f64.powf(rough.log10().floor());
        let mut step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * magnitude)
            .find(|s| *s >= rough)
            .unwrap_or(10.0 * magnitude);
        // Counts have no fractions: a step below one would label the axis 0.2, 0.4, …
        if unit == Unit::Count && step < 1.0 {
            step = 1.0;
        }
        let top = (max / step).ceil() * step;
        Scale { top, step }
    }

    /// The tick values from 0 to the top, inclusive.
    pub fn ticks(&self) -> Vec<f64> {
        let n = (self.top / self.step).round() as usize;
        (0..=n).map(|i| i as f64 * self.step).collect()
    }

    /// Where `v` falls between 0 (the axis) and 1 (the top), clamped.
    pub fn fraction(&self, v: f64) -> f64 {
        (super::drawable(v) / self.top).clamp(0.0, 1.0)
    }
}

/// `v` as an axis or a tooltip writes it: counts whole (thousands as `k`, millions as `M`, …), dollars
/// with cents below 100 and the same suffixes above 1,000.
pub fn format_value(v: f64, unit: Unit) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let (sign, v) = if v < 0.0 { ("-", -v) } else { ("", v) };
    let short = |v: f64| -> String {
        for (size, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
            if v >= size {
                let scaled = v / size;
                return if scaled >= 100.0 || scaled.fract() == 0.0 {
                    format!("{scaled:.0}{suffix}")
                } else {
                    format!("{}{suffix}", trim(format!("{scaled:.1}")))
                };
            }
        }
        String::new()
    };
    match unit {
        Unit::Count if v >= 1e3 => format!("{sign}{}", short(v)),
        Unit::Count if v.fract() == 0.0 => format!("{sign}{v:.0}"),
        Unit::Count => format!("{sign}{}", trim(format!("{v:.1}"))),
        Unit::Dollars if v >= 1e3 => format!("{sign}${}", short(v)),
        Unit::Dollars if v >= 100.0 => format!("{sign}${v:.0}"),
        Unit::Dollars => format!("{sign}${v:.2}"),
    }
}

/// `1.0` → `1`, `2.50` stays: a trailing `.0` says nothing.
fn trim(s: String) -> String {
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

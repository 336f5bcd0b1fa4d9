//! `[insights]`: what the insights count as a revert and as an expensive failure.

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Insights {
    /// Days after its merge within which a pull request reverted on its base branch counts as
    /// reverted; the runner looks for reverts of the pull requests merged this recently.
    pub revert_window_days: u32,
    /// Runs abandoned after spending more than this many dollars are listed as expensive failures.
    pub expensive_failure_usd: f64,
}

impl Default for Insights {
    fn default() -> Self {
        Insights { revert_window_days: 14, expensive_failure_usd: 5.0 }
    }
}

impl Insights {
    /// The window as a duration.
    pub fn revert_window(&self) -> chrono::Duration {
        chrono::Duration::days(i64::from(self.revert_window_days))
    }

    /// Why these values cannot be used, naming the key.
    pub(super) fn invalid(&self) -> Option<(&'static str, &'static str)> {
        if !(1..=365).contains(&self.revert_window_days) {
            return Some(("insights.revert_window_days", "must be between 1 and 365 days"));
        }
        if !(self.expensive_failure_usd >= 0.0 && self.expensive_failure_usd.is_finite()) {
            return Some(("insights.expensive_failure_usd", "must be a non-negative number of dollars"));
        }
        None
    }
}

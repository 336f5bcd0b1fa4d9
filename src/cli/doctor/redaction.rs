//! The redaction check of `executor doctor`: every secret the config names is in this environment.
//! Redaction replaces the values it can read; a process started without a variable (a `serve` from
//! another shell) stores and shows text quoting that value as it is.

use super::{Check, Outcome, pass, problem};
use crate::config::Config;

pub(super) fn redaction_check(config: &Config) -> Check {
    let missing = crate::redact::unknown_secrets(config);
    if missing.is_empty() {
        return pass("redaction", "every secret the config names is set here");
    }
    problem(
        Outcome::Warn,
        "redaction",
        format!(
            "{} not set here: text quoting their values is not redacted by this process",
            missing.join(", ")
        ),
        "run the runner and `executor serve` with the same environment, the secrets set",
    )
}

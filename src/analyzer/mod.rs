//! The analyzer: takes tasks in from the sources, skips what the filters name, and has an agent triage
//! the rest into for_review, awaiting_go or skip.

pub mod fields;
pub mod triage;

//! Intake: where tasks come from and which of them never reach the analyzer. Task sources (Asana,
//! GitHub Issues, files) are in `source`, and the skip rules they pass through are `crate::filter`;
//! `run` fetches the configured sources into the queue (`executor intake`, and the analyzer's first
//! step).

mod fetch;
pub mod run;
pub mod source;

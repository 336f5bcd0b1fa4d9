//! Intake: where tasks come from and which of them never reach the analyzer. Task sources (Asana,
//! GitHub Issues, files) are to come; the skip filters are here.

pub mod filter;
pub mod source;

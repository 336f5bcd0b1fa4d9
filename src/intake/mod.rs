//! Intake: where tasks come from and which of them never reach the analyzer. Task sources (Asana,
//! GitHub Issues, files) are in `source`; the skip filters are in `filter`. Wiring them into the
//! config, the store and an `executor intake` command is issue 9's remaining work.

pub mod filter;
pub mod source;

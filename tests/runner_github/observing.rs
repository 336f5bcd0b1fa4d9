//! Observing.

//! The GitHub forge. (Temporary: only the wire types so far; the full module replaces this file.)

pub mod wire;

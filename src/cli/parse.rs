//! Command-line values several commands take, parsed one way.

use super::UsageError;
use crate::domain::TaskGid;

/// A task gid from the command line; a malformed one is a usage error (exit 2).
pub fn parse_gid(s: &str) -> anyhow::Result<TaskGid> {
    TaskGid::parse(s).map_err(|e| UsageError(e.to_string()).into())
}

//! The database's clock, in SQL. Leases and heartbeats are compared across hosts, so their times come
//! from the one clock all hosts share — PostgreSQL's `now()` — and never from a host's own. SQLite
//! serves one host, whose clock is the database's; its text form (RFC 3339, UTC, `+00:00`) sorts like
//! the timestamps sqlx writes, so both compare correctly.

use super::Pool;

impl Pool {
    /// "Now" by the database's clock.
    pub(super) fn now_sql(&self) -> &'static str {
        match self {
            Pool::Sqlite(_) => "strftime('%Y-%m-%dT%H:%M:%f+00:00','now')",
            Pool::Postgres(_) => "now()",
        }
    }

    /// "Now plus the seconds in parameter `$n`" (a float) by the database's clock.
    pub(super) fn later_sql(&self, n: u8) -> String {
        match self {
            Pool::Sqlite(_) => format!("strftime('%Y-%m-%dT%H:%M:%f+00:00','now', ${n} || ' seconds')"),
            Pool::Postgres(_) => format!("(now() + ${n} * interval '1 second')"),
        }
    }

    /// The condition "the lease in `executor_runs` is held by the owner in parameter `$n`, and live".
    /// With `$n` NULL (a human, an import) it holds whoever holds the lease: only runners are fenced.
    pub(super) fn fence_sql(&self, n: u8) -> String {
        format!("(${n} IS NULL OR (lease_owner = ${n} AND lease_expires_at > {}))", self.now_sql())
    }
}

/// A duration as the float seconds the clock's SQL takes.
pub(super) fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

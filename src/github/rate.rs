//! Rate-limit bookkeeping: what GitHub said about the primary limits (REST `x-ratelimit-*` headers,
//! GraphQL `rateLimit`), whether a secondary limit blocks every call for a while, and the decision to
//! refuse a call before it is sent. Pure: every function that needs the time is given `now`, so the
//! rules are tested without a clock.

use chrono::{DateTime, TimeDelta, Utc};
use reqwest::header::HeaderMap;

/// Where the limits stand, for `executor status`, the benchmark and the decision to skip a tick.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RateStatus {
    pub graphql_remaining: Option<u32>,
    pub graphql_reset: Option<DateTime<Utc>>,
    /// The GraphQL points an hour, as GitHub last stated them (`x-ratelimit-limit`).
    pub graphql_limit: Option<u32>,
    pub rest_remaining: Option<u32>,
    pub rest_reset: Option<DateTime<Utc>>,
    /// Set while a secondary limit (or an exhausted primary one) makes every call fail fast.
    pub blocked_until: Option<DateTime<Utc>>,
    /// GraphQL points left for the agents' own `gh` use (`[github] reserve_points`).
    pub reserve: u32,
}

/// Which of GitHub's limits a request counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Rest,
    GraphQl,
}

/// A call refused, or an answer that said "slow down": no request until `until`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub until: DateTime<Utc>,
    pub why: String,
}

/// The first wait after a secondary limit that came without a `retry-after`; doubled for each one
/// that follows without a success in between, up to [`MAX_BACKOFF`] (GitHub's advice: wait at least a
/// minute, then exponentially longer).
const FIRST_BACKOFF: TimeDelta = TimeDelta::seconds(60);
const MAX_BACKOFF: TimeDelta = TimeDelta::seconds(16 * 60);
/// The longest `retry-after` believed: GitHub's limits reset within the hour, and a larger value (a
/// proxy's, a broken server's) must neither hold every process for longer nor overflow a date.
const MAX_RETRY_AFTER_SECS: u64 = 3600;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Bucket {
    remaining: Option<u32>,
    reset: Option<DateTime<Utc>>,
    limit: Option<u32>,
}

/// The client's knowledge of the limits, kept across calls and ticks.
#[derive(Debug, Clone)]
pub struct RateState {
    graphql: Bucket,
    rest: Bucket,
    blocked_until: Option<DateTime<Utc>>,
    blocked_why: String,
    /// Secondary limits in a row without a success: the exponent of the backoff.
    secondary_streak: u32,
    reserve: u32,
}

impl RateState {
    pub fn new(reserve: u32) -> RateState {
        RateState {
            graphql: Bucket::default(),
            rest: Bucket::default(),
            blocked_until: None,
            blocked_why: String::new(),
            secondary_streak: 0,
            reserve,
        }
    }

    /// Whether a call may be sent now. Refused while blocked; a GraphQL call also while the known
    /// remaining points are at or below the reserve and the reset is still ahead (the points are the
    /// agents'); a REST call while the known core remaining is 0 and the reset is ahead (it would fail).
    pub fn admit(&self, api: Api, now: DateTime<Utc>) -> Result<(), Refusal> {
        if let Some(until) = self.blocked_until.filter(|until| *until > now) {
            return Err(Refusal { until, why: self.blocked_why.clone() });
        }
        let (bucket, floor) = match api {
            Api::GraphQl => (self.graphql, self.reserve),
            Api::Rest => (self.rest, 0),
        };
        match (bucket.remaining, bucket.reset) {
            (Some(remaining), Some(reset)) if remaining <= floor && reset > now => {
                let why = match api {
                    Api::GraphQl => format!(
                        "{remaining} GraphQL points left, at or below the {floor} kept for the agents ([github] reserve_points)"
                    ),
                    Api::Rest => "the REST rate limit is used up".to_string(),
                };
                Err(Refusal { until: reset, why })
            }
            _ => Ok(()),
        }
    }

    /// Records the `x-ratelimit-*` headers of any answer. `x-ratelimit-resource` says which limit they
    /// describe (`core`, `graphql`, or others such as `search`, which executor does not track); without
    /// it, the limit of the endpoint called.
    pub fn record_headers(&mut self, headers: &HeaderMap, called: Api) {
        let bucket = match header_str(headers, "x-ratelimit-resource") {
            Some("graphql") => &mut self.graphql,
            Some("core") => &mut self.rest,
            Some(_) => return,
            None => match called {
                Api::GraphQl => &mut self.graphql,
                Api::Rest => &mut self.rest,
            },
        };
        if let Some(remaining) = header_num(headers, "x-ratelimit-remaining") {
            bucket.remaining = Some(u32::try_from(remaining).unwrap_or(u32::MAX));
        }
        if let Some(reset) = header_num(headers, "x-ratelimit-reset").and_then(epoch) {
            bucket.reset = Some(reset);
        }
        if let Some(limit) = header_num(headers, "x-ratelimit-limit") {
            bucket.limit = Some(u32::try_from(limit).unwrap_or(u32::MAX));
        }
    }

    /// Records a GraphQL answer's `rateLimit { remaining resetAt }`.
    pub fn record_graphql_points(&mut self, remaining: u32, reset: DateTime<Utc>) {
        self.graphql = Bucket { remaining: Some(remaining), reset: Some(reset), limit: self.graphql.limit };
    }

    /// Classifies a 403 or 429 answer. A rate limit blocks every call until it is over and is returned;
    /// anything else (a 403 for missing permissions) is `None`. In GitHub's order of precedence:
    /// `retry-after` seconds; `x-ratelimit-remaining: 0` until `x-ratelimit-reset`; a message about a
    /// secondary rate limit (or any 429) → exponential backoff with jitter.
    pub fn record_limit_answer(
        &mut self,
        status: u16,
        headers: &HeaderMap,
        message: &str,
        now: DateTime<Utc>,
    ) -> Option<Refusal> {
        if status != 403 && status != 429 {
            return None;
        }
        if let Some(secs) = header_num(headers, "retry-after") {
            let until = now + TimeDelta::seconds(secs.min(MAX_RETRY_AFTER_SECS) as i64);
            return Some(self.block(until, format!("GitHub asked to retry after {secs} s (HTTP {status})")));
        }
        if header_num(headers, "x-ratelimit-remaining") == Some(0) {
            let reset = header_num(headers, "x-ratelimit-reset").and_then(epoch);
            // A reset already past (clock skew) still waits a moment rather than hammering.
            let until = reset.unwrap_or(now + FIRST_BACKOFF).max(now + TimeDelta::seconds(1));
            let resource = header_str(headers, "x-ratelimit-resource").unwrap_or("core");
            return Some(self.block(until, format!("the {resource} rate limit is used up (HTTP {status})")));
        }
        let lower = message.to_ascii_lowercase();
        if status == 429 || lower.contains("secondary rate limit") || lower.contains("abuse detection") {
            return Some(self.back_off(now, format!("secondary rate limit (HTTP {status})")));
        }
        None
    }

    /// A GraphQL answer with an error of type `RATE_LIMITED`: the points are gone until the known
    /// reset, or, when no reset is known, the backoff decides.
    pub fn record_graphql_rate_limited(&mut self, now: DateTime<Utc>) -> Refusal {
        match self.graphql.reset.filter(|reset| *reset > now) {
            Some(reset) => {
                self.graphql.remaining = Some(0);
                Refusal { until: reset, why: "the GraphQL rate limit is used up".into() }
            }
            None => self.back_off(now, "the GraphQL rate limit is used up".into()),
        }
    }

    /// A block another process recorded (see [`crate::github::SharedBlocks`]).
    pub fn record_shared_block(&mut self, until: DateTime<Utc>, why: String) {
        self.block(until, why);
    }

    /// A successful answer ends a streak of secondary limits.
    pub fn record_success(&mut self) {
        self.secondary_streak = 0;
    }

    pub fn status(&self, now: DateTime<Utc>) -> RateStatus {
        RateStatus {
            graphql_remaining: self.graphql.remaining,
            graphql_reset: self.graphql.reset,
            graphql_limit: self.graphql.limit,
            rest_remaining: self.rest.remaining,
            rest_reset: self.rest.reset,
            blocked_until: self.blocked_until.filter(|until| *until > now),
            reserve: self.reserve,
        }
    }

    fn back_off(&mut self, now: DateTime<Utc>, why: String) -> Refusal {
        self.secondary_streak = self.secondary_streak.saturating_add(1);
        let wait = backoff(self.secondary_streak);
        let until = now + wait + jitter(wait, now);
        self.block(
            until,
            format!("{why}, backing off {}", humantime::format_duration(wait.to_std().unwrap_or_default())),
        )
    }

    fn block(&mut self, until: DateTime<Utc>, why: String) -> Refusal {
        // A later block wins over an earlier one still running (answers of concurrent calls).
        if self.blocked_until.is_none_or(|current| until > current) {
            self.blocked_until = Some(until);
            self.blocked_why = why.clone();
        }
        Refusal { until, why }
    }
}

/// The wait after the `streak`-th secondary limit in a row: 60 s × 2^(streak-1), at most 16 min.
pub fn backoff(streak: u32) -> TimeDelta {
    let doublings = streak.saturating_sub(1).min(10);
    (FIRST_BACKOFF * 2_i32.pow(doublings)).min(MAX_BACKOFF)
}

/// Up to 20% of `wait`, so that several executors limited at once do not come back at once. The
/// clock's nanoseconds are random enough for that, and need no random-number crate.
fn jitter(wait: TimeDelta, now: DateTime<Utc>) -> TimeDelta {
    let span_ms = wait.num_milliseconds() / 5;
    if span_ms <= 0 {
        return TimeDelta::zero();
    }
    TimeDelta::milliseconds(i64::from(now.timestamp_subsec_nanos()) % (span_ms + 1))
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

fn header_num(headers: &HeaderMap, name: &str) -> Option<u64> {
    header_str(headers, name).and_then(|v| v.parse().ok())
}

fn epoch(secs: u64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(i64::try_from(secs).ok()?, 0)
}

#[cfg(test)]
mod tests;

//! The rate-limit rules, with the time given.

use super::*;
use reqwest::header::{HeaderName, HeaderValue};

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
}

fn headers(pairs: &[(&str, String)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.insert(HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap());
    }
    h
}

#[test]
fn headers_fill_the_bucket_they_name() {
    let mut s = RateState::new(100);
    s.record_headers(
        &headers(&[
            ("x-ratelimit-resource", "core".into()),
            ("x-ratelimit-remaining", "4321".into()),
            ("x-ratelimit-reset", t(600).timestamp().to_string()),
        ]),
        Api::GraphQl,
    );
    s.record_headers(&headers(&[("x-ratelimit-remaining", "77".into())]), Api::GraphQl);
    s.record_headers(
        &headers(&[("x-ratelimit-resource", "search".into()), ("x-ratelimit-remaining", "1".into())]),
        Api::Rest,
    );
    let status = s.status(t(0));
    assert_eq!(status.rest_remaining, Some(4321));
    assert_eq!(status.rest_reset, Some(t(600)));
    assert_eq!(status.graphql_remaining, Some(77));
    assert_eq!(status.reserve, 100);
}

#[test]
fn the_stated_hourly_limit_outlives_a_graphql_answers_points() {
    let mut s = RateState::new(100);
    assert_eq!(s.status(t(0)).graphql_limit, None, "nothing stated yet");
    s.record_headers(
        &headers(&[("x-ratelimit-resource", "graphql".into()), ("x-ratelimit-limit", "12500".into())]),
        Api::GraphQl,
    );
    s.record_graphql_points(9000, t(600));
    let status = s.status(t(0));
    assert_eq!((status.graphql_limit, status.graphql_remaining), (Some(12500), Some(9000)));
}

#[test]
fn graphql_is_refused_at_the_reserve_until_the_reset() {
    let mut s = RateState::new(1000);
    s.record_graphql_points(1001, t(60));
    assert!(s.admit(Api::GraphQl, t(0)).is_ok());
    s.record_graphql_points(1000, t(60));
    let refusal = s.admit(Api::GraphQl, t(0)).unwrap_err();
    assert_eq!(refusal.until, t(60));
    assert!(refusal.why.contains("reserve_points"), "{}", refusal.why);
    assert!(s.admit(Api::Rest, t(0)).is_ok(), "REST has its own limit");
    assert!(s.admit(Api::GraphQl, t(61)).is_ok(), "the points are back after the reset");
}

#[test]
fn retry_after_blocks_everything_for_that_long() {
    let mut s = RateState::new(0);
    let r = s.record_limit_answer(403, &headers(&[("retry-after", "30".into())]), "", t(0)).unwrap();
    assert_eq!(r.until, t(30));
    assert_eq!(s.admit(Api::Rest, t(29)).unwrap_err().until, t(30));
    assert!(s.admit(Api::GraphQl, t(29)).is_err());
    assert!(s.admit(Api::Rest, t(30)).is_ok());
    assert_eq!(s.status(t(10)).blocked_until, Some(t(30)));
    assert_eq!(s.status(t(31)).blocked_until, None);
}

#[test]
fn a_retry_after_past_an_hour_is_an_hour() {
    let mut s = RateState::new(0);
    for huge in ["9000000000000", "18446744073709551615"] {
        let r = s.record_limit_answer(429, &headers(&[("retry-after", huge.into())]), "", t(0)).unwrap();
        assert_eq!(r.until, t(3600), "{huge}: no overflow, no panic");
    }
}

#[test]
fn an_exhausted_primary_limit_blocks_until_its_reset() {
    let mut s = RateState::new(0);
    let h = headers(&[
        ("x-ratelimit-remaining", "0".into()),
        ("x-ratelimit-reset", t(900).timestamp().to_string()),
    ]);
    let r = s.record_limit_answer(429, &h, "API rate limit exceeded", t(0)).unwrap();
    assert_eq!(r.until, t(900));
    assert!(s.admit(Api::Rest, t(899)).is_err());
}

#[test]
fn secondary_limits_back_off_exponentially_with_jitter_and_a_success_resets() {
    let mut s = RateState::new(0);
    let msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
    let mut waits = Vec::new();
    for _ in 0..7 {
        let r = s.record_limit_answer(403, &HeaderMap::new(), msg, t(0)).unwrap();
        waits.push((r.until - t(0)).num_seconds());
    }
    for (wait, base) in waits.iter().zip([60, 120, 240, 480, 960, 960, 960]) {
        assert!(*wait >= base && *wait <= base + base / 5, "{wait} for a base of {base}");
    }
    s.record_success();
    let r = s.record_limit_answer(403, &HeaderMap::new(), msg, t(0)).unwrap();
    assert!((r.until - t(0)).num_seconds() <= 72, "the streak starts over after a success");
}

#[test]
fn a_permission_403_is_not_a_rate_limit() {
    let mut s = RateState::new(0);
    assert_eq!(
        s.record_limit_answer(403, &HeaderMap::new(), "Resource not accessible by integration", t(0)),
        None
    );
    assert!(s.admit(Api::Rest, t(0)).is_ok());
}

#[test]
fn graphql_rate_limited_waits_for_the_known_reset_or_backs_off() {
    let mut s = RateState::new(0);
    let r = s.record_graphql_rate_limited(t(0));
    assert!((r.until - t(0)).num_seconds() >= 60, "no reset known: the backoff");
    let mut s = RateState::new(0);
    s.record_graphql_points(5, t(300));
    let r = s.record_graphql_rate_limited(t(0));
    assert_eq!(r.until, t(300));
    assert!(s.admit(Api::GraphQl, t(1)).is_err());
    assert!(s.admit(Api::Rest, t(1)).is_ok());
}

#[test]
fn backoff_is_capped() {
    assert_eq!(backoff(1), TimeDelta::seconds(60));
    assert_eq!(backoff(3), TimeDelta::seconds(240));
    assert_eq!(backoff(40), TimeDelta::seconds(960));
}

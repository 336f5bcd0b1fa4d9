//! The fake Jira's issue search: Cloud's `search/jql` (paged by an opaque `nextPageToken`) and Data
//! Center's `search` (paged by `startAt`), over the issues the JQL selects.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{error, workflow};

/// A search: the JQL's conditions over the issues, by `updated` then id, a page of them.
pub(super) fn search(issues: &[Value], body: &Value, cloud: bool) -> Response {
    let jql = body["jql"].as_str().unwrap_or("");
    let query = match workflow::Jql::parse(jql) {
        Ok(query) => query,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    let mut found: Vec<&Value> = issues.iter().filter(|i| query.selects(i)).collect();
    found.sort_by_key(|i| {
        (
            i["fields"]["updated"].as_str().unwrap_or("").to_string(),
            i["id"].as_str().unwrap_or("").to_string(),
        )
    });
    let max = body["maxResults"].as_u64().unwrap_or(50).clamp(1, 100) as usize;
    let start = match cloud {
        true => match body.get("nextPageToken").and_then(Value::as_str) {
            Some(token) => match token.strip_prefix("page-at-").and_then(|n| n.parse().ok()) {
                Some(n) => n,
                None => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "The provided next page token is invalid or expired.",
                    );
                }
            },
            None => 0,
        },
        false => body["startAt"].as_u64().unwrap_or(0) as usize,
    };
    let fields: Vec<&str> =
        body["fields"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let page: Vec<Value> = found.iter().skip(start).take(max).map(|i| only_fields(i, &fields)).collect();
    let end = start + page.len();
    let answer = match cloud {
        true if end < found.len() => {
            json!({"issues": page, "nextPageToken": format!("page-at-{end}"), "isLast": false})
        }
        true => json!({"issues": page, "isLast": true}),
        false => json!({"startAt": start, "maxResults": max, "total": found.len(), "issues": page}),
    };
    axum::Json(answer).into_response()
}

/// The issue with only the asked `fields` (Jira returns none but the id and key when none are asked).
fn only_fields(issue: &Value, fields: &[&str]) -> Value {
    let mut out = json!({"id": issue["id"], "key": issue["key"], "self": issue["self"], "fields": {}});
    for field in fields {
        if let Some(value) = issue["fields"].get(*field) {
            out["fields"][*field] = value.clone();
        }
    }
    out
}

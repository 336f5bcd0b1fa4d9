//! The fake's resolvers: what each root field answers, from the fake's state, and the cut of an
//! answer to the fields a document selected.

use axum::http::StatusCode;
use axum::response::Response;
use graphql_parser::query::{Selection, SelectionSet};
use serde_json::{Map, Value, json};

use super::filter::matches;
use super::{STATES, State, WriteFault, error, not_found, state, uuid};

pub(super) fn find_issue<'a>(state: &'a State, id: &Value) -> Option<&'a Value> {
    let id = id.as_str()?;
    if state.deleted.iter().any(|d| d == id) {
        return None;
    }
    state.issues.iter().find(|i| i["id"] == id || i["identifier"] == id)
}

/// The issue with its team's workflow states as a connection (`team.states.nodes`).
pub(super) fn with_team_states(issue: &Value) -> Value {
    let mut issue = issue.clone();
    let team = issue.pointer("/team/key").and_then(Value::as_str).unwrap_or_default().to_string();
    let states: Vec<Value> = STATES.iter().map(|(name, _)| state(&team, name)).collect();
    issue["team"]["states"] = json!({"nodes": states});
    issue
}

pub(super) fn issues(state: &State, args: &Map<String, Value>) -> Value {
    let filter = args.get("filter").cloned().unwrap_or(Value::Null);
    let mut all: Vec<&Value> = state
        .issues
        .iter()
        .filter(|i| !state.deleted.iter().any(|d| i["id"] == d.as_str()))
        .filter(|i| filter.is_null() || matches(&filter, i))
        .collect();
    all.sort_by(|a, b| b["updatedAt"].as_str().cmp(&a["updatedAt"].as_str()));
    let start = match args.get("after").and_then(Value::as_str) {
        Some(cursor) => all.iter().position(|i| i["id"] == cursor).map_or(all.len(), |p| p + 1),
        None => 0,
    };
    let first = args.get("first").and_then(Value::as_u64).unwrap_or(50) as usize;
    let page: Vec<Value> = all.iter().skip(start).take(first).map(|i| (*i).clone()).collect();
    let end = page.last().map(|i| i["id"].clone()).unwrap_or(Value::Null);
    json!({"nodes": page, "pageInfo": {"hasNextPage": start + first < all.len(), "hasPreviousPage": start > 0,
        "endCursor": end, "startCursor": null}})
}

pub(super) fn teams(state: &State, args: &Map<String, Value>) -> Value {
    let mut keys: Vec<String> = state
        .issues
        .iter()
        .filter_map(|i| i.pointer("/team/key").and_then(Value::as_str).map(str::to_string))
        .collect();
    keys.sort();
    keys.dedup();
    let filter = args.get("filter").cloned().unwrap_or(Value::Null);
    let nodes: Vec<Value> = keys
        .iter()
        .map(|k| {
            let states: Vec<Value> = STATES.iter().map(|(n, _)| self::state(k, n)).collect();
            json!({"key": k, "name": format!("Team {k}"), "states": {"nodes": states}})
        })
        .filter(|t| filter.is_null() || matches(&filter, t))
        .collect();
    json!({"nodes": nodes})
}

type Created = (Value, Option<WriteFault>);

// The error is the answer to send, whole: its size is no concern in a fake.
#[allow(clippy::result_large_err)]
pub(super) fn comment_create(state: &mut State, args: &Map<String, Value>) -> Result<Created, Response> {
    let input = args.get("input").cloned().unwrap_or(Value::Null);
    let Some(issue) = find_issue(state, &input["issueId"]).map(|i| i["id"].clone()) else {
        return Err(not_found("Issue"));
    };
    let Some(body) = input["body"].as_str() else {
        return Err(error(StatusCode::BAD_REQUEST, "INVALID_INPUT", "body: must be a string"));
    };
    let id = match input["id"].as_str() {
        Some(id) if state.comments.iter().any(|c| c["id"] == id) => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "INVALID_INPUT",
                "Comment with this id already exists",
            ));
        }
        Some(id) => id.to_string(),
        None => uuid(9000 + state.comments.len() as u64),
    };
    let comment =
        json!({"id": id, "issueId": issue, "body": body, "createdAt": chrono::Utc::now().to_rfc3339()});
    state.comments.push(comment.clone());
    let fault = state.write_faults.pop_front();
    Ok((json!({"success": true, "lastSyncId": 1.0, "comment": comment}), fault))
}

pub(super) fn issue_update(state: &mut State, args: &Map<String, Value>) -> Result<Value, &'static str> {
    let id = args.get("id").cloned().unwrap_or(Value::Null);
    let found = find_issue(state, &id).map(|i| i["id"].clone()).ok_or("Issue")?;
    let state_id = args.get("input").and_then(|i| i.get("stateId")).cloned().unwrap_or(Value::Null);
    let issue = state.issues.iter_mut().find(|i| i["id"] == found).ok_or("Issue")?;
    let team = issue.pointer("/team/key").and_then(Value::as_str).unwrap_or_default().to_string();
    let target = STATES
        .iter()
        .map(|(n, _)| self::state(&team, n))
        .find(|s| s["id"] == state_id)
        .ok_or("WorkflowState")?;
    issue["state"] = target;
    issue["updatedAt"] = json!(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    Ok(json!({"success": true, "lastSyncId": 2.0, "issue": issue.clone()}))
}

/// `full` cut down to what `selection` asks for, under the response keys (aliases) it names.
pub(super) fn project(selection: &SelectionSet<'_, String>, full: &Value) -> Value {
    if selection.items.is_empty() {
        return full.clone();
    }
    match full {
        Value::Array(items) => Value::Array(items.iter().map(|i| project(selection, i)).collect()),
        Value::Object(object) => {
            let mut out = Map::new();
            for item in &selection.items {
                if let Selection::Field(f) = item {
                    let key = f.alias.clone().unwrap_or_else(|| f.name.clone());
                    let value = object.get(&f.name).cloned().unwrap_or(Value::Null);
                    out.insert(key, project(&f.selection_set, &value));
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

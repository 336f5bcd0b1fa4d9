//! The fake GitLab's GraphQL: the query is parsed (graphql_parser) and answered by walking what it
//! selects: `project(fullPath:)`, its `mergeRequests(iids:)` or `mergeRequest(iid:)`, and below them any
//! field of the merge request GitLab's schema has that the fake models, under the alias asked. A field
//! the fake does not model answers null, as an unknown merge request is left out. Every connection is
//! paged as GitLab pages it: `first` (at most 100) nodes after the `after` cursor, with `pageInfo`.

use graphql_parser::query::{Definition, Field, OperationDefinition, Selection, SelectionSet, Value as Gql};
use serde_json::{Map, Value, json};

use super::server::Answer;
use super::state::State;

type Set<'a> = SelectionSet<'a, String>;

pub fn handle(state: &State, base: &str, body: &[u8]) -> Answer {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Answer::json(400, json!({ "errors": [{ "message": "Invalid JSON" }] }));
    };
    let query = request["query"].as_str().unwrap_or_default();
    let variables = request.get("variables").cloned().unwrap_or(Value::Null);
    let doc = match graphql_parser::parse_query::<String>(query) {
        Ok(doc) => doc,
        Err(e) => return Answer::json(200, json!({ "errors": [{ "message": e.to_string() }] })),
    };
    let Some(set) = doc.definitions.iter().find_map(|d| match d {
        Definition::Operation(OperationDefinition::Query(q)) => Some(&q.selection_set),
        Definition::Operation(OperationDefinition::SelectionSet(s)) => Some(s),
        _ => None,
    }) else {
        return Answer::json(200, json!({ "errors": [{ "message": "only queries are served" }] }));
    };
    // As GitLab does, the complexity is weighed before anything is read; too much refuses the query.
    let score = complexity(set, &variables, 1);
    if score > state.max_complexity {
        let message = format!(
            "Query has complexity of {score}, which exceeds max complexity of {}",
            state.max_complexity
        );
        return Answer::json(200, json!({ "errors": [{ "message": message }] }));
    }
    let mut data = Map::new();
    for field in fields(set) {
        let value = match field.name.as_str() {
            "project" => project(state, base, field, &variables),
            "queryComplexity" => json!({ "score": score, "limit": state.max_complexity }),
            _ => Value::Null,
        };
        data.insert(key(field), value);
    }
    Answer::json(200, json!({ "data": data }))
}

fn project(state: &State, base: &str, field: &Field<'_, String>, vars: &Value) -> Value {
    let path =
        argument(field, "fullPath", vars).and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let Some(project) = state.projects.get(&path) else { return Value::Null };
    let mut out = Map::new();
    for f in fields(&field.selection_set) {
        let value = match f.name.as_str() {
            "mergeRequests" => {
                let iids: Option<Vec<String>> = argument(f, "iids", vars).and_then(|v| {
                    v.as_array().map(|a| a.iter().filter_map(|i| i.as_str().map(str::to_string)).collect())
                });
                let nodes: Vec<Value> = project
                    .mrs
                    .iter()
                    .filter(|m| iids.as_ref().is_none_or(|iids| iids.contains(&m.iid.to_string())))
                    .map(|m| state.mr_json(base, project, m))
                    .collect();
                select(&page(json!({ "nodes": nodes }), f, vars), &f.selection_set, vars)
            }
            "mergeRequest" => {
                let iid = argument(f, "iid", vars).and_then(|v| v.as_str().map(str::to_string));
                match project.mrs.iter().find(|m| Some(m.iid.to_string()) == iid) {
                    Some(m) => select(&state.mr_json(base, project, m), &f.selection_set, vars),
                    None => Value::Null,
                }
            }
            "fullPath" => json!(project.path),
            _ => Value::Null,
        };
        out.insert(key(f), value);
    }
    Value::Object(out)
}

/// The fake's complexity: each field selected counts 1, and what is selected under
/// `mergeRequests(iids:)` counts once per iid asked. GitLab's own rules differ by version (`executor
/// doctor` reads the real score from `queryComplexity`); this one is for testing that executor adapts
/// when a batch is refused as too complex.
fn complexity(set: &Set<'_>, vars: &Value, times: u64) -> u64 {
    fields(set)
        .into_iter()
        .map(|f| {
            let inner = match (f.name.as_str(), argument(f, "iids", vars)) {
                ("mergeRequests", Some(Value::Array(iids))) => times * (iids.len() as u64).max(1),
                _ => times,
            };
            times + complexity(&f.selection_set, vars, inner)
        })
        .sum()
}

/// `value` cut to what `set` selects, under the names it asks, each connection paged by its arguments.
fn select(value: &Value, set: &Set<'_>, vars: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|v| select(v, set, vars)).collect()),
        Value::Object(object) => {
            let mut out = Map::new();
            for f in fields(set) {
                let v = object.get(&f.name).cloned().unwrap_or(Value::Null);
                let v = if f.selection_set.items.is_empty() {
                    v
                } else {
                    select(&page(v, f, vars), &f.selection_set, vars)
                };
                out.insert(key(f), v);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// GitLab's most nodes per page of a connection.
const MAX_PAGE: usize = 100;

/// A connection (`{ "nodes": [...] }`) cut to the page `field` asks (`first`, `after`), with its
/// `pageInfo`; anything else as it is. A cursor is opaque to the client, as GitLab's are.
fn page(value: Value, field: &Field<'_, String>, vars: &Value) -> Value {
    let Some(nodes) = value.get("nodes").and_then(Value::as_array) else { return value };
    let first = argument(field, "first", vars).and_then(|v| v.as_u64()).map_or(MAX_PAGE, |n| n as usize);
    let start = argument(field, "after", vars)
        .and_then(|v| v.as_str()?.strip_prefix("fake-cursor-")?.parse::<usize>().ok())
        .map_or(0, |after| after + 1);
    let taken: Vec<Value> = nodes.iter().skip(start).take(first.min(MAX_PAGE)).cloned().collect();
    let end = start + taken.len();
    json!({
        "nodes": taken,
        "pageInfo": {
            "hasNextPage": end < nodes.len(),
            "endCursor": (end > start).then(|| format!("fake-cursor-{}", end - 1)),
        },
    })
}

fn fields<'s, 'a>(set: &'s Set<'a>) -> Vec<&'s Field<'a, String>> {
    set.items
        .iter()
        .flat_map(|s| match s {
            Selection::Field(f) => vec![f],
            Selection::InlineFragment(i) => fields(&i.selection_set),
            Selection::FragmentSpread(_) => Vec::new(),
        })
        .collect()
}

fn key(f: &Field<'_, String>) -> String {
    f.alias.clone().unwrap_or_else(|| f.name.clone())
}

fn argument(f: &Field<'_, String>, name: &str, vars: &Value) -> Option<Value> {
    let (_, value) = f.arguments.iter().find(|(n, _)| n == name)?;
    Some(to_json(value, vars))
}

fn to_json(value: &Gql<'_, String>, vars: &Value) -> Value {
    match value {
        Gql::Variable(v) => vars.get(v).cloned().unwrap_or(Value::Null),
        Gql::String(s) => json!(s),
        Gql::Int(i) => json!(i.as_i64()),
        Gql::Boolean(b) => json!(b),
        Gql::List(items) => Value::Array(items.iter().map(|i| to_json(i, vars)).collect()),
        Gql::Enum(e) => json!(e),
        _ => Value::Null,
    }
}

//! The fake's reading of arguments and of Linear's filters.

use graphql_parser::query::Value as Gql;
use serde_json::{Map, Value, json};

/// An argument's value as JSON, with `$variables` taken from `vars` (absent: null).
pub fn value(v: &Gql<'_, String>, vars: &Value) -> Value {
    match v {
        Gql::Variable(name) => vars.get(name).cloned().unwrap_or(Value::Null),
        Gql::Int(n) => json!(n.as_i64()),
        Gql::Float(f) => json!(f),
        Gql::String(s) => json!(s),
        Gql::Boolean(b) => json!(b),
        Gql::Null => Value::Null,
        Gql::Enum(e) => json!(e),
        Gql::List(items) => Value::Array(items.iter().map(|i| value(i, vars)).collect()),
        Gql::Object(fields) => {
            Value::Object(fields.iter().map(|(k, v)| (k.clone(), value(v, vars))).collect::<Map<_, _>>())
        }
    }
}

/// Whether `item` passes `filter`, read as Linear reads its filters: every key must hold; `and`/`or`
/// combine filters; `some`/`every` apply to a connection's nodes; comparators apply to the value
/// reached; any other key is a field of the item.
pub fn matches(filter: &Value, item: &Value) -> bool {
    let Some(conditions) = filter.as_object() else { return true };
    conditions.iter().all(|(key, condition)| match key.as_str() {
        "and" => condition.as_array().is_none_or(|all| all.iter().all(|c| matches(c, item))),
        "or" => condition.as_array().is_none_or(|any| any.iter().any(|c| matches(c, item))),
        "some" => nodes(item).iter().any(|n| matches(condition, n)),
        "every" => nodes(item).iter().all(|n| matches(condition, n)),
        "eq" | "neq" | "in" | "nin" | "gt" | "gte" | "lt" | "lte" | "eqIgnoreCase" => {
            compare(key, condition, item)
        }
        field => matches(condition, item.get(field).unwrap_or(&Value::Null)),
    })
}

fn nodes(connection: &Value) -> Vec<Value> {
    connection.get("nodes").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn compare(op: &str, expected: &Value, actual: &Value) -> bool {
    let order = |a: &Value, b: &Value| -> Option<std::cmp::Ordering> {
        match (a, b) {
            (Value::String(a), Value::String(b)) => {
                let time = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
                match (time(a), time(b)) {
                    (Some(a), Some(b)) => Some(a.cmp(&b)),
                    _ => Some(a.cmp(b)),
                }
            }
            (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
            (a, b) if a == b => Some(std::cmp::Ordering::Equal),
            _ => None,
        }
    };
    let list = || expected.as_array().cloned().unwrap_or_default();
    match op {
        "eq" => actual == expected,
        "neq" => actual != expected,
        "in" => list().contains(actual),
        "nin" => !list().contains(actual),
        "eqIgnoreCase" => match (actual.as_str(), expected.as_str()) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
            _ => false,
        },
        "gt" => order(actual, expected).is_some_and(|o| o.is_gt()),
        "gte" => order(actual, expected).is_some_and(|o| o.is_ge()),
        "lt" => order(actual, expected).is_some_and(|o| o.is_lt()),
        "lte" => order(actual, expected).is_some_and(|o| o.is_le()),
        _ => false,
    }
}

//! The fake Jira's workflow and its JQL: four statuses, a transition into each from any other, and
//! the few JQL conditions executor's queries and the tests use.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// (status, status category key, transition id, transition name).
pub const WORKFLOW: &[(&str, &str, &str, &str)] = &[
    ("To Do", "new", "11", "Reopen"),
    ("In Progress", "indeterminate", "21", "Start Progress"),
    ("In Review", "indeterminate", "31", "Request Review"),
    ("Done", "done", "41", "Close"),
];

/// A status as Jira returns it, with its category.
pub fn status(name: &str) -> Value {
    let (index, (_, category, _, _)) =
        WORKFLOW.iter().enumerate().find(|(_, (n, ..))| *n == name).expect("a status of the fake's workflow");
    json!({"id": (10_000 + index).to_string(), "name": name, "statusCategory": {"key": category, "name": category}})
}

/// The transitions an issue in status `current` is offered: into every other status.
pub fn offered(current: &str) -> Vec<Value> {
    WORKFLOW
        .iter()
        .filter(|(to, ..)| !to.eq_ignore_ascii_case(current))
        .map(|(to, _, id, name)| json!({"id": id, "name": name, "to": status(to), "isAvailable": true}))
        .collect()
}

/// A parsed query: conditions all issues must meet.
#[derive(Debug, Default)]
pub struct Jql {
    project: Option<String>,
    status: Option<String>,
    updated_since: Option<DateTime<Utc>>,
}

impl Jql {
    /// `project = KEY`, `status = 'Name'`, `updated >= "-Nm"`, joined by AND, in parentheses or not, an
    /// `ORDER BY` ignored; any other field is Jira's error for a field that does not exist.
    pub fn parse(jql: &str) -> Result<Jql, String> {
        let lower = jql.to_ascii_lowercase();
        let body = match lower.find(" order by ") {
            Some(at) => &jql[..at],
            None => jql,
        };
        let body = body.replace(['(', ')'], " ");
        let mut query = Jql::default();
        for clause in split_and(&body) {
            let clause = clause.trim();
            if clause.is_empty() {
                continue;
            }
            let (field, value) = clause
                .split_once(">=")
                .or_else(|| clause.split_once('='))
                .ok_or_else(|| format!("Error in the JQL Query: cannot read {clause:?}."))?;
            let value = value.trim().trim_matches(['"', '\'']).to_string();
            match field.trim().to_ascii_lowercase().as_str() {
                "project" => query.project = Some(value),
                "status" => query.status = Some(value),
                "updated" => {
                    let minutes: i64 = value
                        .strip_prefix('-')
                        .and_then(|v| v.strip_suffix('m'))
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| format!("Date value '{value}' for field 'updated' is invalid."))?;
                    query.updated_since = Some(Utc::now() - chrono::TimeDelta::minutes(minutes));
                }
                other => {
                    return Err(format!(
                        "Field '{other}' does not exist or you do not have permission to view it."
                    ));
                }
            }
        }
        Ok(query)
    }

    pub fn selects(&self, issue: &Value) -> bool {
        let text = |pointer: &str| issue.pointer(pointer).and_then(Value::as_str).unwrap_or("");
        let updated = DateTime::parse_from_str(text("/fields/updated"), "%Y-%m-%dT%H:%M:%S%.f%z")
            .map(|at| at.with_timezone(&Utc))
            .ok();
        self.project.as_deref().is_none_or(|p| text("/fields/project/key").eq_ignore_ascii_case(p))
            && self.status.as_deref().is_none_or(|s| text("/fields/status/name").eq_ignore_ascii_case(s))
            && self.updated_since.is_none_or(|since| updated.is_some_and(|at| at >= since))
    }
}

/// `text` split at each ` AND ` (any case).
fn split_and(text: &str) -> Vec<&str> {
    let lower = text.to_ascii_lowercase();
    let mut parts = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find(" and ") {
        parts.push(&text[from..from + at]);
        from += at + 5;
    }
    parts.push(&text[from..]);
    parts
}

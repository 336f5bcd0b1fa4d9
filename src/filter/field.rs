//! The fields a rule can name, and how each is read from a task: as text (one value, or several for
//! a `*` in a raw path), or as a timestamp for `older_than`. A missing field reads as empty.

use std::borrow::Cow;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;

use super::TaskFields;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Field {
    Description,
    Notes,
    Source,
    Name,
    Text,
    Completed,
    Assignee,
    ModifiedAt,
    Raw(Vec<Step>),
}

/// One segment of a raw path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// An object key; on an array, an index when it is a number, else the element named so.
    Key { key: String, index: Option<usize> },
    /// Every element of an array (or every value of an object).
    Each,
}

impl Field {
    pub(super) fn parse(name: &str) -> Result<Field, String> {
        Ok(match name {
            "description" => Field::Description,
            "notes" => Field::Notes,
            "source" => Field::Source,
            "name" => Field::Name,
            "text" => Field::Text,
            "completed" => Field::Completed,
            "assignee" => Field::Assignee,
            "modified_at" => Field::ModifiedAt,
            _ => match name.strip_prefix("raw.") {
                Some(path) => Field::Raw(parse_path(path)?),
                None => {
                    return Err(format!(
                        "unknown field {name:?}; the fields are description, notes, source, name, text, \
                         completed, assignee, modified_at and raw.PATH"
                    ));
                }
            },
        })
    }

    /// The field's text values: one for every field but a raw path through `*`, which has as many
    /// as it reaches (possibly none).
    pub(super) fn values<'a>(&self, task: &TaskFields<'a>) -> Values<'a> {
        let one = |s: &'a str| Values::One(Cow::Borrowed(s));
        match self {
            Field::Description => one(task.description),
            Field::Notes => one(task.notes),
            Field::Source => one(task.source),
            Field::Name => one(task.description.lines().next().unwrap_or("")),
            Field::Text => match (task.description.is_empty(), task.notes.is_empty()) {
                (_, true) => one(task.description),
                (true, false) => one(task.notes),
                (false, false) => Values::One(Cow::Owned(format!("{}\n{}", task.description, task.notes))),
            },
            Field::Completed => one(match task.completed {
                Some(true) => "true",
                Some(false) => "false",
                None => "",
            }),
            Field::Assignee => one(task.assignee.unwrap_or("")),
            Field::ModifiedAt => match task.modified_at {
                Some(at) => Values::One(Cow::Owned(at.to_rfc3339())),
                None => one(""),
            },
            Field::Raw(path) => {
                let mut found = Vec::new();
                if let Some(raw) = task.raw {
                    walk(raw, path, &mut found);
                }
                Values::Many(found.into_iter().map(json_text).collect())
            }
        }
    }

    /// Whether any of the field's values is a timestamp before `cutoff`.
    pub(super) fn any_time_before(&self, task: &TaskFields<'_>, cutoff: DateTime<Utc>) -> bool {
        if *self == Field::ModifiedAt {
            return task.modified_at.is_some_and(|at| at < cutoff);
        }
        self.values(task).iter().any(|v| parse_time(v).is_some_and(|at| at < cutoff))
    }
}

pub(super) enum Values<'a> {
    One(Cow<'a, str>),
    Many(Vec<Cow<'a, str>>),
}

impl Values<'_> {
    pub(super) fn iter(&self) -> impl Iterator<Item = &str> {
        let (one, many) = match self {
            Values::One(v) => (Some(v.as_ref()), &[][..]),
            Values::Many(vs) => (None, vs.as_slice()),
        };
        one.into_iter().chain(many.iter().map(|v| v.as_ref()))
    }
}

fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    path.split('.')
        .map(|segment| match segment {
            "" => Err(format!("raw path {path:?} has an empty segment")),
            "*" => Ok(Step::Each),
            key => Ok(Step::Key { key: key.to_string(), index: key.parse().ok() }),
        })
        .collect()
}

fn walk<'v>(value: &'v Value, path: &[Step], found: &mut Vec<&'v Value>) {
    let Some((step, rest)) = path.split_first() else {
        found.push(value);
        return;
    };
    match (step, value) {
        (Step::Each, Value::Array(items)) => items.iter().for_each(|item| walk(item, rest, found)),
        (Step::Each, Value::Object(map)) => map.values().for_each(|item| walk(item, rest, found)),
        (Step::Key { key, .. }, Value::Object(map)) => {
            if let Some(item) = map.get(key) {
                walk(item, rest, found);
            }
        }
        (Step::Key { index: Some(i), .. }, Value::Array(items)) => {
            if let Some(item) = items.get(*i) {
                walk(item, rest, found);
            }
        }
        (Step::Key { key, index: None }, Value::Array(items)) => {
            // Asana-style lists of named objects: custom_fields.Platform.
            if let Some(item) =
                items.iter().find(|item| item.get("name").and_then(Value::as_str) == Some(key))
            {
                walk(item, rest, found);
            }
        }
        _ => {}
    }
}

fn json_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        Value::Null => Cow::Borrowed(""),
        other => Cow::Owned(other.to_string()),
    }
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?.and_hms_opt(0, 0, 0).map(|at| at.and_utc())
}

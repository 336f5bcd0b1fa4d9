//! What a listing of tasks is narrowed and ordered by, as SQL: every condition and every sort is fixed
//! text chosen here (a whitelist), and every value a user gave travels as a bound parameter. A
//! listing's statement is put together from these fixed pieces, only the conditions it needs, so each
//! database can read the page through the index its sort has (a `$1 IS NULL OR …` condition would hide
//! that index from SQLite's planner).

use chrono::{DateTime, Utc};

use super::TaskFilter;
use crate::domain::QueueStatus;

/// The most words a search looks for: a longer query only costs more to answer.
pub const MAX_SEARCH_WORDS: usize = 32;

/// The column a listing of tasks is sorted by (then by id, so that a page is always the same rows).
/// Empty values come last in ascending order; descending is exactly the reverse.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSort {
    /// Most urgent first (1 before 2; none last), then oldest: the order work is taken in.
    #[default]
    Priority,
    Gid,
    Source,
    /// By status name, and the queue's order within each.
    Status,
    Complexity,
    Feasibility,
    /// When the task was added.
    Added,
    /// When the task last changed.
    Updated,
}

impl TaskSort {
    pub const ALL: [TaskSort; 8] = [
        TaskSort::Priority,
        TaskSort::Gid,
        TaskSort::Source,
        TaskSort::Status,
        TaskSort::Complexity,
        TaskSort::Feasibility,
        TaskSort::Added,
        TaskSort::Updated,
    ];

    /// The name a query string (`sort=`) and the CLI's `--sort` use.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSort::Priority => "priority",
            TaskSort::Gid => "gid",
            TaskSort::Source => "source",
            TaskSort::Status => "status",
            TaskSort::Complexity => "complexity",
            TaskSort::Feasibility => "feasibility",
            TaskSort::Added => "added",
            TaskSort::Updated => "updated",
        }
    }

    /// The sort named `name`, or an error listing the names there are.
    pub fn parse(name: &str) -> Result<TaskSort, String> {
        TaskSort::ALL.into_iter().find(|s| s.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = TaskSort::ALL.iter().map(|s| s.as_str()).collect();
            format!("no sort {name:?}: sort by one of {}", names.join(", "))
        })
    }

    /// The terms of `ORDER BY`, ascending, as each backend's indexes (migration 13) hold them. SQLite
    /// puts NULL first, so its indexes and sorts lead with `x IS NULL`; PostgreSQL already puts NULL
    /// last ascending and first descending.
    fn terms(self, postgres: bool) -> &'static [&'static str] {
        match (self, postgres) {
            (TaskSort::Priority, false) => &["priority IS NULL", "priority", "added_at", "id"],
            (TaskSort::Priority, true) => &["priority", "added_at", "id"],
            (TaskSort::Gid, _) => &["task_gid", "id"],
            (TaskSort::Source, false) => &["source IS NULL", "source", "id"],
            (TaskSort::Source, true) => &["source", "id"],
            (TaskSort::Status, false) => &["status", "priority IS NULL", "priority", "added_at", "id"],
            (TaskSort::Status, true) => &["status", "priority", "added_at", "id"],
            (TaskSort::Complexity, false) => &["complexity IS NULL", "complexity", "id"],
            (TaskSort::Complexity, true) => &["complexity", "id"],
            (TaskSort::Feasibility, false) => &["feasibility IS NULL", "feasibility", "id"],
            (TaskSort::Feasibility, true) => &["feasibility", "id"],
            (TaskSort::Added, _) => &["added_at", "id"],
            (TaskSort::Updated, _) => &["updated_at", "id"],
        }
    }

    /// `ORDER BY …` for this sort, ascending or descending (every term reversed, so that the same
    /// index is read backwards).
    pub(super) fn order_by(self, postgres: bool, descending: bool) -> String {
        let dir = if descending { " DESC" } else { "" };
        let terms: Vec<String> = self.terms(postgres).iter().map(|t| format!("{t}{dir}")).collect();
        format!("ORDER BY {}", terms.join(", "))
    }
}

/// The words a search looks for: the runs of letters and digits in `text`, as the indexes split the
/// tasks' text (punctuation, `_` and spaces separate words). At most [`MAX_SEARCH_WORDS`].
pub fn search_words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).take(MAX_SEARCH_WORDS).collect()
}

/// A search as an FTS5 query: each word an FTS5 string with a prefix star (`"log"*`), all of them
/// required. A word holds only letters and digits, so it cannot close its string: FTS5's own syntax
/// (`"`, `*`, `NEAR`, `OR`, `-`, `:`, parentheses) in a user's text is never read as syntax.
fn fts5_query(words: &[&str]) -> String {
    words.iter().map(|w| format!("\"{w}\"*")).collect::<Vec<_>>().join(" ")
}

/// A search as a PostgreSQL `tsquery`: each word a quoted lexeme with a prefix match (`'log':*`), all
/// of them required (`&`). Letters and digits only, so no quote or operator of the user's reaches the
/// query's syntax.
fn tsquery(words: &[&str]) -> String {
    words.iter().map(|w| format!("'{w}':*")).collect::<Vec<_>>().join(" & ")
}

/// A value bound to a listing's statement.
#[derive(Debug, Clone)]
pub(super) enum Value {
    Text(String),
    Int(i64),
    Time(DateTime<Utc>),
}

/// A listing's `WHERE` clause (empty when nothing narrows it) and the values of its `$1`, `$2`, ….
#[derive(Debug, Default)]
pub(super) struct Conditions {
    pub(super) sql: String,
    pub(super) values: Vec<Value>,
    searched: bool,
}

impl Conditions {
    /// Adds `fixed` (a condition written here, ending just before its placeholder) bound to `value`.
    fn and(&mut self, fixed: &'static str, value: Value) {
        self.values.push(value);
        let joiner = if self.sql.is_empty() { "WHERE " } else { " AND " };
        self.sql.push_str(&format!("{joiner}{fixed}${}", self.values.len()));
    }

    /// `and`, for a condition whose placeholder sits inside it: `fixed` is `(before, after)`.
    fn and_around(&mut self, fixed: (&'static str, &'static str), value: Value) {
        self.and(fixed.0, value);
        self.sql.push_str(fixed.1);
    }

    /// Whether a full-text search is among the conditions.
    pub(super) fn searches(&self) -> bool {
        self.searched
    }

    /// The next placeholder's number (for a limit or an offset after the conditions).
    pub(super) fn next(&self) -> usize {
        self.values.len() + 1
    }

    /// On SQLite, when a search is the only condition (its words the one value bound), the statement
    /// that counts its matches in the full-text index alone, bound to the same `$1`.
    pub(super) fn search_only(&self, postgres: bool) -> Option<&'static str> {
        (!postgres && self.searched && self.values.len() == 1)
            .then_some("SELECT COUNT(*) FROM executor_queue_fts WHERE executor_queue_fts MATCH $1")
    }

    /// The conditions of `f` on one backend.
    pub(super) fn of(f: &TaskFilter, postgres: bool) -> Conditions {
        let mut c = Conditions::default();
        if let Some(status) = f.status {
            c.and("status = ", Value::Text(QueueStatus::as_str(status).to_string()));
        }
        if let Some(source) = &f.source {
            c.and("source = ", Value::Text(source.clone()));
        }
        if let Some(repo) = &f.repo {
            c.and("repo = ", Value::Text(repo.clone()));
        }
        if let Some(min) = f.priority_min {
            c.and("priority >= ", Value::Int(min));
        }
        if let Some(max) = f.priority_max {
            c.and("priority <= ", Value::Int(max));
        }
        if let Some(since) = f.added_since {
            c.and("added_at >= ", Value::Time(since));
        }
        if let Some(before) = f.added_before {
            c.and("added_at < ", Value::Time(before));
        }
        let words = f.text.as_deref().map(search_words).unwrap_or_default();
        c.searched = !words.is_empty();
        if c.searched {
            if postgres {
                c.and_around(("search_words @@ to_tsquery('simple', ", ")"), Value::Text(tsquery(&words)));
            } else {
                // `+id`: SQLite must not look the matches up by rowid (a common word matches most of
                // the table, each a read of a wide row), but walk the sort's narrow index and test
                // each id against the matches, stopping at the page's end.
                c.and_around(
                    ("+id IN (SELECT rowid FROM executor_queue_fts WHERE executor_queue_fts MATCH ", ")"),
                    Value::Text(fts5_query(&words)),
                );
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_runs_of_letters_and_digits_and_no_syntax_survives() {
        assert_eq!(
            search_words(r#""a" OR * NEAR( -x col:val login.rs"#),
            ["a", "OR", "NEAR", "x", "col", "val", "login", "rs"]
        );
        assert_eq!(fts5_query(&search_words("-x \"y\"")), r#""x"* "y"*"#);
        assert_eq!(tsquery(&search_words("o'brien & !x")), "'o':* & 'brien':* & 'x':*");
        assert!(search_words("%_ ' \" * :").is_empty());
        assert_eq!(search_words(&"w ".repeat(100)).len(), MAX_SEARCH_WORDS);
    }

    #[test]
    fn a_descending_sort_reverses_every_term() {
        assert_eq!(
            TaskSort::Priority.order_by(false, true),
            "ORDER BY priority IS NULL DESC, priority DESC, added_at DESC, id DESC"
        );
        assert_eq!(TaskSort::Source.order_by(true, false), "ORDER BY source, id");
        assert!(TaskSort::parse("title; DROP").unwrap_err().contains("priority, gid"));
    }

    #[test]
    fn conditions_number_their_placeholders_in_order() {
        let f = TaskFilter {
            status: Some(QueueStatus::Pending),
            priority_min: Some(1),
            text: Some("x".into()),
            ..Default::default()
        };
        let c = Conditions::of(&f, true);
        assert_eq!(
            c.sql,
            "WHERE status = $1 AND priority >= $2 AND search_words @@ to_tsquery('simple', $3)"
        );
        assert_eq!(c.next(), 4);
        assert_eq!(Conditions::of(&TaskFilter::default(), false).sql, "");
    }
}

//! Skip filters: named rules over a task's fields, evaluated before any model call. A task that a
//! filter matches is skipped, and the filter's name is recorded on it so `queue show` can say why.
//!
//! Pure: no I/O and no clock (`now` is a parameter), so the analyzer, `reanalyze` and the tests all
//! get the same answer for the same task.
//!
//! # The rule language (TOML)
//!
//! ```toml
//! [intake]
//! assignee = "alex"                  # the configured user: what "$assignee" stands for
//! qualifying_sources = ["user_reports", "watched"]   # empty or absent: every source qualifies
//!
//! [[filters]]
//! name = "not_macos"                 # recorded on the task it skips; unique
//! why = "not a macOS task"           # optional human sentence
//! [filters.when]                     # skip when this rule matches
//! not = { any = [ { field = "description", contains = "macOS" },
//!                 { field = "name", contains = "macOS" } ] }
//! ```
//!
//! A rule is exactly one of:
//!
//! | rule                                  | matches when                                          |
//! |---------------------------------------|-------------------------------------------------------|
//! | `{ field, contains = "x" }`           | the field contains `x`                                |
//! | `{ field, matches = "re" }`           | the regex finds a match (Rust `regex` syntax, linear) |
//! | `{ field, equals = "x" }`             | the whole field is `x`                                |
//! | `{ field, in = ["x", "y"] }`          | the whole field is one of them                        |
//! | `{ field, is_empty = true }`          | the field is missing or empty (`false`: it is not)    |
//! | `{ field, older_than = "30d" }`       | the field is a timestamp more than that before `now`  |
//! | `{ all = [rule, …] }`                 | every rule matches                                    |
//! | `{ any = [rule, …] }`                 | at least one rule matches                             |
//! | `{ not = rule }`                      | the rule does not match                               |
//!
//! `case_sensitive` (on contains, equals, in, matches) defaults to false for contains, equals and
//! in, and to true for `matches` (a regex means what it says; write `(?i)` or set it to false).
//! `"$assignee"` as a value of equals or in stands for `intake.assignee`. Durations are written as
//! in `90s`, `12h`, `30d`, `2w`. Timestamps are RFC 3339 or a bare `YYYY-MM-DD` (midnight UTC); a
//! field that is not a timestamp is never "older than" anything.
//!
//! Fields: `description`, `notes`, `source`, `name` (the first line of the description),
//! `text` (description and notes), `completed` (`"true"`, `"false"`, or empty when unknown),
//! `assignee` (login or name, empty when unassigned), `modified_at` (RFC 3339), and any field of
//! the task's raw JSON from its source by a dotted path, `raw.memberships.0.section.name`:
//! a number indexes an array, a name looks up an object key, a name on an array picks the element
//! whose `"name"` is that name (Asana's `raw.custom_fields.Platform.display_value`), and `*` means
//! any element (the rule matches if any of them does; `is_empty` holds if all are empty). A string
//! is itself, a number or bool its JSON text, null empty, an object or array its compact JSON. A
//! missing field is empty.
//!
//! Before the filters, a gate: when `intake.qualifying_sources` is not empty, a task from any other
//! source is skipped with the rule name [`SOURCE_NOT_QUALIFYING`].

mod field;
mod rule;
mod seed;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use rule::Node;
pub use seed::SEED_RULES;

/// The rule name recorded on a task whose source is not one of `intake.qualifying_sources`. No
/// filter may take this name.
pub const SOURCE_NOT_QUALIFYING: &str = "source_not_qualifying";

/// The fields of one task the filters can see, borrowed from wherever the caller keeps the task.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskFields<'a> {
    pub description: &'a str,
    pub notes: &'a str,
    /// The configured name of the source the task came from.
    pub source: &'a str,
    /// None when the source does not say.
    pub completed: Option<bool>,
    /// The assignee's login or name; None when unassigned.
    pub assignee: Option<&'a str>,
    pub modified_at: Option<DateTime<Utc>>,
    /// The task as its source sent it, for `raw.…` fields.
    pub raw: Option<&'a serde_json::Value>,
}

/// `[intake]`: the settings the filters depend on. Both default to empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntakeRules {
    /// The configured user, for `"$assignee"`.
    pub assignee: String,
    /// When not empty, only tasks from these sources go on to the filters and the analyzer.
    pub qualifying_sources: Vec<String>,
}

/// One `[[filters]]` table, as written in the config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    pub name: String,
    #[serde(default)]
    pub why: String,
    pub when: Rule,
}

/// A rule as written: exactly one operator (with `field`) or one combinator. Checked and compiled
/// by [`Filters::compile`], which names the filter and the place in it when something is wrong.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub field: Option<String>,
    pub contains: Option<String>,
    pub matches: Option<String>,
    pub equals: Option<String>,
    #[serde(rename = "in")]
    pub one_of: Option<Vec<String>>,
    pub is_empty: Option<bool>,
    pub older_than: Option<String>,
    pub case_sensitive: Option<bool>,
    pub all: Option<Vec<Rule>>,
    pub any: Option<Vec<Rule>>,
    pub not: Option<Box<Rule>>,
}

/// `[intake]` and `[[filters]]` together, as in [`SEED_RULES`]; the lead's config may embed the two
/// parts itself instead.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RulesConfig {
    pub intake: IntakeRules,
    pub filters: Vec<FilterConfig>,
}

/// Why a task is skipped: the rule's name (recorded on the task) and its human sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub rule: String,
    pub why: String,
}

/// A config mistake in the filters, naming the filter and where in its rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("filter {filter:?}, at {at}: {problem}")]
    Rule { filter: String, at: String, problem: String },
    #[error("filter {name:?}: {problem}")]
    Name { name: String, problem: String },
}

/// The compiled filters: regexes built, durations parsed, `"$assignee"` substituted.
#[derive(Debug, Clone)]
pub struct Filters {
    qualifying_sources: Vec<String>,
    filters: Vec<CompiledFilter>,
}

#[derive(Debug, Clone)]
struct CompiledFilter {
    name: String,
    why: String,
    when: Node,
}

impl Filters {
    /// Checks and compiles the filters: names non-empty and unique, each rule well formed, regexes
    /// valid, durations valid, `"$assignee"` only when `intake.assignee` is set.
    pub fn compile(rules: &IntakeRules, filters: &[FilterConfig]) -> Result<Filters, FilterError> {
        let mut compiled: Vec<CompiledFilter> = Vec::with_capacity(filters.len());
        for filter in filters {
            let name_problem = if filter.name.trim().is_empty() {
                Some("a filter needs a name (it is recorded on the tasks it skips)".to_string())
            } else if filter.name == SOURCE_NOT_QUALIFYING {
                Some(format!("{SOURCE_NOT_QUALIFYING} is the qualifying-sources gate's name"))
            } else if compiled.iter().any(|c| c.name == filter.name) {
                Some("two filters have this name; each needs its own".to_string())
            } else {
                None
            };
            if let Some(problem) = name_problem {
                return Err(FilterError::Name { name: filter.name.clone(), problem });
            }
            let context = rule::Context { assignee: &rules.assignee };
            let when = rule::compile(&filter.when, "when", &context)
                .map_err(|(at, problem)| FilterError::Rule { filter: filter.name.clone(), at, problem })?;
            compiled.push(CompiledFilter { name: filter.name.clone(), why: filter.why.clone(), when });
        }
        Ok(Filters { qualifying_sources: rules.qualifying_sources.clone(), filters: compiled })
    }

    /// The qualifying-sources gate, then the first filter (in config order) that skips this task;
    /// None when it passes.
    pub fn skip_reason(&self, task: &TaskFields<'_>, now: DateTime<Utc>) -> Option<Skip> {
        if !self.qualifying_sources.is_empty() && !self.qualifying_sources.iter().any(|s| s == task.source) {
            return Some(Skip {
                rule: SOURCE_NOT_QUALIFYING.to_string(),
                why: format!("source {:?} is not one of intake.qualifying_sources", task.source),
            });
        }
        self.filters
            .iter()
            .find(|f| f.when.eval(task, now))
            .map(|f| Skip { rule: f.name.clone(), why: f.why.clone() })
    }

    /// The filter names in config order (without the gate), for reports by rule.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.filters.iter().map(|f| f.name.as_str())
    }
}

#[cfg(test)]
mod tests;

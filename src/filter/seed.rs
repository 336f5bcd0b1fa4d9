//! The seed's skip rules, as live (uncommented) TOML for `executor init` to write and the tests and
//! the benchmark to parse.

/// The seed's qualifying sources and five filters, as the TOML text `executor init` writes: live,
/// not commented out. It parses as a [`super::RulesConfig`] (`[intake]` and `[[filters]]`).
///
/// ```toml
/// [intake]
/// assignee = "alex"
/// qualifying_sources = ["O-L Backlog (Desktop Browsers)", "user_reports", "watched", "hack_days",
///                       "my_tasks_inbox", "my_tasks_backlog"]
///
/// [[filters]]
/// name = "not_macos"
/// why = "not a macOS task"
/// [filters.when]
/// not = { any = [ { field = "description", contains = "macOS" }, { field = "name", contains = "macOS" } ] }
/// # … project_template, figma_link, closed_or_not_mine, user_feedback_raw: see the constant.
/// ```
pub const SEED_RULES: &str = r#"# Skip filters: which tasks never reach the analyzer.
# A rule is { field, OP } with OP one of contains, matches (regex), equals, in = [...],
# is_empty = true|false, older_than = "30d"; or all = [rules], any = [rules], not = rule.
# case_sensitive = true|false (default false, but true for matches). Fields: description, notes,
# source, name (first line), text (description + notes), completed ("true"/"false"), assignee,
# modified_at, raw.PATH (the source's JSON: raw.memberships.0.section.name, raw.custom_fields.*.name).
[intake]
# You in the tracker (login or name): "$assignee" in a filter stands for it.
assignee = "alex"
# Only tasks from these sources are analyzed; the rest are skipped as "source_not_qualifying".
# An empty list lets every source through.
qualifying_sources = ["O-L Backlog (Desktop Browsers)", "user_reports", "watched", "hack_days",
                      "my_tasks_inbox", "my_tasks_backlog"]

# Each filter skips the tasks its `when` rule matches; the first that matches names the skip.
[[filters]]
name = "not_macos"
why = "not a macOS task"
[filters.when]
not = { any = [ { field = "description", contains = "macOS" }, { field = "name", contains = "macOS" } ] }

[[filters]]
name = "project_template"
why = "a project template (has both \"Timeline\" and \"Project Advisor:\")"
[filters.when]
all = [ { field = "description", contains = "Timeline", case_sensitive = true },
        { field = "description", contains = "Project Advisor:", case_sensitive = true } ]

[[filters]]
name = "figma_link"
why = "links a Figma design"
[filters.when]
field = "description"
matches = 'figma\.com/(file|design|proto|board)/'
case_sensitive = false

[[filters]]
name = "closed_or_not_mine"
why = "completed, or assigned to someone else"
[filters.when]
any = [ { field = "completed", equals = "true" },
        { all = [ { field = "assignee", is_empty = false },
                  { not = { field = "assignee", equals = "$assignee" } } ] } ]

[[filters]]
name = "user_feedback_raw"
why = "raw user feedback, not a task"
[filters.when]
field = "source"
equals = "user_feedback_raw"
"#;

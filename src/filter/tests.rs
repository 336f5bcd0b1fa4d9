//! Table tests of the skip filters: the seed's five rules and the gate, every operator and
//! combinator, fields and raw paths, config errors, and hostile task text. Each row has a name that
//! a failure prints.

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{Value, json};

use super::*;

/// An owned task, so rows can be built freely; `fields()` borrows it as the filters see it.
#[derive(Clone, Default)]
struct Task {
    description: String,
    notes: String,
    source: String,
    completed: Option<bool>,
    assignee: Option<String>,
    modified_at: Option<DateTime<Utc>>,
    raw: Option<Value>,
}

impl Task {
    fn fields(&self) -> TaskFields<'_> {
        TaskFields {
            description: &self.description,
            notes: &self.notes,
            source: &self.source,
            completed: self.completed,
            assignee: self.assignee.as_deref(),
            modified_at: self.modified_at,
            raw: self.raw.as_ref(),
        }
    }
}

/// A task that passes every seed rule; rows change one thing.
fn good() -> Task {
    Task {
        description: "macOS: the sidebar flickers\nSteps: open a tab".to_string(),
        source: "user_reports".to_string(),
        completed: Some(false),
        ..Task::default()
    }
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap()
}

fn parse(text: &str) -> RulesConfig {
    toml::from_str(text).unwrap_or_else(|e| panic!("parse {text}: {e}"))
}

fn seed() -> RulesConfig {
    parse(SEED_RULES)
}

fn compile(config: &RulesConfig) -> Result<Filters, FilterError> {
    Filters::compile(&config.intake, &config.filters)
}

#[test]
fn seed_rules_parse_and_name_five_filters() {
    let config = seed();
    let filters = compile(&config).unwrap();
    let names: Vec<&str> = filters.names().collect();
    assert_eq!(
        names,
        ["not_macos", "project_template", "figma_link", "closed_or_not_mine", "user_feedback_raw"]
    );
    assert_eq!(config.intake.assignee, "alex");
    assert_eq!(config.intake.qualifying_sources.len(), 6);
    assert!(config.filters.iter().all(|f| !f.why.is_empty()), "every seed filter says why");
}

#[test]
fn seed_rules_table() {
    let with = |change: &dyn Fn(&mut Task)| {
        let mut task = good();
        change(&mut task);
        task
    };
    let rows: Vec<(&str, Task, Option<&str>)> = vec![
        ("a good macOS task passes", good(), None),
        (
            "no macOS anywhere",
            with(&|t| t.description = "Windows: the sidebar flickers".into()),
            Some("not_macos"),
        ),
        ("macOS only in the name", with(&|t| t.description = "macOS crash\nSteps: none".into()), None),
        ("macOS only further down", with(&|t| t.description = "Crash\non macOS 15".into()), None),
        ("MACOS in capitals", with(&|t| t.description = "MACOS crash".into()), None),
        (
            "macOS only in notes is not a macOS task",
            with(&|t| {
                t.description = "Crash".into();
                t.notes = "macOS".into();
            }),
            Some("not_macos"),
        ),
        ("empty description", with(&|t| t.description = String::new()), Some("not_macos")),
        ("Timeline alone", with(&|t| t.description = "macOS Timeline view".into()), None),
        ("Project Advisor: alone", with(&|t| t.description = "macOS\nProject Advisor: Kim".into()), None),
        (
            "Timeline and Project Advisor:",
            with(&|t| t.description = "macOS launch\nTimeline: Q3\nProject Advisor: Kim".into()),
            Some("project_template"),
        ),
        (
            "timeline in lower case is not the template",
            with(&|t| t.description = "macOS launch\ntimeline: Q3\nProject Advisor: Kim".into()),
            None,
        ),
        (
            "Project Advisor without the colon",
            with(&|t| t.description = "macOS launch\nTimeline: Q3\nProject Advisor Kim".into()),
            None,
        ),
        (
            "figma file link",
            with(&|t| t.description = "macOS: see https://www.figma.com/file/AbC123/Sidebar".into()),
            Some("figma_link"),
        ),
        (
            "figma design link",
            with(&|t| t.description = "macOS: https://figma.com/design/x?node-id=1".into()),
            Some("figma_link"),
        ),
        (
            "figma link in capitals",
            with(&|t| t.description = "macOS: HTTPS://WWW.FIGMA.COM/DESIGN/X".into()),
            Some("figma_link"),
        ),
        ("figma.com without a file", with(&|t| t.description = "macOS: we like figma.com".into()), None),
        ("completed", with(&|t| t.completed = Some(true)), Some("closed_or_not_mine")),
        ("completed unknown", with(&|t| t.completed = None), None),
        ("unassigned", with(&|t| t.assignee = None), None),
        ("assigned to the user", with(&|t| t.assignee = Some("alex".into())), None),
        ("assigned to the user, other case", with(&|t| t.assignee = Some("Alex".into())), None),
        ("assigned to someone else", with(&|t| t.assignee = Some("sam".into())), Some("closed_or_not_mine")),
        ("assigned to an empty name", with(&|t| t.assignee = Some(String::new())), None),
        (
            "a qualifying source with spaces",
            with(&|t| t.source = "O-L Backlog (Desktop Browsers)".into()),
            None,
        ),
        ("a source not qualifying", with(&|t| t.source = "random".into()), Some(SOURCE_NOT_QUALIFYING)),
        (
            "qualifying sources are exact",
            with(&|t| t.source = "User_Reports".into()),
            Some(SOURCE_NOT_QUALIFYING),
        ),
        (
            "user_feedback_raw meets the gate first",
            with(&|t| t.source = "user_feedback_raw".into()),
            Some(SOURCE_NOT_QUALIFYING),
        ),
        (
            "the first matching filter names the skip",
            with(&|t| {
                t.description = "Linux".into();
                t.completed = Some(true);
            }),
            Some("not_macos"),
        ),
    ];
    let filters = compile(&seed()).unwrap();
    for (row, task, expected) in rows {
        let got = filters.skip_reason(&task.fields(), now());
        assert_eq!(got.as_ref().map(|s| s.rule.as_str()), expected, "FAIL row {row:?}: {got:?}");
    }
}

#[test]
fn seed_user_feedback_raw_rule_without_the_gate() {
    let mut config = seed();
    config.intake.qualifying_sources.clear();
    let filters = compile(&config).unwrap();
    let rows = [
        ("user_feedback_raw", Some("user_feedback_raw")),
        ("anything", None),
        ("USER_FEEDBACK_RAW", Some("user_feedback_raw")),
    ];
    for (source, expected) in rows {
        let task = Task { source: source.to_string(), ..good() };
        let got = filters.skip_reason(&task.fields(), now());
        assert_eq!(got.as_ref().map(|s| s.rule.as_str()), expected, "FAIL row source {source:?}: {got:?}");
    }
}

#[test]
fn a_skip_carries_the_filter_why_and_the_gate_says_the_source() {
    let filters = compile(&seed()).unwrap();
    let skip = filters.skip_reason(&Task { completed: Some(true), ..good() }.fields(), now()).unwrap();
    assert_eq!(
        skip,
        Skip { rule: "closed_or_not_mine".into(), why: "completed, or assigned to someone else".into() }
    );
    let skip = filters.skip_reason(&Task { source: "mail".into(), ..good() }.fields(), now()).unwrap();
    assert!(skip.why.contains("\"mail\""), "{skip:?}");
}

#[test]
fn no_filters_and_no_sources_pass_everything() {
    let filters = Filters::compile(&IntakeRules::default(), &[]).unwrap();
    assert_eq!(filters.skip_reason(&Task::default().fields(), now()), None);
}

/// Compiles one filter whose `when` is `rule` (an inline TOML table), with `intake.assignee = "alex"`.
fn one_rule(rule: &str) -> Result<Filters, FilterError> {
    compile(&parse(&format!("[intake]\nassignee = \"alex\"\n[[filters]]\nname = \"r\"\nwhen = {rule}\n")))
}

fn raw_task() -> Task {
    Task {
        description: "First line\nsecond line".into(),
        notes: "a note".into(),
        source: "asana".into(),
        completed: Some(false),
        assignee: Some("Alex".into()),
        modified_at: Some(now() - Duration::days(31)),
        raw: Some(json!({
            "gid": 42,
            "liked": true,
            "nothing": null,
            "title": "Raw title",
            "due_on": "2026-10-01",
            "created_at": "2026-11-29T12:00:00Z",
            "memberships": [
                { "project": { "name": "Browser" }, "section": { "name": "Inbox" } },
                { "project": { "name": "Mobile" }, "section": { "name": "Later" } }
            ],
            "custom_fields": [
                { "name": "Platform", "display_value": "macOS", "number_value": null },
                { "name": "Effort", "display_value": null, "number_value": 3 }
            ],
            "tags": [],
            "0": "a key that looks like an index"
        })),
    }
}

#[test]
fn operators_fields_and_combinators_table() {
    let rows: &[(&str, &str, bool)] = &[
        // contains
        ("contains, case-insensitive by default", r#"{ field = "description", contains = "FIRST" }"#, true),
        (
            "contains, case-sensitive miss",
            r#"{ field = "description", contains = "FIRST", case_sensitive = true }"#,
            false,
        ),
        (
            "contains, case-sensitive hit",
            r#"{ field = "description", contains = "First", case_sensitive = true }"#,
            true,
        ),
        ("contains, absent", r#"{ field = "description", contains = "third" }"#, false),
        (
            "contains, regex characters are literal",
            r#"{ field = "description", contains = "line.second" }"#,
            false,
        ),
        ("contains across the newline", "{ field = \"description\", contains = \"line\\nsecond\" }", true),
        // matches
        ("matches, case-sensitive by default", r#"{ field = "description", matches = '^first\b' }"#, false),
        (
            "matches, case_sensitive = false",
            r#"{ field = "description", matches = '^first\b', case_sensitive = false }"#,
            true,
        ),
        ("matches, inline (?i)", r#"{ field = "description", matches = '(?i)^first\b' }"#, true),
        ("matches, multi-line flag", r#"{ field = "description", matches = '(?m)^second line$' }"#, true),
        ("matches, no match", r#"{ field = "description", matches = '\d{3}' }"#, false),
        // equals / in
        ("equals the whole field", r#"{ field = "source", equals = "asana" }"#, true),
        ("equals ignores case", r#"{ field = "source", equals = "ASANA" }"#, true),
        ("equals, case-sensitive", r#"{ field = "source", equals = "ASANA", case_sensitive = true }"#, false),
        ("equals is not contains", r#"{ field = "source", equals = "asa" }"#, false),
        ("equals empty on an empty field", r#"{ field = "raw.nothing", equals = "" }"#, true),
        ("in, one of", r#"{ field = "source", in = ["github", "Asana"] }"#, true),
        ("in, none of", r#"{ field = "source", in = ["github", "file"] }"#, false),
        ("in, case-sensitive", r#"{ field = "source", in = ["Asana"], case_sensitive = true }"#, false),
        ("$assignee in equals", r#"{ field = "assignee", equals = "$assignee" }"#, true),
        ("$assignee in in", r#"{ field = "assignee", in = ["sam", "$assignee"] }"#, true),
        ("$assignee only as the whole value", r#"{ field = "assignee", equals = "$assignee2" }"#, false),
        // is_empty
        ("is_empty on a set field", r#"{ field = "notes", is_empty = true }"#, false),
        ("is_empty = false on a set field", r#"{ field = "notes", is_empty = false }"#, true),
        ("is_empty on a missing raw field", r#"{ field = "raw.nope", is_empty = true }"#, true),
        ("is_empty on raw null", r#"{ field = "raw.nothing", is_empty = true }"#, true),
        ("is_empty on an empty raw array", r#"{ field = "raw.tags.*", is_empty = true }"#, true),
        (
            "is_empty, wildcard with a null and a value",
            r#"{ field = "raw.custom_fields.*.display_value", is_empty = true }"#,
            false,
        ),
        // older_than
        ("modified 31 days ago is older than 30d", r#"{ field = "modified_at", older_than = "30d" }"#, true),
        (
            "modified 31 days ago is not older than 32d",
            r#"{ field = "modified_at", older_than = "32d" }"#,
            false,
        ),
        ("older_than in weeks and hours", r#"{ field = "modified_at", older_than = "4w 2d 23h" }"#, true),
        ("raw RFC 3339 timestamp, 1 day old", r#"{ field = "raw.created_at", older_than = "12h" }"#, true),
        (
            "raw RFC 3339 timestamp, not 2 days old",
            r#"{ field = "raw.created_at", older_than = "2d" }"#,
            false,
        ),
        ("raw bare date", r#"{ field = "raw.due_on", older_than = "30d" }"#, true),
        ("not a timestamp is never old", r#"{ field = "raw.title", older_than = "1s" }"#, false),
        ("missing timestamp is never old", r#"{ field = "raw.nope", older_than = "1s" }"#, false),
        (
            "a huge duration reaches before any date",
            r#"{ field = "modified_at", older_than = "100000000y" }"#,
            false,
        ),
        // fields
        ("name is the first line", r#"{ field = "name", equals = "first line" }"#, true),
        ("name is not the second line", r#"{ field = "name", contains = "second" }"#, false),
        ("notes", r#"{ field = "notes", equals = "a note" }"#, true),
        ("text has the description", r#"{ field = "text", contains = "second line" }"#, true),
        ("text has the notes", r#"{ field = "text", contains = "a note" }"#, true),
        ("description has not the notes", r#"{ field = "description", contains = "a note" }"#, false),
        ("completed as text", r#"{ field = "completed", equals = "false" }"#, true),
        ("assignee", r#"{ field = "assignee", equals = "alex" }"#, true),
        (
            "modified_at as RFC 3339 text",
            r#"{ field = "modified_at", matches = '^2026-10-30T12:00:00' }"#,
            true,
        ),
        // raw paths
        ("raw string", r#"{ field = "raw.title", equals = "raw title" }"#, true),
        ("raw number", r#"{ field = "raw.gid", equals = "42" }"#, true),
        ("raw bool", r#"{ field = "raw.liked", equals = "true" }"#, true),
        (
            "raw array index into an object",
            r#"{ field = "raw.memberships.0.section.name", equals = "Inbox" }"#,
            true,
        ),
        ("raw second index", r#"{ field = "raw.memberships.1.section.name", equals = "Later" }"#, true),
        ("raw index out of range", r#"{ field = "raw.memberships.5.section.name", is_empty = true }"#, true),
        (
            "raw wildcard, any element",
            r#"{ field = "raw.memberships.*.project.name", equals = "Mobile" }"#,
            true,
        ),
        ("raw wildcard, none", r#"{ field = "raw.memberships.*.project.name", equals = "Web" }"#, false),
        (
            "raw named element",
            r#"{ field = "raw.custom_fields.Platform.display_value", equals = "macOS" }"#,
            true,
        ),
        (
            "raw named element, a number",
            r#"{ field = "raw.custom_fields.Effort.number_value", equals = "3" }"#,
            true,
        ),
        (
            "raw named element missing",
            r#"{ field = "raw.custom_fields.Owner.display_value", is_empty = true }"#,
            true,
        ),
        (
            "raw object as compact JSON",
            r#"{ field = "raw.memberships.0.project", equals = '{"name":"Browser"}' }"#,
            true,
        ),
        ("raw numeric key on an object", r#"{ field = "raw.0", contains = "looks like" }"#, true),
        ("raw path through a string is missing", r#"{ field = "raw.title.length", is_empty = true }"#, true),
        // combinators
        (
            "all, both",
            r#"{ all = [ { field = "source", equals = "asana" }, { field = "notes", contains = "note" } ] }"#,
            true,
        ),
        (
            "all, one",
            r#"{ all = [ { field = "source", equals = "asana" }, { field = "notes", contains = "x" } ] }"#,
            false,
        ),
        (
            "any, one",
            r#"{ any = [ { field = "source", equals = "x" }, { field = "notes", contains = "note" } ] }"#,
            true,
        ),
        (
            "any, none",
            r#"{ any = [ { field = "source", equals = "x" }, { field = "notes", contains = "x" } ] }"#,
            false,
        ),
        ("not", r#"{ not = { field = "source", equals = "asana" } }"#, false),
        ("not not", r#"{ not = { not = { field = "source", equals = "asana" } } }"#, true),
        (
            "nested",
            r#"{ any = [ { not = { all = [ { field = "completed", equals = "false" }, { field = "assignee", is_empty = false } ] } }, { field = "raw.liked", equals = "true" } ] }"#,
            true,
        ),
    ];
    let task = raw_task();
    for (row, rule, expected) in rows {
        let filters = one_rule(rule).unwrap_or_else(|e| panic!("FAIL row {row:?}: {e}"));
        let skipped = filters.skip_reason(&task.fields(), now()).is_some();
        assert_eq!(skipped, *expected, "FAIL row {row:?}: {rule}");
    }
}

#[test]
fn a_task_with_nothing_set_reads_as_empty() {
    let rows: &[(&str, &str, bool)] = &[
        ("description", r#"{ field = "description", is_empty = true }"#, true),
        ("name", r#"{ field = "name", is_empty = true }"#, true),
        ("text", r#"{ field = "text", is_empty = true }"#, true),
        ("completed", r#"{ field = "completed", is_empty = true }"#, true),
        ("assignee", r#"{ field = "assignee", is_empty = true }"#, true),
        ("modified_at", r#"{ field = "modified_at", is_empty = true }"#, true),
        ("modified_at is not old", r#"{ field = "modified_at", older_than = "1s" }"#, false),
        ("no raw at all", r#"{ field = "raw.custom_fields.Platform.display_value", is_empty = true }"#, true),
        ("contains on nothing", r#"{ field = "raw.a.b", contains = "x" }"#, false),
        ("matches an empty-capable regex", r#"{ field = "raw.a.b", matches = '^$' }"#, false),
    ];
    let task = Task::default();
    for (row, rule, expected) in rows {
        let filters = one_rule(rule).unwrap_or_else(|e| panic!("FAIL row {row:?}: {e}"));
        let skipped = filters.skip_reason(&task.fields(), now()).is_some();
        assert_eq!(skipped, *expected, "FAIL row {row:?}: {rule}");
    }
}

#[test]
fn config_errors_name_the_filter_and_the_place() {
    let filter = |name: &str, rule: &str| format!("[[filters]]\nname = {name:?}\nwhen = {rule}\n");
    let ok = r#"{ field = "source", equals = "x" }"#;
    let rows: Vec<(&str, String, &[&str])> = vec![
        (
            "bad regex",
            filter("figma", r#"{ field = "text", matches = 'figma\.com/(file' }"#),
            &["\"figma\"", "at when", "not a valid regex"],
        ),
        (
            "bad nested regex",
            filter(
                "deep",
                r#"{ not = { any = [ { field = "notes", equals = "a" }, { field = "text", matches = '[' } ] } }"#,
            ),
            &["\"deep\"", "at when.not.any[1]", "regex"],
        ),
        (
            "duplicate name",
            format!("{}{}", filter("twice", ok), filter("twice", ok)),
            &["\"twice\"", "two filters"],
        ),
        (
            "bad duration",
            filter("stale", r#"{ field = "modified_at", older_than = "30 parsecs" }"#),
            &["\"stale\"", "\"30 parsecs\"", "not a duration"],
        ),
        (
            "duration without unit",
            filter("stale", r#"{ field = "modified_at", older_than = "30" }"#),
            &["\"stale\"", "not a duration"],
        ),
        ("empty name", filter("", ok), &["needs a name"]),
        ("the gate's name", filter("source_not_qualifying", ok), &["source_not_qualifying", "gate"]),
        (
            "two operators",
            filter("two", r#"{ field = "source", equals = "x", contains = "y" }"#),
            &["\"two\"", "contains, equals"],
        ),
        (
            "operator and combinator",
            filter(
                "mix",
                r#"{ field = "source", equals = "x", not = { field = "notes", is_empty = true } }"#,
            ),
            &["\"mix\"", "equals, not"],
        ),
        ("no operator", filter("none", r#"{ field = "source" }"#), &["\"none\"", "needs one of"]),
        ("empty rule", filter("none", "{}"), &["\"none\"", "needs one of"]),
        (
            "operator without a field",
            filter("nofield", r#"{ contains = "x" }"#),
            &["\"nofield\"", "needs a field"],
        ),
        (
            "unknown field",
            filter("typo", r#"{ field = "descripton", contains = "x" }"#),
            &["\"typo\"", "unknown field \"descripton\""],
        ),
        (
            "empty raw segment",
            filter("raw", r#"{ field = "raw.a..b", contains = "x" }"#),
            &["\"raw\"", "empty segment"],
        ),
        (
            "field on a combinator",
            filter("comb", r#"{ field = "notes", all = [ { field = "notes", is_empty = true } ] }"#),
            &["\"comb\"", "field belongs"],
        ),
        (
            "case_sensitive on a combinator",
            filter("comb", r#"{ case_sensitive = true, not = { field = "notes", is_empty = true } }"#),
            &["\"comb\"", "case_sensitive belongs"],
        ),
        (
            "case_sensitive on is_empty",
            filter("case", r#"{ field = "notes", is_empty = true, case_sensitive = true }"#),
            &["\"case\"", "does not apply to is_empty"],
        ),
        ("empty all", filter("vacuous", "{ all = [] }"), &["\"vacuous\"", "all = [] is empty"]),
        (
            "empty in",
            filter("nothing", r#"{ field = "source", in = [] }"#),
            &["\"nothing\"", "matches nothing"],
        ),
        (
            "empty contains",
            filter("everything", r#"{ field = "source", contains = "" }"#),
            &["\"everything\"", "every task"],
        ),
        (
            "$assignee unset",
            filter("mine", r#"{ field = "assignee", equals = "$assignee" }"#),
            &["\"mine\"", "intake.assignee"],
        ),
    ];
    for (row, text, wanted) in rows {
        let config = parse(&text);
        let error = match compile(&config) {
            Ok(_) => panic!("FAIL row {row:?}: compiled"),
            Err(e) => e.to_string(),
        };
        for part in wanted {
            assert!(error.contains(part), "FAIL row {row:?}: {error:?} lacks {part:?}");
        }
    }
}

#[test]
fn unknown_keys_are_parse_errors() {
    let rows = [
        (
            "unknown operator",
            "[[filters]]\nname = \"x\"\nwhen = { field = \"notes\", startswith = \"a\" }\n",
            "startswith",
        ),
        (
            "unknown filter key",
            "[[filters]]\nname = \"x\"\nreason = \"y\"\nwhen = { not = { field = \"notes\", is_empty = true } }\n",
            "reason",
        ),
        ("unknown intake key", "[intake]\nasignee = \"alex\"\n", "asignee"),
        ("a filter without when", "[[filters]]\nname = \"x\"\n", "when"),
    ];
    for (row, text, wanted) in rows {
        let error = toml::from_str::<RulesConfig>(text).err().map(|e| e.to_string());
        assert!(error.as_deref().is_some_and(|e| e.contains(wanted)), "FAIL row {row:?}: {error:?}");
    }
}

#[test]
fn hostile_task_text_is_just_data() {
    let megabyte = "x".repeat(1 << 20);
    let rows: Vec<(&str, Task, Option<&str>)> = vec![
        ("1 MB with macOS at the end", Task { description: format!("{megabyte}macOS"), ..good() }, None),
        ("1 MB without macOS", Task { description: megabyte.clone(), ..good() }, Some("not_macos")),
        ("1 MB of notes", Task { notes: megabyte.clone(), ..good() }, None),
        (
            "1 MB single-line name with a figma link",
            Task { description: format!("macOS {megabyte} figma.com/file/x"), ..good() },
            Some("figma_link"),
        ),
        (
            "regex syntax in the text",
            Task { description: "macOS ((([[[\\ .* $assignee (?i) \\".into(), ..good() },
            None,
        ),
        (
            "NUL bytes",
            Task {
                description: "macOS\0\0figma.com/\0file/".into(),
                assignee: Some("al\0ex".into()),
                ..good()
            },
            Some("closed_or_not_mine"),
        ),
        (
            "emoji and combining marks",
            Task {
                description: "🍎 macOS 👩‍💻 é\u{301} Timeline 🗓".into(),
                assignee: Some("🦀".into()),
                ..good()
            },
            Some("closed_or_not_mine"),
        ),
        (
            "right-to-left and zero-width",
            Task { description: "\u{202e}SOcam\u{200b}".into(), ..good() },
            Some("not_macos"),
        ),
        ("only newlines", Task { description: "\n\n\n".into(), ..good() }, Some("not_macos")),
        (
            "a source with a NUL",
            Task { source: "user_reports\0".into(), ..good() },
            Some(SOURCE_NOT_QUALIFYING),
        ),
    ];
    let filters = compile(&seed()).unwrap();
    for (row, task, expected) in &rows {
        let got = filters.skip_reason(&task.fields(), now());
        assert_eq!(got.as_ref().map(|s| s.rule.as_str()), *expected, "FAIL row {row:?}");
    }
    // Every operator over the hostile rows, including a 1 MB raw string and a case-folded equals.
    let big_raw = Task { raw: Some(json!({ "a": [megabyte.clone(), { "b": "İ" }] })), ..good() };
    let operators = [
        r#"{ field = "text", equals = "MACOS" }"#,
        r#"{ field = "description", in = ["x", "İ"] }"#,
        r#"{ field = "raw.a.*", contains = "MACOS" }"#,
        r#"{ field = "raw.a.*.b", equals = "i\u0307" }"#,
        r#"{ field = "raw.a.0", older_than = "1d" }"#,
        r#"{ field = "name", matches = '(?s).*\x00.*' }"#,
        r#"{ field = "raw.a.*", is_empty = true }"#,
    ];
    let tasks: Vec<&Task> = rows.iter().map(|(_, task, _)| task).chain([&big_raw]).collect();
    for rule in operators {
        let filters = one_rule(rule).unwrap_or_else(|e| panic!("FAIL rule {rule}: {e}"));
        for task in &tasks {
            filters.skip_reason(&task.fields(), now());
        }
    }
    let filters = one_rule(r#"{ field = "raw.a.*.b", equals = "i\u0307" }"#).unwrap();
    assert!(filters.skip_reason(&big_raw.fields(), now()).is_some(), "İ lowercases to i̇");
}

#[test]
fn why_is_optional_and_filters_run_in_config_order() {
    let config = parse(concat!(
        "[[filters]]\nname = \"second_in_alphabet_first_in_file\"\nwhen = { field = \"notes\", is_empty = true }\n",
        "[[filters]]\nname = \"also_matches\"\nwhy = \"never reached\"\nwhen = { field = \"notes\", is_empty = true }\n",
    ));
    let skip = compile(&config).unwrap().skip_reason(&Task::default().fields(), now());
    assert_eq!(skip, Some(Skip { rule: "second_in_alphabet_first_in_file".into(), why: String::new() }));
}

//! A rule as written ([`Rule`]) checked and compiled into a [`Node`], and a node evaluated over a
//! task. Compile errors carry the place in the rule (`when.not.any[1]`) and the problem.

use chrono::{DateTime, Utc};
use regex::{Regex, RegexBuilder};

use super::field::Field;
use super::{Rule, TaskFields};

/// What compiling needs from outside the rule.
pub(super) struct Context<'a> {
    /// `intake.assignee`, for `"$assignee"`; may be empty (then `"$assignee"` is an error).
    pub assignee: &'a str,
}

const ASSIGNEE_VARIABLE: &str = "$assignee";

#[derive(Debug, Clone)]
pub(super) enum Node {
    All(Vec<Node>),
    Any(Vec<Node>),
    Not(Box<Node>),
    Test { field: Field, test: Test },
}

#[derive(Debug, Clone)]
pub(super) enum Test {
    /// Case-sensitive `contains`: a plain substring search.
    Contains(String),
    /// `matches`, and case-insensitive `contains` (the escaped needle, case folded by the engine).
    Regex(Regex),
    /// `equals` and `in`: the whole value is one of these; lowercased when not case-sensitive.
    OneOf {
        values: Vec<String>,
        case_sensitive: bool,
    },
    IsEmpty(bool),
    OlderThan(chrono::Duration),
}

type CompileError = (String, String);

pub(super) fn compile(rule: &Rule, at: &str, context: &Context<'_>) -> Result<Node, CompileError> {
    let located = |problem: String| (at.to_string(), problem);
    let operators: Vec<&str> = [
        ("contains", rule.contains.is_some()),
        ("matches", rule.matches.is_some()),
        ("equals", rule.equals.is_some()),
        ("in", rule.one_of.is_some()),
        ("is_empty", rule.is_empty.is_some()),
        ("older_than", rule.older_than.is_some()),
        ("all", rule.all.is_some()),
        ("any", rule.any.is_some()),
        ("not", rule.not.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, present)| present.then_some(name))
    .collect();
    let operator = match operators.as_slice() {
        [one] => *one,
        [] => {
            return Err(located(
                "a rule needs one of contains, matches, equals, in, is_empty, older_than, all, any, not"
                    .to_string(),
            ));
        }
        many => return Err(located(format!("a rule takes one operator, this one has {}", many.join(", ")))),
    };
    if let Some(children) = rule.all.as_ref().or(rule.any.as_ref()) {
        reject_test_options(rule, operator).map_err(located)?;
        if children.is_empty() {
            return Err(located(format!("{operator} = [] is empty; give it at least one rule")));
        }
        let nodes = children
            .iter()
            .enumerate()
            .map(|(i, child)| compile(child, &format!("{at}.{operator}[{i}]"), context))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(if operator == "all" { Node::All(nodes) } else { Node::Any(nodes) });
    }
    if let Some(child) = &rule.not {
        reject_test_options(rule, operator).map_err(located)?;
        return Ok(Node::Not(Box::new(compile(child, &format!("{at}.not"), context)?)));
    }
    let Some(field_name) = &rule.field else {
        return Err(located(format!("{operator} needs a field to test")));
    };
    let field = Field::parse(field_name).map_err(located)?;
    let test = compile_test(rule, operator, context).map_err(located)?;
    Ok(Node::Test { field, test })
}

fn reject_test_options(rule: &Rule, operator: &str) -> Result<(), String> {
    match (&rule.field, rule.case_sensitive) {
        (Some(_), _) => Err(format!("{operator} combines rules; field belongs on the rules inside it")),
        (None, Some(_)) => {
            Err(format!("{operator} combines rules; case_sensitive belongs on the rules inside it"))
        }
        (None, None) => Ok(()),
    }
}

fn compile_test(rule: &Rule, operator: &str, context: &Context<'_>) -> Result<Test, String> {
    let case_sensitive = rule.case_sensitive;
    if let Some(empty) = rule.is_empty {
        no_case_option(case_sensitive, operator)?;
        return Ok(Test::IsEmpty(empty));
    }
    if let Some(text) = &rule.older_than {
        no_case_option(case_sensitive, operator)?;
        let duration = humantime::parse_duration(text).map_err(|e| {
            format!("older_than {text:?} is not a duration ({e}); write it like \"12h\" or \"30d\"")
        })?;
        let duration =
            chrono::Duration::from_std(duration).map_err(|_| format!("older_than {text:?} is too long"))?;
        return Ok(Test::OlderThan(duration));
    }
    if let Some(needle) = &rule.contains {
        if needle.is_empty() {
            return Err("contains = \"\" would match every task".to_string());
        }
        return Ok(if case_sensitive.unwrap_or(false) {
            Test::Contains(needle.clone())
        } else {
            Test::Regex(
                build_regex(&regex::escape(needle), false)
                    .map_err(|e| format!("contains {needle:?}: {e}"))?,
            )
        });
    }
    if let Some(pattern) = &rule.matches {
        let regex = build_regex(pattern, case_sensitive.unwrap_or(true))
            .map_err(|e| format!("matches {pattern:?} is not a valid regex: {e}"))?;
        return Ok(Test::Regex(regex));
    }
    let values = match (&rule.equals, &rule.one_of) {
        (Some(value), _) => vec![value.clone()],
        (None, Some(values)) if values.is_empty() => return Err("in = [] matches nothing".to_string()),
        (None, Some(values)) => values.clone(),
        (None, None) => return Err(format!("{operator} is not an operator")),
    };
    let case_sensitive = case_sensitive.unwrap_or(false);
    let values = values
        .into_iter()
        .map(|value| {
            let value = substitute_assignee(value, context)?;
            Ok(if case_sensitive { value } else { lowercase(&value) })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Test::OneOf { values, case_sensitive })
}

fn no_case_option(case_sensitive: Option<bool>, operator: &str) -> Result<(), String> {
    match case_sensitive {
        Some(_) => Err(format!("case_sensitive does not apply to {operator}")),
        None => Ok(()),
    }
}

fn substitute_assignee(value: String, context: &Context<'_>) -> Result<String, String> {
    if value != ASSIGNEE_VARIABLE {
        return Ok(value);
    }
    if context.assignee.trim().is_empty() {
        return Err(format!("{ASSIGNEE_VARIABLE} stands for intake.assignee, which is not set"));
    }
    Ok(context.assignee.to_string())
}

fn build_regex(pattern: &str, case_sensitive: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).case_insensitive(!case_sensitive).build()
}

impl Node {
    pub(super) fn eval(&self, task: &TaskFields<'_>, now: DateTime<Utc>) -> bool {
        match self {
            Node::All(nodes) => nodes.iter().all(|n| n.eval(task, now)),
            Node::Any(nodes) => nodes.iter().any(|n| n.eval(task, now)),
            Node::Not(node) => !node.eval(task, now),
            Node::Test { field, test } => test.eval(field, task, now),
        }
    }
}

impl Test {
    fn eval(&self, field: &Field, task: &TaskFields<'_>, now: DateTime<Utc>) -> bool {
        let values = || field.values(task);
        match self {
            Test::Contains(needle) => values().iter().any(|v| v.contains(needle.as_str())),
            Test::Regex(regex) => values().iter().any(|v| regex.is_match(v)),
            Test::OneOf { values: wanted, case_sensitive: true } => {
                values().iter().any(|v| wanted.iter().any(|w| w == v))
            }
            Test::OneOf { values: wanted, case_sensitive: false } => {
                values().iter().any(|v| wanted.iter().any(|w| equals_lowercase(v, w)))
            }
            Test::IsEmpty(empty) => values().iter().all(str::is_empty) == *empty,
            // A cutoff before the calendar's start: nothing can be older.
            Test::OlderThan(age) => {
                now.checked_sub_signed(*age).is_some_and(|cutoff| field.any_time_before(task, cutoff))
            }
        }
    }
}

/// `value` lowercased equals `lowercase`, without allocating (a field may be a megabyte).
fn equals_lowercase(value: &str, lowercase: &str) -> bool {
    value.chars().flat_map(char::to_lowercase).eq(lowercase.chars())
}

/// Lowercased char by char, as [`equals_lowercase`] compares (`str::to_lowercase` treats a final
/// sigma differently).
fn lowercase(value: &str) -> String {
    value.chars().flat_map(char::to_lowercase).collect()
}

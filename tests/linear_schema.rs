//! Every GraphQL document executor sends to Linear validates against Linear's published schema
//! (tests/linear/schema.graphql, derived from @linear/sdk's types by tests/linear/from_sdk.py; see
//! tests/linear/README.md), with the validator the GitHub documents use. The filters the Linear source
//! sends as variables are checked against the schema's input types too, key by key, since a variable's
//! value is what the document validator cannot see.

// Shared with tests/github_schema.rs, which uses parts this test does not.
#[allow(dead_code)]
#[path = "github/validate.rs"]
mod validate;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use executor::intake::source::linear::LinearConfig;
use executor::linear::documents;
use graphql_parser::schema::{Definition, Type, TypeDefinition};
use serde_json::Value;
use validate::{Schema, validate};

fn sdl() -> &'static str {
    static SDL: OnceLock<String> = OnceLock::new();
    SDL.get_or_init(|| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/linear/schema.graphql"))
            .unwrap()
    })
}

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| Schema::parse(sdl()).unwrap())
}

#[test]
fn every_document_validates_against_linears_schema() {
    let mut failures = Vec::new();
    for (name, document) in documents::ALL {
        let errors = validate(schema(), document);
        if !errors.is_empty() {
            failures.push(format!("{name}:\n  {}", errors.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The schema is Linear's, not an empty shell that lets anything through.
    let misspelt = "query { issues(first: 10) { nodes { titel } } }";
    assert!(!validate(schema(), misspelt).is_empty(), "a misspelt field must fail");
    let wrong_argument = "mutation { issueUpdate(id: \"x\", input: { state: \"y\" }) { success } }";
    assert!(!validate(schema(), wrong_argument).is_empty(), "an unknown input field must fail");
}

#[test]
fn every_file_of_the_graphql_directory_is_a_listed_document() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/linear/graphql");
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".graphql"))
        .collect();
    let listed: BTreeSet<String> = documents::ALL.iter().map(|(name, _)| name.to_string()).collect();
    assert_eq!(
        files,
        listed,
        "a document in {} that documents::ALL does not list is never checked",
        dir.display()
    );
}

/// The schema's input types: name → field → type.
fn input_types() -> HashMap<String, HashMap<String, Type<'static, String>>> {
    let doc = graphql_parser::parse_schema::<String>(sdl()).unwrap().into_static();
    let mut out = HashMap::new();
    for def in doc.definitions {
        if let Definition::TypeDefinition(TypeDefinition::InputObject(input)) = def {
            let fields = input.fields.into_iter().map(|f| (f.name, f.value_type)).collect();
            out.insert(input.name, fields);
        }
    }
    out
}

/// Where `value` does not fit input type `ty` (a field the type lacks, an object where a scalar goes,
/// a missing non-null field), with its path.
fn check(
    types: &HashMap<String, HashMap<String, Type<'static, String>>>,
    ty: &Type<'_, String>,
    value: &Value,
    path: &str,
) -> Vec<String> {
    match (ty, value) {
        (Type::NonNullType(_), Value::Null) => vec![format!("{path}: null where {ty} is required")],
        (Type::NonNullType(inner), _) => check(types, inner, value, path),
        (_, Value::Null) => Vec::new(),
        (Type::ListType(inner), Value::Array(items)) => items
            .iter()
            .enumerate()
            .flat_map(|(i, item)| check(types, inner, item, &format!("{path}[{i}]")))
            .collect(),
        (Type::ListType(inner), single) => check(types, inner, single, path),
        (Type::NamedType(name), value) => match (types.get(name), value) {
            (Some(fields), Value::Object(object)) => {
                let mut errors: Vec<String> = object
                    .iter()
                    .flat_map(|(key, v)| match fields.get(key) {
                        Some(field) => check(types, field, v, &format!("{path}.{key}")),
                        None => vec![format!("{path}: input type {name} has no field {key:?}")],
                    })
                    .collect();
                for (field, field_ty) in fields {
                    if matches!(field_ty, Type::NonNullType(_)) && !object.contains_key(field) {
                        errors.push(format!("{path}: {name}.{field} is required"));
                    }
                }
                errors
            }
            (Some(_), other) => vec![format!("{path}: {other} where input type {name} goes")],
            (None, Value::Object(_) | Value::Array(_)) => {
                vec![format!("{path}: an object or list where {name} goes")]
            }
            (None, _) => Vec::new(), // a scalar or an enum: its text is Linear's to judge
        },
    }
}

#[test]
fn the_sources_filters_fit_issue_filter() {
    let types = input_types();
    let since: DateTime<Utc> = "2026-11-01T10:00:00Z".parse().unwrap();
    let every_key = LinearConfig {
        teams: vec!["ENG".into()],
        projects: vec!["Mobile".into()],
        labels: vec!["executor".into()],
        assignee: Some("me".into()),
        ..LinearConfig::default()
    };
    let by_email =
        LinearConfig { states: vec!["Todo".into()], assignee: Some("a@b.c".into()), ..every_key.clone() };
    let issue_filter = Type::NamedType("IssueFilter".to_string());
    for (name, config) in
        [("every key", &every_key), ("states and an email", &by_email), ("nothing", &LinearConfig::default())]
    {
        for since in [None, Some(since)] {
            let filter = config.filter(since);
            let errors = check(&types, &issue_filter, &filter, "filter");
            assert!(errors.is_empty(), "{name}: {errors:?}\n{filter}");
        }
    }
    // The checker itself catches a misspelt key.
    let wrong = serde_json::json!({"and": [{"team": {"kee": {"eq": "ENG"}}}]});
    assert_eq!(
        check(&types, &issue_filter, &wrong, "filter"),
        ["filter.and[0].team: input type TeamFilter has no field \"kee\""]
    );
}

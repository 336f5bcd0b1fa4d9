//! Every GraphQL document the GitHub forge sends validates against GitHub's published schema
//! (tests/github/schema.graphql, see tests/github/README.md), so a misspelt field or a wrong argument
//! fails here rather than as an `errors` answer on every tick against the real GitHub.
//!
//! Documents are assembled the way the forge sends them: the batch template gets its aliased pull
//! requests and variables, and each document gets the fragments it spreads, and only those (GitHub
//! rejects a request that defines a fragment it does not use).

#[path = "github/validate.rs"]
mod validate;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use graphql_parser::query::{Definition, OperationDefinition, Selection, SelectionSet};
use validate::{Schema, validate};

const GRAPHQL_DIR: &str = "src/forge/github/graphql";
/// Not a document but a template (it does not parse before its markers are replaced).
const BATCH_TEMPLATE: &str = "batch.graphql";

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let sdl = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/github/schema.graphql"),
        )
        .unwrap();
        Schema::parse(&sdl).unwrap()
    })
}

/// Every `.graphql` file of the forge, by file name: a new document is covered without touching this test.
fn graphql_files() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(GRAPHQL_DIR);
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "graphql") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            files.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    assert!(files.len() >= 2, "no GraphQL documents found in {}", dir.display());
    files
}

fn is_fragment_library(text: &str) -> bool {
    let doc = graphql_parser::parse_query::<String>(text).unwrap();
    doc.definitions.iter().all(|d| matches!(d, Definition::Fragment(_)))
}

/// The fragment definitions of the files that hold only fragments (pr_fields.graphql), by name, as text.
fn fragment_library(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut fragments = BTreeMap::new();
    for (file, text) in files.iter().filter(|(file, _)| *file != BATCH_TEMPLATE) {
        let doc = graphql_parser::parse_query::<String>(text).unwrap_or_else(|e| panic!("{file}: {e}"));
        if is_fragment_library(text) {
            for def in doc.definitions {
                if let Definition::Fragment(f) = def {
                    fragments.insert(f.name.clone(), f.to_string());
                }
            }
        }
    }
    fragments
}

fn spreads_in(set: &SelectionSet<'_, String>, out: &mut Vec<String>) {
    for item in &set.items {
        match item {
            Selection::Field(f) => spreads_in(&f.selection_set, out),
            Selection::FragmentSpread(s) => out.push(s.fragment_name.clone()),
            Selection::InlineFragment(i) => spreads_in(&i.selection_set, out),
        }
    }
}

fn spreads_of_document(text: &str) -> Vec<String> {
    let doc = graphql_parser::parse_query::<String>(text).unwrap();
    let mut out = Vec::new();
    for def in &doc.definitions {
        match def {
            Definition::Fragment(f) => spreads_in(&f.selection_set, &mut out),
            Definition::Operation(OperationDefinition::SelectionSet(s)) => spreads_in(s, &mut out),
            Definition::Operation(OperationDefinition::Query(o)) => spreads_in(&o.selection_set, &mut out),
            Definition::Operation(OperationDefinition::Mutation(o)) => spreads_in(&o.selection_set, &mut out),
            Definition::Operation(OperationDefinition::Subscription(o)) => {
                spreads_in(&o.selection_set, &mut out)
            }
        }
    }
    out
}

/// `text` with the library fragments it spreads appended, transitively; the names appended go to `used`.
fn with_fragments(text: &str, library: &BTreeMap<String, String>, used: &mut HashSet<String>) -> String {
    let mut doc = text.to_string();
    let mut appended = HashSet::new();
    let mut wanted = spreads_of_document(text);
    while let Some(name) = wanted.pop() {
        if appended.contains(&name) {
            continue;
        }
        // Spreads of fragments defined in the document itself need nothing appended.
        let Some(fragment) = library.get(&name) else { continue };
        doc.push_str("\n\n");
        doc.push_str(fragment);
        wanted.extend(spreads_of_document(fragment));
        appended.insert(name.clone());
        used.insert(name);
    }
    doc
}

/// The batch query for `n` pull requests, built from the template as the forge's batch.rs builds it:
/// `VARIABLES` becomes `, $n0: Int!, $n1: Int!…` and the line `PULL_REQUESTS` one aliased field each.
/// (The template's comment names both markers too: the line is replaced only where it stands alone.)
fn batch_query(template: &str, n: usize) -> String {
    let variables: String = (0..n).map(|i| format!(", $n{i}: Int!")).collect();
    let aliases: Vec<String> =
        (0..n).map(|i| format!("pr{i}: pullRequest(number: $n{i}) {{ ...PrFields }}")).collect();
    let mut out = String::new();
    for line in template.replace("VARIABLES", &variables).lines() {
        if line.trim() == "PULL_REQUESTS" {
            let indent = &line[..line.len() - line.trim_start().len()];
            for alias in &aliases {
                out.push_str(indent);
                out.push_str(alias);
                out.push('\n');
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Every document as sent, by a name for messages; the fragments that were appended go to `used`.
fn assembled_documents(used: &mut HashSet<String>) -> Vec<(String, String)> {
    let files = graphql_files();
    let library = fragment_library(&files);
    let mut docs = Vec::new();
    // A library's fragments are validated inside the documents that spread them.
    for (file, text) in &files {
        if file == BATCH_TEMPLATE {
            for n in [1, 25] {
                docs.push((
                    format!("{file} with {n} pull requests"),
                    with_fragments(&batch_query(text, n), &library, used),
                ));
            }
        } else if !is_fragment_library(text) {
            docs.push((file.clone(), with_fragments(text, &library, used)));
        }
    }
    docs
}

#[test]
fn every_document_validates_against_githubs_schema() {
    let mut used = HashSet::new();
    let docs = assembled_documents(&mut used);
    assert!(
        docs.iter().any(|(name, _)| name.starts_with("batch.graphql")),
        "the batch template was not found"
    );
    let mut failures = Vec::new();
    for (name, doc) in &docs {
        let errors = validate(schema(), doc);
        if !errors.is_empty() {
            failures.push(format!("{name}:\n  {}\n--- as sent:\n{doc}", errors.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_library_fragment_is_sent_by_some_document() {
    let mut used = HashSet::new();
    assembled_documents(&mut used);
    let library = fragment_library(&graphql_files());
    let unused: Vec<&String> = library.keys().filter(|f| !used.contains(*f)).collect();
    assert!(unused.is_empty(), "fragments no document spreads (so never validated, and dead): {unused:?}");
    assert!(used.contains("PrFields") && used.contains("CheckContext") && used.contains("ReviewThread"));
}

#[test]
fn the_batch_template_becomes_one_alias_per_pull_request() {
    let files = graphql_files();
    let batch = batch_query(&files[BATCH_TEMPLATE], 3);
    assert!(
        batch.contains("query Batch($owner: String!, $name: String!, $n0: Int!, $n1: Int!, $n2: Int!)"),
        "{batch}"
    );
    assert!(batch.contains("pr2: pullRequest(number: $n2) { ...PrFields }"), "{batch}");
    assert!(!batch.lines().any(|l| l.trim() == "PULL_REQUESTS"), "{batch}");
}

// ---- The validator finds what it is meant to find ------------------------------------------------

/// A valid document close to the forge's own, which each negative case breaks in one place.
const VALID: &str = r#"
query Page($owner: String!, $name: String!, $number: Int!, $after: String) {
  rateLimit { cost remaining resetAt }
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      isDraft
      labels(first: 10) { nodes { name } }
      statusCheckRollup {
        contexts(first: 100, after: $after) {
          nodes { ...Ctx }
        }
      }
    }
  }
}

fragment Ctx on StatusCheckRollupContext {
  __typename
  ... on CheckRun { name status }
  ... on StatusContext { context state }
}
"#;

fn errors_after(from: &str, to: &str) -> Vec<String> {
    assert!(VALID.contains(from), "the case does not apply: {from}");
    validate(schema(), &VALID.replacen(from, to, 1))
}

#[test]
fn the_valid_sample_is_valid() {
    assert_eq!(validate(schema(), VALID), Vec::<String>::new());
}

#[test]
fn a_field_that_does_not_exist_is_reported() {
    let errors = errors_after("isDraft", "isDraftt");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("field `isDraftt` does not exist on type `PullRequest`"), "{errors:?}");
    assert!(errors[0].starts_with("6:7:"), "the position is the field's: {errors:?}");
}

#[test]
fn each_broken_rule_is_reported() {
    let cases: &[(&str, &str, &str)] = &[
        // Arguments.
        ("labels(first: 10)", "labels(frist: 10)", "has no argument `frist`"),
        ("pullRequest(number: $number)", "pullRequest", "required argument `number` is missing"),
        ("labels(first: 10)", "labels(first: \"ten\")", "is not a `Int`"),
        // Variables.
        (
            "$after: String)",
            "$after: String, $unused: Int)",
            "`$unused` is declared by operation `Page` but not used",
        ),
        (", $number: Int!", "", "variable `$number` is not declared"),
        ("$number: Int!", "$number: String!", "of type `String!` is used where `Int!` is expected"),
        ("$owner: String!", "$owner: String", "of type `String` is used where `String!` is expected"),
        ("$owner: String!", "$owner: PullRequest!", "not an input type"),
        // Selections.
        ("isDraft", "isDraft { id }", "is a leaf"),
        ("labels(first: 10) { nodes { name } }", "labels(first: 10)", "needs a selection"),
        ("__typename\n", "__typename\n  name\n", "is a union"),
        ("... on CheckRun { name status }", "... on CheckRunn { name }", "type `CheckRunn` does not exist"),
        (
            "... on CheckRun { name status }",
            "... on Issue { title }",
            "can never apply inside `StatusCheckRollupContext`",
        ),
        (
            "... on CheckRun { name status }",
            "... on CheckRun { name statuss }",
            "`statuss` does not exist on type `CheckRun`",
        ),
        // Fragments.
        ("nodes { ...Ctx }", "nodes { ...Ctxx }", "fragment `Ctxx` is not defined"),
        ("nodes { ...Ctx }", "nodes { __typename }", "fragment `Ctx` is defined but not used"),
        ("fragment Ctx on StatusCheckRollupContext", "fragment Ctx on Nope", "fragment `Ctx` is on `Nope`"),
        ("nodes { ...Ctx }", "nodes { ...Ctx @defer }", "directive `@defer` does not exist"),
    ];
    for (from, to, want) in cases {
        let errors = errors_after(from, to);
        assert!(errors.iter().any(|e| e.contains(want)), "{from} → {to}: wanted {want:?}, got {errors:?}");
    }
}

#[test]
fn mutation_inputs_are_checked_field_by_field() {
    let doc = |input: &str| {
        format!(
            "mutation M($pr: ID!) {{ markPullRequestReadyForReview(input: {input}) \
             {{ pullRequest {{ isDraft }} }} }}"
        )
    };
    assert_eq!(validate(schema(), &doc("{ pullRequestId: $pr }")), Vec::<String>::new());
    let errors = validate(schema(), &doc("{ pullRequestId: $pr, draft: true }"));
    assert!(errors.iter().any(|e| e.contains("has no field `draft`")), "{errors:?}");
    let errors = validate(schema(), &doc("{ clientMutationId: \"x\" }"));
    assert!(errors.iter().any(|e| e.contains("required field `pullRequestId`")), "{errors:?}");

    let review = |event: &str| {
        format!(
            "mutation R($pr: ID!) {{ addPullRequestReview(input: {{ pullRequestId: $pr, event: {event} }}) \
             {{ pullRequestReview {{ id }} }} }}"
        )
    };
    assert_eq!(validate(schema(), &review("COMMENT")), Vec::<String>::new());
    let errors = validate(schema(), &review("SHOUT"));
    assert!(errors.iter().any(|e| e.contains("`SHOUT` is not a value of enum")), "{errors:?}");
}

#[test]
fn appending_a_fragment_the_document_does_not_use_is_reported() {
    // GitHub answers such a request with only an error; the forge must append just what it spreads.
    let files = graphql_files();
    let whole = format!("{}\n{}", files["review_threads_page.graphql"], files["pr_fields.graphql"]);
    let errors = validate(schema(), &whole);
    assert!(errors.iter().any(|e| e.contains("fragment `PrFields` is defined but not used")), "{errors:?}");
}

#[test]
fn a_document_that_does_not_parse_is_reported() {
    let errors = validate(schema(), "query { repository(owner: \"o\" name: \"n\") { id }");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("does not parse"), "{errors:?}");
}

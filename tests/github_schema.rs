//! Every GraphQL document the GitHub forge sends validates against GitHub's published schema
//! (tests/github/schema.graphql, see tests/github/README.md), so a misspelt field or a wrong argument
//! fails here rather than as an `errors` answer on every tick against the real GitHub.
//!
//! Documents are assembled the way the forge sends them: the batch template gets its aliased pull
//! requests and variables, and each document gets the fragments it spreads, and only those (GitHub
//! rejects a request that defines a fragment it does not use). Then the wire types must read an answer
//! built from the schema for each document, with every nullable field present and null.

#[path = "github/validate.rs"]
mod validate;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use executor::forge::github::wire;
use graphql_parser::query::{
    Definition, FragmentDefinition, OperationDefinition, Selection, SelectionSet, TypeCondition,
};
use serde_json::{Value, json};
use validate::{Schema, Ty, validate};

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
/// `VARIABLES` becomes `, $n0: Int!, $n1: Int!…` and the line `PULL_REQUESTS` one aliased field each,
/// the first with its review threads (`PrThreads`), the others without, as a batch mixes both.
/// (The template's comment names both markers too: the line is replaced only where it stands alone.)
fn batch_query(template: &str, n: usize) -> String {
    let variables: String = (0..n).map(|i| format!(", $n{i}: Int!")).collect();
    let aliases: Vec<String> = (0..n)
        .map(|i| {
            let more = if i == 0 { " ...PrThreads" } else { "" };
            format!("pr{i}: pullRequest(number: $n{i}) {{ ...PrFields{more} }}")
        })
        .collect();
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
    assert!(
        used.contains("PrFields")
            && used.contains("PrThreads")
            && used.contains("CheckContext")
            && used.contains("ReviewThread")
    );
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
        ("labels(first: 10)", "labels", "connection `labels` needs `first` or `last`"),
        ("labels(first: 10)", "labels(first: 101)", "page size 101 is not 1 to 100"),
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

// ---- The wire types read answers shaped exactly like the documents ---------------------------------

/// Builds the `data` GitHub would answer a document with, from the schema: every selected field with
/// a value of its declared type; a list of an abstract type gets one item of each possible object type
/// (so the rollup holds a CheckRun and a StatusContext). Nullable fields at depth `null_from` or deeper
/// are null, so sweeping `null_from` proves every nullable field is an `Option` in the wire types.
struct Sampler<'d> {
    schema: &'static Schema,
    fragments: HashMap<&'d str, &'d FragmentDefinition<'d, String>>,
    null_from: usize,
}

impl<'d> Sampler<'d> {
    fn object(&self, concrete: &str, set: &'d SelectionSet<'d, String>, depth: usize) -> Value {
        let mut map = serde_json::Map::new();
        self.fill(concrete, set, depth, &mut map);
        Value::Object(map)
    }

    fn fill(
        &self,
        concrete: &str,
        set: &'d SelectionSet<'d, String>,
        depth: usize,
        map: &mut serde_json::Map<String, Value>,
    ) {
        for item in &set.items {
            match item {
                Selection::Field(f) => {
                    let key = f.alias.as_ref().unwrap_or(&f.name).clone();
                    let value = if f.name == "__typename" {
                        json!(concrete)
                    } else {
                        let ty = self
                            .schema
                            .field_type(concrete, &f.name)
                            .unwrap_or_else(|| panic!("{concrete}.{}", f.name));
                        self.value(ty, &f.selection_set, depth)
                    };
                    map.insert(key, value);
                }
                Selection::FragmentSpread(s) => {
                    let fragment = self.fragments[s.fragment_name.as_str()];
                    let TypeCondition::On(on) = &fragment.type_condition;
                    if self.schema.possible_types(on).contains(concrete) {
                        self.fill(concrete, &fragment.selection_set, depth, map);
                    }
                }
                Selection::InlineFragment(i) => {
                    let applies = match &i.type_condition {
                        Some(TypeCondition::On(on)) => self.schema.possible_types(on).contains(concrete),
                        None => true,
                    };
                    if applies {
                        self.fill(concrete, &i.selection_set, depth, map);
                    }
                }
            }
        }
    }

    fn value(&self, ty: &Ty, set: &'d SelectionSet<'d, String>, depth: usize) -> Value {
        match ty {
            Ty::NonNull(inner) => self.present(inner, set, depth),
            _ if depth >= self.null_from => Value::Null,
            _ => self.present(ty, set, depth),
        }
    }

    fn present(&self, ty: &Ty, set: &'d SelectionSet<'d, String>, depth: usize) -> Value {
        match ty {
            Ty::NonNull(inner) => self.present(inner, set, depth),
            Ty::List(item) => {
                let named = item.named();
                if self.schema.is_composite(named) && !self.schema.possible_types(named).contains(named) {
                    let mut concrete: Vec<&str> = self.schema.possible_types(named).into_iter().collect();
                    concrete.sort_unstable();
                    concrete.into_iter().map(|t| self.object(t, set, depth + 1)).collect()
                } else {
                    Value::Array(vec![self.value(item, set, depth + 1)])
                }
            }
            Ty::Named(name) if self.schema.is_composite(name) => {
                let mut concrete: Vec<&str> = self.schema.possible_types(name).into_iter().collect();
                concrete.sort_unstable();
                self.object(concrete[0], set, depth + 1)
            }
            Ty::Named(name) => match (name.as_str(), self.schema.enum_values(name)) {
                (_, Some(values)) => json!(values[0]),
                ("Int", _) => json!(7),
                ("Float", _) => json!(1.5),
                ("Boolean", _) => json!(false),
                ("DateTime", _) => json!("2026-05-01T12:00:00Z"),
                ("URI", _) => json!("https://github.com/octo/app/pull/7"),
                _ => json!("sample"),
            },
        }
    }
}

/// The `data` for an assembled document (its one operation), with nullable fields null from `null_from`.
fn sample_answer(doc_text: &str, null_from: usize) -> Value {
    let doc = graphql_parser::parse_query::<String>(doc_text).unwrap();
    let fragments = doc
        .definitions
        .iter()
        .filter_map(|d| match d {
            Definition::Fragment(f) => Some((f.name.as_str(), f)),
            _ => None,
        })
        .collect();
    let sampler = Sampler { schema: schema(), fragments, null_from };
    for def in &doc.definitions {
        match def {
            Definition::Operation(OperationDefinition::Query(q)) => {
                return sampler.object("Query", &q.selection_set, 0);
            }
            Definition::Operation(OperationDefinition::Mutation(m)) => {
                return sampler.object("Mutation", &m.selection_set, 0);
            }
            _ => {}
        }
    }
    panic!("no query or mutation in {doc_text}")
}

/// Deserializes `data` into the wire type of the document named `name`.
fn read_as_wire(name: &str, data: Value) -> Result<(), String> {
    let file = name.split(' ').next().unwrap_or(name);
    let result = match file {
        BATCH_TEMPLATE => serde_json::from_value::<wire::WireBatch>(data).map(drop),
        "check_contexts_page.graphql" => serde_json::from_value::<wire::WireContextsPage>(data).map(drop),
        "review_threads_page.graphql" => serde_json::from_value::<wire::WireThreadsPage>(data).map(drop),
        "add_review.graphql" => serde_json::from_value::<wire::WireAddReview>(data).map(drop),
        "reply_to_thread.graphql" => serde_json::from_value::<wire::WireReplyToThread>(data).map(drop),
        "mark_ready.graphql" => serde_json::from_value::<wire::WireMarkReady>(data).map(drop),
        other => return Err(format!("{other}: no wire type reads its answer (add one in wire.rs and here)")),
    };
    result.map_err(|e| e.to_string())
}

#[test]
fn the_wire_types_read_every_documents_answer_with_and_without_nulls() {
    let mut used = HashSet::new();
    let mut failures = Vec::new();
    for (name, doc) in assembled_documents(&mut used) {
        for null_from in (0..12).chain([usize::MAX]) {
            let data = sample_answer(&doc, null_from);
            if let Err(e) = read_as_wire(&name, data.clone()) {
                failures.push(format!("{name} (nullable fields null from depth {null_from}): {e}\n{data:#}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_full_batch_answer_maps_to_snapshots_with_both_kinds_of_check() {
    let batch = batch_query(&graphql_files()[BATCH_TEMPLATE], 2);
    let mut used = HashSet::new();
    let doc = with_fragments(&batch, &fragment_library(&graphql_files()), &mut used);
    let answer: wire::WireBatch = serde_json::from_value(sample_answer(&doc, usize::MAX)).unwrap();
    let prs = answer.repository.unwrap();
    assert_eq!(prs.len(), 2);
    let pr = prs["pr1"].clone().unwrap();
    let snapshot = pr.into_snapshot(vec![], vec![], &wire::AgentComments::new(), chrono::Utc::now());
    let names: Vec<&str> = snapshot.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["sample", "sample"], "a CheckRun's name and a StatusContext's context");
    assert!(!snapshot.comments.is_empty());
}

/// Each enum word of GitHub's schema that the wire types read has a variant of its own: a misspelt or
/// missing variant would silently fall into the catch-all.
#[test]
fn every_schema_enum_word_has_its_own_wire_variant() {
    fn check<T: serde::de::DeserializeOwned + std::fmt::Debug>(
        schema_enum: &str,
        failures: &mut Vec<String>,
    ) {
        let words = schema().enum_values(schema_enum).unwrap_or_else(|| panic!("no enum {schema_enum}"));
        for word in words {
            let variant: T = serde_json::from_value(json!(word)).unwrap();
            let spelt = screaming_snake(&format!("{variant:?}"));
            if spelt != word {
                failures.push(format!("{schema_enum}::{word} reads as {variant:?}"));
            }
        }
    }
    let mut failures = Vec::new();
    check::<wire::WirePrState>("PullRequestState", &mut failures);
    check::<wire::WireMergeable>("MergeableState", &mut failures);
    check::<wire::WireMergeStateStatus>("MergeStateStatus", &mut failures);
    check::<wire::WireCheckStatus>("CheckStatusState", &mut failures);
    check::<wire::WireConclusion>("CheckConclusionState", &mut failures);
    check::<wire::WireStatusState>("StatusState", &mut failures);
    check::<wire::WireReviewState>("PullRequestReviewState", &mut failures);
    assert!(failures.is_empty(), "{failures:#?}");
}

fn screaming_snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, ch) in camel.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(ch.to_ascii_uppercase());
    }
    out
}

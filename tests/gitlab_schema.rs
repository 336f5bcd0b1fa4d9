//! Every GraphQL document the GitLab forge sends validates against GitLab's published schema
//! (tests/gitlab/schema.graphql, see tests/gitlab/README.md), with the validator the GitHub schema test
//! uses: a misspelt field or a wrong argument fails here rather than on every tick against GitLab.

#[path = "github/validate.rs"]
#[allow(dead_code)] // the GitHub test uses more of it
mod validate;

use std::path::Path;

use validate::{Schema, validate};

#[test]
fn every_gitlab_document_validates_against_the_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sdl = std::fs::read_to_string(root.join("tests/gitlab/schema.graphql")).unwrap();
    let schema = Schema::parse(&sdl).unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(root.join("src/forge/gitlab/graphql")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "graphql") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let errors = validate(&schema, &text);
        assert!(errors.is_empty(), "{}:\n{}", path.display(), errors.join("\n"));
        checked += 1;
    }
    assert!(checked >= 1, "no GitLab documents found");
    // The forge's own copy of the document is the one checked.
    assert_eq!(
        executor::forge::gitlab::MERGE_REQUESTS,
        include_str!("../src/forge/gitlab/graphql/merge_requests.graphql")
    );
}

/// The validator catches what it must on GitLab's schema too: a misspelt field and a missing argument.
#[test]
fn the_validator_refuses_what_gitlab_would() {
    let sdl =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gitlab/schema.graphql"))
            .unwrap();
    let schema = Schema::parse(&sdl).unwrap();
    let misspelt =
        "query { project(fullPath: \"a/b\") { mergeRequests(first: 1) { nodes { diffHeadShaa } } } }";
    assert!(
        validate(&schema, misspelt).iter().any(|e| e.contains("diffHeadShaa")),
        "{:?}",
        validate(&schema, misspelt)
    );
    let no_path = "query { project { id } }";
    assert!(!validate(&schema, no_path).is_empty());
}

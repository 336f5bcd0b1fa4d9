use chrono::TimeZone;
use serde_json::{Value, json};

use super::*;
use crate::forge::CiRollup;

const HEAD: &str = "4f2e1a9c0b7d3e5f6a8b9c0d1e2f3a4b5c6d7e8f";

fn observed() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).unwrap()
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn actions_run(name: &str, status: &str, conclusion: Option<&str>, id: i64) -> Value {
    json!({
        "__typename": "CheckRun",
        "name": name,
        "status": status,
        "conclusion": conclusion,
        "detailsUrl": format!("https://github.com/octo/app/actions/runs/1/job/{id}"),
        "databaseId": id,
        "summary": null,
        "checkSuite": { "app": { "slug": "github-actions" } }
    })
}

fn status_context(context: &str, state: &str) -> Value {
    json!({
        "__typename": "StatusContext",
        "context": context,
        "state": state,
        "targetUrl": "https://ci.example.com/build/9",
        "description": "Build finished"
    })
}

fn thread(id: &str, resolved: bool, outdated: bool, comments: Vec<Value>) -> Value {
    json!({
        "id": id,
        "isResolved": resolved,
        "isOutdated": outdated,
        "path": "src/lib.rs",
        "line": if outdated { Value::Null } else { json!(12) },
        "comments": { "nodes": comments }
    })
}

fn thread_comment(id: &str, login: Option<&str>, body: &str, reply_to: Option<&str>) -> Value {
    json!({
        "id": id,
        "author": login.map(|l| json!({ "login": l })),
        "authorAssociation": "MEMBER",
        "body": body,
        "createdAt": "2026-05-01T10:00:00Z",
        "path": "src/lib.rs",
        "line": 12,
        "replyTo": reply_to.map(|r| json!({ "id": r }))
    })
}

/// A pull request in the shape GitHub answers `...PrFields` with: two threads (one resolved), a
/// conversation comment, three reviews, and a rollup with a check run and a commit status.
fn full_pr() -> Value {
    json!({
        "id": "PR_kwDOAbCdEf5aBcDe",
        "number": 42,
        "url": "https://github.com/octo/app/pull/42",
        "state": "OPEN",
        "isDraft": true,
        "mergeable": "MERGEABLE",
        "mergeStateStatus": "BLOCKED",
        "headRefName": "executor/run-17",
        "headRefOid": HEAD,
        "additions": 12,
        "deletions": 3,
        "changedFiles": 2,
        "labels": { "nodes": [ { "name": "executor" }, { "name": "bug" } ] },
        "statusCheckRollup": {
            "state": "FAILURE",
            "contexts": {
                "pageInfo": { "hasNextPage": false, "endCursor": "Y3Vyc29yOnYyOpHOAAAAAQ==" },
                "nodes": [
                    actions_run("macOS UI Tests", "COMPLETED", Some("FAILURE"), 30_433_642_001_i64),
                    status_context("ci/jenkins", "SUCCESS")
                ]
            }
        },
        "reviewThreads": {
            "pageInfo": { "hasNextPage": false, "endCursor": null },
            "nodes": [
                thread("PRRT_1", false, false, vec![
                    thread_comment("PRRC_1", Some("alex"), "Please rename this.", None),
                    thread_comment("PRRC_2", Some("alex"), "[ACKNOWLEDGED: renamed]", Some("PRRC_1")),
                ]),
                thread("PRRT_2", true, false, vec![
                    thread_comment("PRRC_3", Some("bob"), "Nit: spacing.", None),
                ])
            ]
        },
        "comments": {
            "nodes": [
                {
                    "id": "IC_1",
                    "author": { "login": "alex" },
                    "authorAssociation": "OWNER",
                    "body": "Also update the README.",
                    "createdAt": "2026-05-01T11:00:00Z"
                }
            ]
        },
        "reviews": {
            "nodes": [
                {
                    "id": "PRR_1",
                    "author": { "login": "alex" },
                    "authorAssociation": "OWNER",
                    "state": "CHANGES_REQUESTED",
                    "body": "The error handling needs work.",
                    "submittedAt": "2026-05-01T11:30:00Z",
                    "commit": { "oid": HEAD }
                },
                {
                    "id": "PRR_2",
                    "author": { "login": "alex" },
                    "authorAssociation": "OWNER",
                    "state": "COMMENTED",
                    "body": "",
                    "submittedAt": "2026-05-01T11:31:00Z",
                    "commit": { "oid": HEAD }
                },
                {
                    "id": "PRR_3",
                    "author": { "login": "alex" },
                    "authorAssociation": "OWNER",
                    "state": "PENDING",
                    "body": "draft thoughts",
                    "submittedAt": null,
                    "commit": null
                }
            ]
        }
    })
}

fn parse(v: Value) -> WirePr {
    serde_json::from_value(v).unwrap()
}

fn snapshot(v: Value) -> PrSnapshot {
    parse(v).into_snapshot(vec![], vec![], &AgentComments::new(), observed())
}

fn with_contexts(contexts: Vec<Value>) -> Value {
    let mut pr = full_pr();
    pr["statusCheckRollup"]["contexts"]["nodes"] = json!(contexts);
    pr
}

#[test]
fn a_full_answer_maps_every_field() {
    let snap = snapshot(full_pr());
    assert_eq!(snap.number, 42);
    assert_eq!(snap.url, "https://github.com/octo/app/pull/42");
    assert_eq!(snap.state, PrState::Open);
    assert!(snap.draft);
    assert_eq!(snap.head_sha, HEAD);
    assert_eq!(snap.diff, Some(crate::forge::DiffStat { files: 2, additions: 12, deletions: 3 }));
    assert_eq!(snap.labels, vec!["executor".to_string(), "bug".to_string()]);
    assert_eq!(snap.mergeable, Mergeable::Mergeable);
    assert_eq!(snap.observed_at, observed());

    assert_eq!(
        snap.checks,
        vec![
            Check {
                name: "macOS UI Tests".into(),
                status: CheckStatus::Failure,
                sha: HEAD.into(),
                url: Some("https://github.com/octo/app/actions/runs/1/job/30433642001".into()),
                summary: None,
                job_id: Some(30_433_642_001),
            },
            Check {
                name: "ci/jenkins".into(),
                status: CheckStatus::Success,
                sha: HEAD.into(),
                url: Some("https://ci.example.com/build/9".into()),
                summary: Some("Build finished".into()),
                job_id: None,
            },
        ]
    );
    assert_eq!(snap.ci(), CiRollup::Failure);

    // Threads in order with their comments in order, then conversation comments, then review bodies;
    // the empty review and the pending one are not comments.
    let ids: Vec<&str> = snap.comments.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["PRRC_1", "PRRC_2", "PRRC_3", "IC_1", "PRR_1"]);

    assert_eq!(
        snap.comments[1],
        Comment {
            id: "PRRC_2".into(),
            author: "alex".into(),
            body: "[ACKNOWLEDGED: renamed]".into(),
            created_at: at("2026-05-01T10:00:00Z"),
            path: Some("src/lib.rs".into()),
            line: Some(12),
            thread_id: Some("PRRT_1".into()),
            thread_resolved: false,
            in_reply_to: Some("PRRC_1".into()),
            by_agent: false,
            from_dashboard: false,
            author_association: Some("MEMBER".into()),
        }
    );
    assert!(snap.comments[2].thread_resolved);
    assert_eq!(snap.comments[2].thread_id.as_deref(), Some("PRRT_2"));

    let conversation = &snap.comments[3];
    assert_eq!(conversation.thread_id, None);
    assert_eq!(conversation.path, None);
    assert_eq!(conversation.author_association.as_deref(), Some("OWNER"));
    assert_eq!(conversation.created_at, at("2026-05-01T11:00:00Z"));

    let review = &snap.comments[4];
    assert_eq!(review.body, "The error handling needs work.");
    assert_eq!(review.created_at, at("2026-05-01T11:30:00Z"));
    assert_eq!(review.thread_id, None);
}

#[test]
fn the_pr_state_words_map_onto_pr_state() {
    for (word, state) in [
        ("OPEN", PrState::Open),
        ("MERGED", PrState::Merged),
        ("CLOSED", PrState::Closed),
        ("ARCHIVED", PrState::Open),
    ] {
        let mut pr = full_pr();
        pr["state"] = json!(word);
        assert_eq!(snapshot(pr).state, state, "{word}");
    }
}

#[test]
fn every_check_run_status_and_conclusion_maps_as_documented() {
    let rows: &[(&str, Option<&str>, CheckStatus)] = &[
        ("QUEUED", None, CheckStatus::Pending),
        ("IN_PROGRESS", None, CheckStatus::Pending),
        ("WAITING", None, CheckStatus::Pending),
        ("PENDING", None, CheckStatus::Pending),
        ("REQUESTED", None, CheckStatus::Pending),
        ("COMPLETED", Some("SUCCESS"), CheckStatus::Success),
        ("COMPLETED", Some("FAILURE"), CheckStatus::Failure),
        ("COMPLETED", Some("STARTUP_FAILURE"), CheckStatus::Failure),
        ("COMPLETED", Some("CANCELLED"), CheckStatus::Cancelled),
        ("COMPLETED", Some("TIMED_OUT"), CheckStatus::TimedOut),
        ("COMPLETED", Some("ACTION_REQUIRED"), CheckStatus::ActionRequired),
        ("COMPLETED", Some("SKIPPED"), CheckStatus::Skipped),
        ("COMPLETED", Some("NEUTRAL"), CheckStatus::Neutral),
        ("COMPLETED", Some("STALE"), CheckStatus::Cancelled),
        // Words this build does not know, and a completed run without a conclusion.
        ("SOMETHING_NEW", None, CheckStatus::Pending),
        ("COMPLETED", Some("SOMETHING_NEW"), CheckStatus::Failure),
        ("COMPLETED", None, CheckStatus::Failure),
    ];
    for (status, conclusion, want) in rows {
        let snap = snapshot(with_contexts(vec![actions_run("build", status, *conclusion, 7)]));
        assert_eq!(snap.checks.len(), 1);
        assert_eq!(snap.checks[0].status, *want, "{status} / {conclusion:?}");
    }
}

#[test]
fn every_commit_status_state_maps_as_documented() {
    let rows = [
        ("SUCCESS", CheckStatus::Success),
        ("PENDING", CheckStatus::Pending),
        ("EXPECTED", CheckStatus::Pending),
        ("FAILURE", CheckStatus::Failure),
        ("ERROR", CheckStatus::Failure),
        ("SOMETHING_NEW", CheckStatus::Pending),
    ];
    for (state, want) in rows {
        let snap = snapshot(with_contexts(vec![status_context("ci/jenkins", state)]));
        assert_eq!(snap.checks[0].status, want, "{state}");
        assert_eq!(snap.checks[0].name, "ci/jenkins");
        assert_eq!(snap.checks[0].job_id, None);
    }
}

#[test]
fn only_github_actions_check_runs_carry_a_job_id() {
    let mut other_app = actions_run("lint", "COMPLETED", Some("FAILURE"), 11);
    other_app["checkSuite"] = json!({ "app": { "slug": "circleci-checks" } });
    let mut no_app = actions_run("vet", "COMPLETED", Some("FAILURE"), 12);
    no_app["checkSuite"] = json!({ "app": null });
    let snap = snapshot(with_contexts(vec![
        actions_run("test", "COMPLETED", Some("FAILURE"), 10),
        other_app,
        no_app,
    ]));
    let jobs: Vec<Option<i64>> = snap.checks.iter().map(|c| c.job_id).collect();
    assert_eq!(jobs, [Some(10), None, None]);
}

#[test]
fn an_unknown_kind_of_check_context_is_skipped() {
    let snap = snapshot(with_contexts(vec![
        json!({ "__typename": "SomeFutureContext" }),
        status_context("ci/jenkins", "SUCCESS"),
    ]));
    let names: Vec<&str> = snap.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ci/jenkins"]);
}

#[test]
fn a_null_rollup_means_no_checks() {
    let mut pr = full_pr();
    pr["statusCheckRollup"] = Value::Null;
    let wire = parse(pr);
    assert_eq!(wire.contexts_next_page(), None);
    let snap = wire.into_snapshot(vec![], vec![], &AgentComments::new(), observed());
    assert!(snap.checks.is_empty());
    assert_eq!(snap.ci(), CiRollup::None);
}

#[test]
fn mergeability_follows_mergeable_and_the_merge_state() {
    let rows = [
        ("MERGEABLE", "CLEAN", Mergeable::Mergeable),
        ("MERGEABLE", "UNKNOWN", Mergeable::Mergeable),
        ("UNKNOWN", "UNKNOWN", Mergeable::Unknown),
        ("CONFLICTING", "DIRTY", Mergeable::Conflicting),
        ("CONFLICTING", "BLOCKED", Mergeable::Conflicting),
        // The merge state can say DIRTY before `mergeable` catches up.
        ("UNKNOWN", "DIRTY", Mergeable::Conflicting),
        ("MERGEABLE", "DIRTY", Mergeable::Conflicting),
        // Words this build does not know.
        ("SOMETHING_NEW", "CLEAN", Mergeable::Unknown),
        ("MERGEABLE", "SOMETHING_NEW", Mergeable::Mergeable),
    ];
    for (mergeable, merge_state, want) in rows {
        let mut pr = full_pr();
        pr["mergeable"] = json!(mergeable);
        pr["mergeStateStatus"] = json!(merge_state);
        assert_eq!(snapshot(pr).mergeable, want, "{mergeable} / {merge_state}");
    }
}

#[test]
fn a_deleted_author_is_the_ghost() {
    let mut pr = full_pr();
    pr["reviewThreads"]["nodes"][0]["comments"]["nodes"][0]["author"] = Value::Null;
    pr["comments"]["nodes"][0]["author"] = Value::Null;
    pr["reviews"]["nodes"][0]["author"] = Value::Null;
    let snap = snapshot(pr);
    let authors: Vec<&str> = snap.comments.iter().map(|c| c.author.as_str()).collect();
    assert_eq!(authors, ["ghost", "alex", "bob", "ghost", "ghost"]);
}

#[test]
fn comments_executor_recorded_are_marked_as_agents_with_what_they_answer() {
    let agent: AgentComments = [
        ("PRRC_2".to_string(), Some("PRRC_1".to_string())),
        ("IC_1".to_string(), Some("PRR_1".to_string())),
        ("PRR_1".to_string(), None),
    ]
    .into_iter()
    .collect();
    let snap = parse(full_pr()).into_snapshot(vec![], vec![], &agent, observed());
    let by_id = |id: &str| snap.comments.iter().find(|c| c.id == id).unwrap();

    assert!(!by_id("PRRC_1").by_agent);
    assert!(by_id("PRRC_2").by_agent);
    assert!(!by_id("PRRC_3").by_agent);
    // In a thread, GitHub says what a comment answers; outside one, executor's record does.
    assert_eq!(by_id("PRRC_2").in_reply_to.as_deref(), Some("PRRC_1"));
    assert!(by_id("IC_1").by_agent);
    assert_eq!(by_id("IC_1").in_reply_to.as_deref(), Some("PRR_1"));
    assert!(by_id("PRR_1").by_agent);
    assert_eq!(by_id("PRR_1").in_reply_to, None);
}

#[test]
fn a_conversation_comment_executor_did_not_post_answers_nothing() {
    let snap = snapshot(full_pr());
    let c = snap.comments.iter().find(|c| c.id == "IC_1").unwrap();
    assert!(!c.by_agent);
    assert_eq!(c.in_reply_to, None);
}

#[test]
fn outdated_threads_still_count_and_take_the_threads_line_when_theirs_is_gone() {
    let mut outdated =
        thread("PRRT_9", false, true, vec![thread_comment("PRRC_9", Some("alex"), "Still wrong.", None)]);
    outdated["comments"]["nodes"][0]["line"] = Value::Null;
    let mut pr = full_pr();
    pr["reviewThreads"]["nodes"] = json!([outdated]);
    let snap = snapshot(pr);
    assert_eq!(snap.comments[0].id, "PRRC_9");
    assert_eq!(snap.comments[0].line, None);
    assert_eq!(snap.comments[0].path.as_deref(), Some("src/lib.rs"));

    let mut moved =
        thread("PRRT_8", false, false, vec![thread_comment("PRRC_8", Some("alex"), "Here.", None)]);
    moved["comments"]["nodes"][0]["line"] = Value::Null;
    let mut pr = full_pr();
    pr["reviewThreads"]["nodes"] = json!([moved]);
    assert_eq!(snapshot(pr).comments[0].line, Some(12));
}

#[test]
fn dismissed_and_empty_reviews_are_not_requests() {
    let mut pr = full_pr();
    pr["reviews"]["nodes"][0]["state"] = json!("DISMISSED");
    pr["reviews"]["nodes"][1]["body"] = json!("  \n ");
    let ids: Vec<String> = snapshot(pr).comments.into_iter().map(|c| c.id).collect();
    assert!(!ids.iter().any(|id| id.starts_with("PRR_")), "{ids:?}");
}

#[test]
fn an_unknown_review_state_keeps_the_body() {
    let mut pr = full_pr();
    pr["reviews"]["nodes"][0]["state"] = json!("SOMETHING_NEW");
    assert!(snapshot(pr).comments.iter().any(|c| c.id == "PRR_1"));
}

#[test]
fn null_connections_and_null_items_are_empty_not_errors() {
    let mut pr = full_pr();
    pr["labels"] = Value::Null;
    pr["reviews"] = Value::Null;
    pr["comments"]["nodes"] = Value::Null;
    pr["reviewThreads"]["nodes"] = json!([null]);
    pr["statusCheckRollup"]["contexts"]["nodes"] = json!([null, status_context("ci", "SUCCESS")]);
    let snap = snapshot(pr);
    assert!(snap.labels.is_empty());
    assert!(snap.comments.is_empty());
    assert_eq!(snap.checks.len(), 1);
}

#[test]
fn an_answer_missing_a_selected_field_does_not_deserialize() {
    for (path, field) in [
        (vec![], "headRefOid"),
        (vec![], "changedFiles"),
        (vec![], "statusCheckRollup"),
        (vec!["statusCheckRollup", "contexts", "pageInfo"], "endCursor"),
        (vec!["reviews", "nodes", "0"], "submittedAt"),
        (vec!["reviewThreads", "nodes", "0", "comments", "nodes", "0"], "replyTo"),
    ] {
        let mut pr = full_pr();
        let mut at = &mut pr;
        for key in &path {
            at = match key.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*key],
            };
        }
        at.as_object_mut().unwrap().remove(field).unwrap();
        let err = serde_json::from_value::<WirePr>(pr).unwrap_err();
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
}

#[test]
fn a_wrongly_typed_answer_does_not_deserialize() {
    let mut pr = full_pr();
    pr["number"] = json!("42");
    assert!(serde_json::from_value::<WirePr>(pr).is_err());
    let mut pr = full_pr();
    pr["comments"]["nodes"][0]["createdAt"] = json!("yesterday");
    assert!(serde_json::from_value::<WirePr>(pr).is_err());
}

#[test]
fn next_page_cursors_only_when_there_is_a_next_page() {
    let wire = parse(full_pr());
    assert_eq!(wire.contexts_next_page(), None, "hasNextPage false, even with a cursor");
    assert_eq!(wire.threads_next_page(), None);

    let mut pr = full_pr();
    pr["statusCheckRollup"]["contexts"]["pageInfo"] =
        json!({ "hasNextPage": true, "endCursor": "Y29udGV4dHM=" });
    pr["reviewThreads"]["pageInfo"] = json!({ "hasNextPage": true, "endCursor": "dGhyZWFkcw==" });
    let wire = parse(pr);
    assert_eq!(wire.contexts_next_page().as_deref(), Some("Y29udGV4dHM="));
    assert_eq!(wire.threads_next_page().as_deref(), Some("dGhyZWFkcw=="));

    let mut pr = full_pr();
    pr["reviewThreads"]["pageInfo"] = json!({ "hasNextPage": true, "endCursor": null });
    assert_eq!(parse(pr).threads_next_page(), None);
}

#[test]
fn later_pages_are_appended_after_the_first() {
    let contexts_page: WireContextsPage = serde_json::from_value(json!({
        "rateLimit": { "cost": 1, "remaining": 4990, "resetAt": "2026-05-01T13:00:00Z" },
        "repository": { "pullRequest": { "statusCheckRollup": { "contexts": {
            "pageInfo": { "hasNextPage": true, "endCursor": "bW9yZQ==" },
            "nodes": [ actions_run("page two", "IN_PROGRESS", None, 99) ]
        } } } }
    }))
    .unwrap();
    assert_eq!(
        contexts_page.rate_limit,
        Some(WireRateLimit { cost: 1, remaining: 4990, reset_at: at("2026-05-01T13:00:00Z") })
    );
    let contexts = contexts_page.into_page().unwrap();
    assert_eq!(contexts.next.as_deref(), Some("bW9yZQ=="));

    let late_thread =
        thread("PRRT_51", false, false, vec![thread_comment("PRRC_51", Some("alex"), "Late.", None)]);
    let threads_page: WireThreadsPage = serde_json::from_value(json!({
        "rateLimit": { "cost": 1, "remaining": 4989, "resetAt": "2026-05-01T13:00:00Z" },
        "repository": { "pullRequest": { "reviewThreads": {
            "pageInfo": { "hasNextPage": false, "endCursor": "ZW5k" },
            "nodes": [ late_thread ]
        } } }
    }))
    .unwrap();
    let threads = threads_page.into_page().unwrap();
    assert_eq!(threads.next, None);

    let snap =
        parse(full_pr()).into_snapshot(contexts.items, threads.items, &AgentComments::new(), observed());
    let checks: Vec<&str> = snap.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(checks, ["macOS UI Tests", "ci/jenkins", "page two"]);
    assert_eq!(snap.ci(), CiRollup::Pending);
    let ids: Vec<&str> = snap.comments.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["PRRC_1", "PRRC_2", "PRRC_3", "PRRC_51", "IC_1", "PRR_1"]);
}

#[test]
fn a_page_whose_pull_request_or_rollup_is_gone_is_none() {
    let gone: WireContextsPage = serde_json::from_value(json!({
        "rateLimit": null,
        "repository": { "pullRequest": { "statusCheckRollup": null } }
    }))
    .unwrap();
    assert!(gone.into_page().is_none());
    let gone: WireThreadsPage =
        serde_json::from_value(json!({ "rateLimit": null, "repository": { "pullRequest": null } })).unwrap();
    assert!(gone.into_page().is_none());
    let gone: WireThreadsPage =
        serde_json::from_value(json!({ "rateLimit": null, "repository": null })).unwrap();
    assert!(gone.into_page().is_none());
}

#[test]
fn the_batch_answer_holds_each_alias_and_null_for_a_missing_pr() {
    let batch: WireBatch = serde_json::from_value(json!({
        "rateLimit": { "cost": 1, "remaining": 4999, "resetAt": "2026-05-01T13:00:00Z" },
        "repository": { "pr0": full_pr(), "pr1": null }
    }))
    .unwrap();
    let prs = batch.repository.unwrap();
    assert_eq!(prs["pr0"].as_ref().map(|p| p.number), Some(42));
    assert!(prs["pr1"].is_none());
}

#[test]
fn mutation_answers_give_the_posted_ids() {
    let review: WireAddReview = serde_json::from_value(json!({
        "addPullRequestReview": { "pullRequestReview": {
            "id": "PRR_9",
            "comments": { "nodes": [ { "id": "PRRC_91" }, { "id": "PRRC_92" } ] }
        } }
    }))
    .unwrap();
    assert_eq!(
        review.posted_ids(),
        Some(("PRR_9".to_string(), vec!["PRRC_91".to_string(), "PRRC_92".to_string()]))
    );
    let nothing: WireAddReview = serde_json::from_value(json!({ "addPullRequestReview": null })).unwrap();
    assert_eq!(nothing.posted_ids(), None);

    let reply: WireReplyToThread = serde_json::from_value(
        json!({ "addPullRequestReviewThreadReply": { "comment": { "id": "PRRC_93" } } }),
    )
    .unwrap();
    assert_eq!(reply.comment_id().as_deref(), Some("PRRC_93"));
    assert!(
        serde_json::from_value::<WireReplyToThread>(json!({ "addPullRequestReviewThreadReply": {} }))
            .is_err()
    );

    let ready: WireMarkReady = serde_json::from_value(json!({
        "markPullRequestReadyForReview": { "pullRequest": { "isDraft": false } }
    }))
    .unwrap();
    assert!(ready.is_ready());
    let still_draft: WireMarkReady = serde_json::from_value(json!({
        "markPullRequestReadyForReview": { "pullRequest": { "isDraft": true } }
    }))
    .unwrap();
    assert!(!still_draft.is_ready());
}

//! Tests of the fake Linear itself, with reqwest as the client: the Linear source's and write-back's
//! tests are only as good as the fake's answers, so the shapes they rely on are pinned here — only
//! the selected fields under their aliases, cursors, filters, and errors in Linear's shape.

#[path = "fake_linear/mod.rs"]
mod fake_linear;

use std::time::Duration;

use fake_linear::{FakeLinear, Fault, issue, uuid};
use serde_json::{Value, json};

const KEY: &str = "lin_api_selftest";

async fn post(
    fake: &FakeLinear,
    key: &str,
    query: &str,
    variables: Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let answer = reqwest::Client::new()
        .post(&fake.url)
        .header("authorization", key)
        .json(&json!({"query": query, "variables": variables}))
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    let headers = answer.headers().clone();
    (status, headers, answer.json().await.unwrap_or(Value::Null))
}

async fn fake() -> FakeLinear {
    let fake = FakeLinear::start(KEY).await;
    fake.put_issue(issue(1, "ENG", 1, "one", "Todo", "2026-11-01T00:00:00.000Z"));
    fake.put_issue(issue(2, "ENG", 2, "two", "Done", "2026-11-03T00:00:00.000Z"));
    fake.put_issue(issue(3, "OPS", 3, "three", "Todo", "2026-11-02T00:00:00.000Z"));
    fake
}

#[tokio::test]
async fn only_selected_fields_come_back_under_their_aliases_newest_first_paged() {
    let fake = fake().await;
    let query = "query($after: String) { issues(first: 2, after: $after, orderBy: updatedAt) { \
                 nodes { key: identifier state { name } } pageInfo { hasNextPage endCursor } } }";
    let (status, _, first) = post(&fake, KEY, query, json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(
        first["data"]["issues"]["nodes"],
        json!([{"key": "ENG-2", "state": {"name": "Done"}}, {"key": "OPS-3", "state": {"name": "Todo"}}])
    );
    assert_eq!(first["data"]["issues"]["pageInfo"]["hasNextPage"], true);
    let cursor = first["data"]["issues"]["pageInfo"]["endCursor"].clone();
    let (_, _, second) = post(&fake, KEY, query, json!({"after": cursor})).await;
    assert_eq!(second["data"]["issues"]["nodes"], json!([{"key": "ENG-1", "state": {"name": "Todo"}}]));
    assert_eq!(second["data"]["issues"]["pageInfo"]["hasNextPage"], false);
}

#[tokio::test]
async fn filters_combine_and_compare_as_linear_does() {
    let fake = fake().await;
    let query = "query($filter: IssueFilter) { issues(filter: $filter, first: 50) { nodes { identifier } } }";
    let ids = |answer: &Value| -> Vec<String> {
        let nodes = answer["data"]["issues"]["nodes"].as_array().unwrap();
        nodes.iter().map(|n| n["identifier"].as_str().unwrap().to_string()).collect()
    };
    let filter =
        json!({"and": [{"team": {"key": {"in": ["ENG"]}}}, {"state": {"type": {"nin": ["completed"]}}}]});
    assert_eq!(ids(&post(&fake, KEY, query, json!({"filter": filter})).await.2), ["ENG-1"]);
    let filter = json!({"updatedAt": {"gte": "2026-11-02T00:00:00.000Z"}, "labels": {"some": {"name": {"eq": "executor"}}}});
    assert_eq!(ids(&post(&fake, KEY, query, json!({"filter": filter})).await.2), ["ENG-2", "OPS-3"]);
    let filter = json!({"or": [{"assignee": {"isMe": {"eq": false}}}, {"title": {"eqIgnoreCase": "ONE"}}]});
    assert_eq!(ids(&post(&fake, KEY, query, json!({"filter": filter})).await.2), ["ENG-1"]);
}

#[tokio::test]
async fn errors_come_in_linears_shape() {
    let fake = fake().await;
    let code =
        |answer: &Value| answer["errors"][0]["extensions"]["code"].as_str().unwrap_or_default().to_string();
    let (status, _, wrong) = post(&fake, "nope", "{ viewer { id } }", json!({})).await;
    assert_eq!((status, code(&wrong).as_str(), &wrong["data"]), (400, "AUTHENTICATION_ERROR", &Value::Null));
    let (status, _, missing) = post(&fake, KEY, "{ issue(id: \"nope\") { id } }", json!({})).await;
    assert_eq!(status, 200);
    assert!(missing["errors"][0]["message"].as_str().unwrap().starts_with("Entity not found: Issue"));
    fake.add_read_only_key("ro");
    let create =
        "mutation($id: String!) { commentCreate(input: { id: $id, issueId: $id, body: \"x\" }) { success } }";
    let (status, _, forbidden) = post(&fake, "ro", create, json!({"id": uuid(1)})).await;
    assert_eq!((status, code(&forbidden).as_str()), (400, "FORBIDDEN"));
    fake.fail_next(Fault::RateLimited(Duration::from_secs(30)));
    let (status, headers, limited) = post(&fake, KEY, "{ viewer { id } }", json!({})).await;
    assert_eq!((status, code(&limited).as_str()), (400, "RATELIMITED"));
    assert_eq!(headers["x-ratelimit-requests-remaining"], "0");
    let reset: i64 = headers["x-ratelimit-requests-reset"].to_str().unwrap().parse().unwrap();
    assert!(reset > chrono::Utc::now().timestamp_millis() + 20_000, "the reset is in epoch milliseconds");
}

#[tokio::test]
async fn a_comment_id_is_taken_once_and_found_by_it() {
    let fake = fake().await;
    let create = "mutation($id: String!, $issue: String!) { commentCreate(input: { id: $id, issueId: $issue, body: \"hi\" }) \
                  { success comment { id } } }";
    let variables = json!({"id": uuid(500), "issue": "ENG-1"});
    let (_, _, created) = post(&fake, KEY, create, variables.clone()).await;
    assert_eq!(created["data"]["commentCreate"], json!({"success": true, "comment": {"id": uuid(500)}}));
    let (_, _, again) = post(&fake, KEY, create, variables).await;
    assert!(again["errors"].is_array(), "a second comment with the same id is refused: {again}");
    let (_, _, found) =
        post(&fake, KEY, "query($id: String) { comment(id: $id) { id body } }", json!({"id": uuid(500)}))
            .await;
    assert_eq!(found["data"]["comment"], json!({"id": uuid(500), "body": "hi"}));
    assert_eq!(fake.comments(&uuid(1)), ["hi"], "by identifier, on the issue's id");
}

//! The GraphQL side of the fake GitHub: the operations of `src/forge/github/graphql/`, dispatched by
//! operation name after parsing the document with `graphql_parser`. Answers follow the documents'
//! shapes (camelCase, GitHub's enum words, `__typename` on check contexts; a pull request's review
//! threads only when the query selects them), charge rate-limit points by GitHub's published formula
//! (see [`cost`]), and report errors as GitHub does: a NOT_FOUND per unknown pull request next to the
//! data, RATE_LIMITED without data.

use std::collections::HashMap;

use graphql_parser::query::{
    Definition, Document, Field, FragmentDefinition, OperationDefinition, Selection, SelectionSet,
};
use serde_json::{Map, Value, json};

use super::rest::{html_url, posted};
use super::state::{
    FakeComment, FakeContext, FakePr, FakeReview, FakeThread, HOURLY_LIMIT, Repo, State, iso,
};
use super::{Answer, AnswerBody, PostedKind};

/// Pages of the paginated connections, as in the documents.
const CONTEXTS_PAGE: usize = 100;
const THREADS_PAGE: usize = 50;

/// A parsed POST /graphql.
pub struct Request {
    pub operation: String,
    selection: SelectionSet<'static, String>,
    variables: Value,
    /// The document's fragments by name, for spreads.
    fragments: HashMap<String, SelectionSet<'static, String>>,
    mutation: bool,
}

/// The request's operation, or the 200-with-errors answer GitHub gives to a document it cannot run.
pub fn parse(body: &[u8]) -> Result<Request, Answer> {
    let body: Value =
        serde_json::from_slice(body).map_err(|_| Answer::message(400, "Problems parsing JSON"))?;
    let query = body
        .get("query")
        .and_then(Value::as_str)
        .ok_or_else(|| errors("A query attribute must be specified and must be a string."))?;
    let document: Document<'static, String> = graphql_parser::parse_query::<String>(query)
        .map_err(|error| errors(&format!("Parse error: {error}")))?
        .into_static();
    let wanted = body.get("operationName").and_then(Value::as_str);
    let mut fragments = HashMap::new();
    let mut operation = None;
    for definition in document.definitions {
        let (name, selection, mutation) = match definition {
            Definition::Operation(OperationDefinition::Query(q)) => (q.name, q.selection_set, false),
            Definition::Operation(OperationDefinition::Mutation(m)) => (m.name, m.selection_set, true),
            Definition::Fragment(FragmentDefinition { name, selection_set, .. }) => {
                fragments.insert(name, selection_set);
                continue;
            }
            _ => continue,
        };
        if let Some(name) = name
            && operation.is_none()
            && wanted.is_none_or(|w| w == name)
        {
            operation = Some((name, selection, mutation));
        }
    }
    let (operation, selection, mutation) =
        operation.ok_or_else(|| errors("No named operation in the document"))?;
    let variables = body.get("variables").cloned().unwrap_or(Value::Null);
    Ok(Request { operation, selection, variables, fragments, mutation })
}

pub fn handle(state: &mut State, request: &Request) -> Answer {
    let cost = if request.mutation { 1 } else { cost(request) };
    let now = chrono::Utc::now();
    if now >= state.graphql_reset {
        // A new hour: the budget is whole again.
        state.graphql_remaining = HOURLY_LIMIT;
        state.graphql_reset = now + chrono::Duration::hours(1);
    }
    if state.graphql_remaining < cost {
        let answer = Answer::json(
            200,
            json!({"errors": [{"type": "RATE_LIMITED", "code": "graphql_rate_limit",
                               "message": "API rate limit exceeded for user ID 1."}]}),
        );
        return rate_headers(state, answer);
    }
    state.graphql_remaining -= cost;
    state.counts.graphql_points += u64::from(cost);
    let mut errors = Vec::new();
    let data = match request.operation.as_str() {
        "Batch" | "CheckContextsPage" | "ReviewThreadsPage" => query(state, request, cost, &mut errors),
        "ReplyToThread" => reply_mutation(state, request, &mut errors),
        "AddReview" => review_mutation(state, request, &mut errors),
        "MarkReady" => mark_ready_mutation(state, request, &mut errors),
        other => {
            errors.push(json!({"message": format!("The fake GitHub does not know the operation {other}")}));
            Value::Null
        }
    };
    let mut body = json!({ "data": data });
    if !errors.is_empty() {
        body["errors"] = Value::Array(errors);
    }
    rate_headers(state, Answer::json(200, body))
}

/// Turns a normal answer into one with partial errors: the first non-null pull request (or the whole
/// mutation result) becomes null and an `errors` entry says why, as when GitHub times out on a part.
pub fn add_partial_error(answer: &mut Answer) {
    let AnswerBody::Json(body) = &mut answer.body else { return };
    let mut path = Vec::new();
    if let Some(repository) = body.pointer_mut("/data/repository").and_then(Value::as_object_mut) {
        if let Some((key, value)) = repository.iter_mut().find(|(_, v)| !v.is_null()) {
            *value = Value::Null;
            path = vec![json!("repository"), json!(key)];
        }
    } else if let Some(data) = body.get_mut("data").and_then(Value::as_object_mut)
        && let Some((key, value)) = data.iter_mut().next()
    {
        *value = Value::Null;
        path = vec![json!(key)];
    }
    let error = json!({"message": "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug.", "path": path});
    match body.get_mut("errors").and_then(Value::as_array_mut) {
        Some(list) => list.push(error),
        None => body["errors"] = json!([error]),
    }
}

/// A reply in a review thread (by a test or through `ReplyToThread`); returns its id.
pub fn reply_in_thread(
    state: &mut State,
    thread_id: &str,
    author: &str,
    association: &str,
    body: &str,
) -> Option<String> {
    let (repo, number, index) = state.thread_by_id(thread_id)?;
    let thread = &state.repos[&repo].pr(number)?.threads[index];
    let (path, line) = (thread.path.clone(), thread.line);
    let first = thread.comments.first().map(|c| c.id.clone());
    let mut comment = state.new_comment("PRRC", author, association, body, Some((&path, line)));
    comment.reply_to = first;
    let id = comment.id.clone();
    state.pr_mut(&repo, number)?.threads[index].comments.push(comment);
    state.touch(&repo, number);
    Some(id)
}

/// GitHub's published cost of a query ("Calculating points for the GraphQL API"): every connection
/// (a field with `first` or `last`) needs as many requests as the product of the `first`/`last` of the
/// connections it is nested in (1 at the top); the sum over all of them, divided by 100 and rounded to
/// the nearest whole number, is the cost, at least 1.
pub fn cost(request: &Request) -> u32 {
    fn walk(request: &Request, set: &SelectionSet<'static, String>, multiplier: u64, total: &mut u64) {
        for field in fields(request, set) {
            let size = ["first", "last"]
                .into_iter()
                .find_map(|name| argument(field, name, &request.variables).as_u64());
            match size {
                Some(size) => {
                    *total += multiplier;
                    walk(request, &field.selection_set, multiplier * size, total);
                }
                None => walk(request, &field.selection_set, multiplier, total),
            }
        }
    }
    let mut total = 0;
    walk(request, &request.selection, 1, &mut total);
    u32::try_from((total + 50) / 100).unwrap_or(u32::MAX).max(1)
}

/// The fields of a selection set, fragment spreads and inline fragments expanded.
fn fields<'a>(
    request: &'a Request,
    set: &'a SelectionSet<'static, String>,
) -> Vec<&'a Field<'static, String>> {
    let mut out = Vec::new();
    for item in &set.items {
        match item {
            Selection::Field(field) => out.push(field),
            Selection::FragmentSpread(spread) => {
                if let Some(fragment) = request.fragments.get(&spread.fragment_name) {
                    out.extend(fields(request, fragment));
                }
            }
            Selection::InlineFragment(inline) => out.extend(fields(request, &inline.selection_set)),
        }
    }
    out
}

/// The `first` of the field `name` selected in `field`, when it is selected.
fn selected_first(request: &Request, field: &Field<'static, String>, name: &str) -> Option<usize> {
    let selected = fields(request, &field.selection_set).into_iter().find(|f| f.name == name)?;
    let first = argument(selected, "first", &request.variables).as_u64().unwrap_or(THREADS_PAGE as u64);
    Some(usize::try_from(first).unwrap_or(THREADS_PAGE))
}

fn errors(message: &str) -> Answer {
    Answer::json(200, json!({"errors": [{"message": message}]}))
}

fn rate_headers(state: &State, answer: Answer) -> Answer {
    answer
        .header("x-ratelimit-limit", HOURLY_LIMIT.to_string())
        .header("x-ratelimit-remaining", state.graphql_remaining.to_string())
        .header("x-ratelimit-used", HOURLY_LIMIT.saturating_sub(state.graphql_remaining).to_string())
        .header("x-ratelimit-reset", state.graphql_reset.timestamp().to_string())
        .header("x-ratelimit-resource", "graphql")
}

fn top_field<'a>(request: &'a Request, name: &str) -> Option<&'a Field<'static, String>> {
    request.selection.items.iter().find_map(|item| match item {
        Selection::Field(field) if field.name == name => Some(field),
        _ => None,
    })
}

/// The `pullRequest` fields under `repository` (the batch's aliases, or the single one of a page).
fn pull_request_fields(request: &Request) -> impl Iterator<Item = &Field<'static, String>> {
    top_field(request, "repository").into_iter().flat_map(|repository| {
        repository.selection_set.items.iter().filter_map(|item| match item {
            Selection::Field(field) if field.name == "pullRequest" => Some(field),
            _ => None,
        })
    })
}

/// An argument's value with variables substituted.
fn argument(field: &Field<'static, String>, name: &str, variables: &Value) -> Value {
    use graphql_parser::query::Value as Gql;
    let Some((_, value)) = field.arguments.iter().find(|(arg, _)| arg == name) else { return Value::Null };
    match value {
        Gql::Variable(variable) => variables.get(variable).cloned().unwrap_or(Value::Null),
        Gql::Int(number) => number.as_i64().map(Value::from).unwrap_or(Value::Null),
        Gql::String(text) | Gql::Enum(text) => Value::String(text.clone()),
        Gql::Boolean(flag) => Value::Bool(*flag),
        _ => Value::Null,
    }
}

fn variable<'a>(request: &'a Request, name: &str) -> &'a str {
    request.variables.get(name).and_then(Value::as_str).unwrap_or_default()
}

fn not_found(path: Vec<Value>, message: String) -> Value {
    json!({"type": "NOT_FOUND", "path": path, "locations": [{"line": 1, "column": 1}], "message": message})
}

/// Batch, CheckContextsPage and ReviewThreadsPage: `rateLimit` and `repository { pullRequest… }`.
fn query(state: &State, request: &Request, cost: u32, errors: &mut Vec<Value>) -> Value {
    let mut data = Map::new();
    if top_field(request, "rateLimit").is_some() {
        let rate = json!({"cost": cost, "remaining": state.graphql_remaining, "resetAt": iso(state.graphql_reset),
                          "limit": HOURLY_LIMIT, "used": HOURLY_LIMIT - state.graphql_remaining});
        data.insert("rateLimit".into(), rate);
    }
    let Some(repository) = top_field(request, "repository") else { return Value::Object(data) };
    let owner = argument(repository, "owner", &request.variables);
    let name = argument(repository, "name", &request.variables);
    let key = format!("{}/{}", owner.as_str().unwrap_or_default(), name.as_str().unwrap_or_default());
    let Some(repo) = state.repo(&key) else {
        let message = format!("Could not resolve to a Repository with the name '{key}'.");
        errors.push(not_found(vec![json!("repository")], message));
        data.insert("repository".into(), Value::Null);
        return Value::Object(data);
    };
    let after = variable(request, "after");
    let mut prs = Map::new();
    for field in pull_request_fields(request) {
        let alias = field.alias.clone().unwrap_or_else(|| field.name.clone());
        let number = argument(field, "number", &request.variables).as_i64().unwrap_or(0);
        if state.failing_prs.contains(&number) {
            let message =
                "Something went wrong while executing your query. This may be the result of a timeout.";
            errors.push(json!({"message": message, "path": [json!("repository"), json!(alias)]}));
            prs.insert(alias, Value::Null);
            continue;
        }
        let Some(pr) = repo.pr(number) else {
            let message = format!("Could not resolve to a PullRequest with the number of {number}.");
            errors.push(not_found(vec![json!("repository"), json!(alias)], message));
            prs.insert(alias, Value::Null);
            continue;
        };
        let answer = match request.operation.as_str() {
            "CheckContextsPage" => match cursor(after) {
                Some(start) => {
                    let rollup = contexts_page(repo, pr, start).map(|page| json!({"contexts": page}));
                    json!({"statusCheckRollup": rollup})
                }
                None => {
                    errors.push(json!({"message": format!("Argument 'after' on Field 'contexts' has an invalid value ({after}).")}));
                    Value::Null
                }
            },
            "ReviewThreadsPage" => match cursor(after) {
                Some(start) => {
                    let size = selected_first(request, field, "reviewThreads").unwrap_or(THREADS_PAGE);
                    json!({"reviewThreads": threads_page(pr, start, size)})
                }
                None => {
                    errors.push(json!({"message": format!("Argument 'after' on Field 'reviewThreads' has an invalid value ({after}).")}));
                    Value::Null
                }
            },
            _ => {
                let mut fields = pr_fields(state, repo, pr);
                if let Some(size) = selected_first(request, field, "reviewThreads") {
                    fields["reviewThreads"] = threads_page(pr, 0, size);
                }
                fields
            }
        };
        prs.insert(alias, answer);
    }
    data.insert("repository".into(), Value::Object(prs));
    Value::Object(data)
}

/// `after` is the index of the last item seen; the page starts after it.
fn cursor(after: &str) -> Option<usize> {
    after.parse::<usize>().ok().map(|index| index + 1)
}

/// The PrFields fragment of pr_fields.graphql.
fn pr_fields(state: &State, repo: &Repo, pr: &FakePr) -> Value {
    let rollup =
        contexts_page(repo, pr, 0).map(|page| json!({"state": rollup_state(repo, pr), "contexts": page}));
    json!({
        "id": pr.node_id,
        "number": pr.number,
        "url": html_url(state, pr),
        "state": pr.state,
        "isDraft": pr.draft,
        "mergeable": pr.mergeable,
        "mergeStateStatus": pr.merge_state,
        "headRefName": pr.branch,
        "headRefOid": pr.head_sha,
        "additions": pr.additions,
        "deletions": pr.deletions,
        "changedFiles": pr.changed_files,
        "labels": {"nodes": pr.labels.iter().take(50).map(|name| json!({"name": name})).collect::<Vec<_>>()},
        "statusCheckRollup": rollup,
        "comments": {"nodes": last(&pr.comments, 100).iter().map(comment_json).collect::<Vec<_>>()},
        "reviews": {"nodes": last(&pr.reviews, 20).iter().map(review_json).collect::<Vec<_>>()},
    })
}

fn last<T>(items: &[T], count: usize) -> &[T] {
    &items[items.len().saturating_sub(count)..]
}

/// A page of a connection: `pageInfo` told honestly, the cursor being the item's index.
fn page<T>(items: &[T], start: usize, size: usize, render: impl Fn(&T) -> Value) -> Value {
    let slice = items.get(start..).unwrap_or_default();
    let slice = &slice[..slice.len().min(size)];
    let end_cursor =
        if slice.is_empty() { Value::Null } else { json!((start + slice.len() - 1).to_string()) };
    json!({
        "pageInfo": {"hasNextPage": start + slice.len() < items.len(), "endCursor": end_cursor},
        "nodes": slice.iter().map(render).collect::<Vec<_>>(),
    })
}

/// The head commit's contexts from `start`, or None (a null rollup) while the head has none.
fn contexts_page(repo: &Repo, pr: &FakePr, start: usize) -> Option<Value> {
    let contexts: Vec<&FakeContext> = repo.contexts_at(&pr.head_sha).collect();
    (!contexts.is_empty()).then(|| page(&contexts, start, CONTEXTS_PAGE, |c| context_json(c)))
}

fn context_json(context: &FakeContext) -> Value {
    match context {
        FakeContext::CheckRun(run) => json!({
            "__typename": "CheckRun",
            "name": run.name,
            "status": run.status,
            "conclusion": run.conclusion,
            "detailsUrl": run.details_url,
            "databaseId": run.job_id,
            "summary": run.summary,
            "checkSuite": {"app": {"slug": "github-actions"}},
        }),
        FakeContext::Status(status) => json!({
            "__typename": "StatusContext",
            "context": status.context,
            "state": status.state,
            "targetUrl": status.target_url,
            "description": status.description,
        }),
    }
}

/// GitHub's combined state: an error or failure anywhere wins, then anything pending, else success.
fn rollup_state(repo: &Repo, pr: &FakePr) -> &'static str {
    let states: Vec<&str> = repo
        .contexts_at(&pr.head_sha)
        .map(|context| match context {
            FakeContext::CheckRun(run) if run.status != "COMPLETED" => "PENDING",
            FakeContext::CheckRun(run) => match run.conclusion.as_deref() {
                Some("SUCCESS" | "NEUTRAL" | "SKIPPED") => "SUCCESS",
                _ => "FAILURE",
            },
            FakeContext::Status(status) => match status.state.as_str() {
                "ERROR" => "ERROR",
                "FAILURE" => "FAILURE",
                "PENDING" | "EXPECTED" => "PENDING",
                _ => "SUCCESS",
            },
        })
        .collect();
    ["ERROR", "FAILURE", "PENDING"].into_iter().find(|word| states.contains(word)).unwrap_or("SUCCESS")
}

fn threads_page(pr: &FakePr, start: usize, size: usize) -> Value {
    page(&pr.threads, start, size, thread_json)
}

fn thread_json(thread: &FakeThread) -> Value {
    let comments: Vec<Value> = thread
        .comments
        .iter()
        .take(50)
        .map(|c| {
            let mut value = comment_json(c);
            value["path"] = json!(c.path);
            value["line"] = if thread.outdated { Value::Null } else { json!(c.line) };
            value["replyTo"] = c.reply_to.as_ref().map_or(Value::Null, |id| json!({"id": id}));
            value
        })
        .collect();
    json!({
        "id": thread.id,
        "isResolved": thread.resolved,
        "isOutdated": thread.outdated,
        "path": thread.path,
        "line": if thread.outdated { Value::Null } else { json!(thread.line) },
        "comments": {"nodes": comments},
    })
}

fn comment_json(comment: &FakeComment) -> Value {
    json!({
        "id": comment.id,
        "author": {"login": comment.author},
        "authorAssociation": comment.association,
        "body": comment.body,
        "createdAt": iso(comment.created_at),
    })
}

fn review_json(review: &FakeReview) -> Value {
    json!({
        "id": review.id,
        "author": {"login": review.author},
        "authorAssociation": review.association,
        "state": review.state,
        "body": review.body,
        "submittedAt": iso(review.submitted_at),
        "commit": {"oid": review.commit},
    })
}

fn unresolvable(field: &str, id: &str, errors: &mut Vec<Value>) -> Value {
    errors.push(not_found(
        vec![json!(field)],
        format!("Could not resolve to a node with the global id of '{id}'"),
    ));
    json!({ field: null })
}

fn reply_mutation(state: &mut State, request: &Request, errors: &mut Vec<Value>) -> Value {
    const FIELD: &str = "addPullRequestReviewThreadReply";
    let (thread_id, body) = (variable(request, "thread"), variable(request, "body"));
    let login = state.login.clone();
    let Some(id) = reply_in_thread(state, thread_id, &login, "OWNER", body) else {
        return unresolvable(FIELD, thread_id, errors);
    };
    let (repo, number, _) = state.thread_by_id(thread_id).expect("the thread just answered");
    let mut record = posted(PostedKind::ThreadReply, &repo, number, id.clone(), body.to_string());
    record.reply_to = Some(thread_id.to_string());
    state.posted.push(record);
    json!({ FIELD: {"comment": {"id": id}} })
}

fn review_mutation(state: &mut State, request: &Request, errors: &mut Vec<Value>) -> Value {
    const FIELD: &str = "addPullRequestReview";
    let pr_id = variable(request, "pr");
    let Some((repo, number)) = state.pr_by_node(pr_id) else { return unresolvable(FIELD, pr_id, errors) };
    let login = state.login.clone();
    let body = variable(request, "body").to_string();
    let review_id = format!("PRR_{}", state.next_id());
    let review = FakeReview {
        id: review_id.clone(),
        author: login.clone(),
        association: "OWNER".into(),
        state: "COMMENTED".into(),
        body: body.clone(),
        submitted_at: chrono::Utc::now(),
        commit: variable(request, "commit").to_string(),
    };
    let mut records = vec![posted(PostedKind::Review, &repo, number, review_id.clone(), body)];
    let mut threads = Vec::new();
    let drafts = request.variables.get("threads").and_then(Value::as_array).cloned().unwrap_or_default();
    for draft in drafts {
        let path = draft.get("path").and_then(Value::as_str).unwrap_or_default().to_string();
        let line = draft.get("line").and_then(Value::as_i64).unwrap_or(0);
        let text = draft.get("body").and_then(Value::as_str).unwrap_or_default().to_string();
        let comment = state.new_comment("PRRC", &login, "OWNER", &text, Some((&path, line)));
        let mut record = posted(PostedKind::ReviewComment, &repo, number, comment.id.clone(), text);
        record.reply_to = Some(review_id.clone());
        record.path = Some(path.clone());
        record.line = Some(line);
        records.push(record);
        let id = format!("PRRT_{}", state.next_id());
        threads.push(FakeThread {
            id,
            path,
            line,
            resolved: false,
            outdated: false,
            comments: vec![comment],
        });
    }
    let comment_ids: Vec<Value> = threads.iter().map(|t| json!({"id": t.comments[0].id})).collect();
    if let Some(pr) = state.pr_mut(&repo, number) {
        pr.reviews.push(review);
        pr.threads.extend(threads);
    }
    state.touch(&repo, number);
    state.posted.extend(records);
    json!({ FIELD: {"pullRequestReview": {"id": review_id, "comments": {"nodes": comment_ids}}} })
}

fn mark_ready_mutation(state: &mut State, request: &Request, errors: &mut Vec<Value>) -> Value {
    const FIELD: &str = "markPullRequestReadyForReview";
    let pr_id = variable(request, "pr");
    let Some((repo, number)) = state.pr_by_node(pr_id) else { return unresolvable(FIELD, pr_id, errors) };
    if let Some(pr) = state.pr_mut(&repo, number) {
        pr.draft = false;
    }
    state.touch(&repo, number);
    state.posted.push(posted(PostedKind::ReadyForReview, &repo, number, String::new(), String::new()));
    json!({ FIELD: {"pullRequest": {"isDraft": false}} })
}

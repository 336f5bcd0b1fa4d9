//! A run that waits on a person's word, on the dashboard and its API, over real HTTP on SQLite and
//! PostgreSQL: the run page shows the plan as text (agent-written Markdown is never markup) with its
//! earlier revisions, approves it or sends it back with a comment, and answers a worker's open question;
//! "Needs you" lists both; the task page sets the task's own plan setting; the API does all of it with
//! the CLI's answers. Every change needs the page's token, is the CLI's store operation recorded as
//! `web`, and a refusal (nothing waits, someone decided first) comes back as the page's error.

mod common;
mod web_support;

use std::sync::Arc;

use common::TestDb;
use executor::config::Config;
use executor::domain::{
    Actor, AnswerVia, By, EndReason, PlanMode, PlanStatus, RunState, TaskGid, WorkerKind,
};
use executor::store::{EventFilter, NewTask, PlanVerdict, Store, WorkerEnd};
use executor::web::AppState;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use web_support::Dashboard;

on_both_databases!(
    the_run_page_shows_the_plan_as_text_and_its_forms_decide_it,
    the_run_page_answers_the_open_question_once,
    the_task_page_sets_the_tasks_own_plan_setting,
    the_api_reads_and_decides_plans_and_questions_as_the_cli_does,
);

const TOKEN: &str = "asks-token-0123456789abcdef0123456789ab";

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).expect("gid")
}

/// A queued run of a new approved task.
async fn queued_run(store: &Store, name: &str, text: &str) -> i64 {
    let t = NewTask { description: Some(text.into()), ..Default::default() };
    store.upsert_task(&gid(name), &t, Actor::Cli).await.expect("add");
    store.approve_task(&gid(name), true, Actor::Cli).await.expect("approve");
    store.create_run_for_task(&gid(name), Actor::Runner).await.expect("run").expect("created").id
}

/// A worker of `kind` for `run` that has ended: its session id.
async fn ended_worker(store: &Store, run: i64, kind: WorkerKind) -> i64 {
    let s = store.begin_worker_session(run, kind, "claude", "h", &Default::default()).await.unwrap().unwrap();
    store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
    s.id
}

/// The next plan revision a `plan` worker of `run` wrote.
async fn write_plan(store: &Store, run: i64, body: &str) {
    let session = ended_worker(store, run, WorkerKind::Plan).await;
    store.record_plan(run, session, body).await.expect("plan");
}

/// The newest event of run `run`.
async fn last_event(store: &Store, run: i64) -> executor::store::Event {
    let events = store.events(&EventFilter { run_id: Some(run), ..Default::default() }).await.unwrap();
    events.last().expect("an event").clone()
}

impl Dashboard {
    /// Posts a form of `page` (its csrf, `back`, then `extra`): the answer's target.
    async fn submit(&self, page: &str, action: &str, back: &str, extra: &[(&str, &str)]) -> String {
        let (_, html) = self.get(page).await;
        assert!(html.contains(&format!(r#"action="{action}""#)), "no form for {action} on\n{html}");
        let csrf = web_support::csrf_of(&html).expect("csrf");
        let mut fields = vec![("csrf", csrf.as_str()), ("back", back)];
        fields.extend_from_slice(extra);
        let r = self.post_form(action, web_support::form(&fields)).await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{action}");
        r.headers()["location"].to_str().expect("location").to_string()
    }

    /// Posts `action` as a form without the page's token: the status.
    async fn forged(&self, action: &str, extra: &[(&str, &str)]) -> StatusCode {
        let mut fields = vec![("back", "run")];
        fields.extend_from_slice(extra);
        self.post_form(action, web_support::form(&fields)).await.status()
    }
}

async fn the_run_page_shows_the_plan_as_text_and_its_forms_decide_it(db: TestDb) {
    let store = db.open().await;
    let run = queued_run(&store, "PL-1", "Add the export button\nmore").await;
    write_plan(&store, run, "# Plan v1\n<script>alert(1)</script>\n- **step** one").await;
    store
        .decide_plan(
            run,
            &PlanVerdict::RequestChanges("smaller <b>steps</b>".into()),
            By::person(Actor::Cli, "alice"),
        )
        .await
        .unwrap();
    write_plan(&store, run, "# Plan v2\n1. a small step\n2. another").await;
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;
    let page = format!("/runs/{run}");

    let (status, html) = dash.get(&page).await;
    assert_eq!(status, StatusCode::OK);
    for expected in [
        "revision 2: awaiting approval",
        "# Plan v2\n1. a small step",
        "Earlier revisions",
        "Revision 1: changes requested by alice (cli)",
        "&lt;script&gt;alert(1)&lt;&#x2f;script&gt;",
        "smaller &lt;b&gt;steps&lt;&#x2f;b&gt;",
        &format!(r#"action="/runs/{run}/plan/approve""#),
        &format!(r#"action="/runs/{run}/plan/revise""#),
        r#"<textarea id="plan-comment" name="comment" required"#,
        r##"<a href="#plan">Its plan waits for your approval</a>"##,
    ] {
        assert!(html.contains(expected), "{expected:?} missing from\n{html}");
    }
    assert!(!html.contains("<script>alert") && !html.contains("<b>steps"), "agent and human text is text");
    // "Needs you" lists it, linking to the plan.
    let (_, needs) = dash.get("/").await;
    assert!(
        needs.contains("Plans awaiting your approval") && needs.contains(&format!("/runs/{run}#plan")),
        "{needs}"
    );
    assert!(needs.contains("plan revision 2") && needs.contains("# Plan v2"), "{needs}");

    // Without the page's token nothing changes.
    let revise = format!("/runs/{run}/plan/revise");
    assert_eq!(dash.forged(&revise, &[("comment", "forged")]).await, StatusCode::FORBIDDEN);
    assert_eq!(dash.forged(&format!("/runs/{run}/plan/approve"), &[]).await, StatusCode::FORBIDDEN);
    assert_eq!(store.latest_plan(run).await.unwrap().unwrap().status, PlanStatus::AwaitingApproval);
    // Sending it back needs a comment.
    let to = dash.submit(&page, &revise, "run", &[("comment", "  ")]).await;
    assert!(to.starts_with(&format!("/runs/{run}?error=")) && to.contains("what%20should%20change"), "{to}");
    assert_eq!(store.latest_plan(run).await.unwrap().unwrap().status, PlanStatus::AwaitingApproval);

    let to = dash.submit(&page, &revise, "run", &[("comment", "name the files")]).await;
    assert!(to.starts_with(&format!("/runs/{run}?flash=plan%20revision%202")), "{to}");
    let sent_back = store.latest_plan(run).await.unwrap().unwrap();
    assert_eq!(sent_back.status, PlanStatus::ChangesRequested);
    assert_eq!(sent_back.feedback.as_deref(), Some("name the files"));
    assert_eq!(sent_back.decided_actor.as_deref(), Some("web"));
    let event = last_event(&store, run).await;
    assert_eq!(
        (event.actor.as_str(), event.reason.as_deref()),
        ("web", Some("plan revision 2 sent back for changes"))
    );
    // Nothing waits now: the page offers no decision.
    let (_, html) = dash.get(&page).await;
    assert!(!html.contains("/plan/approve\"") && html.contains("revision 2: changes requested"), "{html}");

    write_plan(&store, run, "# Plan v3").await;
    let approve = format!("/runs/{run}/plan/approve");
    let to = dash.submit(&page, &approve, "run", &[]).await;
    assert!(
        to.starts_with(&format!("/runs/{run}?flash=plan%20revision%203%20of%20run%20{run}%20approved")),
        "{to}"
    );
    assert_eq!(store.latest_plan(run).await.unwrap().unwrap().status, PlanStatus::Approved);
    assert_eq!(last_event(&store, run).await.actor, "web");
    // Someone decided first: the refusal is the page's error, and nothing changes.
    let (_, html) = dash.get(&page).await;
    assert!(html.contains("revision 3: approved") && html.contains("approved by web"), "{html}");
    let csrf = web_support::csrf_of(&html).expect("csrf");
    let r = dash.post_form(&approve, format!("csrf={csrf}&back=run")).await;
    let to = r.headers()["location"].to_str().unwrap().to_string();
    assert!(to.starts_with(&format!("/runs/{run}?error=")) && to.contains("already"), "{to}");
    // The refusal is shown on the page it comes back to.
    let (_, html) = dash.get(&to).await;
    assert!(html.contains("was not approved") && html.contains("approved already"), "{html}");
    let (_, needs) = dash.get("/").await;
    assert!(!needs.contains("Plans awaiting your approval"), "{needs}");
}

async fn the_run_page_answers_the_open_question_once(db: TestDb) {
    let store = db.open().await;
    let run = queued_run(&store, "QU-1", "Localize the dates").await;
    store
        .set_run_state_if(run, RunState::Queued, RunState::InProgress, None, Actor::Runner, "t")
        .await
        .unwrap();
    let earlier = ended_worker(&store, run, WorkerKind::Queued).await;
    store.ask_question(run, earlier, WorkerKind::Queued, "Earlier question?").await.unwrap();
    store
        .answer_question(run, "earlier answer", AnswerVia::Cli, By::person(Actor::Cli, "bob"))
        .await
        .unwrap();
    let asker = ended_worker(&store, run, WorkerKind::InProgress).await;
    store
        .ask_question(run, asker, WorkerKind::InProgress, "Which <b>locale</b> is the default?")
        .await
        .unwrap();
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;
    let page = format!("/runs/{run}");

    let (_, html) = dash.get(&page).await;
    for expected in [
        "Questions",
        "Which &lt;b&gt;locale&lt;&#x2f;b&gt; is the default?",
        "earlier answer",
        "answered by bob (cli)",
        "the run waits for your answer",
        r##"<a href="#questions">Its worker asked a question</a>"##,
        &format!(r#"action="/runs/{run}/answer""#),
    ] {
        assert!(html.contains(expected), "{expected:?} missing from\n{html}");
    }
    assert_eq!(html.matches(r#"name="text""#).count(), 1, "only the open question takes an answer");
    let (_, needs) = dash.get("/").await;
    assert!(
        needs.contains("Questions waiting for your answer") && needs.contains("the in_progress worker"),
        "{needs}"
    );
    assert!(
        needs.contains("Which &lt;b&gt;locale&lt;&#x2f;b&gt;")
            && needs.contains(&format!("/runs/{run}#questions"))
    );

    let action = format!("/runs/{run}/answer");
    assert_eq!(dash.forged(&action, &[("text", "forged")]).await, StatusCode::FORBIDDEN);
    let to = dash.submit(&page, &action, "run", &[("text", "")]).await;
    assert!(to.starts_with(&format!("/runs/{run}?error=")), "{to}");
    assert!(store.questions(run).await.unwrap()[1].answered_at.is_none(), "nothing changed");

    let to = dash.submit(&page, &action, "run", &[("text", "en-GB, <i>always</i>")]).await;
    assert!(to.starts_with(&format!("/runs/{run}?flash=question%20")), "{to}");
    let q = store.questions(run).await.unwrap().pop().unwrap();
    assert_eq!(q.answer.as_deref(), Some("en-GB, <i>always</i>"));
    assert_eq!((q.answered_via, q.answered_by.as_deref()), (Some(AnswerVia::Web), None));
    assert_eq!(last_event(&store, run).await.actor, "web");
    let (_, html) = dash.get(&page).await;
    assert!(
        html.contains("en-GB, &lt;i&gt;always&lt;&#x2f;i&gt;") && !html.contains(r#"name="text""#),
        "{html}"
    );
    // Answered first: a second answer is refused, and says so.
    let csrf = web_support::csrf_of(&html).expect("csrf");
    let r = dash.post_form(&action, format!("csrf={csrf}&back=run&text=again")).await;
    let to = r.headers()["location"].to_str().unwrap().to_string();
    assert!(to.contains("error=") && to.contains("no%20open%20question"), "{to}");
    let (_, needs) = dash.get("/").await;
    assert!(!needs.contains("Questions waiting for your answer"), "{needs}");
}

async fn the_task_page_sets_the_tasks_own_plan_setting(db: TestDb) {
    let store = db.open().await;
    queued_run(&store, "PS-1", "A task").await;
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;
    let (_, html) = dash.get("/tasks/PS-1").await;
    assert!(
        html.contains("Plan before code") && html.contains(r#"<option value="default" selected>"#),
        "{html}"
    );
    assert_eq!(dash.forged("/tasks/PS-1/plan", &[("mode", "required")]).await, StatusCode::FORBIDDEN);
    assert_eq!(store.task_plan_mode(&gid("PS-1")).await.unwrap(), None);

    let to = dash.submit("/tasks/PS-1", "/tasks/PS-1/plan", "task", &[("mode", "required")]).await;
    assert_eq!(to.split('&').next().unwrap(), "/tasks/PS-1?flash=PS-1%3A%20plan%20required");
    assert_eq!(store.task_plan_mode(&gid("PS-1")).await.unwrap(), Some(PlanMode::Required));
    let events =
        store.events(&EventFilter { task_gid: Some(gid("PS-1")), ..Default::default() }).await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(
        (last.actor.as_str(), last.reason.as_deref()),
        ("web", Some("the task's plan setting is required"))
    );
    let (_, html) = dash.get("/tasks/PS-1").await;
    assert!(html.contains(r#"<option value="required" selected>"#), "{html}");

    let to = dash.submit("/tasks/PS-1", "/tasks/PS-1/plan", "task", &[("mode", "sometimes")]).await;
    assert!(to.starts_with("/tasks/PS-1?error="), "{to}");
    assert_eq!(store.task_plan_mode(&gid("PS-1")).await.unwrap(), Some(PlanMode::Required));
    dash.submit("/tasks/PS-1", "/tasks/PS-1/plan", "task", &[("mode", "default")]).await;
    assert_eq!(store.task_plan_mode(&gid("PS-1")).await.unwrap(), None);
}

async fn the_api_reads_and_decides_plans_and_questions_as_the_cli_does(db: TestDb) {
    let store = db.open().await;
    let run = queued_run(&store, "API-1", "Through the API").await;
    let state = AppState::new(store.clone(), Arc::new(Config::default()), TOKEN.to_string(), None);
    let (base, _stop) = web_support::serve(state).await;
    let client = reqwest::Client::new();
    let call = |method: Method, path: &str, body: Option<Value>| {
        let mut request = client
            .request(method, format!("{base}/api/v1{path}"))
            .header("authorization", format!("Bearer {TOKEN}"));
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let r = request.send().await.expect("request");
            let status = r.status();
            (status, r.json::<Value>().await.expect("JSON"))
        }
    };
    let plans = format!("/runs/{run}/plans");
    let approve = format!("/runs/{run}/plan/approve");
    let revise = format!("/runs/{run}/plan/revise");

    // Nothing waits yet: a decision is refused with the store's reason.
    assert_eq!(call(Method::GET, &plans, None).await, (StatusCode::OK, json!([])));
    let (status, error) = call(Method::POST, &approve, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert!(error["error"].as_str().unwrap().contains("no plan yet"), "{error}");
    let (status, _) = call(Method::GET, "/runs/999999/plans", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    write_plan(&store, run, "# Plan\n- one").await;
    let (_, needs) = call(Method::GET, "/needs-you", None).await;
    assert_eq!(needs["needs"]["plans_awaiting"]["items"][0]["run"]["id"], run, "{needs}");
    assert_eq!(needs["needs"]["plans_awaiting"]["items"][0]["revision"], 1, "{needs}");
    assert_eq!(needs["total"], 1, "{needs}");
    let (status, error) = call(Method::POST, &revise, Some(json!({}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let (status, error) = call(Method::POST, &revise, Some(json!({"comment": "x", "extra": 1}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let (status, plan) = call(Method::POST, &revise, Some(json!({"comment": "smaller steps"}))).await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(
        (&plan["status"], &plan["feedback"], &plan["decided_actor"]),
        (&json!("changes_requested"), &json!("smaller steps"), &json!("web"))
    );
    let (status, _) = call(Method::POST, &approve, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "someone decided first");
    write_plan(&store, run, "# Plan v2").await;
    let (status, plan) = call(Method::POST, &approve, None).await;
    assert_eq!(
        (status, &plan["status"], &plan["revision"]),
        (StatusCode::OK, &json!("approved"), &json!(2)),
        "{plan}"
    );
    let (_, all) = call(Method::GET, &plans, None).await;
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
    assert_eq!(all[0]["status"], "changes_requested");
    assert_eq!(last_event(&store, run).await.actor, "web");

    // Questions.
    let answer = format!("/runs/{run}/answer");
    let (status, _) = call(Method::POST, &answer, Some(json!({"text": "too early"}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "no question is open");
    let session = ended_worker(&store, run, WorkerKind::Queued).await;
    store.ask_question(run, session, WorkerKind::Queued, "Which locale?").await.unwrap();
    let (_, needs) = call(Method::GET, "/needs-you", None).await;
    assert_eq!(needs["needs"]["open_questions"]["items"][0]["question"], "Which locale?", "{needs}");
    assert_eq!(needs["total"], 1, "{needs}");
    let (status, error) = call(Method::POST, &answer, Some(json!({"text": " "}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let (status, q) = call(Method::POST, &answer, Some(json!({"text": "en-GB"}))).await;
    assert_eq!(status, StatusCode::OK, "{q}");
    assert_eq!((&q["answer"], &q["answered_via"]), (&json!("en-GB"), &json!("web")));
    let (status, _) = call(Method::POST, &answer, Some(json!({"text": "again"}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "answered first");
    let (_, questions) = call(Method::GET, &format!("/runs/{run}/questions"), None).await;
    assert_eq!(questions[0]["answer"], "en-GB", "{questions}");
    // `runs show --json`'s view has both.
    let (_, view) = call(Method::GET, &format!("/runs/{run}"), None).await;
    assert_eq!(
        (view["plans"][1]["revision"].clone(), view["questions"][0]["answer"].clone()),
        (json!(2), json!("en-GB"))
    );

    // A task's own plan setting.
    let set = "/tasks/API-1/plan";
    let (status, body) = call(Method::PUT, set, Some(json!({"mode": "required"}))).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"task_gid": "API-1", "plan": "required"})));
    assert_eq!(store.task_plan_mode(&gid("API-1")).await.unwrap(), Some(PlanMode::Required));
    let (status, body) = call(Method::PUT, set, Some(json!({"mode": null}))).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"task_gid": "API-1", "plan": null})));
    assert_eq!(store.task_plan_mode(&gid("API-1")).await.unwrap(), None);
    for bad in [json!({}), json!({"mode": "sometimes"})] {
        let (status, error) = call(Method::PUT, set, Some(bad)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    }
    let (status, _) = call(Method::PUT, "/tasks/NOPE-1/plan", Some(json!({"mode": "off"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Without the token: refused, nothing changed.
    write_plan(&store, run, "# Plan v3").await;
    let r = client.post(format!("{base}/api/v1{approve}")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = client.put(format!("{base}/api/v1{set}")).json(&json!({"mode": "off"})).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(store.latest_plan(run).await.unwrap().unwrap().status, PlanStatus::AwaitingApproval);
    assert_eq!(store.task_plan_mode(&gid("API-1")).await.unwrap(), None);
}

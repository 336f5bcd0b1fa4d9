//! Issue 34 items 2 and 3 through the real binary, on the local forge with an Asana task: a plan written
//! (reading only) before any code, sent back with a comment, rewritten, approved; then the implementing
//! agent asks a question instead of guessing, the run waits, the answer comes from the command line, and
//! the run completes with the plan and the answer both in its worker's prompt. Asana hears each plan and
//! the question once, in order, before the pull request and its completion.

use executor::domain::{AnswerVia, PlanStatus, RunState, TaskGid, WorkerKind};
use executor::store::{RunFilter, Store};

mod common;
#[path = "fake_asana/mod.rs"]
mod fake_asana;
mod runner_support;
mod writeback_support;
use fake_asana::{FakeAsana, task};
use runner_support::Env;
use writeback_support::{Credential, run, run_until_complete};

const TOKEN: &str = "2/1234567890/fake-asana-token";
const ASANA: Credential = Credential { var: "WB_ASANA_TOKEN", value: TOKEN };
const GID: &str = "1207";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_is_approved_before_code_and_a_question_is_answered_before_the_run_goes_on() {
    drive(Env::new(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn the_same_on_postgresql() {
    let Some(db) = common::postgres("runner_asks_on_postgresql").await else { return };
    let env = Env::new(&[]);
    env.use_database(&db.url);
    drive(env).await;
}

async fn drive(env: Env) {
    let fake = FakeAsana::start(TOKEN).await;
    let mut t = task(GID, "Add the feature file", "2026-11-01T10:00:00.000Z");
    t["notes"] = "The feature greets people. FAKE_ASK".into();
    fake.add_project_task("1", t);
    env.append_config(&format!(
        "\n[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\napi_url = \"{}\"\n\
         token_env = \"WB_ASANA_TOKEN\"\nrepo = \"app\"\n",
        fake.url
    ));
    env.edit_config("trusted_authors = [\"alex\"]", "trusted_authors = [\"alex\"]\nplan = \"required\"");
    run(&env, ASANA, &["intake"]).await;
    run(&env, ASANA, &["approve", "--skip-triage", GID]).await;
    let store = env.store().await;

    // The runner runs until nothing moves: a plan worker wrote revision 1, which waits for a person.
    run(&env, ASANA, &["runner"]).await;
    let run_id = the_run(&store).await;
    let plans = store.plans(run_id).await.unwrap();
    assert_eq!(plans.len(), 1, "{plans:#?}");
    assert_eq!(plans[0].status, PlanStatus::AwaitingApproval);
    assert!(plans[0].body.contains("### Approach\n\nWrite feature.txt"), "{}", plans[0].body);
    assert_eq!(store.run(run_id).await.unwrap().state, RunState::Queued, "no code before approval");
    let kinds = session_kinds(&store, run_id).await;
    assert_eq!(kinds, [WorkerKind::Plan], "a plan worker only");
    let decision = store.run_memory(run_id).await.unwrap().last_decision.unwrap_or_default();
    assert!(decision.contains("Plan revision 1 waits for a person"), "{decision}");
    let shown =
        String::from_utf8_lossy(&run(&env, ASANA, &["plan", "show", &run_id.to_string()]).await.stdout)
            .to_string();
    assert!(shown.contains("## Revision 1: awaiting_approval"), "{shown}");

    // Sent back with a comment: revision 2 is written with it in mind, and waits in turn.
    let id = run_id.to_string();
    run(&env, ASANA, &["plan", "revise", &id, "--comment", "Mention it in the README too."]).await;
    run(&env, ASANA, &["runner"]).await;
    let plans = store.plans(run_id).await.unwrap();
    assert_eq!(
        plans.iter().map(|p| p.status).collect::<Vec<_>>(),
        [PlanStatus::ChangesRequested, PlanStatus::AwaitingApproval]
    );
    assert_eq!(plans[0].feedback.as_deref(), Some("Mention it in the README too."));
    assert!(plans[1].body.contains("Revised as asked"), "{}", plans[1].body);
    // Approving twice: the second is refused, naming why.
    run(&env, ASANA, &["plan", "approve", &id]).await;
    let again = env.command(&["plan", "approve", &id]).env(ASANA.var, ASANA.value).output().unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("approved already"), "{again:?}");

    // The implementing agent asks instead of guessing; the run waits in a state that says so.
    run(&env, ASANA, &["runner"]).await;
    let questions = store.questions(run_id).await.unwrap();
    assert_eq!(questions.len(), 1, "{questions:#?}");
    assert_eq!(questions[0].worker_kind, WorkerKind::Queued);
    assert_eq!(questions[0].question, "Which greeting should the feature print?");
    let decision = store.run_memory(run_id).await.unwrap().last_decision.unwrap_or_default();
    assert!(
        decision.contains(&format!("Waiting for an answer to question {}", questions[0].id)),
        "{decision}"
    );
    let notices = store.notices(Some(run_id)).await.unwrap();
    assert!(
        notices.iter().any(|n| n.kind == "question" && n.message.contains("Which greeting")),
        "{notices:#?}"
    );
    // A runner started again (cron) starts no worker while it waits.
    run(&env, ASANA, &["runner"]).await;
    assert_eq!(session_kinds(&store, run_id).await, [WorkerKind::Plan, WorkerKind::Plan, WorkerKind::Queued]);

    run(&env, ASANA, &["answer", &id, "Say hello: GREETING=hello"]).await;
    let refused = env.command(&["answer", &id, "again"]).env(ASANA.var, ASANA.value).output().unwrap();
    assert!(String::from_utf8_lossy(&refused.stderr).contains("no open question"), "{refused:?}");
    run_until_complete(&env, ASANA, &store, GID).await;

    // The worker that went on had the approved plan and the answer: the branch says so.
    let run = store.run(run_id).await.unwrap();
    let branch = run.branch_name.unwrap();
    let feature = git_show(&env, &format!("{branch}:feature.txt"));
    assert_eq!(feature, "the feature\nplan: followed\nanswer: hello\n");
    let q = &store.questions(run_id).await.unwrap()[0];
    assert_eq!(
        (q.answer.as_deref(), q.answered_via.map(|v| v.to_string())),
        (Some("Say hello: GREETING=hello"), Some("cli".into()))
    );

    // Asana heard each plan and the question once, in order, then the pull request and the completion.
    let comments = fake.comments(GID);
    let heads: Vec<&str> = comments.iter().map(|c| c.lines().next().unwrap_or("")).collect();
    assert_eq!(comments.len(), 5, "{comments:#?}");
    assert!(
        heads[0].starts_with("executor's agent wrote a plan") && comments[0].contains("Write feature.txt")
    );
    assert!(
        heads[1].starts_with("executor's agent wrote a plan") && comments[1].contains("Revised as asked")
    );
    assert!(comments[2].contains("asks:") && comments[2].contains("Which greeting"), "{}", comments[2]);
    assert!(heads[3].starts_with("executor opened a pull request"), "{}", heads[3]);
    assert!(heads[4].starts_with("The pull request is ready for your review"), "{}", heads[4]);
}

/// Asked in the tracker, answered there: a comment by one of the source's `answerers` answers the
/// question; a comment by someone else, or executor's own, does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asana_comment_by_an_answerer_answers_the_question() {
    let env = Env::new(&[]);
    let fake = FakeAsana::start(TOKEN).await;
    let mut t = task(GID, "Add the feature file", "2026-11-01T10:00:00.000Z");
    t["notes"] = "FAKE_ASK".into();
    fake.add_project_task("1", t);
    env.append_config(&format!(
        "\n[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\napi_url = \"{}\"\n\
         token_env = \"WB_ASANA_TOKEN\"\nrepo = \"app\"\nanswerers = [\"1200000000000077\"]\n",
        fake.url
    ));
    run(&env, ASANA, &["intake"]).await;
    run(&env, ASANA, &["approve", "--skip-triage", GID]).await;
    let store = env.store().await;
    run(&env, ASANA, &["runner"]).await;
    let run_id = the_run(&store).await;
    assert_eq!(store.questions(run_id).await.unwrap().len(), 1);
    assert!(fake.comments(GID).iter().any(|c| c.contains("Which greeting")), "asked in Asana");

    fake.add_comment_by(GID, "1200000000000099", "Mallory", "GREETING=evil");
    run(&env, ASANA, &["runner"]).await;
    assert!(store.questions(run_id).await.unwrap()[0].answered_at.is_none(), "not an answerer");

    fake.add_comment_by(GID, "1200000000000077", "Alex Doe", "GREETING=hey, thanks for asking");
    run_until_complete(&env, ASANA, &store, GID).await;
    let q = &store.questions(run_id).await.unwrap()[0];
    assert_eq!(
        (q.answered_via, q.answered_by.as_deref(), q.answer.as_deref()),
        (Some(AnswerVia::Tracker), Some("Alex Doe"), Some("GREETING=hey, thanks for asking"))
    );
    let branch = store.run(run_id).await.unwrap().branch_name.unwrap();
    assert_eq!(git_show(&env, &format!("{branch}:feature.txt")), "the feature\nanswer: hey\n");
}

async fn the_run(store: &Store) -> i64 {
    let filter = RunFilter { task_gid: Some(TaskGid::parse(GID).unwrap()), ..Default::default() };
    store.list_runs(&filter).await.unwrap().first().expect("a run").id
}

async fn session_kinds(store: &Store, run_id: i64) -> Vec<WorkerKind> {
    store.worker_sessions(run_id).await.unwrap().iter().map(|s| s.kind).collect()
}

fn git_show(env: &Env, spec: &str) -> String {
    let out =
        std::process::Command::new("git").args(["show", spec]).current_dir(env.repo()).output().unwrap();
    String::from_utf8_lossy(&out.stdout).to_string()
}

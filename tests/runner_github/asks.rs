//! Issue 34 items 2 and 3 on GitHub: a plan approved before anything reaches GitHub; a `fix_ci` worker
//! asks instead of guessing, the question goes on the pull request with the @mention, a stranger's
//! comment answers nothing, the first comment by a trusted author answers it, and the next `fix_ci`
//! worker has the answer in its prompt.

use std::time::{Duration, Instant};

use executor::domain::{AnswerVia, RunState, WorkerKind};

use crate::fake_github::PostedKind;
use crate::github_support::{CiPlayer, GhEnv, REPO, run_of, text};

const GID: &str = "1207";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_on_a_pull_request_is_answered_by_a_trusted_comment_there() {
    let env = GhEnv::new(&[("FAKE_CI_ASK", "1")], "").await;
    env.queue_approved(GID).await;
    let store = env.store().await;
    let mut ci = CiPlayer::failing_first();
    let deadline = Instant::now() + Duration::from_secs(120);
    let (run, number) = loop {
        let out = env.runner().await;
        assert!(out.status.success(), "{}", text(&out));
        let run = run_of(&store, GID).await;
        if let (Some(number), Some(branch)) = (run.pr_number, run.branch_name.clone()) {
            ci.play(&env, number, &branch);
            if !store.questions(run.id).await.unwrap().is_empty() {
                break (run, number);
            }
        }
        assert!(Instant::now() < deadline, "no question: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Told once on the pull request, naming the question.
    env.runner().await;
    let asked: Vec<_> = env
        .fake
        .posted_comments()
        .into_iter()
        .filter(|p| {
            p.kind == PostedKind::IssueComment && p.body.contains("Does this check fail on main too?")
        })
        .collect();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert!(asked[0].body.contains("@alex") && asked[0].number == number, "{}", asked[0].body);

    // A stranger answers: nothing moves.
    env.fake.add_issue_comment(REPO, number, "mallory", "NONE", "No. GREETING=evil");
    env.runner().await;
    let q = &store.questions(run.id).await.unwrap()[0];
    assert!(q.answered_at.is_none(), "a stranger answered: {q:?}");
    let sessions = store.worker_sessions(run.id).await.unwrap().len();

    // alex answers on the pull request: the run goes on, and completes.
    env.fake.add_issue_comment(REPO, number, "alex", "MEMBER", "Only here; fix it. GREETING=hi");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = env.runner().await;
        assert!(out.status.success(), "{}", text(&out));
        let run = run_of(&store, GID).await;
        if let Some(branch) = run.branch_name.clone() {
            ci.play(&env, number, &branch);
        }
        if run.state == RunState::Complete {
            break;
        }
        assert!(Instant::now() < deadline, "stuck: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let q = &store.questions(run.id).await.unwrap()[0];
    assert_eq!((q.answered_via, q.answered_by.as_deref()), (Some(AnswerVia::Forge), Some("alex")));
    assert_eq!(q.answer.as_deref(), Some("Only here; fix it. GREETING=hi"));
    let all = store.worker_sessions(run.id).await.unwrap();
    let next_fix =
        all[sessions..].iter().find(|s| s.kind == WorkerKind::FixCi).expect("a fix_ci after the answer");
    let log = std::fs::read_to_string(next_fix.log_path.as_deref().unwrap()).unwrap();
    assert!(log.contains("GREETING=hi") && !log.contains("GREETING=evil"), "the answer, and only it:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_is_approved_before_anything_reaches_github() {
    let env = GhEnv::new(&[], "").await;
    env.edit_config("trusted_authors = [\"alex\"]", "trusted_authors = [\"alex\"]\nplan = \"required\"");
    env.queue_approved(GID).await;
    let store = env.store().await;
    let out = env.runner().await;
    assert!(out.status.success(), "{}", text(&out));
    let run = run_of(&store, GID).await;
    let plans = store.plans(run.id).await.unwrap();
    assert_eq!(plans.len(), 1, "{plans:#?}");
    assert_eq!(run.state, RunState::Queued);
    // Nothing was pushed, opened or posted while the plan waits.
    let counts = env.fake.counts();
    assert_eq!(counts.route("pulls_create"), 0, "{counts:?}");
    assert!(env.fake.posted_comments().is_empty());
    assert_eq!(env.remote_head(run.branch_name.as_deref().unwrap()), None, "no branch pushed");

    env.ok(&["plan", "approve", &run.id.to_string()]).await;
    let mut ci = CiPlayer::green();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = env.runner().await;
        assert!(out.status.success(), "{}", text(&out));
        let run = run_of(&store, GID).await;
        if let (Some(number), Some(branch)) = (run.pr_number, run.branch_name.clone()) {
            ci.play(&env, number, &branch);
        }
        if run.state == RunState::Complete {
            let kinds: Vec<WorkerKind> =
                store.worker_sessions(run.id).await.unwrap().iter().map(|s| s.kind).collect();
            assert_eq!(kinds, [WorkerKind::Plan, WorkerKind::Queued, WorkerKind::PrReview]);
            break;
        }
        assert!(Instant::now() < deadline, "stuck: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

//! Replies without reaching back, on GitHub: the shut-off agent (`sandboxed_replies.sh`: no network, no
//! `executor` on its PATH, Landlock where the kernel has it) answers a review-thread comment and a
//! conversation comment of alex's by handing its replies back; the runner posts each once, the first
//! in its thread, both recorded as the agent's, and the run completes; a reply that meets GitHub's rate
//! limit waits and is posted once after it.

use std::path::Path;
use std::time::{Duration, Instant};

use executor::domain::{Run, RunState, WorkerKind};
use executor::worker::sandbox::{self, Support};

use crate::fake_github::{Fault, PostedKind};
use crate::github_support::{CiPlayer, GhEnv, REPO, run_of, text};

const SECRET: &str = "tok-3f9a8b7c6d5e";

/// The comments alex makes once the run's pull request is green: a review thread's id, the comment in
/// it, and a conversation comment.
struct Asked {
    thread: String,
    in_thread: String,
    conversation: String,
}

/// Runs the runner, with the shut-off agent, until task `gid`'s run completes; every runner must exit 0.
/// Alex comments once its pull request is green. Returns the run and what alex asked.
async fn answered_by_a_shut_off_agent(env: &GhEnv, gid: &str) -> (Run, Asked) {
    answered_by(env, gid, "tests/fake_agents/sandboxed_replies.sh", false).await
}

/// [`answered_by_a_shut_off_agent`] with the agent at `agent` (from the crate's root); with `faults`, a
/// runner may exit non-zero (a fault is its error).
async fn answered_by(env: &GhEnv, gid: &str, agent: &str, faults: bool) -> (Run, Asked) {
    let config = env.path().join("executor.toml");
    let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join(agent);
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml = toml.replace(&pipeline.display().to_string(), &agent.display().to_string());
    if let Support::Landlock { .. } = sandbox::support() {
        toml = toml.replace("agent = \"command\"", "agent = \"command\"\nsandbox = \"landlock\"");
    }
    std::fs::write(&config, toml).unwrap();
    env.queue_approved(gid).await;
    let store = env.store().await;
    let mut ci = CiPlayer::green();
    let mut asked: Option<Asked> = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    let run = loop {
        let out = env.runner().await;
        assert!(faults || out.status.success(), "{}", text(&out));
        if !out.status.success() {
            // Past the second of what the fault applied: the next view of the pull request is kept as
            // current, as a runner started later by cron would find it.
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
        let run = run_of(&store, gid).await;
        if run.state == RunState::Complete {
            break run;
        }
        assert_ne!(
            run.state,
            RunState::Abandoned,
            "{:?}\n{:#?}\n{:#?}",
            store.run_memory(run.id).await.unwrap(),
            store.worker_sessions(run.id).await.unwrap(),
            env.fake.posted_comments()
        );
        if let (Some(number), Some(branch)) = (run.pr_number, run.branch_name.clone())
            && ci.play(env, number, &branch)
            && asked.is_none()
        {
            let (thread, in_thread) = env.fake.add_thread_comment(
                REPO,
                number,
                "alex",
                "MEMBER",
                "Why one line?",
                "feature.txt",
                1,
            );
            let conversation = env.fake.add_issue_comment(REPO, number, "alex", "MEMBER", "Write it down.");
            asked = Some(Asked { thread, in_thread, conversation });
        }
        assert!(
            Instant::now() < deadline,
            "stuck in {}: {:?}",
            run.state,
            store.run_memory(run.id).await.unwrap()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    (run, asked.expect("alex commented"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shut_off_agent_answers_alex_in_his_thread_once_on_github() {
    let env = GhEnv::new(&[("FAKE_SECRET", SECRET)], "").await;
    let (run, Asked { thread, in_thread, conversation }) = answered_by_a_shut_off_agent(&env, "88").await;
    let store = env.store().await;
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert_eq!(sessions.iter().filter(|s| s.kind == WorkerKind::FixComments).count(), 1, "{sessions:?}");

    let posted = env.fake.posted_comments();
    let acks: Vec<_> = posted.iter().filter(|p| p.body.starts_with("[ACKNOWLEDGED:")).collect();
    assert_eq!(acks.len(), 2, "one reply per comment: {posted:#?}");
    let in_its_thread: Vec<_> = acks.iter().filter(|p| p.kind == PostedKind::ThreadReply).collect();
    assert_eq!(in_its_thread.len(), 1, "{acks:#?}");
    assert_eq!(in_its_thread[0].reply_to.as_deref(), Some(thread.as_str()));
    assert!(acks.iter().all(|p| !p.body.contains(SECRET)), "{acks:#?}");
    assert!(!posted.iter().any(|p| p.body.contains("nobody listed")), "{posted:#?}");
    // Both recorded as the agent's, each answering its comment.
    let recorded = store.agent_comments(&[run.id]).await.unwrap();
    let mut answered: Vec<Option<String>> =
        acks.iter().map(|p| recorded.get(&p.id).cloned().flatten()).collect();
    answered.sort();
    let mut expected = vec![Some(in_thread), Some(conversation)];
    expected.sort();
    assert_eq!(answered, expected, "{recorded:?}");
}

/// A reply that meets GitHub's rate limit waits like any other step: every runner exits 0, the wait
/// counts as no attempt against the reply's retries, and the reply is posted once, after the limit (soak
/// finding: such replies made cron's runner exit 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_meets_the_rate_limit_waits_and_is_posted_once_after() {
    let env = GhEnv::new(&[("FAKE_SECRET", SECRET)], "").await;
    env.fake.set_retry_after(1);
    // Only replies go into a review thread: no notice meets this fault first.
    env.fake.fail_route("graphql:ReplyToThread", Fault::SecondaryLimit, 1);
    let (run, asked) = answered_by_a_shut_off_agent(&env, "89").await;
    assert_eq!(env.fake.counts().route("graphql:ReplyToThread"), 2, "refused once, then posted");
    let in_thread: Vec<_> =
        env.fake.posted_comments().into_iter().filter(|p| p.kind == PostedKind::ThreadReply).collect();
    assert_eq!(in_thread.len(), 1, "{in_thread:#?}");
    assert_eq!(in_thread[0].reply_to.as_deref(), Some(asked.thread.as_str()));
    let replies = env.store().await.agent_replies(run.id).await.unwrap();
    let reply = replies.iter().find(|r| r.comment_id == asked.in_thread).expect("offered");
    assert_eq!(reply.posted_comment_id.as_deref(), Some(in_thread[0].id.as_str()), "{reply:?}");
    assert_eq!(reply.attempts, 1, "the wait was counted as an attempt: {reply:?}");
}

/// A reply GitHub applies and then answers 502 (its gateway gave up) is found by the retry, recorded as
/// the agent's and never posted again; and alex's comment it answers is answered: no second
/// `fix_comments` worker (soak finding: the retry recorded the reply, but the pull request's view kept
/// from before showed it as nobody's, so alex's comment still counted as unanswered).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_applied_then_answered_502_is_posted_once_and_answers_alex() {
    let env = GhEnv::new(&[("FAKE_SECRET", SECRET)], "").await;
    // executor posts as a bot account: a reply of its that is not known as the agent's answers nothing.
    env.fake.set_login("executor-bot");
    env.fake.fail_route("graphql:ReplyToThread", Fault::AppliedThen(502), 1);
    // Alex asks a question; the agent answers it and changes nothing (no push: CI stays green).
    let (run, asked) = answered_by(&env, "90", "tests/runner_github/answering_agent.sh", true).await;
    let store = env.store().await;
    let sessions = store.worker_sessions(run.id).await.unwrap();
    let fixes = sessions.iter().filter(|s| s.kind == WorkerKind::FixComments).count();
    assert_eq!(fixes, 1, "alex's comment was answered again: {sessions:#?}");
    let in_thread: Vec<_> =
        env.fake.posted_comments().into_iter().filter(|p| p.kind == PostedKind::ThreadReply).collect();
    assert_eq!(in_thread.len(), 1, "{in_thread:#?}");
    let recorded = store.agent_comments(&[run.id]).await.unwrap();
    assert_eq!(recorded.get(&in_thread[0].id), Some(&Some(asked.in_thread.clone())), "{recorded:?}");
}

//! Which agent session a new worker continues (issue 7, items 14 and 23), and what its prompt then says.

use chrono::Utc;

use super::{WorkerInputs, prompt_context, session_to_resume, thread_baseline};
use crate::domain::{Actor, EndReason, TaskGid, WorkerKind};
use crate::store::test_session;
use crate::store::{NewTask, Store, WorkerSession};
use crate::worker::{PromptKind, Prompts};

fn session(
    id: i64,
    kind: WorkerKind,
    end: Option<EndReason>,
    sid: Option<&str>,
    resumed: Option<&str>,
) -> WorkerSession {
    WorkerSession {
        session_id: sid.map(String::from),
        ended_at: end.map(|_| Utc::now()),
        end_reason: end,
        resumed_session: resumed.map(String::from),
        ..test_session(id, kind)
    }
}

use EndReason::{Finished, Interrupted, ResumeFailed};
use WorkerKind::{FixComments, InProgress, PrReview, Queued};

#[test]
fn an_in_progress_worker_continues_the_tasks_own_work_never_a_review_or_a_fix() {
    let sessions = [
        session(1, Queued, Some(Interrupted), Some("work-1"), None),
        session(2, FixComments, Some(Finished), Some("fix-2"), None),
        session(3, PrReview, Some(Finished), Some("review-3"), None),
    ];
    assert_eq!(session_to_resume(&sessions, "claude").as_deref(), Some("work-1"));
    let later =
        [sessions[0].clone(), session(4, InProgress, Some(Interrupted), Some("work-4"), Some("work-1"))];
    assert_eq!(session_to_resume(&later, "claude").as_deref(), Some("work-4"), "the newest work session");
}

#[test]
fn after_a_failed_resume_the_next_worker_starts_afresh_and_never_passes_that_id_again() {
    let failed = [
        session(1, Queued, Some(Interrupted), Some("work-1"), None),
        session(2, InProgress, Some(ResumeFailed), None, Some("work-1")),
    ];
    assert_eq!(session_to_resume(&failed, "claude"), None);
    // The fresh session crashed before the agent named its session: still nothing to resume.
    let mut again = failed.to_vec();
    again.push(session(3, InProgress, Some(EndReason::Crashed), None, None));
    assert_eq!(session_to_resume(&again, "claude"), None);
    // Once a fresh session has an id, that one is continued; the one that failed never is.
    again.push(session(4, InProgress, Some(Interrupted), Some("work-4"), None));
    assert_eq!(session_to_resume(&again, "claude").as_deref(), Some("work-4"));
    let mut stale = failed.to_vec();
    stale.push(session(5, InProgress, Some(Interrupted), Some("work-1"), None));
    assert_eq!(
        session_to_resume(&stale, "claude"),
        None,
        "an id that could not be resumed is not passed again"
    );
}

/// Issue 34 item 4: a run that turned to another agent never hands it the first agent's session.
#[test]
fn a_session_is_continued_only_by_its_own_agent() {
    let mut codex = session(2, InProgress, Some(EndReason::Failed), Some("thread-2"), None);
    codex.agent = "codex".into();
    let sessions = [session(1, Queued, Some(Interrupted), Some("work-1"), None), codex];
    assert_eq!(session_to_resume(&sessions, "claude").as_deref(), Some("work-1"));
    assert_eq!(session_to_resume(&sessions, "codex").as_deref(), Some("thread-2"));
    assert_eq!(session_to_resume(&sessions, "command"), None);
}

#[tokio::test]
async fn a_fresh_in_progress_prompt_says_the_earlier_session_could_not_be_resumed() {
    // A task as the store gives it (built there, so new columns never break this test).
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("sqlite://{}", dir.path().join("e.db").display())).await.unwrap();
    store.migrate().await.unwrap();
    let new = NewTask { description: Some("Add the feature".into()), ..Default::default() };
    let (task, _) = store.upsert_task(&TaskGid::parse("t1").unwrap(), &new, Actor::Cli).await.unwrap();
    let inputs = |resume: Option<&str>| WorkerInputs {
        task: &task,
        run: None,
        kind: InProgress,
        repo: None,
        branch: "executor/t1".into(),
        cwd: "/tmp".into(),
        forge: None,
        pr: None,
        resume_session: resume.map(String::from),
        review_findings: Vec::new(),
        ci_logs: Default::default(),
        asked: Default::default(),
    };
    let prompts = Prompts::embedded();
    let fresh = prompts.render(PromptKind::Worker(InProgress), &prompt_context(&inputs(None))).unwrap();
    assert!(fresh.contains("could not be resumed"), "{fresh}");
    let ctx = prompt_context(&inputs(Some("work-4")));
    assert_eq!(ctx.run.resumed_session.as_deref(), Some("work-4"));
    let resumed = prompts.render(PromptKind::Worker(InProgress), &ctx).unwrap();
    assert!(!resumed.contains("could not be resumed"), "{resumed}");
}

#[test]
fn a_resumed_thread_starts_from_what_its_earlier_sessions_of_that_thread_used() {
    let with_tokens = |id, sid: &str, input, output| WorkerSession {
        input_tokens: input,
        output_tokens: output,
        ..session(id, WorkerKind::InProgress, Some(EndReason::Finished), Some(sid), None)
    };
    let sessions =
        [with_tokens(1, "t1", 1000, 100), with_tokens(2, "other", 50, 5), with_tokens(3, "t1", 2000, 200)];
    let base = thread_baseline(&sessions, Some("t1"), 4);
    assert_eq!((base.input, base.output), (3000, 300), "sessions 1 and 3 of thread t1");
    let base = thread_baseline(&sessions, Some("t1"), 3);
    assert_eq!((base.input, base.output), (1000, 100), "only sessions before the one being started");
    let fresh = thread_baseline(&sessions, None, 4);
    assert_eq!((fresh.input, fresh.output), (0, 0), "a fresh thread starts from zero");
}

#[tokio::test]
async fn the_review_checks_the_repositorys_criteria_then_the_tasks_own_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("sqlite://{}", dir.path().join("e.db").display())).await.unwrap();
    store.migrate().await.unwrap();
    let gid = TaskGid::parse("t2").unwrap();
    let new = NewTask { description: Some("Open the menu on click".into()), ..Default::default() };
    store.upsert_task(&gid, &new, Actor::Cli).await.unwrap();
    // The triage gives the task its own criteria, one of them the repository's already.
    let claimed = store.claim_for_analysis("test", chrono::Duration::minutes(5), 3).await.unwrap();
    assert_eq!(claimed.map(|t| t.task_gid), Some(gid.clone()));
    let triage = crate::store::Triage {
        status: crate::domain::QueueStatus::AwaitingGo,
        priority: 2,
        complexity: "low".into(),
        feasibility: "high".into(),
        summary: "small".into(),
        acceptance_criteria: vec![" Tests pass".into(), "The menu opens on a single click".into()],
    };
    assert!(store.record_triage(&gid, "test", &triage).await.unwrap());
    let task = store.task(&gid).await.unwrap();
    let mut repo = crate::config::Repo::at("/tmp/repo");
    repo.acceptance_criteria = vec!["UI changes include a screen recording".into(), "Tests pass".into()];
    let inputs = WorkerInputs {
        task: &task,
        run: None,
        kind: PrReview,
        repo: Some(("app", &repo)),
        branch: "executor/t2".into(),
        cwd: dir.path().into(),
        forge: None,
        pr: None,
        resume_session: None,
        review_findings: Vec::new(),
        ci_logs: Default::default(),
        asked: Default::default(),
    };
    let ctx = prompt_context(&inputs);
    assert_eq!(
        ctx.acceptance_criteria,
        ["UI changes include a screen recording", "Tests pass", "The menu opens on a single click"]
    );
    let prompt = Prompts::embedded().render(PromptKind::Worker(PrReview), &ctx).unwrap();
    assert!(prompt.contains("The menu opens on a single click"), "{prompt}");
    assert_eq!(prompt.matches("Tests pass").count(), 1, "{prompt}");

    // A task with no triage criteria: the repository's alone, as before.
    let plain = NewTask { description: Some("Other".into()), ..Default::default() };
    let (other, _) = store.upsert_task(&TaskGid::parse("t3").unwrap(), &plain, Actor::Cli).await.unwrap();
    let ctx = prompt_context(&WorkerInputs { task: &other, ..inputs });
    assert_eq!(ctx.acceptance_criteria, repo.acceptance_criteria);
}

/// A plan is written reading only: the agent in its read-only mode and none of the repository's `.git`
/// writable, while an implementing worker of the same run may commit.
#[tokio::test]
async fn a_plan_worker_reads_only_and_an_implementing_one_may_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git").args(args).current_dir(&repo).status().unwrap().success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"]);
    let text = format!(
        "[paths]\ndata_dir = {:?}\n[worker]\nagent = \"claude\"\n[repos.app]\npath = {:?}\nplan = \"required\"\n",
        dir.path().join("data").display().to_string(),
        repo.display().to_string()
    );
    let config = crate::config::Config::parse(&text).unwrap();
    let gid = TaskGid::parse("t1").unwrap();
    let wt =
        crate::workspace::ensure_worktree(&repo, &config.worktrees_root(), &gid, 1, "executor/t1", "main")
            .unwrap();
    let store = Store::open(&format!("sqlite://{}", dir.path().join("e.db").display())).await.unwrap();
    store.migrate().await.unwrap();
    let new = NewTask { description: Some("Add the feature".into()), ..Default::default() };
    let (task, _) = store.upsert_task(&gid, &new, Actor::Cli).await.unwrap();
    let repo_config = &config.repos["app"];
    let spec = |kind| {
        let inputs = WorkerInputs {
            task: &task,
            run: None,
            kind,
            repo: Some(("app", repo_config)),
            branch: "executor/t1".into(),
            cwd: wt.path.clone(),
            forge: None,
            pr: None,
            resume_session: None,
            review_findings: Vec::new(),
            ci_logs: Default::default(),
            asked: Default::default(),
        };
        let agent = crate::worker::agent_config(&config);
        super::build_spec(&config, &Prompts::embedded(), &inputs, agent, 1.0, None).unwrap()
    };
    let mode = |s: &crate::worker::WorkerSpec| match &s.agent {
        crate::worker::AgentConfig::Claude(c) => c.permission_mode.clone(),
        other => panic!("{other:?}"),
    };
    let plan = spec(WorkerKind::Plan);
    assert!(plan.writable_dirs.is_empty(), "{:?}", plan.writable_dirs);
    assert_eq!(mode(&plan).as_deref(), Some("plan"));
    let queued = spec(WorkerKind::Queued);
    assert!(!queued.writable_dirs.is_empty(), "a commit writes the repository's .git");
    assert_eq!(mode(&queued).as_deref(), Some("bypassPermissions"));
}

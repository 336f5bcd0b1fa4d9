//! Issue 36's whole path through the real binary: a Jira issue becomes a merged GitLab merge request.
//! `executor analyzer` takes it in and triages it; a human approves; the runner opens a draft merge
//! request, its first pipeline fails and `fix_ci` fixes it from the job's log, a trusted reviewer's
//! discussion is answered `[ACKNOWLEDGED …]` and resolved, the self-review is posted, and the human
//! merges. The Jira issue hears of each event exactly once, in GitLab's words (a merge request, `!N`)
//! — approved, opened, ready for review (once per reviewed head), merged — and moves In Progress → In
//! Review → Done, though Jira carried out the first comment and answered 502, and the merge request
//! links back to the issue.

#[path = "fake_gitlab/mod.rs"]
mod fake_gitlab;
#[path = "fake_jira/mod.rs"]
mod fake_jira;
mod gitlab_support;

use std::time::{Duration, Instant};

use chrono::Utc;
use executor::domain::{QueueStatus, RunState, TaskGid, WorkerKind, WritebackEvent, WritebackStatus};
use fake_jira::{FakeJira, WriteFault, basic, issue};
use gitlab_support::{GlEnv, PROJECT, run_of, text};

const JIRA_TOKEN: &str = "ATATT3x-jira-to-gitlab-0123456789";
const EMAIL: &str = "bot@acme.com";
/// The Jira issue's id (`issue(1207, …)` is APP-1207 with id 11207) and its task.
const ISSUE_ID: &str = "11207";
const GID: &str = "jira_11207";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jira_issue_becomes_a_merged_gitlab_merge_request_and_jira_hears_each_event_once() {
    let env = GlEnv::new().await;
    let jira = FakeJira::start(&basic(EMAIL, JIRA_TOKEN)).await;
    jira.put_issue(issue(1207, "APP", "Add the feature file", "To Do", Utc::now()));
    env.set_env("WB_JIRA_TOKEN", JIRA_TOKEN);
    env.append_config(&format!(
        "\n[[sources]]\nname = \"jira\"\nkind = \"jira\"\nbase_url = \"{}\"\nemail = \"{EMAIL}\"\n\
         jql = \"project = APP AND status = 'To Do'\"\ntoken_env = \"WB_JIRA_TOKEN\"\nrepo = \"app\"\n\
         writeback = [\"approved\", \"pr_opened\", \"complete\", \"merged\"]\nwriteback_timeout = \"2s\"\n\
         writeback_transitions = {{ pr_opened = \"In Progress\", complete = \"In Review\", merged = \"Done\" }}\n",
        jira.url
    ));
    let green: &[(&str, &str)] = &[("test", "SUCCESS")];
    env.fake.plan_pipelines(PROJECT, &[&[("test", "FAILED")], green, green, green, green]);
    // Jira carries out executor's first comment and answers 502.
    jira.fail_next_write(WriteFault::AppliedThenStatus(502));

    // Intake and triage, then a human's approval.
    env.ok(&["analyzer"]).await;
    let store = env.store().await;
    let task = store.task(&TaskGid::parse(GID).unwrap()).await.unwrap();
    assert_eq!(task.status, QueueStatus::AwaitingGo, "triaged: {task:?}");
    assert_eq!(task.description.as_deref().map(|d| d.lines().next()), Some(Some("Add the feature file")));
    env.ok(&["approve", GID]).await;

    let mut asked = None;
    let mut outputs = String::new();
    let deadline = Instant::now() + Duration::from_secs(150);
    let run = loop {
        let out = env.exec(&["runner"]).await;
        outputs.push_str(&text(&out));
        let run = run_of(&store, GID).await;
        if run.state == RunState::Complete && asked.is_some() {
            break run;
        }
        assert_ne!(run.state, RunState::Abandoned, "{:?}", store.run_memory(run.id).await.unwrap());
        if let Some(iid) = run.pr_number {
            let head = env.fake.mr(PROJECT, iid).head_sha;
            let green_at_head =
                env.fake.pipelines(PROJECT).iter().any(|p| p.sha == head && p.status() == "SUCCESS");
            if green_at_head && asked.is_none() {
                let thread = env.fake.add_discussion(
                    PROJECT,
                    iid,
                    "alex",
                    "Please also write down what you did.",
                    true,
                    Some(("feature.txt", 1)),
                );
                asked = Some(thread);
            }
        }
        assert!(Instant::now() < deadline, "stuck in {}: {outputs}", run.state);
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let iid = run.pr_number.unwrap();
    let (discussion, _) = asked.unwrap();

    // On GitLab: one draft merge request that links the issue, its failed pipeline fixed, alex's thread
    // answered and resolved, the self-review posted.
    let kinds: Vec<WorkerKind> =
        store.worker_sessions(run.id).await.unwrap().iter().map(|s| s.kind).collect();
    assert_eq!(kinds.first(), Some(&WorkerKind::Queued));
    for kind in [WorkerKind::FixCi, WorkerKind::FixComments, WorkerKind::PrReview] {
        assert!(kinds.contains(&kind), "no {kind} worker: {kinds:?}");
    }
    let mr = env.fake.mr(PROJECT, iid);
    assert_eq!(env.fake.mrs(PROJECT).len(), 1);
    assert!(mr.draft() && mr.description.contains(&format!("Task {GID} from jira")), "{}", mr.description);
    let thread = mr.discussions.iter().find(|d| d.id == discussion).unwrap();
    assert!(thread.notes[1].body.starts_with("[ACKNOWLEDGED:") && thread.resolved, "{thread:#?}");
    assert!(mr.notes().iter().any(|n| n.body.contains("<!-- executor review ")));

    // The human merges on GitLab; the runner sees it and tells Jira.
    env.fake.merge(PROJECT, iid);
    env.ok(&["runner"]).await;
    env.ok(&["runner"]).await;

    // Jira's held answer's wait passes (as it would in a minute); what is left is delivered.
    for _ in 0..3 {
        store.make_writebacks_due_for_tests().await.unwrap();
        env.ok(&["runner"]).await;
    }

    // In Jira: each event once, in order — ready for review once per reviewed head (the green head,
    // then the head that answered alex) — and the issue moved to Done.
    let rows = store.writebacks(Some(GID)).await.unwrap();
    let events: Vec<(WritebackEvent, WritebackStatus)> = rows.iter().map(|w| (w.event, w.status)).collect();
    use WritebackEvent::{Approved, Complete, Merged, PrOpened};
    use WritebackStatus::Delivered;
    assert_eq!(
        events,
        [
            (Approved, Delivered),
            (PrOpened, Delivered),
            (Complete, Delivered),
            (Complete, Delivered),
            (Merged, Delivered)
        ]
    );
    assert_ne!(rows[2].event_key, rows[3].event_key, "two completions, at two heads");
    assert_eq!(rows[0].attempts, 2, "the retry found the comment Jira had carried out");
    let comments = jira.comments(ISSUE_ID);
    assert_eq!(comments.len(), 5, "{comments:#?}");
    for (comment, starts) in comments.iter().zip([
        "This task was approved in executor",
        "executor opened a merge request for this task: ",
        "The merge request is ready for your review: ",
        "The merge request is ready for your review: ",
        "The merge request was merged: ",
    ]) {
        assert!(comment.starts_with(starts), "{comment:?} does not start with {starts:?}");
        // GitLab's words only: a merge request, `MR !N`, never a pull request.
        assert!(!comment.contains("pull request") && !comment.contains("PR #"), "{comment:?}");
    }
    assert!(
        comments[2].contains(&format!("MR !{iid} is ready")),
        "the completion names MR !{iid}: {}",
        comments[2]
    );
    let mr_url = run.pr_url.clone().unwrap();
    assert!(mr_url.ends_with(&format!("/{PROJECT}/-/merge_requests/{iid}")), "{mr_url}");
    assert!(comments[1].contains(&mr_url), "the comment links the merge request: {}", comments[1]);
    assert_eq!(jira.count("POST", "/comment"), 5, "one post per event: the retry looked first");
    assert_eq!(jira.status_of(ISSUE_ID).as_deref(), Some("Done"));
    let links = jira.links(ISSUE_ID);
    assert_eq!(links.len(), 1, "the merge request linked once: {links:?}");
    assert!(!outputs.contains(JIRA_TOKEN) && !env.all_logs().contains(JIRA_TOKEN), "the Jira token leaked");
}

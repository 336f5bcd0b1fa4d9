//! The pipeline, once per tracker at the same time (issue 24): an Asana task, a GitHub issue, a Linear
//! issue, a Jira issue and a GitLab issue are taken in by one `executor intake`, approved, and worked by
//! the real runner on the GitHub forge to complete pull requests; each tracker then shows exactly its two
//! messages, in order — the pull request opened, then ready for review — though each applied its first
//! write and failed to answer it (Asana, GitHub, Jira and GitLab a 502, Linear too late). The Linear and
//! Jira issues moved as their sources ask.

#[path = "fake_asana/mod.rs"]
mod fake_asana;
#[path = "fake_github/mod.rs"]
mod fake_github;
#[path = "fake_gitlab_issues/mod.rs"]
mod fake_gitlab_issues;
#[path = "fake_jira/mod.rs"]
mod fake_jira;
#[path = "fake_linear/mod.rs"]
mod fake_linear;

mod common;
mod github_support;

use std::time::{Duration, Instant};

use executor::domain::{RunState, WritebackStatus};
use executor::store::Store;
use fake_asana::FakeAsana;
use fake_github::Fault;
use fake_jira::FakeJira;
use fake_linear::FakeLinear;
use github_support::{CiPlayer, GhEnv, REPO, deliver_what_is_left, run_of, text};

const ASANA_TOKEN: &str = "2/1234567890/all-trackers-asana";
const LINEAR_KEY: &str = "lin_api_all_trackers_0123456789";
const JIRA_TOKEN: &str = "ATATT3x-all-trackers-jira";
const GITLAB_TOKEN: &str = "glpat-all-trackers-gitlab-0123";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_from_each_source_reaches_a_complete_pull_request_and_its_tracker_hears_once() {
    let env = GhEnv::new(&[], "").await;
    let asana = FakeAsana::start(ASANA_TOKEN).await;
    asana.add_project_task("1", fake_asana::task("1207", "Add the feature file", "2026-11-01T10:00:00.000Z"));
    let linear = FakeLinear::start(LINEAR_KEY).await;
    linear.put_issue(fake_linear::issue(
        7,
        "ENG",
        7,
        "Add the feature file",
        "Todo",
        "2026-11-01T10:00:00.000Z",
    ));
    let jira = FakeJira::start(&fake_jira::basic("bot@acme.com", JIRA_TOKEN)).await;
    jira.put_issue(fake_jira::issue(1, "APP", "Add the feature file", "To Do", chrono::Utc::now()));
    let gitlab = fake_gitlab_issues::FakeGitLab::start(GITLAB_TOKEN).await;
    gitlab.put_issue(fake_gitlab_issues::issue(1, "Add the feature file", chrono::Utc::now()));
    let number = env.fake.add_issue(REPO, "Add the feature file", Some("Please add it."), &[]);
    env.set_agent_env("WB_ASANA_TOKEN", ASANA_TOKEN);
    env.set_agent_env("WB_LINEAR_KEY", LINEAR_KEY);
    env.set_agent_env("WB_JIRA_TOKEN", JIRA_TOKEN);
    env.set_agent_env("WB_GITLAB_TOKEN", GITLAB_TOKEN);
    let path = env.path().join("executor.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(&format!(
        "\n[[sources]]\nname = \"asana\"\nkind = \"asana\"\nprojects = [\"1\"]\napi_url = \"{}\"\n\
         token_env = \"WB_ASANA_TOKEN\"\nrepo = \"app\"\nwriteback_timeout = \"2s\"\n\
         \n[[sources]]\nname = \"issues\"\nkind = \"github_issues\"\ngithub = \"octo/app\"\nrepo = \"app\"\n\
         \n[[sources]]\nname = \"linear\"\nkind = \"linear\"\nteams = [\"ENG\"]\napi_url = \"{}\"\n\
         token_env = \"WB_LINEAR_KEY\"\nrepo = \"app\"\nwriteback_timeout = \"2s\"\n\
         writeback_states = {{ pr_opened = \"In Progress\", complete = \"In Review\" }}\n\
         \n[[sources]]\nname = \"jira\"\nkind = \"jira\"\nbase_url = \"{}\"\nemail = \"bot@acme.com\"\n\
         jql = \"project = APP\"\ntoken_env = \"WB_JIRA_TOKEN\"\nrepo = \"app\"\nwriteback_timeout = \"2s\"\n\
         writeback_transitions = {{ pr_opened = \"In Progress\", complete = \"In Review\" }}\n\
         \n[[sources]]\nname = \"gitlab\"\nkind = \"gitlab_issues\"\ngitlab = \"{}\"\nrepo = \"app\"\n\
         writeback_timeout = \"2s\"\n\
         \n[gitlab]\nurl = \"{}\"\ntoken_env = [\"WB_GITLAB_TOKEN\"]\n",
        asana.url,
        linear.url,
        jira.url,
        fake_gitlab_issues::PROJECT_PATH,
        gitlab.url
    ));
    std::fs::write(&path, config).unwrap();

    // Each tracker applies its first write and does not answer it well.
    asana.fail_next_write(fake_asana::WriteFault::AppliedThenStatus(502));
    env.fake.fail_route("issue_comment_create", Fault::AppliedThen(502), 1);
    linear.fail_next_write(fake_linear::WriteFault::AppliedThenLate(Duration::from_secs(5)));
    jira.fail_next_write(fake_jira::WriteFault::AppliedThenStatus(502));
    gitlab.fail_next_write(fake_gitlab_issues::WriteFault::AppliedThenStatus(502));

    env.ok(&["intake"]).await;
    let linear_gid = format!("lin_{}", fake_linear::uuid(7));
    let gitlab_gid = format!("gl_{}-1", fake_gitlab_issues::PROJECT_ID);
    let gids = [
        "1207".to_string(),
        format!("gh_octo.app-{number}"),
        linear_gid.clone(),
        "jira_10001".into(),
        gitlab_gid,
    ];
    for gid in &gids {
        env.ok(&["approve", "--skip-triage", gid]).await;
    }
    let store = env.store().await;
    drive_all_to_complete(&env, &store, &gids).await;
    for gid in &gids {
        deliver_what_is_left(&env, &store, gid).await;
    }

    let opened = |c: &str| c.starts_with("executor opened a pull request for this task: ");
    let ready = |c: &str| c.starts_with("The pull request is ready for your review: ");
    for (tracker, comments) in [
        ("Asana", asana.comments("1207")),
        ("GitHub", env.fake.issue_comments(REPO, number)),
        ("Linear", linear.comments(&fake_linear::uuid(7))),
        ("Jira", jira.comments("10001")),
        ("GitLab", gitlab.notes(1)),
    ] {
        assert_eq!(comments.len(), 2, "{tracker}: {comments:#?}");
        assert!(opened(&comments[0]) && ready(&comments[1]), "{tracker}: {comments:#?}");
    }
    for gid in &gids {
        let rows = store.writebacks(Some(gid)).await.unwrap();
        assert!(rows.iter().all(|w| w.status == WritebackStatus::Delivered), "{gid}: {rows:?}");
        assert_eq!(rows[0].attempts, 2, "{gid}: the retry found the first write: {rows:?}");
        let run = run_of(&store, gid).await;
        assert_eq!((run.state, run.pr_number.is_some()), (RunState::Complete, true), "{gid}");
    }
    assert_eq!(linear.state_of(&fake_linear::uuid(7)).as_deref(), Some("In Review"));
    assert_eq!(jira.status_of("10001").as_deref(), Some("In Review"));
}

async fn drive_all_to_complete(env: &GhEnv, store: &Store, gids: &[String]) {
    let mut players: Vec<CiPlayer> = gids.iter().map(|_| CiPlayer::green()).collect();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let out = env.runner().await;
        assert!(out.status.success(), "the runner failed:\n{}", text(&out));
        let mut complete = 0;
        for (gid, ci) in gids.iter().zip(&mut players) {
            let run = run_of(store, gid).await;
            assert_ne!(
                run.state,
                RunState::Abandoned,
                "{gid}: {:?}",
                store.run_memory(run.id).await.unwrap()
            );
            if run.state == RunState::Complete {
                complete += 1;
            } else if let (Some(number), Some(branch)) = (run.pr_number, run.branch_name.clone()) {
                ci.play(env, number, &branch);
            }
        }
        if complete == gids.len() {
            return;
        }
        assert!(Instant::now() < deadline, "not all complete in time");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

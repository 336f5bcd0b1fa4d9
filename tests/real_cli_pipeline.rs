//! The real Claude Code and Codex CLIs, installed from npm at pinned versions (`.ci/run`), drive a task
//! through executor's own runner — a read-only plan approved → queued → pr → a human's comment answered
//! once → complete — under the
//! default sandbox (`worker.sandbox = "auto"`: Landlock where the kernel has it), against fake model APIs
//! on loopback (`tests/fake_models`) that script the model's part: write a file, commit with a shell
//! command, answer with the JSON the worker kind asks for. No network, no money.
//!
//! They run in CI and with `EXECUTOR_AGENT_CLI_TESTS=1` (see build.rs), and show as ignored elsewhere.
//! The CLIs are looked for under `$EXECUTOR_AGENT_CLIS` (default `target/agent-clis`, where `.ci/run`
//! installs them): `node_modules/.bin/claude` and `node_modules/.bin/codex`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use executor::domain::{PlanStatus, Run, RunState, TaskGid, WorkerKind};
use executor::store::{RunFilter, Store};
use executor::worker::sandbox::{self, Support};
use serde_json::json;

mod common;
mod fake_models;
mod runner_support;
use fake_models::{Api, FakeModel, Role, Script, Step};
use runner_support::Env;

/// What the human asks on the pull request.
const REQUEST: &str = "Please also write down what you did, in NOTES.md.";
const COMMIT_FEATURE: &str = "git add -A && git -c user.name=agent -c user.email=agent@example.com \
                              commit -m 'Add the feature file'";
const COMMIT_NOTES: &str = "git add -A && git -c user.name=agent -c user.email=agent@example.com \
                            commit -m 'Write down what was done'";

/// The review looks, and tries to write beside the worktree: refused where executor contains it. (The
/// quotes keep the words out of the command's own text, which the work log shows too.)
const REVIEW_COMMAND: &str = "git log --oneline -5 && test -f feature.txt && \
                              { (echo x > ../escape-probe) 2>/dev/null && echo ES''CAPED || echo CON''TAINED; }";

/// The model's part, keyed on words of each prompt's first line (prompts/*.md).
fn script() -> Script {
    Script::new(vec![
        // Read-only (Claude Code in plan mode, Codex inside executor's sandbox): it only answers.
        Role::new(
            "plan",
            "planning one task from a backlog",
            vec![Step::answer(|_| {
                json!({"approach": "Add feature.txt.", "files": ["feature.txt"], "risks": "none",
                       "testing": "CI checks the file", "question": null})
            })],
        ),
        Role::new(
            "queued",
            "working alone, without a human to ask",
            vec![
                Step::write("feature.txt", "the feature\n"),
                Step::shell(COMMIT_FEATURE),
                Step::answer(|_| json!({"summary": "added feature.txt and committed it"})),
            ],
        ),
        Role::new(
            "fix_comments",
            "Reviewers left comments on the pull request",
            vec![
                Step::write("NOTES.md", "Added feature.txt, as the task asked.\n"),
                Step::shell(COMMIT_NOTES),
                Step::answer(|prompt| {
                    let replies: Vec<_> = fake_models::comment_ids(prompt)
                        .into_iter()
                        .map(|id| json!({"to": id, "body": "[ACKNOWLEDGED: wrote NOTES.md] It says what changed."}))
                        .collect();
                    json!({"summary": "wrote NOTES.md", "replies": replies})
                }),
            ],
        ),
        Role::new(
            "pr_review",
            "You are a careful senior reviewer",
            vec![
                Step::shell(REVIEW_COMMAND),
                Step::answer(|_| json!({"verdict": "pass", "summary": "feature.txt is there; CI is green"})),
            ],
        ),
    ])
}

/// The installed CLI `name`; a test that was asked for and cannot find it fails, naming the fix.
fn cli(name: &str) -> PathBuf {
    let prefix = std::env::var_os("EXECUTOR_AGENT_CLIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agent-clis"));
    let program = prefix.join("node_modules/.bin").join(name);
    assert!(
        program.exists(),
        "no {} : install the pinned CLIs as .ci/run does (npm install --prefix target/agent-clis …)",
        program.display()
    );
    program
}

/// One CLI's pipeline: the environment, the runner's variables and the fake model.
struct Pipeline {
    env: Env,
    vars: Vec<(String, String)>,
    model: FakeModel,
    /// The CLI's private state directory (CLAUDE_CONFIG_DIR / CODEX_HOME), fresh: empty for Claude Code,
    /// only the provider's config.toml for Codex.
    _state: tempfile::TempDir,
}

impl Pipeline {
    fn claude() -> Pipeline {
        let model = FakeModel::start(Api::Anthropic, script());
        let state = tempfile::tempdir().unwrap();
        let vars = [
            ("ANTHROPIC_BASE_URL", model.origin()),
            ("ANTHROPIC_API_KEY", "sk-ant-fake-key".to_string()),
            ("CLAUDE_CONFIG_DIR", state.path().display().to_string()),
            // No telemetry, error reports, update checks or other calls besides the model API.
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
            ("DISABLE_AUTOUPDATER", "1".to_string()),
            // bypassPermissions as root (CI runs as root).
            ("IS_SANDBOX", "1".to_string()),
        ];
        let env = Env::new(&vars.iter().map(|(k, _)| *k).collect::<Vec<_>>());
        env.edit_config("agent = \"command\"", "agent = \"claude\"");
        env.append_config(&format!(
            "\n[worker.claude]\nprogram = {:?}\n",
            cli("claude").display().to_string()
        ));
        Pipeline::finish(env, vars.map(|(k, v)| (k.to_string(), v)).to_vec(), model, state)
    }

    /// Codex as configured by default.
    fn codex() -> Pipeline {
        let model = FakeModel::start(Api::OpenAi, script());
        let state = tempfile::tempdir().unwrap();
        let vars = [
            ("OPENAI_API_KEY", "sk-fake-key".to_string()),
            ("CODEX_HOME", state.path().display().to_string()),
        ];
        let env = Env::new(&vars.iter().map(|(k, _)| *k).collect::<Vec<_>>());
        env.edit_config("agent = \"command\"", "agent = \"codex\"");
        // Codex takes its base URL from its configuration, not from OPENAI_BASE_URL: a provider of its
        // own, authenticated by OPENAI_API_KEY. Plugins (chatgpt.com, github.com) and analytics
        // (ab.chatgpt.com) are its only other network calls. executor has no key for Codex's `-c`
        // overrides, so they go in the (fresh) CODEX_HOME's config.toml, where a user would put them.
        let config = format!(
            "model_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"{}\"\n\
             env_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n\n[features]\nplugins = false\n\n\
             [analytics]\nenabled = false\n",
            model.v1()
        );
        std::fs::write(state.path().join("config.toml"), config).unwrap();
        env.append_config(&format!("\n[worker.codex]\nprogram = {:?}\n", cli("codex").display().to_string()));
        Pipeline::finish(env, vars.map(|(k, v)| (k.to_string(), v)).to_vec(), model, state)
    }

    fn finish(env: Env, vars: Vec<(String, String)>, model: FakeModel, state: tempfile::TempDir) -> Pipeline {
        env.edit_config("idle_timeout = \"20s\"", "idle_timeout = \"300s\"");
        env.edit_config(
            "ci_command = [\"sh\", \"-c\", \"sleep 2; test -f ci-fixed\"]",
            "ci_command = [\"sh\", \"-c\", \"test -f feature.txt\"]",
        );
        // A plan first, as a team that asks for one runs it: the read-only worker's defaults must work.
        env.edit_config("trusted_authors = [\"alex\"]", "trusted_authors = [\"alex\"]\nplan = \"required\"");
        Pipeline { env, vars, model, _state: state }
    }

    /// A runner pass: `--once` stops at the first wait (CI running), where the human comments.
    fn runner(&self) -> Output {
        let mut cmd = self.env.command(&["runner", "--once"]);
        cmd.envs(self.vars.iter().map(|(k, v)| (k, v))).stdin(Stdio::null());
        cmd.output().unwrap()
    }
}

async fn run_of(store: &Store, gid: &str) -> Run {
    let gid = TaskGid::parse(gid).unwrap();
    store.list_runs(&RunFilter { task_gid: Some(gid), ..Default::default() }).await.unwrap().remove(0)
}

/// Everything a failure needs: the run's memory, the model's requests, the work logs.
async fn story(p: &Pipeline, store: &Store, run: &Run) -> String {
    let mut out = format!("run {} in {}: {:?}\n", run.id, run.state, store.run_memory(run.id).await.unwrap());
    for s in p.model.seen() {
        out.push_str(&format!(
            "model: {} {} role={:?} step={} played={}\n",
            s.method, s.path, s.role, s.step, s.played
        ));
    }
    for s in store.worker_sessions(run.id).await.unwrap() {
        let log = s.log_path.as_deref().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
        out.push_str(&format!("\n=== {} worker ({:?}):\n{log}\n", s.kind, s.end_reason));
    }
    out
}

/// Drives the run to complete, commenting once as alex when the pull request is open (or complete:
/// a new comment brings a complete run back). Returns the run and alex's comment id.
async fn drive(p: &Pipeline) -> (Run, i64) {
    p.env.queue_approved("31");
    let store = p.env.store().await;
    let mut asked = None;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let out = p.runner();
        let run = run_of(&store, "31").await;
        assert!(
            out.status.success(),
            "runner: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            story(p, &store, &run).await
        );
        assert_ne!(run.state, RunState::Abandoned, "{}", story(p, &store, &run).await);
        if let Some(id) = asked
            && run.state == RunState::Complete
        {
            return (run, id);
        }
        if store
            .latest_plan(run.id)
            .await
            .unwrap()
            .is_some_and(|plan| plan.status == PlanStatus::AwaitingApproval)
        {
            p.env.run(&["plan", "approve", &run.id.to_string()]);
        }
        if asked.is_none() && matches!(run.state, RunState::Pr | RunState::Complete) {
            p.env.run(&["comment", &run.id.to_string(), REQUEST, "--author", "alex"]);
            let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
            let comments = store.local_comments(pr.id).await.unwrap();
            asked = comments.iter().find(|c| c.author == "alex").map(|c| c.id);
        }
        assert!(Instant::now() < deadline, "stuck: {}", story(p, &store, &run).await);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The run is complete with the agent's commits on its branch, alex's comment has exactly one reply
/// (the agent's), the work logs show the tool calls, and the model saw every step of each role.
async fn assert_pipeline(p: &Pipeline, run: &Run, asked: i64, tool_call: &str, credential: &str) {
    let store = p.env.store().await;
    let story = story(p, &store, run).await;
    let log = Command::new("git")
        .args(["log", "--format=%s", run.branch_name.as_deref().expect("the run has a branch")])
        .current_dir(p.env.repo())
        .output()
        .unwrap();
    let subjects = String::from_utf8_lossy(&log.stdout);
    assert!(subjects.contains("Add the feature file"), "{subjects}\n{story}");
    assert!(subjects.contains("Write down what was done"), "{subjects}\n{story}");

    let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
    let comments = store.local_comments(pr.id).await.unwrap();
    let replies: Vec<_> = comments.iter().filter(|c| c.in_reply_to == Some(asked)).collect();
    assert_eq!(replies.len(), 1, "answered once: {comments:#?}\n{story}");
    assert!(
        replies[0].by_agent && replies[0].body.starts_with("[ACKNOWLEDGED: wrote NOTES.md]"),
        "{:?}",
        replies[0]
    );

    let sessions = store.worker_sessions(run.id).await.unwrap();
    let kinds: Vec<WorkerKind> = sessions.iter().map(|s| s.kind).collect();
    assert_eq!(kinds.first(), Some(&WorkerKind::Plan), "the plan came first: {kinds:?}\n{story}");
    let plan = store.latest_plan(run.id).await.unwrap().expect("a plan");
    assert!(plan.status == PlanStatus::Approved && plan.body.contains("Add feature.txt."), "{plan:?}");
    for kind in [WorkerKind::Queued, WorkerKind::FixComments, WorkerKind::PrReview] {
        assert!(kinds.contains(&kind), "a {kind} worker ran: {kinds:?}\n{story}");
    }
    for s in &sessions {
        assert_eq!(s.end_reason.map(|r| r.as_str()), Some("finished"), "{}\n{story}", s.kind);
    }
    let queued = sessions.iter().find(|s| s.kind == WorkerKind::Queued).unwrap();
    let log = std::fs::read_to_string(queued.log_path.as_deref().unwrap()).unwrap();
    assert!(log.contains(&format!("#### Tool call: `{tool_call}`")), "{story}");
    assert!(log.contains("commit -m 'Add the feature file'"), "{story}");

    // The default sandbox held: the review's write beside its worktree was refused (where the kernel
    // has Landlock; elsewhere `auto` runs agents uncontained).
    let review = sessions.iter().find(|s| s.kind == WorkerKind::PrReview).unwrap();
    let log = std::fs::read_to_string(review.log_path.as_deref().unwrap()).unwrap();
    if matches!(sandbox::support(), Support::Landlock { .. }) {
        assert!(log.contains("CONTAINED") && !log.contains("ESCAPED"), "{story}");
    } else {
        eprintln!("note: no Landlock here, the agents ran uncontained");
    }

    let seen = p.model.seen();
    assert!(
        seen.iter().all(|s| s.credential.as_deref() == Some(credential)),
        "the key from the environment\n{story}"
    );
    for (role, steps) in [("plan", 1), ("queued", 3), ("fix_comments", 3), ("pr_review", 2)] {
        for step in 0..steps {
            assert!(
                seen.iter().any(|s| s.role.as_deref() == Some(role) && s.step == step && s.stream),
                "the model was asked for step {step} of {role}\n{story}"
            );
        }
    }
}

/// Under Landlock every commit prints `error: Unable to create '…/.git/packed-refs.lock': Permission
/// denied` (the commit itself works): `git commit` deletes the AUTO_MERGE pseudo-ref afterwards, and git's
/// files backend locks the common directory's packed-refs for any deletion. A real model reads `error:`
/// and tries to fix it.
async fn assert_no_git_error_in_the_work_logs(p: &Pipeline, run: &Run) {
    let store = p.env.store().await;
    for s in store.worker_sessions(run.id).await.unwrap() {
        let log = std::fs::read_to_string(s.log_path.as_deref().unwrap()).unwrap();
        assert!(!log.contains("packed-refs.lock"), "{} worker:\n{log}", s.kind);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "fails until a commit under Landlock prints no packed-refs.lock error (issue 31, item 7)"]
async fn claude_code_commits_without_a_git_error_under_the_default_sandbox() {
    let p = Pipeline::claude();
    let (run, _) = drive(&p).await;
    assert_no_git_error_in_the_work_logs(&p, &run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(agent_cli_tests),
    ignore = "needs the pinned agent CLIs: set EXECUTOR_AGENT_CLI_TESTS=1 (see README)"
)]
async fn claude_code_completes_a_pipeline_under_the_default_sandbox() {
    let p = Pipeline::claude();
    let (run, asked) = drive(&p).await;
    assert_pipeline(&p, &run, asked, "Bash", "sk-ant-fake-key").await;
    // With --json-schema the answer came through Claude Code's StructuredOutput tool.
    assert!(p.model.seen().iter().any(|s| s.played == "tool:StructuredOutput"));
}

/// Codex as executor runs it by default (`worker.codex.sandbox = "workspace-write"`): inside executor's
/// Landlock its own bubblewrap sandbox cannot start ("error building bubblewrap command: Permission
/// denied" — every command failed, no commit was made), so executor runs it with `--sandbox
/// danger-full-access` there, and its provider's port (from the seeded config.toml) is the one it may
/// reach (issue 31, item 7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(agent_cli_tests),
    ignore = "needs the pinned agent CLIs: set EXECUTOR_AGENT_CLI_TESTS=1 (see README)"
)]
async fn codex_completes_a_pipeline_under_the_default_sandbox() {
    let p = Pipeline::codex();
    let (run, asked) = drive(&p).await;
    assert_pipeline(&p, &run, asked, "shell", "Bearer sk-fake-key").await;
}

//! The command-line surface. Architecture invariant: only `cli` (and later `web`) print; the library
//! below returns values and errors.

#[macro_use]
mod output;
mod analyzer;
mod config;
mod context;
mod demo;
mod doctor;
mod import;
mod init;
mod insights;
mod intake;
mod parse;
mod plan;
mod prompts;
mod queue;
mod reanalyze;
mod runner;
mod runs;
mod schedule;
mod serve;
mod status;
mod users;
mod webhooks;
mod worker;
mod writeback;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use context::Context;
pub use init::init_text;

/// `executor --version`: the package's version and the commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("EXECUTOR_COMMIT"), ")");

/// executor turns a tracker backlog into reviewed, CI-green pull requests by running AI coding agents
/// (Claude Code, Codex, any command) in git worktrees. Tasks enter a queue, are triaged, wait for a human's
/// approval, and then become runs that a deterministic runner drives to a pull request.
#[derive(Debug, Parser)]
#[command(name = "executor", version = VERSION, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Config file. Otherwise $EXECUTOR_CONFIG, ./executor.toml, then ~/.config/executor/executor.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Load NAME=value lines from FILE into the environment first: how cron, systemd and launchd start
    /// executor with the keys agents and trackers need (`executor cron install` writes the file,
    /// `paths.env_file`; it must be this user's and mode 0600). Its values win over inherited ones.
    #[arg(long, global = true, value_name = "FILE")]
    pub env_file: Option<PathBuf>,

    /// Print machine-readable JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,

    /// Who is acting, for the audit trail (approvals, skips, answers…): a person's name. Default: the
    /// operating system's user ($USER).
    #[arg(long, global = true, value_name = "NAME")]
    pub actor: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented executor.toml and create the database; say where both are.
    Init(init::InitArgs),
    /// Check the setup — config, database, git, repositories, agent, tokens, cron, locks, disk — and
    /// say how to fix each problem. Writes nothing; exits 1 when a required check fails.
    Doctor,
    /// See the whole pipeline work, offline: a scratch repository, SQLite, the local forge and a fake
    /// agent take one task from approval to a reviewed, green pull request.
    Demo(demo::DemoArgs),
    /// Fetch tasks from the configured sources (Asana, GitHub issues, GitLab issues, Linear, Jira, files) into the queue.
    ///
    /// A source is a [[sources]] table in the config: the tasks of Asana projects, sections or a user
    /// task list (kind = "asana"; a personal access token in $ASANA_TOKEN, or the variable token_env
    /// names), the issues of a GitHub repository (kind = "github_issues") or of a GitLab project (kind =
    /// "gitlab_issues"; [gitlab]'s token), the issues of Linear teams
    /// and projects (kind = "linear"; an API key in $LINEAR_API_KEY), the issues a JQL query selects
    /// (kind = "jira"; an API token in $JIRA_API_TOKEN, see docs/jira.md), or a JSON Lines or CSV file
    /// (kind = "file"; a relative path is read beside the config). Each task is stored under its
    /// tracker id, with the source's name and repo; new tasks wait as pending for the analyzer.
    ///
    /// Incremental: each source remembers the latest change it has seen (its cursor) and the next intake
    /// asks only for what changed since; a file is read whole every time. Fetching a task again updates
    /// its text and facts but never its status, and new text for an approved task waits as a revision
    /// for you (`executor approve GID` accepts it).
    ///
    /// A source that fails (a rejected token, a server error, a missing file) keeps its cursor, is
    /// reported with what to do about it, and does not stop the others; the exit code is then 1.
    Intake(intake::IntakeArgs),
    /// The incoming tasks: add, list, show, retry, requeue.
    #[command(subcommand)]
    Queue(queue::QueueCommand),
    /// Approve tasks (awaiting_go or for_review → approved); the runner turns them into runs.
    Approve {
        /// One or more task gids.
        #[arg(required = true, value_name = "GID")]
        gids: Vec<String>,
        /// Also approve tasks still pending, without waiting for the analyzer (recorded in the history
        /// as pending → awaiting_go → approved).
        #[arg(long)]
        skip_triage: bool,
    },
    /// Skip a task (it will not be worked on); `queue requeue` brings it back for re-analysis.
    Skip {
        /// The task's gid (`executor queue list` shows them).
        #[arg(value_name = "GID")]
        gid: String,
        /// Why, for the history.
        #[arg(long)]
        reason: String,
    },
    /// Run the current filters over the skipped tasks again and send those that now pass back to
    /// pending, for the analyzer to triage after every new task; --dry-run reports, by source and by
    /// rule, what would change.
    Reanalyze(reanalyze::ReanalyzeArgs),
    /// A plan written before any code, where a repository (`plan = "required"`) or a task asks for one:
    /// show it, approve it, send it back with what to change; or set a task's own plan setting.
    #[command(subcommand)]
    Plan(plan::PlanCommand),
    /// Answer the question a run's agent asked instead of guessing (the run waits until someone does;
    /// a trusted comment on its pull request or the dashboard answers it too).
    Answer(plan::AnswerArgs),
    /// Concrete runs: list, show, abandon, resume.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Counts by queue status and run state, what the pending tasks wait for (the analyzer, a back-off,
    /// a human after failed analyses), and how each task source's last fetch went.
    Status,
    /// The audit trail of every status and state change (oldest first).
    Events(status::EventsArgs),
    /// Whether the runs pay: of the runs that ended in the window (pull request merged, or given up),
    /// the merge rate, time from approval to merge, cost per merged pull request (the runs given up
    /// included), CI fixes and reviews per merged one — for all runs and by repository and agent.
    Insights(insights::InsightsArgs),
    /// Apply database migrations (every command also checks the schema version).
    Migrate,
    /// Import v1's executor_queue and executor_runs rows (JSON, or a CSV pair); --dry-run prints the plan.
    Import(import::ImportArgs),
    /// Triage until nothing is pending, then exit (cron restarts it): fetch from the [[sources]], skip
    /// what the [[filters]] name, and have the agent sort the rest into for_review, awaiting_go or skip.
    Analyzer(analyzer::AnalyzerArgs),
    /// Drive runs until idle, then exit (cron restarts it): create runs for approved tasks, keep up to
    /// runner.max_workers agents busy, and take each pull request through CI, comments and review.
    Runner(runner::RunnerArgs),
    /// Comment on a run's pull request (on the local forge or GitHub). Workers reply with --as-agent
    /// --reply-to ID.
    Comment(runner::CommentArgs),
    /// Run one worker by hand, in the foreground, outside the runner (to try agents and prompts).
    #[command(subcommand)]
    Worker(worker::WorkerCommand),
    /// Print the newest work log of a task, or follow it as the worker writes it.
    Logs(worker::LogsArgs),
    /// The prompt templates: export the defaults to edit, check the configured ones. What an agent gets
    /// (prompt on stdin, EXECUTOR_* variables) and must answer (a final JSON line): see docs/agents.md,
    /// "Your own agent", and examples/command-agent.sh.
    #[command(subcommand)]
    Prompts(prompts::PromptsCommand),
    /// The cron watchdog: starts the runner and the analyzer every 5 minutes (each exits when idle).
    #[command(subcommand)]
    Cron(schedule::CronCommand),
    /// The dashboard: a local web page and JSON API (/api/v1/) that opens on what needs you (tasks to
    /// approve, runs stopped on budget or abandoned, checks that never reported, failing sources), with
    /// every action of `approve`, `skip`, `queue requeue|retry` and `runs resume|abandon`, pages that
    /// update as things change, and Prometheus metrics (/metrics). Prints its URL with the token once;
    /// runs until SIGTERM/SIGINT.
    /// Also receives GitHub webhooks at POST /webhooks/github (signed with github.webhook_secret_env;
    /// see `executor webhooks print`) and starts `executor runner` when one finds no runner running.
    Serve(serve::ServeArgs),
    /// The people who may use the dashboard: `add NAME --role viewer|approver|admin` prints their
    /// personal login URL; `list`, `revoke`, `role`. Every change they make is recorded in their name.
    #[command(subcommand)]
    Users(users::UsersCommand),
    /// GitHub webhooks make the runner react in seconds instead of at its next tick or cron start:
    /// `executor webhooks print` gives the settings to enter on GitHub and how to forward deliveries.
    #[command(subcommand)]
    Webhooks(webhooks::WebhooksCommand),
    /// Print a shell completion script: `executor completions bash > ~/.local/share/bash-completion/completions/executor`
    /// (zsh: a file named `_executor` on your $fpath; fish: ~/.config/fish/completions/executor.fish).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the cron entries as a macOS LaunchAgent or a systemd user timer instead.
    #[command(subcommand)]
    Service(ServiceCommand),
    /// The config: every key with its type, default and meaning (`reference`), or the effective config
    /// and where each value came from (`show`).
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// What the trackers were told (write-back): each message owed to a task's Asana task, Linear issue,
    /// Jira issue or GitHub issue — the pull request opened, the run complete or abandoned — and whether it got there.
    ///
    /// The runner records a message before the step it tells of and delivers it on its ticks: retried
    /// with a back-off when the tracker fails, looked for in the tracker before a retry (a write that
    /// timed out is never posted twice), and refused for good on 401, 403 or 404 — then you are told
    /// once, with the fix. Which events a source writes back is its `writeback` key.
    Writeback {
        /// Only this task's messages.
        gid: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Print the unit files and how to enable them.
    Print(schedule::ServiceArgs),
}

/// Runs the command line and maps the outcome to an exit code: 0 success, 1 error, 2 usage.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(path) = &cli.env_file {
        // SAFETY: nothing else runs yet: the runtime and the logging are started below.
        if let Err(e) = unsafe { crate::env_file::load(path) } {
            say_err!("error: {e}");
            return ExitCode::from(1);
        }
    }
    if !starts_agents(&cli.command) {
        quiet_on_closed_output();
    }
    // The demo prints its own account of each step; the runner's log lines would only repeat it.
    init_logging(if matches!(cli.command, Command::Demo(_)) { "warn" } else { "executor=info,warn" });
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            say_err!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say_err!("error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() { ExitCode::from(2) } else { ExitCode::from(1) }
        }
    }
}

/// Commands that write to agents' pipes: for them a closed pipe must stay an error to handle (an agent
/// that exits before reading its whole prompt), never a signal that kills executor.
fn starts_agents(command: &Command) -> bool {
    matches!(command, Command::Runner(_) | Command::Analyzer(_) | Command::Worker(_) | Command::Demo(_))
}

/// Commands that only read the database: they never create one.
fn only_reads(command: &Command) -> bool {
    matches!(
        command,
        Command::Status
            | Command::Events(_)
            | Command::Insights(_)
            | Command::Writeback { .. }
            | Command::Queue(queue::QueueCommand::List { .. } | queue::QueueCommand::Show { .. })
            | Command::Runs(runs::RunsCommand::List { .. } | runs::RunsCommand::Show { .. })
    )
}

/// `executor queue list | head`: when the reader goes away, end quietly as other command-line tools do
/// (SIGPIPE's default), instead of panicking in `println!` (Rust ignores SIGPIPE for every program).
fn quiet_on_closed_output() {
    // SAFETY: at the very start of main, before any thread or runtime exists; restoring a signal's
    // default disposition has no other effect on the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A mistake in how the command was called (exit code 2), as opposed to a failure doing it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The commands that print no JSON, by the name `--json` is refused with: a script must not take their
/// text for a document.
fn prints_no_json(command: &Command) -> Option<&'static str> {
    match command {
        Command::Demo(_) => Some("demo"),
        Command::Completions { .. } => Some("completions"),
        Command::Cron(_) => Some("cron"),
        Command::Service(_) => Some("service print"),
        _ => None,
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let json = cli.json;
    if let Some(name) = prints_no_json(&cli.command).filter(|_| json) {
        anyhow::bail!(UsageError(format!("`executor {name}` prints no JSON: run it without --json")));
    }
    match cli.command {
        Command::Init(args) => init::run(cli.config.as_deref(), args, json).await,
        Command::Demo(args) => demo::run(args).await,
        Command::Doctor => doctor::run(cli.config.as_deref(), json).await,
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "executor", &mut std::io::stdout());
            Ok(())
        }
        Command::Cron(c) => schedule::cron(cli.config.as_deref(), c),
        Command::Service(ServiceCommand::Print(args)) => schedule::service(cli.config.as_deref(), args),
        Command::Logs(args) => worker::logs(&context::load_config(cli.config.as_deref())?, args, json).await,
        Command::Serve(args) => serve::run(cli.config.as_deref(), args, json).await,
        Command::Webhooks(c) => webhooks::run(&context::load_config(cli.config.as_deref())?, c, json),
        Command::Config(c) => config::run(cli.config.as_deref(), c, json),
        Command::Prompts(c) => prompts::run(&context::load_config(cli.config.as_deref())?, c, json),
        command => {
            let actor = context::actor(cli.actor)?;
            let mut ctx = if only_reads(&command) {
                Context::open_existing(cli.config.as_deref()).await?
            } else {
                Context::open(cli.config.as_deref()).await?
            };
            ctx.actor = actor;
            if let Command::Runner(args) = command {
                let store = ctx.store.clone();
                let result = runner::runner(ctx, args, json).await;
                store.close().await;
                return result;
            }
            let result = dispatch(&ctx, command, json).await;
            ctx.store.close().await;
            result
        }
    }
}

async fn dispatch(ctx: &Context, command: Command, json: bool) -> anyhow::Result<()> {
    match command {
        Command::Comment(args) => runner::comment(ctx, args, json).await,
        Command::Analyzer(args) => analyzer::analyzer(ctx, args, json).await,
        Command::Init(_)
        | Command::Doctor
        | Command::Completions { .. }
        | Command::Demo(_)
        | Command::Cron(_)
        | Command::Service(_)
        | Command::Runner(_)
        | Command::Logs(_)
        | Command::Serve(_)
        | Command::Webhooks(_)
        | Command::Config(_)
        | Command::Prompts(_) => {
            unreachable!("handled before the store is opened")
        }
        Command::Worker(c) => worker::run(ctx, c, json).await,
        Command::Intake(args) => intake::run(ctx, args, json).await,
        Command::Queue(c) => queue::run(ctx, c, json).await,
        Command::Approve { gids, skip_triage } => queue::approve(ctx, &gids, skip_triage, json).await,
        Command::Skip { gid, reason } => queue::skip(ctx, &gid, &reason, json).await,
        Command::Runs(c) => runs::run(ctx, c, json).await,
        Command::Plan(c) => plan::plan(ctx, c, json).await,
        Command::Answer(args) => plan::answer(ctx, args, json).await,
        Command::Users(c) => users::run(ctx, c, json).await,
        Command::Status => status::status(ctx, json).await,
        Command::Events(args) => status::events(ctx, args, json).await,
        Command::Insights(args) => insights::run(ctx, args, json).await,
        Command::Writeback { gid } => writeback::list(ctx, gid.as_deref(), json).await,
        Command::Migrate => status::migrate(ctx, json),
        Command::Import(args) => import::run(ctx, args, json).await,
        Command::Reanalyze(args) => reanalyze::run(ctx, args, json).await,
    }
}

/// executor's own log lines go to stderr; `EXECUTOR_LOG` (or `RUST_LOG`) sets the level (default info
/// for the runner's progress).
fn init_logging(default: &str) {
    let filter = std::env::var("EXECUTOR_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| default.into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

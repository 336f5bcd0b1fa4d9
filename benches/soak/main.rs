//! The soak: executor left running as its users leave it — on cron, for a long time — while tasks
//! arrive, agents misbehave, the forge and the tracker fail, a human acts at odd moments and hosts die;
//! and the invariants checked the whole time. Run with
//!
//! ```text
//! cargo bench --bench soak -- [--forge github|gitlab] [--minutes N] [--db sqlite|postgres] [--hosts K] [--seed S]
//! ```
//!
//! (`cargo bench --profile dev --bench soak` reuses the tests' build, as CI does). It prints a report
//! and exits 1 when anything was lost, duplicated or silently stuck, or an invariant broke.
//!
//! `--forge` picks the variant: `github` (the default) is GitHub with tasks from Asana; `gitlab` is
//! GitLab with tasks from Jira. Both run the same soak through two seams (`sides`): the `Forge` (pull or
//! merge requests, CI, executor's comments: `side_github`, `side_gitlab`) and the `Tracker` (tasks and
//! executor's write-back: `side_asana`, `side_jira`).
//!
//! What runs (each part in a file of its own):
//! - `world`: a temporary directory with a bare repository (the forge's side of git), the tests' fake
//!   forge serving it and the tracker's fake, both with a fault schedule (`chaos`);
//! - `host`: K hosts, each with its own clone, config and cron that restarts `executor runner` (and on
//!   the first host `executor analyzer`) whenever it exits, as cron would, with every duration
//!   compressed to seconds; SQLite with one host, or PostgreSQL (a schema of its own) with K;
//! - `traffic`: tasks arriving in the tracker (new, edited, completed, reassigned), a human who approves,
//!   skips, comments (trusted and not, some in the same second as a completion), closes a pull request
//!   now and then, pushes to a branch by hand and merges what is complete; and CI, which answers each
//!   dispatch (GitHub) or pipeline (GitLab) with a `ci` result (failing during storms, now and then
//!   never);
//! - `agent.sh`: the agent, playing Claude Code's output, with a behaviour drawn per worker: finish,
//!   fail, crash, hang, flood, overspend, answer garbage, write outside its worktree, overrun;
//! - `chaos`: faults (~5% of requests to each fake, every kind; a tracker's comment carried out and
//!   answered 502 now and then), kills (runner, whole host, analyzer), a host paused past its lease, CI
//!   storms, a rate-limit window that empties;
//! - `watch`: every ~200 ms, the process table and the database against the limits; every 2 s each
//!   runner's memory, open files and database connections;
//! - `verdict`: at the end, after a drain without faults, what became of every task, duplicates,
//!   money, latencies and the report.

mod chaos;
mod db;
#[path = "../../tests/fake_asana/mod.rs"]
mod fake_asana;
#[path = "../../tests/fake_github/mod.rs"]
mod fake_github;
#[path = "../../tests/fake_gitlab/mod.rs"]
mod fake_gitlab;
#[path = "../../tests/fake_jira/mod.rs"]
mod fake_jira;
mod host;
mod leftovers;
#[path = "../support/pg.rs"]
mod pg;
mod rng;
mod side_asana;
mod side_github;
mod side_gitlab;
mod side_jira;
mod sides;
mod traffic;
mod verdict;
mod watch;
mod world;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;

use world::World;

#[derive(Debug, Clone, Parser)]
#[command(about = "executor's soak: a compressed week of traffic, faults and crashes, checked throughout")]
pub struct Args {
    /// The forge, and with it the tracker: `github` (tasks from Asana) or `gitlab` (tasks from Jira).
    #[arg(long, default_value = "github")]
    forge: String,
    /// Minutes of traffic (tasks, faults, kills); a drain without faults follows.
    #[arg(long, default_value_t = 3.0)]
    minutes: f64,
    /// `sqlite` (one host) or `postgres` (EXECUTOR_BENCH_DATABASE_URL, else
    /// postgres://root@127.0.0.1:5432/test; a schema of its own).
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Hosts sharing the database (PostgreSQL only).
    #[arg(long, default_value_t = 3)]
    hosts: usize,
    /// Drives every random choice of the soak (the agents draw their own behaviour with these weights).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// New tasks per minute arriving in the tracker.
    #[arg(long, default_value_t = 8.0)]
    tasks_per_minute: f64,
    /// The longest drain after the traffic, in minutes.
    #[arg(long, default_value_t = 4.0)]
    drain_minutes: f64,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Keep the soak's directory (configs, logs, the SQLite database) and print where it is; a soak that
    /// fails always keeps it.
    #[arg(long)]
    keep: bool,
    // `cargo bench` passes `--bench` to every benchmark program.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Which fakes the soak runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    GitHubAsana,
    GitLabJira,
}

impl Args {
    pub fn variant(&self) -> Variant {
        if self.forge == "gitlab" { Variant::GitLabJira } else { Variant::GitHubAsana }
    }

    pub fn postgres(&self) -> bool {
        self.db == "postgres"
    }

    pub fn host_count(&self) -> usize {
        if self.postgres() { self.hosts.max(1) } else { 1 }
    }
}

/// Set when the traffic phase is over: the traffic and the chaos stop, the drain begins.
#[derive(Clone, Default)]
pub struct Phase {
    calm: Arc<AtomicBool>,
}

impl Phase {
    pub fn calm(&self) -> bool {
        self.calm.load(Ordering::SeqCst)
    }

    fn set_calm(&self) {
        self.calm.store(true, Ordering::SeqCst);
    }
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if args.db != "sqlite" && args.db != "postgres" {
        eprintln!("soak: --db must be sqlite or postgres, not {:?}", args.db);
        return std::process::ExitCode::from(2);
    }
    if args.forge != "github" && args.forge != "gitlab" {
        eprintln!("soak: --forge must be github or gitlab, not {:?}", args.forge);
        return std::process::ExitCode::from(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let passed = runtime.block_on(soak(args));
    runtime.shutdown_timeout(Duration::from_secs(2));
    if passed { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}

async fn soak(args: Args) -> bool {
    let started = Instant::now();
    let world = match World::build(&args).await {
        Ok(world) => Arc::new(world),
        Err(e) => {
            eprintln!("soak: cannot set up: {e:#}");
            return false;
        }
    };
    eprintln!(
        "soak: {} + {}, {} minutes on {} with {} host(s), seed {}, in {}",
        world.forge.name(),
        world.tracker.name(),
        args.minutes,
        args.db,
        world.hosts.len(),
        args.seed,
        world.dir.path().display()
    );
    let phase = Phase::default();
    let watch = watch::Watch::start(world.clone());
    world.start_crons();
    let traffic = traffic::Traffic::start(world.clone(), phase.clone(), args.seed, args.tasks_per_minute);
    let chaos = chaos::Chaos::start(world.clone(), phase.clone(), args.seed);

    let traffic_for = Duration::from_secs_f64(args.minutes * 60.0);
    let mut last_progress = Instant::now();
    while started.elapsed() < traffic_for {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if last_progress.elapsed() >= Duration::from_secs(30) {
            last_progress = Instant::now();
            eprintln!(
                "soak: {:>5.1} min  {}",
                started.elapsed().as_secs_f64() / 60.0,
                world.progress_line().await
            );
        }
    }
    eprintln!(
        "soak: traffic over after {:.1} min; draining without faults",
        started.elapsed().as_secs_f64() / 60.0
    );
    phase.set_calm();
    let chaos_report = chaos.finish().await;
    world.heal_all();
    let drain_started = Instant::now();
    let drain_for = Duration::from_secs_f64(args.drain_minutes * 60.0);
    while drain_started.elapsed() < drain_for {
        tokio::time::sleep(Duration::from_secs(2)).await;
        if verdict::settled(&world).await {
            break;
        }
        if last_progress.elapsed() >= Duration::from_secs(30) {
            last_progress = Instant::now();
            eprintln!("soak: draining  {}", world.progress_line().await);
        }
    }
    let traffic_report = traffic.finish().await;
    world.stop_crons();
    let watch_report = watch.finish().await;
    let report =
        verdict::judge(&world, &args, started.elapsed(), traffic_report, chaos_report, watch_report).await;
    println!("{}", report.text());
    if let Some(path) = &args.json
        && let Err(e) = std::fs::write(path, report.json())
    {
        eprintln!("soak: cannot write {}: {e}", path.display());
    }
    if args.keep || !report.passed() {
        let kept = world.keep();
        eprintln!("soak: kept {} (its database too, for SQLite)", kept.display());
    }
    world.drop_schema().await;
    report.passed()
}

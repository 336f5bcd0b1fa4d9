//! The world the hosts live in: a temporary directory holding the bare repository the forge serves, the
//! forge's fake (GitHub or GitLab) and the tracker's (Asana or Jira), the database (an SQLite file, or a
//! PostgreSQL schema of the soak's own), a directory no agent may write ("outside"), and the hosts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Context;
use nix::sys::signal::Signal;

use crate::db::Db;
use crate::host::{self, Host, Shared};
use crate::side_asana::AsanaSide;
use crate::side_github::GitHubSide;
use crate::side_gitlab::GitLabSide;
use crate::side_jira::JiraSide;
use crate::sides::{Forge, Tracker};
use crate::{Args, Variant, pg};

/// Agents on one host (`runner.max_workers`) and on all hosts together (`cluster.max_workers`).
pub const HOST_MAX: usize = 2;
pub const CLUSTER_MAX: usize = 4;

pub struct World {
    pub dir: tempfile::TempDir,
    pub remote: PathBuf,
    /// Where agents must not write; `escape` agents try.
    pub outside: PathBuf,
    /// Each agent session's own account of what it spent (see `agent.sh`).
    pub ledger: PathBuf,
    pub forge: Box<dyn Forge>,
    pub tracker: Box<dyn Tracker>,
    pub db: Db,
    pub hosts: Vec<Host>,
    pub cluster_max: usize,
    /// The PostgreSQL schema to drop at the end, and the server's base URL.
    schema: Option<(String, String)>,
    pub started: Instant,
    /// A CI storm: every check fails while set.
    pub ci_failing: AtomicBool,
    /// Hosts frozen now (None) or thawed at a moment (Some).
    frozen: Mutex<BTreeMap<String, Option<Instant>>>,
}

impl World {
    pub async fn build(args: &Args) -> anyhow::Result<World> {
        let dir = tempfile::Builder::new().prefix("executor-soak-").tempdir()?;
        let remote = dir.path().join("github.git");
        host::git(dir.path(), &["init", "-q", "--bare", "-b", "main", &remote.display().to_string()])?;
        let seed = dir.path().join("seed");
        host::git(dir.path(), &["clone", "-q", &remote.display().to_string(), &seed.display().to_string()])?;
        std::fs::write(seed.join("README"), "app\n")?;
        host::git(&seed, &["add", "README"])?;
        host::git(&seed, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial"])?;
        host::git(&seed, &["push", "-q", "origin", "HEAD:refs/heads/main"])?;
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside)?;
        let ledger = dir.path().join("ledger");
        std::fs::create_dir(&ledger)?;

        let (forge, tracker): (Box<dyn Forge>, Box<dyn Tracker>) = match args.variant() {
            Variant::GitHubAsana => {
                (Box::new(GitHubSide::start(remote.clone()).await), Box::new(AsanaSide::start().await))
            }
            Variant::GitLabJira => {
                (Box::new(GitLabSide::start(remote.clone()).await), Box::new(JiraSide::start().await))
            }
        };

        let (database_url, schema) = if args.postgres() {
            let base = std::env::var("EXECUTOR_BENCH_DATABASE_URL")
                .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_string());
            let url = pg::pg_schema(&base, "soak").await;
            let schema = format!("bench_soak_{}", std::process::id());
            (url, Some((schema, base)))
        } else {
            (format!("sqlite://{}", dir.path().join("executor.db").display()), None)
        };
        let count = args.host_count();
        let cluster_max = if count > 1 { CLUSTER_MAX } else { HOST_MAX };
        let shared = Shared {
            database_url: &database_url,
            remote: &remote,
            forge: forge.config(),
            tracker: tracker.config(),
            ledger: &ledger,
            host_max: HOST_MAX,
            cluster_max: (count > 1).then_some(CLUSTER_MAX),
        };
        let names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
        let mut hosts = Vec::new();
        for i in 0..count {
            let name = names.get(i).map_or_else(|| format!("host{i}"), |n| n.to_string());
            hosts.push(Host::create(dir.path(), &name, i == 0, &shared)?);
        }
        let (ok, out) = hosts[0].run(&["migrate"]);
        anyhow::ensure!(ok, "executor migrate failed: {out}");
        let db = Db::connect(&database_url).await.context("connect to the soak's database")?;
        Ok(World {
            dir,
            remote,
            outside,
            ledger,
            forge,
            tracker,
            db,
            hosts,
            cluster_max,
            schema,
            started: Instant::now(),
            ci_failing: AtomicBool::new(false),
            frozen: Mutex::default(),
        })
    }

    /// The environment every process of the crons gets (and passes on to its agents).
    fn agent_env(&self) -> Vec<(String, String)> {
        vec![
            ("SOAK_OUTSIDE".to_string(), self.outside.display().to_string()),
            ("SOAK_LEDGER".to_string(), self.ledger.display().to_string()),
            ("SOAK_MIX".to_string(), "72 5 5 4 3 2 4 3 2".to_string()),
            ("RUST_LOG".to_string(), "info".to_string()),
        ]
    }

    pub fn start_crons(&self) {
        for host in &self.hosts {
            host.start(&self.agent_env());
        }
    }

    /// Every host up and running again: nothing held down, nothing frozen.
    pub fn heal_all(&self) {
        for host in &self.hosts {
            for cron in host.crons() {
                cron.up();
                cron.signal(Signal::SIGCONT);
            }
            for agent in crate::watch::agents(&self.hosts) {
                if agent.host == host.name {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(-agent.pgid), Signal::SIGCONT);
                }
            }
        }
    }

    /// Every host at once: stopped one by one, the last hosts would take over the first ones' runs
    /// (their leases given back) and leave worktrees behind that no later runner of theirs sweeps.
    pub fn stop_crons(&self) {
        let crons: Vec<&host::Cron> = self.hosts.iter().flat_map(Host::crons).collect();
        for cron in &crons {
            cron.halt();
        }
        for cron in &crons {
            cron.join(std::time::Duration::from_secs(20));
        }
    }

    /// Runs by state, and the fakes' request counts, on one line.
    pub async fn progress_line(&self) -> String {
        let states = match self.db.run_states().await {
            Ok(rows) => rows.iter().map(|(s, n)| format!("{s} {n}")).collect::<Vec<_>>().join(", "),
            Err(e) => format!("(cannot read runs: {e})"),
        };
        format!(
            "runs: {states}; {}; {}: {} requests",
            self.forge.progress(),
            self.tracker.name().to_lowercase(),
            self.tracker.request_count()
        )
    }

    /// Keeps the directory after the soak; returns where it is.
    pub fn keep(&self) -> PathBuf {
        let path = self.dir.path().to_path_buf();
        let kept = path.with_extension("kept");
        if copy_dir(&path, &kept).is_ok() { kept } else { path }
    }

    pub async fn drop_schema(&self) {
        self.db.close().await;
        let Some((schema, base)) = &self.schema else { return };
        if let Ok(admin) = sqlx::PgPool::connect(base).await {
            let _ = sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await;
            admin.close().await;
        }
    }

    pub fn freeze(&self, host: &str) {
        self.frozen.lock().unwrap_or_else(|p| p.into_inner()).insert(host.to_string(), None);
    }

    pub fn thaw(&self, host: &str) {
        self.frozen.lock().unwrap_or_else(|p| p.into_inner()).insert(host.to_string(), Some(Instant::now()));
    }

    /// Hosts frozen now or thawed less than `grace` ago.
    pub fn thawing(&self, grace: std::time::Duration) -> Vec<String> {
        let frozen = self.frozen.lock().unwrap_or_else(|p| p.into_inner());
        frozen
            .iter()
            .filter(|(_, at)| at.is_none_or(|at| at.elapsed() < grace))
            .map(|(h, _)| h.clone())
            .collect()
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    let status = std::process::Command::new("cp").arg("-a").arg(from).arg(to).status()?;
    if status.success() { Ok(()) } else { Err(std::io::Error::other("cp -a failed")) }
}

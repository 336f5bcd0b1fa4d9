//! The end of the soak: what became of every task that was approved, what was doubled, whether every
//! dollar an agent reported is on its run, how long things took, what the forge was asked, how the
//! runners' memory, open files and connections went, and what was thrown at it. The report says
//! `PASSED` only with nothing lost, duplicated or silently stuck and no invariant broken.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::Args;
use crate::chaos::ChaosReport;
use crate::db::{EventRow, NoticeRow, RunRow, SessionRow};
use crate::host::CHECK_TIMEOUT;
use crate::sides::PrState;
use crate::traffic::TrafficReport;
use crate::watch::WatchReport;
use crate::world::World;

/// Broken invariants by kind, with the first few of each as examples.
#[derive(Debug, Default)]
pub struct Violations {
    pub counts: BTreeMap<String, u64>,
    pub examples: BTreeMap<String, Vec<String>>,
}

impl Violations {
    pub fn add(&mut self, kind: &str, what: String) {
        *self.counts.entry(kind.to_string()).or_default() += 1;
        let examples = self.examples.entry(kind.to_string()).or_default();
        if examples.len() < 5 && !examples.contains(&what) {
            examples.push(what);
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// What became of one approved task.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Complete,
    Merged,
    /// Abandoned, and the human was told (a notice).
    AbandonedTold,
    /// Waiting on a human who was told (budget, a check that never reported, a review round limit).
    WaitingTold,
    /// Still being worked (a live worker, or it moved recently).
    InFlight,
    /// Approved, then taken back before any run (its queue status says how).
    Withdrawn,
    /// Its run is queued and never had a worker, while every slot was busy to the end: more work
    /// arrived than the agents could take (not a fault of executor's, but said).
    Backlog,
    /// Approved, no run, nothing happening.
    Lost,
    /// Abandoned without a notice.
    AbandonedSilently,
    /// Not finished, no notice, no worker, and nothing happened for twice `check_timeout`.
    SilentlyStuck,
}

impl Outcome {
    fn name(&self) -> &'static str {
        match self {
            Outcome::Complete => "complete (pull request ready)",
            Outcome::Merged => "merged",
            Outcome::AbandonedTold => "abandoned, human told",
            Outcome::WaitingTold => "waiting on the human, told",
            Outcome::InFlight => "still in flight",
            Outcome::Withdrawn => "withdrawn before a run",
            Outcome::Backlog => "queued behind busy agents at the end",
            Outcome::Lost => "LOST",
            Outcome::AbandonedSilently => "ABANDONED SILENTLY",
            Outcome::SilentlyStuck => "SILENTLY STUCK",
        }
    }

    fn is_failure(&self) -> bool {
        matches!(self, Outcome::Lost | Outcome::AbandonedSilently | Outcome::SilentlyStuck)
    }
}

/// Everything the outcome of a task depends on, read once.
struct Snapshot {
    now: DateTime<Utc>,
    events: Vec<EventRow>,
    runs: Vec<RunRow>,
    sessions: Vec<SessionRow>,
    notices: Vec<NoticeRow>,
    last_event: BTreeMap<i64, DateTime<Utc>>,
    merged_branches: BTreeSet<String>,
    statuses: BTreeMap<String, String>,
    /// Every agent slot was taken at some look of the last minute.
    slots_full: bool,
}

impl Snapshot {
    async fn read(world: &World, slots_full: bool) -> Result<Snapshot, sqlx::Error> {
        let merged_branches =
            world.forge.prs().into_iter().filter(|p| p.state == PrState::Merged).map(|p| p.branch).collect();
        Ok(Snapshot {
            now: world.db.now().await?,
            events: world.db.events_after(0).await?,
            runs: world.db.runs().await?,
            sessions: world.db.sessions().await?,
            notices: world.db.notices().await?,
            last_event: world.db.last_event_per_run().await?.into_iter().collect(),
            merged_branches,
            statuses: world.db.task_statuses().await?.into_iter().collect(),
            slots_full,
        })
    }

    /// Tasks ever approved, with the moment of their first approval.
    fn approved(&self) -> BTreeMap<String, DateTime<Utc>> {
        let mut approved = BTreeMap::new();
        for e in &self.events {
            if e.kind == "queue_status"
                && e.to_state.as_deref() == Some("approved")
                && let Some(gid) = &e.task_gid
            {
                approved.entry(gid.clone()).or_insert(e.at);
            }
        }
        approved
    }

    fn outcome(&self, gid: &str, approved_at: DateTime<Utc>) -> Outcome {
        let Some(run) = self.runs.iter().rev().find(|r| r.task_gid == gid) else {
            if self.statuses.get(gid).is_some_and(|s| s != "approved") {
                return Outcome::Withdrawn;
            }
            let waited = (self.now - approved_at).to_std().unwrap_or_default();
            return if waited > Duration::from_secs(60) { Outcome::Lost } else { Outcome::InFlight };
        };
        let notices: Vec<&NoticeRow> = self.notices.iter().filter(|n| n.run_id == Some(run.id)).collect();
        match run.state.as_str() {
            "complete" if run.branch.as_ref().is_some_and(|b| self.merged_branches.contains(b)) => {
                Outcome::Merged
            }
            "complete" => Outcome::Complete,
            "abandoned" if notices.iter().any(|n| n.kind == "abandoned") => Outcome::AbandonedTold,
            "abandoned" => Outcome::AbandonedSilently,
            _ => {
                if self.sessions.iter().any(|s| s.run_id == run.id && !s.ended) {
                    return Outcome::InFlight;
                }
                // A stuck worker's notice asks nothing of the human: the run tries again after its
                // back-off (and is abandoned, told, past `max_stuck`). Taking it for a wait ended the
                // drain while such runs went on (soak finding, GitLab + Jira on 3 hosts).
                if notices.iter().any(|n| n.kind == "needs_human" && !n.key.starts_with("stuck:")) {
                    return Outcome::WaitingTold;
                }
                let quiet = self
                    .last_event
                    .get(&run.id)
                    .map(|at| (self.now - *at).to_std().unwrap_or_default())
                    .unwrap_or_default();
                let never_started = !self.sessions.iter().any(|s| s.run_id == run.id);
                // Work still to do, behind busy agents: a run never started, or one whose next worker
                // (a review, a fix) waits for a slot, while every slot is taken.
                if self.slots_full && ((run.state == "queued" && never_started) || run.waits_for_a_slot) {
                    return Outcome::Backlog;
                }
                if quiet > CHECK_TIMEOUT * 2 { Outcome::SilentlyStuck } else { Outcome::InFlight }
            }
        }
    }

    fn outcomes(&self) -> BTreeMap<String, Outcome> {
        self.approved().into_iter().map(|(gid, at)| (gid.clone(), self.outcome(&gid, at))).collect()
    }
}

/// Whether the drain can end: nothing approved is still in flight or waiting to start.
pub async fn settled(world: &World) -> bool {
    // A queued run that never started is work still to do, not a verdict yet.
    let tasks_settled = match Snapshot::read(world, true).await {
        Ok(snapshot) => {
            !snapshot.outcomes().values().any(|o| matches!(o, Outcome::InFlight | Outcome::Backlog))
        }
        Err(_) => false,
    };
    // And each host has removed what its runs left (its next runner sweeps when cron starts it).
    tasks_settled && crate::leftovers::worktrees(world).await.is_ok_and(|l| l.stray.is_empty())
}

pub struct Report {
    text: String,
    json: Value,
    passed: bool,
}

impl Report {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(&self.json).unwrap_or_default()
    }

    pub fn passed(&self) -> bool {
        self.passed
    }
}

pub async fn judge(
    world: &World,
    args: &Args,
    elapsed: Duration,
    traffic: TrafficReport,
    chaos: ChaosReport,
    mut watch: WatchReport,
) -> Report {
    let snapshot = match Snapshot::read(world, watch.busiest_last_minute() >= world.cluster_max).await {
        Ok(s) => s,
        Err(e) => {
            return Report {
                text: format!("soak: FAILED: cannot read the database: {e}"),
                json: json!({}),
                passed: false,
            };
        }
    };
    let outcomes = snapshot.outcomes();
    let mut by_outcome: BTreeMap<&str, u64> = BTreeMap::new();
    for outcome in outcomes.values() {
        *by_outcome.entry(outcome.name()).or_default() += 1;
    }
    let failures: Vec<String> = outcomes
        .iter()
        .filter(|(_, o)| o.is_failure())
        .map(|(gid, o)| format!("{gid}: {}", o.name()))
        .collect();
    for f in &failures {
        watch.violations.add("task outcome", f.clone());
    }
    let duplicates = duplicates(world, snapshot.statuses.keys());
    let leftovers = match crate::leftovers::worktrees(world).await {
        Ok(l) => l,
        Err(e) => {
            watch.violations.add("worktrees", format!("cannot list the hosts' worktrees: {e}"));
            Default::default()
        }
    };
    for stray in &leftovers.stray {
        watch.violations.add("stray worktree", stray.clone());
    }
    let tracker_comments: usize = snapshot.statuses.keys().map(|gid| world.tracker.comments(gid).len()).sum();
    for d in &duplicates {
        watch.violations.add("duplicate", d.clone());
    }
    let money = money(&snapshot, &world.ledger);
    for m in &money.mismatches {
        watch.violations.add("money", m.clone());
    }
    let escaped: Vec<String> = std::fs::read_dir(&world.outside)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    for file in &escaped {
        watch.violations.add("agent wrote outside its worktree", file.clone());
    }
    let undelivered = snapshot.notices.iter().filter(|n| !n.delivered).count();
    let latency = latencies(&snapshot);
    let hours = elapsed.as_secs_f64() / 3600.0;
    let exits = Exits::of(world);
    let resources = resources(&watch, elapsed);
    let passed = watch.violations.total() == 0;

    let mut t = String::new();
    let _ = writeln!(t, "\n=== executor soak: {} ===", if passed { "PASSED" } else { "FAILED" });
    let _ = writeln!(
        t,
        "{} + {}, {:.1} min on {} with {} host(s) (host max {}, cluster max {}), seed {}",
        world.forge.name(),
        world.tracker.name(),
        elapsed.as_secs_f64() / 60.0,
        args.db,
        world.hosts.len(),
        crate::world::HOST_MAX,
        world.cluster_max,
        args.seed
    );
    let _ = writeln!(t, "\n-- tasks in and out");
    for (what, n) in &traffic {
        let _ = writeln!(t, "  {what:<55} {n:>6}");
    }
    let _ = writeln!(t, "  approved tasks, by outcome:");
    for (what, n) in &by_outcome {
        let _ = writeln!(t, "    {what:<53} {n:>6}");
    }
    let _ = writeln!(
        t,
        "  lost {}, duplicated {}, silently stuck {}",
        outcomes.values().filter(|o| **o == Outcome::Lost).count(),
        duplicates.len(),
        outcomes
            .values()
            .filter(|o| matches!(o, Outcome::SilentlyStuck | Outcome::AbandonedSilently))
            .count()
    );
    let _ = writeln!(
        t,
        "  notices {} ({} not delivered); comments written back to {} {tracker_comments}",
        snapshot.notices.len(),
        undelivered,
        world.tracker.name()
    );
    let _ = writeln!(t, "\n-- time from approval (p50 / p95 / n)");
    for (what, (p50, p95, n)) in &latency {
        let _ = writeln!(t, "  to {what:<20} {:>7.1} s {:>7.1} s {:>6}", p50, p95, n);
    }
    let _ = writeln!(t, "\n-- agents");
    let _ = writeln!(
        t,
        "  worker sessions {}; by end: {}",
        snapshot.sessions.len(),
        tally(snapshot.sessions.iter().map(|s| s.end_reason.clone().unwrap_or_else(|| "live".into())))
    );
    let _ = writeln!(
        t,
        "  dollars: {:.2} spent by the agents (their ledgers), {:.2} on their sessions, {:.2} on their runs; \
         {} mismatches ({} sessions killed between a message and its ledger line)",
        money.reported,
        money.on_sessions,
        money.on_runs,
        money.mismatches.len(),
        money.killed_mid_line
    );
    let _ = writeln!(t, "  files written outside a worktree: {}", escaped.len());
    let (forge_requests, forge_json) = world.forge.report(hours);
    let _ = writeln!(t, "\n-- {}\n{forge_requests}", world.forge.name());
    let _ = writeln!(t, "\n-- faults injected and survived");
    let mut faults = world.forge.faults_served();
    faults.extend(chaos.iter().map(|(k, n)| (k.clone(), *n)));
    faults.insert("runner died without exiting (SIGKILL)".into(), exits.killed);
    for (what, n) in &faults {
        let _ = writeln!(t, "  {what:<55} {n:>6}");
    }
    let _ = writeln!(
        t,
        "  runner processes started by cron: {}; exited 0: {}, exited with an error: {}, killed: {}",
        exits.started,
        exits.ok,
        exits.errors.values().sum::<u64>(),
        exits.killed
    );
    for (line, n) in exits.errors.iter().take(12) {
        let _ = writeln!(t, "    {n:>5} × {line}");
    }
    let _ = writeln!(t, "\n-- runners' resources (max over each third of the soak)");
    let _ = writeln!(t, "{resources}");
    let _ = writeln!(t, "\n-- invariants ({} samples of the process table and the database)", watch.samples);
    let _ = writeln!(
        t,
        "  most agents at once {} (per host {:?}); agents of a thawing host not counted: {} looks",
        watch.max_agents, watch.max_agents_per_host, watch.thaw_exemptions
    );
    let _ = writeln!(
        t,
        "  two agents on one run after a thaw (looks every 10 ms while a host thaws): {} looks, longest {} ms",
        watch.thaw_overlap_looks,
        watch.thaw_overlap_longest.as_millis()
    );
    let _ = writeln!(
        t,
        "  worktrees left on the hosts: {} ({} of runs still going, {} kept with work in them, {} stray)",
        leftovers.total,
        leftovers.in_use,
        leftovers.kept.len(),
        leftovers.stray.len()
    );
    for kept in leftovers.kept.iter().take(5) {
        let _ = writeln!(t, "    kept {kept}");
    }
    if watch.violations.total() == 0 {
        let _ = writeln!(t, "  no violation");
    }
    for (kind, n) in &watch.violations.counts {
        let _ = writeln!(t, "  VIOLATION {kind}: {n}");
        for example in watch.violations.examples.get(kind).into_iter().flatten() {
            let _ = writeln!(t, "    {example}");
        }
    }
    let json = json!({
        "passed": passed,
        "minutes": elapsed.as_secs_f64() / 60.0,
        "db": args.db,
        "hosts": world.hosts.len(),
        "seed": args.seed,
        "traffic": traffic,
        "outcomes": by_outcome,
        "duplicates": duplicates,
        "latency_seconds": latency.iter().map(|(k, (p50, p95, n))| (k.clone(), json!({"p50": p50, "p95": p95, "n": n}))).collect::<BTreeMap<_, _>>(),
        "forge": world.forge.name(),
        "tracker": world.tracker.name(),
        "requests": forge_json,
        "faults": faults,
        "violations": watch.violations.counts,
        "thaw_overlap": {"looks": watch.thaw_overlap_looks, "longest_ms": watch.thaw_overlap_longest.as_millis() as u64},
        "worktrees_left": {"total": leftovers.total, "in_use": leftovers.in_use, "kept": leftovers.kept.len(), "stray": leftovers.stray.len()},
        "runners": watch.runners.iter().map(|((h, pid), looks)| json!({"host": h, "pid": pid, "looks": looks})).collect::<Vec<_>>(),
    });
    Report { text: t, json, passed }
}

/// How the cron's runners ended, and the last error line of each that exited with an error (without
/// its timestamp), counted.
struct Exits {
    started: usize,
    ok: u64,
    killed: u64,
    errors: BTreeMap<String, u64>,
}

impl Exits {
    fn of(world: &World) -> Exits {
        let mut exits = Exits { started: 0, ok: 0, killed: 0, errors: BTreeMap::new() };
        for launch in world.hosts.iter().flat_map(|h| h.runner.launches()) {
            exits.started += 1;
            match launch.ended {
                Some((_, Some(0))) => exits.ok += 1,
                Some((_, None)) => exits.killed += 1,
                Some((_, Some(code))) => {
                    let text = std::fs::read_to_string(&launch.stderr).unwrap_or_default();
                    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("(no output)");
                    // Timestamps, pids and numbers differ from one exit to the next; the words do not.
                    let words: String = last
                        .split_whitespace()
                        .skip_while(|w| w.starts_with("20") && w.contains('T'))
                        .map(|w| if w.chars().any(|c| c.is_ascii_digit()) { "N" } else { w })
                        .collect::<Vec<_>>()
                        .join(" ");
                    let words: String = words.chars().take(160).collect();
                    *exits.errors.entry(format!("exit {code}: {words}")).or_default() += 1;
                }
                None => {}
            }
        }
        exits
    }
}

fn tally(items: impl Iterator<Item = String>) -> String {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    counts.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
}

/// Pull requests opened twice for one branch, anything executor wrote on the forge twice, and any
/// comment it wrote back to a task in the tracker twice.
fn duplicates<'a>(world: &World, tasks: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut found = Vec::new();
    let tracker = world.tracker.name();
    for gid in tasks {
        let mut seen = BTreeSet::new();
        for text in world.tracker.comments(gid) {
            if !seen.insert(text.clone()) {
                let text: String = text.chars().take(80).collect();
                found.push(format!("{tracker} task {gid} has this comment twice: {text:?}"));
            }
        }
    }
    let mut by_branch: BTreeMap<String, Vec<(i64, PrState)>> = BTreeMap::new();
    for pr in world.forge.prs() {
        by_branch.entry(pr.branch.clone()).or_default().push((pr.number, pr.state));
    }
    for (branch, mut prs) in by_branch {
        prs.sort_by_key(|(number, _)| *number);
        // Only the newest may be open: an older one still open beside it is a double.
        for (number, state) in prs.iter().rev().skip(1) {
            if *state == PrState::Open {
                found.push(format!("pull request #{number} on {branch} is open beside a newer one"));
            }
        }
    }
    let mut seen: BTreeMap<crate::sides::Posted, u64> = BTreeMap::new();
    for posted in world.forge.posted() {
        *seen.entry(posted).or_default() += 1;
    }
    for (p, n) in seen {
        if n > 1 {
            let body: String = p.body.chars().take(80).collect();
            found.push(format!(
                "{} posted {n} times on #{} (reply to {:?}): {body:?}",
                p.kind, p.number, p.reply_to
            ));
        }
    }
    found
}

struct Money {
    reported: f64,
    on_sessions: f64,
    on_runs: f64,
    /// Sessions killed between printing a message and writing it to the ledger: recorded one message
    /// more than the ledger says, which is right (the output is what executor reads).
    killed_mid_line: usize,
    mismatches: Vec<String>,
}

/// Every dollar an agent spent (its ledger: its result's total, else its messages) must be on its
/// session, and each run's cost must be its sessions' sum.
fn money(snapshot: &Snapshot, ledgers: &Path) -> Money {
    let mut m =
        Money { reported: 0.0, on_sessions: 0.0, on_runs: 0.0, killed_mid_line: 0, mismatches: Vec::new() };
    let mut per_run: BTreeMap<i64, f64> = BTreeMap::new();
    for s in &snapshot.sessions {
        *per_run.entry(s.run_id).or_default() += s.cost_usd;
        m.on_sessions += s.cost_usd;
        let Some(sid) = s.session_id.as_deref().filter(|_| s.ended) else { continue };
        let ledger = Ledger::read(&ledgers.join(sid));
        let reported = ledger.dollars();
        m.reported += reported;
        if (reported - s.cost_usd).abs() < 0.005 {
            continue;
        }
        let one_more = ledger.total.is_none()
            && s.end_reason.as_deref() != Some("finished")
            && [0.01, 1.0].iter().any(|last| (reported + last - s.cost_usd).abs() < 0.005);
        if one_more {
            m.killed_mid_line += 1;
        } else {
            m.mismatches.push(format!(
                "session {} ({}, {}, ended {:?}): the agent spent ${reported:.2}, recorded ${:.2}",
                s.id, s.kind, s.host, s.end_reason, s.cost_usd
            ));
        }
    }
    for run in &snapshot.runs {
        m.on_runs += run.cost_usd;
        let sum = per_run.get(&run.id).copied().unwrap_or(0.0);
        if (sum - run.cost_usd).abs() > 0.005 {
            m.mismatches.push(format!(
                "run {}: ${:.2} recorded, its sessions sum to ${sum:.2}",
                run.id, run.cost_usd
            ));
        }
    }
    m
}

/// One agent session's ledger: a line `message CENTS` per message, `total CENTS` with its result.
struct Ledger {
    messages: u64,
    total: Option<u64>,
}

impl Ledger {
    fn read(path: &Path) -> Ledger {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut ledger = Ledger { messages: 0, total: None };
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("message", cents)) => ledger.messages += cents.trim().parse::<u64>().unwrap_or(0),
                Some(("total", cents)) => ledger.total = cents.trim().parse().ok(),
                _ => {}
            }
        }
        ledger
    }

    fn dollars(&self) -> f64 {
        self.total.unwrap_or(self.messages) as f64 / 100.0
    }
}

/// p50 / p95 / count of the seconds from a task's first approval to its run's first pull request and
/// first completion.
fn latencies(snapshot: &Snapshot) -> BTreeMap<String, (f64, f64, usize)> {
    let approved = snapshot.approved();
    let task_of: BTreeMap<i64, &str> = snapshot.runs.iter().map(|r| (r.id, r.task_gid.as_str())).collect();
    let mut firsts: BTreeMap<(&str, &str), DateTime<Utc>> = BTreeMap::new();
    for e in &snapshot.events {
        let (Some(run), Some(to)) = (e.run_id, e.to_state.as_deref()) else { continue };
        if e.kind != "run_state" || !matches!(to, "pr" | "complete") {
            continue;
        }
        if let Some(gid) = task_of.get(&run) {
            firsts.entry((gid, if to == "pr" { "pull request" } else { "complete" })).or_insert(e.at);
        }
    }
    let mut out = BTreeMap::new();
    for what in ["pull request", "complete"] {
        let mut secs: Vec<f64> = firsts
            .iter()
            .filter(|((_, w), _)| *w == what)
            .filter_map(|((gid, _), at)| {
                Some((*at - *approved.get(*gid)?).num_milliseconds() as f64 / 1000.0)
            })
            .collect();
        secs.sort_by(f64::total_cmp);
        let q = |p: f64| {
            secs.get(((secs.len().saturating_sub(1)) as f64 * p).round() as usize).copied().unwrap_or(0.0)
        };
        out.insert(what.to_string(), (q(0.5), q(0.95), secs.len()));
    }
    out
}

/// The runners' memory, open files and database connections: the most seen in each third of the soak,
/// and the longest-lived runner's first and last look.
fn resources(watch: &WatchReport, elapsed: Duration) -> String {
    let third = elapsed.as_secs_f64() / 3.0;
    let mut out = String::new();
    for (i, name) in ["start", "middle", "end"].iter().enumerate() {
        let looks = watch
            .runners
            .values()
            .flatten()
            .filter(|u| u.at_secs >= third * i as f64 && u.at_secs < third * (i + 1) as f64);
        let (mut rss, mut files, mut conns, mut n) = (0, 0, 0, 0);
        for u in looks {
            rss = rss.max(u.rss_kb);
            files = files.max(u.open_files);
            conns = conns.max(u.db_connections);
            n += 1;
        }
        let _ = writeln!(
            out,
            "  {name:<7} peak RSS {:>6.1} MB, open files {files:>4}, database connections {conns:>3} ({n} looks)",
            rss as f64 / 1024.0
        );
    }
    if let Some(((host, pid), looks)) = watch.runners.iter().max_by_key(|(_, looks)| looks.len())
        && let (Some(first), Some(last)) = (looks.first(), looks.last())
    {
        let _ = write!(
            out,
            "  longest-lived runner: {host} pid {pid}, {:.0} s: RSS {:.1} → {:.1} MB, open files {} → {}, connections {} → {}",
            last.at_secs - first.at_secs,
            first.rss_kb as f64 / 1024.0,
            last.rss_kb as f64 / 1024.0,
            first.open_files,
            last.open_files,
            first.db_connections,
            last.db_connections
        );
    }
    out
}

//! What goes wrong, on a schedule drawn from the seed, until the drain begins:
//! - the forge: ~5% of requests get a fault, every kind its fake has (`side_github.rs`,
//!   `side_gitlab.rs`: a 5xx, a 429 with `retry-after`, a reset connection, an answer slower than the
//!   client's `request_timeout`, a 502 after the write went through, a write carried out after the
//!   client's timeout or never answered, …), and now and then its rate-limit window empties until a
//!   reset;
//! - the tracker: ~5% of requests get a read fault (a 429 with `Retry-After`, a 500 or 503, a body that
//!   is not JSON or a dropped connection), and every 15–40 s executor's next comment there is carried
//!   out and answered 502;
//! - hosts: a runner killed (SIGKILL; its agents live on), the analyzer killed, a whole host killed
//!   (runner, analyzer and agents) and kept down past its lease, a host frozen (SIGSTOP, as a laptop
//!   sleeps) past its lease and thawed;
//! - CI: storms in which every check fails.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::host::LEASE_TTL;
use crate::rng::Rng;
use crate::world::World;
use crate::{Phase, watch};

/// The share of requests to each fake that get a fault.
const FAULT_RATE: f64 = 0.05;
/// The forge's rate-limit window is given back this often: the soak compresses days into an hour, and
/// a real hour's budget would last a compressed few minutes.
const WINDOW_REFILL: Duration = Duration::from_secs(600);

/// What the chaos did, by kind: the tracker's faults (the forge's are counted by its fake as it serves
/// them) and the blows to hosts and CI.
pub type ChaosReport = BTreeMap<String, u64>;

pub struct Chaos {
    tasks: Vec<tokio::task::JoinHandle<ChaosReport>>,
}

impl Chaos {
    pub fn start(world: Arc<World>, phase: Phase, seed: u64) -> Chaos {
        let tasks = vec![
            // The names of the generators are those they had when GitHub and Asana were the only sides.
            tokio::spawn(forge_faults(world.clone(), phase.clone(), Rng::new(seed, "github faults"))),
            tokio::spawn(tracker_faults(world.clone(), phase.clone(), Rng::new(seed, "asana faults"))),
            tokio::spawn(blows(world.clone(), phase.clone(), Rng::new(seed, "blows"))),
            tokio::spawn(ci_storms(world, phase, Rng::new(seed, "ci storms"))),
        ];
        Chaos { tasks }
    }

    pub async fn finish(self) -> ChaosReport {
        let mut report = ChaosReport::new();
        for task in self.tasks {
            if let Ok(part) = task.await {
                for (kind, n) in part {
                    *report.entry(kind).or_default() += n;
                }
            }
        }
        report
    }
}

/// Sleeps `d`, waking early when the drain begins; returns whether the traffic goes on.
async fn pause(phase: &Phase, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if phase.calm() {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100).min(until - Instant::now())).await;
    }
    !phase.calm()
}

async fn forge_faults(world: Arc<World>, phase: Phase, mut rng: Rng) -> ChaosReport {
    let mut report = ChaosReport::new();
    let mut seen = 0;
    let mut refilled = Instant::now();
    let mut next_window = Instant::now() + rng.secs(180.0, 420.0);
    while pause(&phase, Duration::from_millis(100)).await {
        let total = world.forge.request_count();
        for _ in seen..total {
            if rng.chance(FAULT_RATE) {
                world.forge.inject_fault(&mut rng);
            }
        }
        seen = total;
        if Instant::now() >= next_window {
            // The window empties and comes back a little later, as at the top of the hour.
            world.forge.empty_window(chrono::Utc::now() + rng.secs(10.0, 25.0));
            let what = format!("{} rate window emptied", world.forge.name().to_lowercase());
            *report.entry(what).or_default() += 1;
            next_window = Instant::now() + rng.secs(180.0, 420.0);
            refilled = Instant::now();
        } else if refilled.elapsed() >= WINDOW_REFILL {
            world.forge.refill_window();
            refilled = Instant::now();
        }
    }
    report
}

async fn tracker_faults(world: Arc<World>, phase: Phase, mut rng: Rng) -> ChaosReport {
    let mut report = ChaosReport::new();
    let mut seen = 0;
    let mut next_write_fault = Instant::now() + rng.secs(15.0, 40.0);
    while pause(&phase, Duration::from_millis(500)).await {
        let total = world.tracker.request_count();
        for _ in seen..total {
            if rng.chance(FAULT_RATE) {
                let name = world.tracker.read_fault(&mut rng);
                *report.entry(name.into()).or_default() += 1;
            }
        }
        seen = total;
        if Instant::now() >= next_write_fault {
            let name = world.tracker.write_fault();
            *report.entry(name.into()).or_default() += 1;
            next_write_fault = Instant::now() + rng.secs(15.0, 40.0);
        }
    }
    report
}

/// Kills and freezes, one every 8–25 s. A blow waits (up to 10 s) for its target to be running: a
/// runner exits when it is idle, and the cron starts the next a moment later.
async fn blows(world: Arc<World>, phase: Phase, mut rng: Rng) -> ChaosReport {
    let mut report = ChaosReport::new();
    while pause(&phase, rng.secs(8.0, 25.0)).await {
        let Some(host) = rng.pick(&world.hosts) else { break };
        let roll = rng.below(100);
        let target = if (50..68).contains(&roll) { &world.hosts[0].analyzer } else { &host.runner };
        let deadline = Instant::now() + Duration::from_secs(10);
        while target.current().is_none()
            && Instant::now() < deadline
            && pause(&phase, Duration::from_millis(100)).await
        {}
        if target.current().is_none() {
            continue;
        }
        let blow = match roll {
            0..50 => host.runner.signal(Signal::SIGKILL).map(|_| "runner killed"),
            50..68 => world.hosts[0].analyzer.signal(Signal::SIGKILL).map(|_| "analyzer killed"),
            68..85 => {
                let down_for = rng.secs(LEASE_TTL.as_secs_f64() * 1.5, LEASE_TTL.as_secs_f64() * 4.0);
                for cron in host.crons() {
                    cron.down_until(Instant::now() + down_for);
                    cron.signal(Signal::SIGKILL);
                }
                for agent in watch::agents(&world.hosts).iter().filter(|a| a.host == host.name) {
                    let _ = kill(Pid::from_raw(-agent.pgid), Signal::SIGKILL);
                }
                Some("host killed")
            }
            _ => {
                // Frozen whole, past its lease: another host declares it lost and takes its runs.
                world.freeze(&host.name);
                let frozen = freeze(&world, host, Signal::SIGSTOP);
                tokio::time::sleep(LEASE_TTL + rng.secs(2.0, 6.0)).await;
                freeze(&world, host, Signal::SIGCONT);
                world.thaw(&host.name);
                frozen.then_some("host frozen past its lease")
            }
        };
        if let Some(blow) = blow {
            *report.entry(blow.into()).or_default() += 1;
        }
    }
    report
}

/// Sends `signal` to the host's runner and analyzer and to every agent's group; whether a runner was
/// there to signal.
fn freeze(world: &World, host: &crate::host::Host, signal: Signal) -> bool {
    let signalled = host.crons().iter().filter_map(|cron| cron.signal(signal)).count() > 0;
    for agent in watch::agents(&world.hosts).iter().filter(|a| a.host == host.name) {
        let _ = kill(Pid::from_raw(-agent.pgid), signal);
    }
    signalled
}

/// Now and then, every check fails for 20–45 s.
async fn ci_storms(world: Arc<World>, phase: Phase, mut rng: Rng) -> ChaosReport {
    let mut report = ChaosReport::new();
    while pause(&phase, rng.secs(90.0, 240.0)).await {
        world.ci_failing.store(true, Ordering::SeqCst);
        *report.entry("ci storm".into()).or_default() += 1;
        let _ = pause(&phase, rng.secs(20.0, 45.0)).await;
        world.ci_failing.store(false, Ordering::SeqCst);
    }
    report
}

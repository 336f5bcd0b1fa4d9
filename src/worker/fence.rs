//! The lease fence: a runner's agents run only while its lease surely holds.
//!
//! Another host takes a run over once the runner's lease lapsed (`runner.lease_ttl` after its last
//! heartbeat). A runner that was paused past that — a laptop asleep, a stopped VM, a process frozen —
//! and resumes would let its agents run on until its own heartbeat learnt it was declared lost: for a
//! moment, two agents on one run. So a thread of the runner's own (no async runtime to wait for)
//! freezes every worker cgroup of this process (cgroup v2 `cgroup.freeze`) as soon as the time since
//! the last renewed heartbeat nears the ttl — also the moment it is scheduled again after a pause — and
//! thaws them only when a heartbeat renews the lease. A runner declared lost stops its frozen agents.
//!
//! Time is measured on `CLOCK_BOOTTIME` (it runs through a suspend) from when the renewing heartbeat was
//! sent, which is no later than the database's own stamp, so no clock needs to agree with another.
//! Where there is no worker cgroup (no cgroup v2 write access, macOS), nothing is frozen and the window
//! docs/several-hosts.md states remains.

use std::sync::{Arc, Condvar, LazyLock, Mutex};
use std::time::Duration;

use super::cgroup::{self, WorkerCgroup};

/// The longest the fence thread sleeps: after a suspend (where its monotonic timer stood still) it looks
/// within this.
const LOOK_AT_LEAST_EVERY: Duration = Duration::from_millis(50);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Now on a clock that keeps running while the machine sleeps.
pub fn boot_clock() -> Duration {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } == 0 {
            return Duration::new(
                u64::try_from(ts.tv_sec).unwrap_or(0),
                u32::try_from(ts.tv_nsec).unwrap_or(0),
            );
        }
    }
    static START: LazyLock<std::time::Instant> = LazyLock::new(std::time::Instant::now);
    START.elapsed()
}

#[derive(Debug, Default)]
struct State {
    /// Agents may run until then (on [`boot_clock`]); `None` before the first heartbeat.
    valid_until: Option<Duration>,
    frozen: bool,
    ended: bool,
    /// The runner's workers' cgroups (the ones gone are forgotten when next frozen or thawed).
    cgroups: Vec<WorkerCgroup>,
}

impl State {
    /// Freezes or thaws every worker's cgroup; how many.
    fn set_frozen(&mut self, frozen: bool) -> usize {
        self.frozen = frozen;
        self.cgroups.retain(WorkerCgroup::exists);
        self.cgroups.iter().filter(|c| c.freeze(frozen)).count()
    }
}

/// The fence of one runner: started with its heartbeat, told of every renewal.
#[derive(Debug, Clone)]
pub struct LeaseFence {
    shared: Arc<(Mutex<State>, Condvar)>,
    /// How long after a renewing heartbeat was sent the agents may run: a margin under the ttl.
    holds_for: Duration,
}

impl LeaseFence {
    /// Starts the fence's thread for a lease of `ttl`. Agents are frozen a quarter of the ttl before it
    /// could lapse: a missed heartbeat or two (every third of the ttl at most) freeze nothing.
    pub fn start(ttl: Duration) -> LeaseFence {
        let fence = LeaseFence { shared: Arc::default(), holds_for: ttl.mul_f64(0.75) };
        let watcher = fence.clone();
        let spawned =
            std::thread::Builder::new().name("executor-lease-fence".into()).spawn(move || watcher.watch());
        if let Err(e) = spawned {
            tracing::warn!("cannot start the lease fence; agents are not frozen when the lease lapses: {e}");
        }
        fence
    }

    /// A heartbeat sent at `sent_at` ([`boot_clock`]) renewed the lease: agents run (again).
    pub fn renewed(&self, sent_at: Duration) {
        let (state, wake) = &*self.shared;
        let mut s = lock(state);
        s.valid_until = Some(sent_at + self.holds_for);
        if s.frozen && boot_clock() < sent_at + self.holds_for {
            let n = s.set_frozen(false);
            tracing::info!("the lease is renewed: {n} agent(s) thawed");
        }
        wake.notify_all();
    }

    /// The worker whose agent is `pid` (started behind its gate, or adopted) runs behind the fence: frozen
    /// with the others, and at once if they are frozen now — and thawed if not (an adopted worker whose
    /// runner was killed while its fence held it). A worker without a cgroup is not fenced.
    pub fn guard(&self, pid: i32) {
        let Some(cgroup) = cgroup::of_process(pid) else { return };
        let mut s = lock(&self.shared.0);
        cgroup.freeze(s.frozen);
        if !s.cgroups.contains(&cgroup) {
            s.cgroups.push(cgroup);
        }
    }

    /// The runner is done (stopped, or declared lost: its agents are stopped while frozen).
    pub fn end(&self) {
        let (state, wake) = &*self.shared;
        lock(state).ended = true;
        wake.notify_all();
    }

    /// Whether the agents are frozen now.
    pub fn frozen(&self) -> bool {
        lock(&self.shared.0).frozen
    }

    fn watch(&self) {
        let (state, wake) = &*self.shared;
        let mut s = lock(state);
        while !s.ended {
            let now = boot_clock();
            let wait = match s.valid_until {
                Some(until) if now >= until => {
                    if !s.frozen {
                        let n = s.set_frozen(true);
                        tracing::warn!(
                            "no heartbeat renewed this runner's lease for {:?}: {n} agent(s) frozen until one does",
                            self.holds_for
                        );
                    }
                    LOOK_AT_LEAST_EVERY
                }
                Some(until) => (until - now).min(LOOK_AT_LEAST_EVERY),
                None => LOOK_AT_LEAST_EVERY,
            };
            s = wake.wait_timeout(s, wait).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
    }
}

#[cfg(test)]
mod tests;

//! Issue 37 item 6: a runner's agents do not run while its lease may have lapsed — frozen when no
//! heartbeat renewed it for a while, at once for one started then, and thawed by the next renewal.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::{LeaseFence, boot_clock};
use crate::worker::cgroup::WorkerCgroup;

/// A `sleep` in a worker cgroup of its own, as an agent is; `None` where no cgroup can be made here.
fn agent_in_cgroup(token: &str) -> Option<(std::process::Child, WorkerCgroup)> {
    let (cgroup, procs) = WorkerCgroup::create(token)?;
    let child = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let pid = child.id().to_string();
    // SAFETY: a write to a descriptor this test holds.
    let wrote = unsafe { libc::write(procs.as_raw_fd(), pid.as_ptr().cast(), pid.len()) };
    assert_eq!(usize::try_from(wrote).ok(), Some(pid.len()), "joining the cgroup");
    Some((child, cgroup))
}

/// Waits (up to 10 s, never as a measure) for the cgroup to be frozen or thawed.
fn settles(cgroup: &WorkerCgroup, frozen: bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if cgroup.is_frozen() == frozen {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn agents_freeze_when_no_heartbeat_renewed_the_lease_and_thaw_when_one_does() {
    let token = format!("fence-test-{}", std::process::id());
    let Some((mut first, first_cg)) = agent_in_cgroup(&format!("{token}-a")) else {
        eprintln!("skipped: no cgroup v2 can be created here (the fence needs one)");
        return;
    };
    let fence = LeaseFence::start(Duration::from_millis(400));
    fence.renewed(boot_clock());
    fence.guard(i32::try_from(first.id()).unwrap());
    assert!(!first_cg.is_frozen(), "frozen while the lease holds");

    // No renewal for three quarters of the ttl: frozen.
    assert!(settles(&first_cg, true), "not frozen after the lease could have lapsed");
    assert!(fence.frozen());
    // An agent started now joins them frozen, before it could run.
    let (mut second, second_cg) = agent_in_cgroup(&format!("{token}-b")).unwrap();
    fence.guard(i32::try_from(second.id()).unwrap());
    assert!(settles(&second_cg, true), "a worker guarded while frozen runs");

    // A heartbeat sent now renews the lease: both run again. One sent long ago thaws nothing.
    fence.renewed(boot_clock() - Duration::from_secs(5));
    assert!(first_cg.is_frozen() && fence.frozen(), "a stale renewal thawed the agents");
    fence.renewed(boot_clock());
    assert!(settles(&first_cg, false) && settles(&second_cg, false), "not thawed by a renewal");

    fence.end();
    // A runner killed while its fence held the agents: the next runner adopts them, thawed.
    assert!(first_cg.freeze(true) && settles(&first_cg, true));
    let next = LeaseFence::start(Duration::from_secs(60));
    next.renewed(boot_clock());
    next.guard(i32::try_from(first.id()).unwrap());
    assert!(settles(&first_cg, false), "an adopted agent stays frozen");
    next.end();
    for (child, cg) in [(&mut first, &first_cg), (&mut second, &second_cg)] {
        // A kill reaches a frozen process too.
        cg.kill();
        let _ = child.kill();
        let _ = child.wait();
        cg.remove();
    }
}

//! The operating-system side of a worker: identify a process across supervisor restarts, and signal it
//! only while it is still that process. Stopping everything a worker started is [`super::tree`]'s.
//!
//! A pid alone is not an identity: after the agent exits the kernel may hand the same number to an
//! unrelated process. A pid plus its start time (in clock ticks since boot) is, so every decision to adopt
//! or kill a recorded pid goes through [`is_same_process`], and every signal through [`signal_identified`].

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// What `/proc/<pid>/stat` says about a process we care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Field 3: R, S, D, Z, T, ...
    pub state: char,
    /// Field 4: the parent's pid.
    pub ppid: i32,
    /// Field 5: the process group id.
    pub pgrp: i32,
    /// Field 22: start time in clock ticks after boot.
    pub start_time: u64,
}

/// Parses the content of `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may itself
/// contain spaces and parentheses, so fields are counted from the LAST ')'.
pub fn parse_stat(content: &str) -> Option<ProcStat> {
    let close = content.rfind(')')?;
    let rest: Vec<&str> = content.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3, so field N is rest[N - 3].
    let state = rest.first()?.chars().next()?;
    let ppid = rest.get(4 - 3)?.parse().ok()?;
    let pgrp = rest.get(5 - 3)?.parse().ok()?;
    let start_time = rest.get(22 - 3)?.parse().ok()?;
    Some(ProcStat { state, ppid, pgrp, start_time })
}

/// Reads `/proc/<pid>/stat`. `None` when the process does not exist (or on systems without procfs).
pub fn read_stat(pid: i32) -> Option<ProcStat> {
    if pid <= 0 {
        return None;
    }
    let content = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&content)
}

/// The start time to record next to a pid, or 0 when it cannot be read. On Linux: field 22 of
/// `/proc/<pid>/stat` (clock ticks after boot). On macOS: `proc_pidinfo`'s start time in microseconds
/// since the epoch. Elsewhere there is no identity to record: 0, and [`is_same_process`] says no.
pub fn pid_start_time(pid: i32) -> u64 {
    if let Some(stat) = read_stat(pid) {
        return stat.start_time;
    }
    #[cfg(target_os = "macos")]
    if let Some(info) = macos::bsd_info(pid) {
        return info.start_micros;
    }
    0
}

/// True when `pid` is alive (not a zombie) and started at `start_time`. A zombie counts as gone: it has
/// exited, only its exit status is waiting to be collected. Where the start time cannot be read the
/// answer is `false`: executor never adopts or signals a process it cannot identify.
pub fn is_same_process(pid: i32, start_time: u64) -> bool {
    if pid <= 0 || start_time == 0 {
        return false;
    }
    if procfs() {
        return read_stat(pid).is_some_and(|s| !dead_state(s.state) && s.start_time == start_time);
    }
    #[cfg(target_os = "macos")]
    if let Some(info) = macos::bsd_info(pid) {
        return !info.zombie && info.start_micros == start_time;
    }
    false
}

/// True when a process with this pid exists and has not exited. Unlike `kill(pid, 0)`, a zombie (exited,
/// its parent has not collected it yet) is not alive. Without procfs or `proc_pidinfo` a zombie cannot
/// be told apart, and existence is all that is checked.
pub fn is_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    if procfs() {
        return read_stat(pid).is_some_and(|s| !dead_state(s.state));
    }
    #[cfg(target_os = "macos")]
    if let Some(info) = macos::bsd_info(pid) {
        return !info.zombie;
    }
    kill(Pid::from_raw(pid), None).is_ok()
}

pub(super) fn procfs() -> bool {
    std::path::Path::new("/proc/self/stat").exists()
}

/// Z: zombie; X: dead (seen for an instant while the kernel tears the process down).
fn dead_state(state: char) -> bool {
    matches!(state, 'Z' | 'X')
}

#[cfg(target_os = "macos")]
mod macos {
    /// What `proc_pidinfo(PROC_PIDTBSDINFO)` says about a process.
    pub struct BsdInfo {
        pub start_micros: u64,
        pub zombie: bool,
    }

    pub fn bsd_info(pid: i32) -> Option<BsdInfo> {
        if pid <= 0 {
            return None;
        }
        let mut info = std::mem::MaybeUninit::<libc::proc_bsdinfo>::zeroed();
        let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
        // SAFETY: the buffer is a zeroed proc_bsdinfo of exactly `size` bytes, which is what this
        // flavour writes; the return value is the number of bytes written.
        let n = unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, info.as_mut_ptr().cast(), size) };
        if n != size {
            return None; // no such process (or not ours to inspect)
        }
        // SAFETY: fully written by the call above (n == size), and zeroed before that anyway.
        let info = unsafe { info.assume_init() };
        Some(BsdInfo {
            start_micros: info
                .pbi_start_tvsec
                .saturating_mul(1_000_000)
                .saturating_add(info.pbi_start_tvusec),
            zombie: info.pbi_status == libc::SZOMB,
        })
    }
}

/// Live (non-zombie) members of process group `pgid`. On Linux this scans /proc, which, unlike
/// `killpg(pgid, 0)`, does not count zombies that nobody has reaped yet. Without procfs it can only say
/// whether the group has any member at all, reported as the group id itself.
pub fn group_members(pgid: i32) -> Vec<i32> {
    if pgid <= 1 {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return if killpg(Pid::from_raw(pgid), None).is_ok() { vec![pgid] } else { Vec::new() };
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| read_stat(*pid).is_some_and(|s| s.pgrp == pgid && !dead_state(s.state)))
        .collect()
}

/// Sends `signal` to every process in group `pgid`. Errors (typically ESRCH: the group is already
/// empty) are ignored because the caller checks the group's members afterwards anyway.
pub fn signal_group(pgid: i32, signal: Signal) {
    // pgid 0 or 1 would signal our own group or init's; a worker's group is always its own leader's pid.
    if pgid > 1 {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// Sends `signal` to `pid` only while it is the process that started at `start_time` (see
/// [`is_same_process`]); true when the signal was sent. On Linux the process is held by a pidfd while
/// it is checked, so the signal cannot reach another process that got the number in between.
pub fn signal_identified(pid: i32, start_time: u64, signal: Signal) -> bool {
    #[cfg(target_os = "linux")]
    if let Some(fd) = pidfd_open(pid) {
        use std::os::fd::AsRawFd;
        if !is_same_process(pid, start_time) {
            return false;
        }
        // SAFETY: a pidfd this function owns, a valid signal number, no siginfo, no flags.
        let sent = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                signal as libc::c_int,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        return sent == 0;
    }
    // No pidfd (macOS, Linux before 5.3): the check and the signal are as close as they can be.
    is_same_process(pid, start_time) && kill(Pid::from_raw(pid), signal).is_ok()
}

#[cfg(target_os = "linux")]
fn pidfd_open(pid: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    if pid <= 0 {
        return None;
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor (or -1).
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: a descriptor just returned by the kernel, owned by nobody else.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn parses_stat_with_odd_command_names() {
        let line =
            "1234 (my (weird) cmd) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.ppid, 1);
        assert_eq!(stat.pgrp, 1234);
        assert_eq!(stat.start_time, 987654);
    }

    #[test]
    fn refuses_garbage_stat() {
        assert_eq!(parse_stat("nonsense"), None);
        assert_eq!(parse_stat("1 (x) S 1"), None);
    }

    #[test]
    fn our_own_process_is_same_and_a_wrong_start_time_is_not() {
        let me = std::process::id() as i32;
        let start = pid_start_time(me);
        assert!(start > 0);
        assert!(is_same_process(me, start));
        assert!(!is_same_process(me, start + 1));
        assert!(!is_same_process(0, start));
        assert!(!is_same_process(-5, start));
        assert!(!is_same_process(me, 0), "an unknown start time identifies nothing");
    }

    #[test]
    fn a_zombie_is_not_alive() {
        // A child that has exited but is not reaped yet: kill(pid, 0) still succeeds on it.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let start = pid_start_time(pid);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while read_stat(pid).is_some_and(|s| s.state != 'Z') {
            assert!(std::time::Instant::now() < deadline, "the child never exited");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(kill(Pid::from_raw(pid), None).is_ok(), "a zombie still answers signal 0");
        assert!(!is_alive(pid));
        assert!(!is_same_process(pid, start));
        child.wait().unwrap();
        assert!(!is_alive(pid));
        assert!(is_alive(std::process::id() as i32));
    }
}

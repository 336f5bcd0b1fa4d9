//! The kernel's bound on an agent's output file (`worker.max_output_bytes`), which holds while no runner
//! watches.
//!
//! `RLIMIT_FSIZE` bounds every file a process writes, not one file: set on the agent it would also fail
//! an agent's legitimate large files (a build's artifacts in its worktree). So the agent does not write
//! the file itself. Its stdout and stderr are a pipe, and a small writer process copies the pipe into
//! the output file under `RLIMIT_FSIZE` = the cap; the agent's own limits are untouched.
//!
//! The writer is forked in the agent's child between fork and exec (twice, so it is not the agent's
//! child: an agent that waits for all its children does not wait for it), runs only async-signal-safe
//! calls, keeps no descriptor but the pipe and the file, and lives in the agent's process group, so it
//! survives the runner as the agent does. It names itself `executor-output`, in `comm` and in its command
//! line (which it would otherwise share with the runner it was forked from, so that `ps` or
//! `pgrep -f 'executor.*runner'` counted one runner per agent, and a killed runner looked alive). It
//! stays out of the worker's cgroup ([`super::tree`] ends it last). It ignores SIGTERM (a stopped
//! agent's last lines still reach the file: the writer ends when the pipe does) and SIGXFSZ: at the cap
//! its write fails with `EFBIG` and it exits, closing the pipe.
//!
//! What the agent sees at the cap: its stdout and stderr are a closed pipe, so its next write gets
//! SIGPIPE (which ends most programs) or `EPIPE`. The supervisor then stops the group, and the worker
//! ends as `OutputLimit`, also when the agent died of the closed pipe first or nobody watched.

use std::io;

/// The writer's name (`/proc/PID/comm`, at most 15 bytes): how the supervisor tells it from processes
/// an agent left behind.
pub const WRITER_NAME: &str = "executor-output";
const WRITER_NAME_C: &std::ffi::CStr = c"executor-output";
/// Bytes copied per read: a pipe's default capacity.
const CHUNK: usize = 64 * 1024;

/// Run in the agent's child after fork, before exec, with stdout and stderr already the output file:
/// starts the writer, then points stdout and stderr at its pipe.
///
/// # Safety
/// Only between fork and exec of a child process: it forks, and replaces descriptors 1 and 2.
pub unsafe fn interpose(limit: u64) -> io::Result<()> {
    // SAFETY (the whole body): async-signal-safe calls only (pipe, fork, waitpid, dup2, close, and in
    // the writer setrlimit, sigaction, prctl, read, write, _exit), no allocation, no lock.
    unsafe {
        let mut fds = [0; 2];
        if libc::pipe(fds.as_mut_ptr()) == -1 {
            return Err(io::Error::last_os_error());
        }
        let [read_end, write_end] = fds;
        match libc::fork() {
            -1 => return Err(io::Error::last_os_error()),
            0 => {
                // The middle process: it only forks the writer and exits, so the writer is orphaned.
                match libc::fork() {
                    0 => writer(read_end, limit),
                    -1 => libc::_exit(1),
                    _ => libc::_exit(0),
                }
            }
            middle => {
                let mut status = 0;
                while libc::waitpid(middle, &mut status, 0) == -1 {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
                if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
                    // No writer: the agent must not run with nobody bounding its output. (A raw OS
                    // error, because a message would allocate between fork and exec.)
                    return Err(io::Error::from_raw_os_error(libc::ECHILD));
                }
            }
        }
        for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
            if libc::dup2(write_end, fd) == -1 {
                return Err(io::Error::last_os_error());
            }
        }
        libc::close(read_end);
        libc::close(write_end);
        Ok(())
    }
}

/// The writer: the pipe on stdin, the output file on stdout (inherited), nothing else; copies until the
/// pipe ends or the cap is reached. Never returns.
unsafe fn writer(read_end: libc::c_int, limit: u64) -> ! {
    // SAFETY: see `interpose`; this process never returns to Rust code that could allocate or lock.
    unsafe {
        if libc::dup2(read_end, libc::STDIN_FILENO) == -1 {
            libc::_exit(1);
        }
        // Every other descriptor of executor goes: a lock (the instance lock, a CI lock), the start
        // gate's write end (whose closing tells the gate the agent must not run), sockets.
        libc::close(libc::STDERR_FILENO);
        close_from(3);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGXFSZ, libc::SIGPIPE] {
            libc::signal(signal, libc::SIG_IGN);
        }
        #[cfg(target_os = "linux")]
        {
            libc::prctl(libc::PR_SET_NAME, WRITER_NAME_C.as_ptr());
            rename_cmdline();
        }
        #[cfg(not(target_os = "linux"))]
        let _ = WRITER_NAME_C;
        // `rlim_t` is a u64 on Linux and macOS. A hard limit already lower than the cap is kept (it
        // cannot be raised), and is then the bound.
        let mut cap = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        let hard = if libc::getrlimit(libc::RLIMIT_FSIZE, &mut cap) == 0 { cap.rlim_max } else { limit };
        let limit = limit.min(hard);
        let cap = libc::rlimit { rlim_cur: limit, rlim_max: limit };
        if libc::setrlimit(libc::RLIMIT_FSIZE, &cap) == -1 {
            // Unbounded is not an option: the agent's first write fails instead.
            libc::_exit(1);
        }
        let mut buf = [0u8; CHUNK];
        loop {
            let n = libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len());
            if n == 0 {
                libc::_exit(0);
            }
            if n < 0 {
                if interrupted() {
                    continue;
                }
                libc::_exit(1);
            }
            let mut done = 0;
            while done < n {
                let rest = (n - done) as usize;
                let w = libc::write(libc::STDOUT_FILENO, buf.as_ptr().add(done as usize).cast(), rest);
                if w < 0 {
                    if interrupted() {
                        continue;
                    }
                    // EFBIG at the cap (or the disk is full): the pipe closes with this process.
                    libc::_exit(0);
                }
                done += w;
            }
        }
    }
}

/// Overwrites this process's argument area (inherited from the runner, which forked it) with
/// [`WRITER_NAME`], so `/proc/PID/cmdline` — what `ps` and `pgrep -f` read — names the writer instead of
/// showing one more runner. `PR_SET_NAME` changes only `comm`; the area is found from fields 48 and 49 of
/// `/proc/self/stat` (`arg_start`, `arg_end`). Best effort: where they cannot be read, nothing changes.
#[cfg(target_os = "linux")]
unsafe fn rename_cmdline() {
    // SAFETY: open, read and close on a stack buffer; the writes stay within [arg_start, arg_end),
    // this process's own argument strings, which nothing in this process reads any more.
    unsafe {
        let mut buf = [0u8; 2048];
        let fd = libc::open(c"/proc/self/stat".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        let Some(stat) = usize::try_from(n).ok().and_then(|n| buf.get(..n)) else { return };
        let Some((start, end)) = arg_area(stat) else { return };
        let Some(len) = end.checked_sub(start).filter(|len| *len > 0) else { return };
        let area = start as *mut u8;
        std::ptr::write_bytes(area, 0, len);
        // The last byte stays NUL: otherwise the kernel reads on into the environment.
        let name = WRITER_NAME.as_bytes();
        std::ptr::copy_nonoverlapping(name.as_ptr(), area, name.len().min(len - 1));
    }
}

/// `arg_start` and `arg_end` from the content of `/proc/self/stat`, without allocating. Fields are
/// counted after the last ')', which closes the command name (field 2).
fn arg_area(stat: &[u8]) -> Option<(usize, usize)> {
    let close = stat.iter().rposition(|b| *b == b')')?;
    let mut fields = stat.get(close + 1..)?.split(|b| *b == b' ' || *b == b'\n').filter(|f| !f.is_empty());
    // The first field after ')' is field 3, so field N is the (N - 3)th.
    let start = parse_usize(fields.nth(48 - 3)?)?;
    let end = parse_usize(fields.next()?)?;
    Some((start, end))
}

fn parse_usize(digits: &[u8]) -> Option<usize> {
    digits.iter().try_fold(0usize, |n, d| {
        d.is_ascii_digit().then_some(())?;
        n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
    })
}

fn interrupted() -> bool {
    io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
}

/// Closes every descriptor from `first` up.
unsafe fn close_from(first: libc::c_int) {
    // SAFETY: close on descriptors of this process only.
    unsafe {
        #[cfg(target_os = "linux")]
        if libc::syscall(libc::SYS_close_range, first as libc::c_uint, libc::c_uint::MAX, 0) == 0 {
            return;
        }
        // Before Linux 5.9, and elsewhere: one by one, up to the descriptor limit.
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 20) as libc::c_int
        } else {
            1 << 16
        };
        for fd in first..top {
            libc::close(fd);
        }
    }
}

/// Whether `pid` is an output writer (Linux; elsewhere the name cannot be read and the answer is no).
pub fn is_writer(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == WRITER_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_argument_area_in_stat() {
        let own = std::fs::read("/proc/self/stat").unwrap();
        let (start, end) = arg_area(&own).unwrap();
        assert!(start > 0 && end > start);
        let odd = b"7 (a) b) (c) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 100 120 140 160 0\n";
        assert_eq!(arg_area(odd), Some((120, 140)));
        assert_eq!(arg_area(b"7 (x) S 1"), None);
    }
}

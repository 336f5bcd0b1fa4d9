//! One runner (and one analyzer) at a time per data directory: an OS file lock, released by the kernel
//! when the process dies, so a crash never leaves a stale lock. The holder's pid is written inside so the
//! second process can say who holds it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{name} already running (pid {pid})")]
    Held { name: String, pid: String },
    #[error("cannot use lock file {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// Held for as long as this value lives.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
    pub path: PathBuf,
}

impl InstanceLock {
    /// Takes `<dir>/<name>.lock` without waiting, or says who holds it.
    pub fn acquire(dir: &Path, name: &str) -> Result<InstanceLock, LockError> {
        let path = dir.join(format!("{name}.lock"));
        let io = |source| LockError::Io { path: path.clone(), source };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held {
                    name: name.to_string(),
                    pid: holder_pid(&mut file).unwrap_or_else(|| "unknown".into()),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(InstanceLock { _file: file, path })
    }
}

/// How long a loser waits for the winner to write its pid. The winner writes it right after taking the
/// lock, so only a race (both started at once) or a holder stuck between the two lines waits at all.
const PID_WAIT: Duration = Duration::from_secs(3);

/// The pid the holder wrote, once it is complete (a line ending in a newline, as `acquire` writes it).
/// The holder takes the lock before it can write, so a loser that lost a close race finds the file empty
/// (or truncated): it reads again for a short, bounded time rather than saying "unknown".
fn holder_pid(file: &mut File) -> Option<String> {
    let deadline = Instant::now() + PID_WAIT;
    loop {
        let mut text = String::new();
        let complete = file.seek(SeekFrom::Start(0)).is_ok()
            && file.read_to_string(&mut text).is_ok()
            && text.ends_with('\n');
        let pid = text.trim();
        if complete && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) {
            return Some(pid.to_string());
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_told_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let first = InstanceLock::acquire(dir.path(), "runner").unwrap();
        let err = InstanceLock::acquire(dir.path(), "runner").unwrap_err();
        assert_eq!(err.to_string(), format!("runner already running (pid {})", std::process::id()));
        assert!(InstanceLock::acquire(dir.path(), "analyzer").is_ok(), "each name has its own lock");
        drop(first);
        assert!(InstanceLock::acquire(dir.path(), "runner").is_ok(), "released on drop");
    }

    #[test]
    fn a_loser_that_reads_before_the_winner_wrote_its_pid_still_names_it() {
        // The winner's window between taking the lock and writing its pid, held open on purpose: the
        // loser must wait for the pid rather than report "pid unknown".
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.lock");
        let mut winner =
            OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        winner.try_lock().unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            writeln!(winner, "4242").unwrap();
            winner
        });
        let err = InstanceLock::acquire(dir.path(), "runner").unwrap_err();
        let _winner = writer.join().unwrap();
        assert_eq!(err.to_string(), "runner already running (pid 4242)");
    }
}

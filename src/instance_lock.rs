//! One runner (and one analyzer) at a time per data directory: an OS file lock, released by the kernel
//! when the process dies, so a crash never leaves a stale lock. The holder's pid is written inside so the
//! second process can say who holds it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

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
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim().to_string();
                return Err(LockError::Held {
                    name: name.to_string(),
                    pid: if pid.is_empty() { "unknown".into() } else { pid },
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
}

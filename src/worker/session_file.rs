//! Follows the agent's own session file, where it reports usage after every model request: Codex writes
//! `CODEX_HOME/sessions/YYYY/MM/DD/rollout-{time}-{thread id}.jsonl` (one `token_count` event per
//! request), while its stdout has usage only when a turn ends — which a killed worker, or one past its
//! cap mid-turn, never reaches.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::lines::{Line, LineSplitter};

/// How often the sessions directory is searched while the thread's file is not found yet (Codex creates
/// it lazily, and a walk of the directory is not free).
const SEARCH_EVERY: Duration = Duration::from_millis(500);
/// The most one poll reads: a resumed thread's file may be large, and the worker's timeouts must still
/// be checked.
const POLL_BYTES: u64 = 4 * 1024 * 1024;
const CHUNK: usize = 256 * 1024;

pub(super) struct SessionFile {
    /// `CODEX_HOME/sessions`.
    root: PathBuf,
    open: Option<(tokio::fs::File, PathBuf)>,
    pos: u64,
    splitter: LineSplitter,
    searched: Option<Instant>,
    buf: Vec<u8>,
}

impl SessionFile {
    pub fn new(root: PathBuf) -> SessionFile {
        SessionFile {
            root,
            open: None,
            pos: 0,
            splitter: LineSplitter::default(),
            searched: None,
            buf: vec![0; CHUNK],
        }
    }

    /// The file being followed, once found.
    pub fn path(&self) -> Option<&Path> {
        self.open.as_ref().map(|(_, p)| p.as_path())
    }

    /// The complete lines appended since the last call (all of them from the start, the first time the
    /// file is found), up to a bound. `thread` is the agent's thread id, once it has said it; `force`
    /// searches even if a search was done a moment ago (the worker has ended).
    pub async fn poll(&mut self, thread: Option<&str>, force: bool) -> std::io::Result<Vec<Line>> {
        if self.open.is_none() {
            let Some(thread) = thread else { return Ok(Vec::new()) };
            if !force && self.searched.is_some_and(|t| t.elapsed() < SEARCH_EVERY) {
                return Ok(Vec::new());
            }
            self.searched = Some(Instant::now());
            let root = self.root.clone();
            let thread = thread.to_string();
            let found = tokio::task::spawn_blocking(move || find(&root, &thread)).await.ok().flatten();
            let Some(path) = found else { return Ok(Vec::new()) };
            // The agent can write where its session files are: only a regular file is followed.
            let file = super::agent_file::open_regular(&path)?;
            self.open = Some((tokio::fs::File::from_std(file), path));
        }
        let Some((file, _)) = self.open.as_mut() else { return Ok(Vec::new()) };
        let mut lines = Vec::new();
        let start = self.pos;
        while self.pos - start < POLL_BYTES {
            file.seek(std::io::SeekFrom::Start(self.pos)).await?;
            let n = file.read(&mut self.buf).await?;
            if n == 0 {
                break;
            }
            self.pos += n as u64;
            self.splitter.push(&self.buf[..n], &mut lines);
        }
        // A cut line is not one of the short `token_count` events.
        lines.retain(|l| !l.truncated());
        Ok(lines)
    }
}

/// `root/YYYY/MM/DD/rollout-*-{thread}.jsonl`, newest day first (a resumed thread keeps the file of
/// the day it began).
fn find(root: &Path, thread: &str) -> Option<PathBuf> {
    let suffix = format!("-{thread}.jsonl");
    let sorted = |dir: &Path| -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        entries.sort_unstable_by(|a, b| b.cmp(a));
        entries
    };
    for year in sorted(root) {
        for month in sorted(&year) {
            for day in sorted(&month) {
                for file in sorted(&day) {
                    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    if name.starts_with("rollout-") && name.ends_with(&suffix) {
                        return Some(file);
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finds_the_thread_file_and_reads_what_is_appended() {
        let dir = tempfile::tempdir().unwrap();
        let day = dir.path().join("2025/10/03");
        std::fs::create_dir_all(&day).unwrap();
        std::fs::write(day.join("rollout-2025-10-03T10-00-00-other.jsonl"), "x\n").unwrap();
        let path = day.join("rollout-2025-10-03T10-00-01-th-1.jsonl");
        std::fs::write(&path, "one\ntw").unwrap();
        let mut f = SessionFile::new(dir.path().to_path_buf());
        assert!(f.poll(None, true).await.unwrap().is_empty(), "no thread id yet");
        let lines = f.poll(Some("th-1"), true).await.unwrap();
        assert_eq!(lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["one"]);
        assert_eq!(f.path(), Some(path.as_path()));
        use std::io::Write;
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"o\nthree\n").unwrap();
        let lines = f.poll(Some("th-1"), false).await.unwrap();
        assert_eq!(lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["two", "three"]);
    }
}

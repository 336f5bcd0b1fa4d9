//! A `fix_comments` worker's replies to the comments its prompt listed, as the worker hands them back:
//! in its final JSON answer (`"replies": [{"to": ID, "body": TEXT}]`) or in the file executor names in
//! `EXECUTOR_REPLIES` (JSON Lines, one such object per line, or one JSON array), inside a directory
//! every sandbox lets the agent write. Either way the agent needs neither network, nor the database,
//! nor `executor` on its PATH: the runner validates each reply ([`check`]) and posts it.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The variable naming the replies file.
pub const REPLIES_ENV: &str = "EXECUTOR_REPLIES";

/// The longest reply posted, in characters (GitHub refuses comments past 65,536).
pub const MAX_REPLY_CHARS: usize = 60_000;

/// The most of the replies file that is read: enough for many replies of the longest size.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One reply: the id of the comment it answers, as the prompt listed it, and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    pub to: String,
    pub body: String,
}

/// Why a reply is not posted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum Refusal {
    #[error("comment {to:?} was not listed in the worker's prompt")]
    NotOffered { to: String },
    #[error("the reply to comment {to:?} is empty")]
    Empty { to: String },
    #[error("the reply to comment {to:?} has {chars} characters; at most {MAX_REPLY_CHARS} are posted")]
    TooLong { to: String, chars: usize },
    #[error("comment {to:?} was answered already; only the first reply is posted")]
    Duplicate { to: String },
    #[error("the replies file: {0}")]
    File(String),
}

/// The directory of a worker's replies file, among its private files (`dir`). The file itself is
/// [`file_in`]; the directory is made writable for sandboxed agents.
pub fn dir_in(dir: &Path) -> PathBuf {
    dir.join("replies")
}

/// The replies file of a worker whose private files are in `dir`.
pub fn file_in(dir: &Path) -> PathBuf {
    dir_in(dir).join("replies.jsonl")
}

/// Checks one reply (already redacted) against the comment ids the prompt offered.
pub fn check(reply: &Reply, offered: &[String]) -> Result<(), Refusal> {
    let to = reply.to.clone();
    if !offered.contains(&reply.to) {
        return Err(Refusal::NotOffered { to });
    }
    if reply.body.trim().is_empty() {
        return Err(Refusal::Empty { to });
    }
    let chars = reply.body.chars().count();
    if chars > MAX_REPLY_CHARS {
        return Err(Refusal::TooLong { to, chars });
    }
    Ok(())
}

/// The replies in the file (none when there is no file), and what in it could not be read.
pub fn read_file(path: &Path) -> (Vec<Reply>, Vec<Refusal>) {
    let file = match super::agent_file::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => return (Vec::new(), vec![Refusal::File(format!("cannot read it: {e}"))]),
    };
    let mut bytes = Vec::new();
    if let Err(e) = file.take(MAX_FILE_BYTES).read_to_end(&mut bytes) {
        return (Vec::new(), vec![Refusal::File(format!("cannot read it: {e}"))]);
    }
    parse_file(&String::from_utf8_lossy(&bytes))
}

/// JSON Lines of replies, or one JSON array of them.
fn parse_file(text: &str) -> (Vec<Reply>, Vec<Refusal>) {
    if text.trim_start().starts_with('[') {
        return match serde_json::from_str::<Vec<Reply>>(text) {
            Ok(all) => (all, Vec::new()),
            Err(e) => (Vec::new(), vec![Refusal::File(format!("not an array of replies: {e}"))]),
        };
    }
    let (mut replies, mut refused) = (Vec::new(), Vec::new());
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match serde_json::from_str::<Reply>(line) {
            Ok(r) => replies.push(r),
            Err(e) => refused
                .push(Refusal::File(format!("line {} is not {{\"to\": ID, \"body\": TEXT}}: {e}", n + 1))),
        }
    }
    (replies, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_or_a_fifo_is_refused_without_reading_or_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "{\"to\":\"7\",\"body\":\"what the agent may not read\"}\n").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let (ok, bad) = read_file(&link);
        assert!(ok.is_empty() && bad.len() == 1, "{ok:?} {bad:?}");
        let fifo = dir.path().join("fifo.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (ok, bad) = read_file(&fifo);
        assert!(ok.is_empty() && bad[0].to_string().contains("not a regular file"), "{bad:?}");
        let (ok, _) = read_file(&secret);
        assert_eq!(ok.len(), 1, "a regular file is read");
    }

    fn reply(to: &str, body: &str) -> Reply {
        Reply { to: to.into(), body: body.into() }
    }

    #[test]
    fn lines_and_arrays_are_read_and_bad_lines_refused_alone() {
        let (ok, bad) = parse_file(
            "{\"to\":\"7\",\"body\":\"[ACKNOWLEDGED: done]\"}\n\nnot json\n{\"to\":\"8\",\"body\":\"b\"}\n",
        );
        assert_eq!(ok, [reply("7", "[ACKNOWLEDGED: done]"), reply("8", "b")]);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].to_string().contains("line 3"), "{}", bad[0]);
        let (ok, bad) = parse_file("[{\"to\":\"7\",\"body\":\"x\"}]");
        assert_eq!((ok, bad), (vec![reply("7", "x")], vec![]));
        let (ok, bad) = parse_file("[{\"to\":7}]");
        assert!(ok.is_empty() && bad.len() == 1);
    }

    #[test]
    fn a_missing_file_is_no_replies() {
        let (ok, bad) = read_file(Path::new("/nonexistent/executor/replies.jsonl"));
        assert!(ok.is_empty() && bad.is_empty());
    }

    #[test]
    fn only_offered_non_empty_bounded_replies_pass() {
        let offered = vec!["7".to_string()];
        assert_eq!(check(&reply("7", "ok"), &offered), Ok(()));
        assert_eq!(check(&reply("8", "ok"), &offered), Err(Refusal::NotOffered { to: "8".into() }));
        assert_eq!(check(&reply("7", "  \n"), &offered), Err(Refusal::Empty { to: "7".into() }));
        let long = "x".repeat(MAX_REPLY_CHARS + 1);
        assert!(matches!(check(&reply("7", &long), &offered), Err(Refusal::TooLong { .. })));
    }
}

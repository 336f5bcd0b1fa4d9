//! Finding and following work logs (`executor logs GID [--kind K] [--follow]`).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::END_MARKER;
use crate::domain::TaskGid;
use crate::worker::PromptKind;

/// The newest work log of a task, optionally of one kind.
pub fn find_newest(logs_root: &Path, gid: &TaskGid, kind: Option<PromptKind>) -> Option<PathBuf> {
    let dir = logs_root.join(gid.as_str());
    let entries = std::fs::read_dir(&dir).ok()?;
    entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".md")?;
            let (k, stamp) = split_name(stem)?;
            if kind.is_some_and(|want| want.as_str() != k) {
                return None;
            }
            Some((stamp, dir.join(&name)))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, p)| p)
}

/// `fix_ci_2024-05-01-10-00-00-2` → (`fix_ci`, (`2024-05-01-10-00-00`, 2)).
fn split_name(stem: &str) -> Option<(&str, (String, u32))> {
    let kind = PromptKind::ALL.iter().map(|k| k.as_str()).find(|k| {
        stem.strip_prefix(k)
            .is_some_and(|rest| rest.starts_with('_') && rest[1..].starts_with(|c: char| c.is_ascii_digit()))
    })?;
    let rest = &stem[kind.len() + 1..];
    let stamp = rest.get(..19)?;
    let n = match rest.get(19..) {
        Some("") => 1,
        Some(suffix) => suffix.strip_prefix('-')?.parse().ok()?,
        None => return None,
    };
    Some((kind, (stamp.to_string(), n)))
}

/// Copies the log to `out` and keeps copying what is appended until the footer is written or `stop`
/// becomes true. Returns whether the footer was seen.
pub async fn follow(
    path: &Path,
    out: &mut (impl Write + Send),
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<bool> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut file = tokio::fs::File::open(path).await?;
    let mut pos = 0u64;
    let mut recent = String::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        file.seek(std::io::SeekFrom::Start(pos)).await?;
        let n = file.read(&mut buf).await?;
        if n > 0 {
            pos += n as u64;
            out.write_all(&buf[..n])?;
            out.flush()?;
            // Keep a short window to spot the marker even when it spans two reads.
            recent.push_str(&String::from_utf8_lossy(&buf[..n]));
            if recent.contains(END_MARKER) {
                return Ok(true);
            }
            let keep = recent.len().saturating_sub(END_MARKER.len());
            let mut cut = keep;
            while !recent.is_char_boundary(cut) {
                cut += 1;
            }
            recent.drain(..cut);
            continue;
        }
        if *stop.borrow() {
            return Ok(false);
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
            _ = stop.changed() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::WorkerKind;

    #[test]
    fn names_sort_and_parse() {
        assert_eq!(
            split_name("fix_ci_2024-05-01-10-00-00"),
            Some(("fix_ci", ("2024-05-01-10-00-00".into(), 1)))
        );
        assert_eq!(split_name("in_progress_2024-05-01-10-00-00-3").map(|x| x.1.1), Some(3));
        assert_eq!(split_name("fix_2024-05-01-10-00-00"), None);
        assert_eq!(split_name("queued_notes"), None);
        let dir = tempfile::tempdir().unwrap();
        let gid = TaskGid::parse("77").unwrap();
        let d = dir.path().join("77");
        std::fs::create_dir_all(&d).unwrap();
        for n in [
            "queued_2024-01-01-00-00-00.md",
            "fix_ci_2024-02-01-00-00-00.md",
            "fix_ci_2024-02-01-00-00-00-2.md",
            "queued_2023-12-31-00-00-00.md",
            "junk.md",
        ] {
            std::fs::write(d.join(n), "x").unwrap();
        }
        let newest = find_newest(dir.path(), &gid, None).unwrap();
        assert!(newest.ends_with("fix_ci_2024-02-01-00-00-00-2.md"));
        let q = find_newest(dir.path(), &gid, Some(WorkerKind::Queued.into())).unwrap();
        assert!(q.ends_with("queued_2024-01-01-00-00-00.md"));
        assert_eq!(find_newest(dir.path(), &gid, Some(WorkerKind::PrReview.into())), None);
    }

    #[tokio::test]
    async fn follow_prints_appended_bytes_until_the_footer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        std::fs::write(&path, "# Work log\n").unwrap();
        let (_stop, stop_rx) = tokio::sync::watch::channel(false);
        let p = path.clone();
        let follower = tokio::spawn(async move {
            let mut out = Vec::new();
            let done = follow(&p, &mut out, stop_rx).await.unwrap();
            (done, out)
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        write!(f, "more\n{END_MARKER}\n").unwrap();
        let (done, out) = follower.await.unwrap();
        assert!(done);
        assert_eq!(String::from_utf8(out).unwrap(), format!("# Work log\nmore\n{END_MARKER}\n"));
    }

    #[tokio::test]
    async fn follow_stops_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        std::fs::write(&path, "started\n").unwrap();
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let p = path.clone();
        let follower = tokio::spawn(async move { follow(&p, &mut Vec::new(), stop_rx).await.unwrap() });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        stop.send(true).unwrap();
        assert!(!follower.await.unwrap());
    }
}

//! Following a worker's work log as it grows, for the dashboard's live log (server-sent events).
//!
//! The file is polled from the last offset every [`POLL`]; each read is bounded ([`MAX_READ`]) so a
//! huge log never lands in memory at once. The path always comes from the worker session's row in the
//! database, never from the request. The stream ends once the session has ended and the file is read.

use std::io::SeekFrom;
use std::path::PathBuf;
use std::time::Duration;

use axum::response::sse::Event;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::store::Store;

/// How often the file is looked at for new text.
pub const POLL: Duration = Duration::from_millis(500);

/// The most one read (and so one event) carries.
pub const MAX_READ: u64 = 1024 * 1024;

/// New text of a file from `offset`: at most `max` bytes, cut before a UTF-8 sequence that is not
/// complete yet (it comes whole with the next read), with the offset after it. A missing file has no
/// text yet.
pub async fn read_from(path: &std::path::Path, offset: u64, max: u64) -> std::io::Result<(String, u64)> {
    let mut file = match tokio::fs::File::open(path).await {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((String::new(), offset)),
        Err(e) => return Err(e),
    };
    let len = file.metadata().await?.len();
    // A file rewritten shorter (truncated) is followed from its new end.
    let offset = offset.min(len);
    file.seek(SeekFrom::Start(offset)).await?;
    let mut buf = Vec::new();
    file.take(max).read_to_end(&mut buf).await?;
    let text = match std::str::from_utf8(&buf) {
        Ok(text) => text.to_string(),
        // Only an unfinished last character: keep it for the next read.
        Err(e) if e.error_len().is_none() => {
            buf.truncate(e.valid_up_to());
            String::from_utf8_lossy(&buf).into_owned()
        }
        Err(_) => String::from_utf8_lossy(&buf).into_owned(),
    };
    Ok((text, offset + buf.len() as u64))
}

/// What the stream holds between polls.
struct Tail {
    store: Store,
    session: i64,
    path: Option<PathBuf>,
    offset: u64,
    done: bool,
}

/// The events of a session's work log from `offset`: each new piece of text as a `data:` event whose
/// `id` is the offset after it (a reconnecting browser sends it back as `Last-Event-ID`), then one
/// `end` event (its data the session's end reason) once the session has ended and everything is sent.
pub fn follow(
    store: Store,
    session: i64,
    path: Option<PathBuf>,
    offset: u64,
) -> impl futures_util::Stream<Item = Result<Event, std::convert::Infallible>> + Send + 'static {
    let tail = Tail { store, session, path, offset, done: false };
    futures_util::stream::unfold(tail, |mut tail| async move {
        if tail.done {
            return None;
        }
        loop {
            // Whether it had ended is read before the file: what it wrote before it ended is then in
            // the read that follows.
            let ended = match tail.store.find_worker_session(tail.session).await {
                Ok(Some(s)) => s.ended_at.map(|_| s.end_reason.map(|r| r.to_string()).unwrap_or_default()),
                Ok(None) => Some(String::new()),
                Err(e) => {
                    tracing::warn!("live log of session {}: {e}", tail.session);
                    None
                }
            };
            let read = match &tail.path {
                Some(path) => read_from(path, tail.offset, MAX_READ).await,
                None => Ok((String::new(), tail.offset)),
            };
            match read {
                Ok((text, next)) if !text.is_empty() || next != tail.offset => {
                    tail.offset = next;
                    // One line ending for the event format: a lone CR would be a line break of its own.
                    let text = text.replace("\r\n", "\n").replace('\r', "\n");
                    // Shown as the pages show text: bidirectional controls made visible.
                    let text = crate::web::pages::show_bidi(&text).into_owned();
                    let event = Event::default().id(next.to_string()).data(text);
                    return Some((Ok(event), tail));
                }
                Ok(_) if let Some(reason) = &ended => {
                    tail.done = true;
                    // The data is how it ended, for the page to say so.
                    let data = if reason.is_empty() { "ended" } else { reason.as_str() };
                    return Some((Ok(Event::default().event("end").data(data)), tail));
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("live log of session {}: {e}", tail.session),
            }
            tokio::time::sleep(POLL).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::read_from;

    #[tokio::test]
    async fn reads_are_bounded_and_never_split_a_character() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        assert_eq!(read_from(&path, 0, 10).await.unwrap(), (String::new(), 0), "no file yet: no text");
        std::fs::write(&path, "abcdef").unwrap();
        assert_eq!(read_from(&path, 0, 4).await.unwrap(), ("abcd".into(), 4));
        assert_eq!(read_from(&path, 4, 4).await.unwrap(), ("ef".into(), 6));
        std::fs::write(&path, "ab\u{e9}").unwrap(); // é is two bytes: a cut after its first waits
        assert_eq!(read_from(&path, 0, 3).await.unwrap(), ("ab".into(), 2));
        assert_eq!(read_from(&path, 2, 3).await.unwrap(), ("\u{e9}".into(), 4));
    }
}

//! Follows a worker's output file: reads what was appended, splits it into lines, hands each line to the
//! agent's parser, writes the events to the work log and keeps the running totals.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::mpsc::UnboundedSender;

use super::agent::{AgentEvent, AgentResult, OutputParser, Tokens};
use super::lines::{Line, LineSplitter};
use super::outcome::WorkerUpdate;
use super::session_file::SessionFile;
use super::worklog::WorkLog;

/// Bytes read per system call.
const CHUNK: usize = 256 * 1024;
/// The most one [`Tail::poll`] reads, and for how long it may go on: an agent that prints faster than
/// its output is logged must not keep the supervisor from checking its timeouts.
const POLL_BYTES: u64 = 4 * 1024 * 1024;
const POLL_TIME: Duration = Duration::from_millis(250);
/// At the end, what is left unread is read for at most this long; past it only the last
/// [`FINISH_KEEP`] bytes are read, where the agent's final result is. Stopping a flooding agent must not
/// wait for its whole flood to be logged.
const FINISH_TIME: Duration = Duration::from_secs(1);
const FINISH_KEEP: u64 = 256 * 1024;

/// What has been learnt from the output so far.
#[derive(Debug, Default)]
pub struct Totals {
    pub session_id: Option<String>,
    pub tokens: Tokens,
    pub cost_usd: Option<f64>,
    /// `cost_usd` comes (at least partly) from the price table, not from the agent's own total.
    pub cost_estimated: bool,
    pub num_turns: Option<u32>,
    pub result: Option<AgentResult>,
    /// The agent said the session to resume does not exist.
    pub resume_failed: bool,
    /// The output starts with the start gate's marker: the gate was closed without being opened, so the
    /// agent never ran.
    pub never_started: bool,
}

pub struct Tail {
    file: tokio::fs::File,
    pos: u64,
    splitter: LineSplitter,
    parser: Box<dyn OutputParser>,
    pub log: WorkLog,
    pub totals: Totals,
    updates: UnboundedSender<WorkerUpdate>,
    buf: Vec<u8>,
    lines_seen: u64,
    /// The agent's session file, for usage it reports there sooner than on stdout (Codex).
    session: Option<SessionFile>,
}

impl Tail {
    pub async fn open(path: &Path, parser: Box<dyn OutputParser>, log: WorkLog) -> std::io::Result<Tail> {
        Ok(Tail::from_file(tokio::fs::File::open(path).await?, parser, log))
    }

    /// A tail of an already opened output file. Updates go nowhere until [`Tail::connect`].
    pub fn from_file(file: tokio::fs::File, parser: Box<dyn OutputParser>, log: WorkLog) -> Tail {
        Tail {
            file,
            pos: 0,
            splitter: LineSplitter::default(),
            parser,
            log,
            totals: Totals::default(),
            updates: tokio::sync::mpsc::unbounded_channel().0,
            buf: vec![0; CHUNK],
            lines_seen: 0,
            session: None,
        }
    }

    /// Also follows the agent's session file under `root` (found by the session id the output gives).
    pub fn follow_session_file(&mut self, root: PathBuf) {
        self.session = Some(SessionFile::new(root));
    }

    /// Reads what the agent appended to its session file. Returns whether anything was read. A file that
    /// cannot be read only costs the early usage: stdout still reports it by turn.
    async fn poll_session(&mut self, force: bool) -> bool {
        let Some(session) = self.session.as_mut() else { return false };
        let had = session.path().is_some();
        let lines = match session.poll(self.totals.session_id.as_deref(), force).await {
            Ok(lines) => lines,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the agent's session file");
                self.session = None;
                return false;
            }
        };
        if let (false, Some(path)) = (had, session.path()) {
            let note = format!("following the agent's session file {} for its usage", path.display());
            self.log.note(&note);
        }
        let mut events = Vec::new();
        for line in &lines {
            events.extend(self.parser.parse_session_line(&line.text));
        }
        self.account(&events);
        !lines.is_empty()
    }

    /// Where updates (session id, usage) are sent from now on.
    pub fn connect(&mut self, updates: UnboundedSender<WorkerUpdate>) {
        self.updates = updates;
    }

    /// Offset just after the last complete line handled: where a later [`super::adopt`] resumes.
    pub fn offset(&self) -> u64 {
        self.splitter.offset()
    }

    /// Re-reads the first `offset` bytes to rebuild the totals (session id, usage) without writing them to
    /// the work log again: used when adopting a worker whose earlier output is already logged.
    pub async fn replay(&mut self, offset: u64) -> std::io::Result<()> {
        while self.pos < offset {
            let want = (offset - self.pos).min(CHUNK as u64) as usize;
            let n = self.read_some(want).await?;
            if n == 0 {
                break;
            }
            let lines = self.split(n);
            for line in lines {
                if !self.gate_marker(&line) {
                    let events = self.parser.parse_line(&line.text);
                    self.account(&events);
                }
            }
        }
        Ok(())
    }

    /// Reads what was appended since the last call, up to a bound in bytes and time (the rest waits
    /// for the next call). Returns whether any byte was new.
    pub async fn poll(&mut self) -> std::io::Result<bool> {
        let (start, began) = (self.pos, Instant::now());
        while self.pos - start < POLL_BYTES && began.elapsed() < POLL_TIME {
            let n = self.read_some(CHUNK).await?;
            if n == 0 {
                break;
            }
            let lines = self.split(n);
            for line in lines {
                self.handle(line);
            }
        }
        self.poll_session(false).await;
        Ok(self.pos > start)
    }

    /// The process has ended: read what is left, including an unterminated last line, and let the
    /// parser emit what it only knows at the end.
    pub async fn finish(&mut self, exit_code: Option<i32>) -> std::io::Result<()> {
        let began = Instant::now();
        while began.elapsed() < FINISH_TIME {
            if !self.poll().await? {
                break;
            }
        }
        let end = self.file.metadata().await?.len();
        if end.saturating_sub(self.pos) > FINISH_KEEP {
            let from = self.pos;
            self.skip_to(end - FINISH_KEEP).await?;
            self.log.note(&format!(
                "{} bytes of the agent's output were not logged (it printed faster than it could be read)",
                self.pos - from
            ));
        }
        while self.poll().await? {}
        if let Some(line) = self.splitter.finish() {
            self.handle(line);
        }
        // The agent's last requests, which its stdout may never have reported (killed mid-turn).
        while self.poll_session(true).await {}
        let events = self.parser.finish(exit_code);
        self.account(&events);
        for e in &events {
            self.log.event(e);
        }
        Ok(())
    }

    /// Continues reading at the first line that starts at or after `at`, dropping what lies before it.
    async fn skip_to(&mut self, at: u64) -> std::io::Result<()> {
        self.pos = at.max(self.pos);
        loop {
            let n = self.read_some(CHUNK).await?;
            if n == 0 {
                break;
            }
            if let Some(i) = self.buf[..n].iter().position(|b| *b == b'\n') {
                self.pos = self.pos - n as u64 + i as u64 + 1;
                break;
            }
        }
        self.splitter = LineSplitter::starting_at(self.pos);
        Ok(())
    }

    /// The gate prints its marker as the very first line, and only when the agent never ran.
    fn gate_marker(&mut self, line: &Line) -> bool {
        let first = self.lines_seen == 0;
        self.lines_seen += 1;
        if first && line.text == super::spawn::GATE_MARKER {
            self.totals.never_started = true;
            return true;
        }
        false
    }

    async fn read_some(&mut self, want: usize) -> std::io::Result<usize> {
        self.file.seek(std::io::SeekFrom::Start(self.pos)).await?;
        let n = self.file.read(&mut self.buf[..want]).await?;
        self.pos += n as u64;
        Ok(n)
    }

    fn split(&mut self, n: usize) -> Vec<Line> {
        let mut lines = Vec::new();
        self.splitter.push(&self.buf[..n], &mut lines);
        lines
    }

    fn handle(&mut self, line: Line) {
        if self.gate_marker(&line) {
            self.log.note("the start gate was closed without being opened: the agent never ran");
            return;
        }
        let events = if line.truncated() {
            // A cut line is not valid JSON any more; keep its start as text rather than guess.
            vec![AgentEvent::Raw(format!(
                "{} … [line of {} bytes cut]",
                line.text.chars().take(2_000).collect::<String>(),
                line.full_len
            ))]
        } else {
            self.parser.parse_line(&line.text)
        };
        self.account(&events);
        for e in &events {
            self.log.event(e);
        }
    }

    fn account(&mut self, events: &[AgentEvent]) {
        for e in events {
            match e {
                AgentEvent::Session { id, .. } if self.totals.session_id.as_deref() != Some(id.as_str()) => {
                    self.totals.session_id = Some(id.clone());
                    let _ = self.updates.send(WorkerUpdate::SessionId(id.clone()));
                }
                AgentEvent::Usage { tokens, cost_usd, estimated } => {
                    self.totals.tokens.accumulate(tokens);
                    if let Some(c) = cost_usd {
                        *self.totals.cost_usd.get_or_insert(0.0) += c;
                        self.totals.cost_estimated |= *estimated;
                    }
                    self.send_usage();
                }
                AgentEvent::UsageSoFar { tokens, cost_usd, estimated } => {
                    self.totals.tokens = *tokens;
                    if cost_usd.is_some() {
                        self.totals.cost_usd = *cost_usd;
                        self.totals.cost_estimated = *estimated;
                    }
                    self.send_usage();
                }
                AgentEvent::ResumeFailed(_) => self.totals.resume_failed = true,
                AgentEvent::Result(r) => {
                    // The result carries the run's totals, which replace the per-turn sums. Only an
                    // agent that reports its own cost (Claude) makes the cost exact; Codex's result
                    // repeats the estimate.
                    if let Some(t) = r.tokens {
                        self.totals.tokens = t;
                    }
                    if r.cost_usd.is_some() {
                        self.totals.cost_usd = r.cost_usd;
                        self.totals.cost_estimated = r.cost_estimated;
                    }
                    self.totals.num_turns = r.num_turns.or(self.totals.num_turns);
                    if let Some(id) = &r.session_id
                        && self.totals.session_id.is_none()
                    {
                        self.totals.session_id = Some(id.clone());
                        let _ = self.updates.send(WorkerUpdate::SessionId(id.clone()));
                    }
                    self.totals.result = Some(r.clone());
                    if r.tokens.is_some() || r.cost_usd.is_some() {
                        self.send_usage();
                    }
                }
                _ => {}
            }
        }
    }

    fn send_usage(&self) {
        let _ = self.updates.send(WorkerUpdate::Usage {
            cost_usd: self.totals.cost_usd,
            input_tokens: self.totals.tokens.input,
            output_tokens: self.totals.tokens.output,
            cost_estimated: self.totals.cost_estimated,
        });
    }
}

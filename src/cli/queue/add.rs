//! `executor queue add`: tasks taken in streamed, for inputs of any size — from flags, or JSON read as it
//! arrives — checked and written all or nothing.

use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::Args;

use super::super::output::JsonArray;
use super::super::parse::parse_gid;
use super::super::{Context, UsageError};
use crate::config::Config;
use crate::domain::{Actor, TaskGid};
use crate::store::{NewTask, StoreError, Upserted};

/// Tasks the reader hands to the writer at a time; two such batches wait at most, so memory stays flat
/// whatever the size of the input.
const READ_BATCH: usize = 1000;

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The tracker's id: letters, digits, '.', '_', '-'; no leading '.'; at most 128 characters.
    #[arg(long)]
    gid: Option<String>,
    /// Where the task came from (e.g. my_tasks_inbox, user_reports).
    #[arg(long)]
    source: Option<String>,
    /// The task's text: its first line is the title (the branch is named after it); the rest says what
    /// to do. Agents get it fenced as data, never as instructions.
    #[arg(long)]
    description: Option<String>,
    /// A human's context for the agents (v1's user_context), shown with the task.
    #[arg(long)]
    notes: Option<String>,
    /// The repository (a name under [repos] in the config).
    #[arg(long)]
    repo: Option<String>,
    /// 1 is the most urgent.
    #[arg(long)]
    priority: Option<i32>,
    /// A JSON file with one task object, an array of them, or one object per line (JSON Lines); "-" for
    /// standard input. Keys: task_gid (or gid), source, description, notes, repo, priority.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["gid", "source", "description", "notes", "repo", "priority"])]
    from_json: Option<PathBuf>,
}

/// Refuses, before anything is written, a task that can never run: a gid that makes no valid branch
/// name, or a repository the config does not have. `which` names the task in the message.
fn check_runnable(config: &Config, which: &str, gid: &TaskGid, t: &NewTask) -> anyhow::Result<()> {
    let prefix = &config.workspace.branch_prefix;
    if let Err(e) = crate::workspace::check_gid_branch(prefix, gid) {
        bail!(UsageError(format!(
            "{which}: gid {gid} can never become a branch (workspace.branch_prefix {prefix:?}): {e}"
        )));
    }
    if let Some(repo) = &t.repo
        && !config.repos.contains_key(repo)
    {
        let known: Vec<&str> = config.repos.keys().map(String::as_str).collect();
        let known = if known.is_empty() {
            "none is configured yet: add a [repos.NAME] table to the config".to_string()
        } else {
            format!("the configured ones are {}", known.join(", "))
        };
        bail!(UsageError(format!("{which}: repo {repo:?} is not configured under [repos]; {known}")));
    }
    if t.description.as_deref().is_some_and(|d| d.trim().is_empty()) {
        bail!(UsageError(format!("{which}: the description is empty; a task needs text for the agent")));
    }
    Ok(())
}

/// The batches of tasks an `add` call describes: the one given by flags, or JSON read on a thread of its
/// own as it arrives. A reading error ends the stream, as a usage error's message.
fn tasks_to_add(args: AddArgs) -> anyhow::Result<tokio::sync::mpsc::Receiver<Batch>> {
    let (input, origin): (Box<dyn Read + Send>, String) = match (args.gid, args.from_json) {
        (Some(gid), _) => {
            if args.description.is_none() {
                bail!(UsageError(format!(
                    "task {gid}: give --description TEXT too; a task needs text for the agent"
                )));
            }
            let task = NewTask {
                task_gid: Some(parse_gid(&gid)?),
                source: args.source,
                description: args.description,
                notes: args.notes,
                repo: args.repo,
                priority: args.priority,
                ..Default::default()
            };
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            tx.try_send(Ok(vec![task]))
                .map_err(|_| anyhow::anyhow!("the task was lost in a full channel"))?;
            return Ok(rx);
        }
        (None, Some(path)) if path.as_os_str() != "-" => {
            let file = std::fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
            (Box::new(file), path.display().to_string())
        }
        (None, _) => {
            if std::io::stdin().is_terminal() {
                bail!(UsageError(
                    "give --gid (and --description …), --from-json FILE, or JSON on standard input".into()
                ));
            }
            (Box::new(std::io::stdin()), "standard input".into())
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    std::thread::spawn(move || {
        let mut out = BatchSender { tx, batch: Vec::with_capacity(READ_BATCH), count: 0 };
        match read_tasks(input, &origin, &mut out) {
            Ok(()) => {
                out.flush();
            }
            Err(why) => {
                let _ = out.tx.blocking_send(Err(why));
            }
        }
    });
    Ok(rx)
}

/// Parsed tasks, or why the input cannot be read.
type Batch = Result<Vec<NewTask>, String>;

/// Collects parsed tasks into batches for the writer; `false` once the writer has stopped listening.
struct BatchSender {
    tx: tokio::sync::mpsc::Sender<Batch>,
    batch: Vec<NewTask>,
    /// Tasks parsed so far, to name a bad one by its position (from 1).
    count: usize,
}

impl BatchSender {
    fn push(&mut self, task: NewTask) -> bool {
        self.count += 1;
        self.batch.push(task);
        self.batch.len() < READ_BATCH || self.flush()
    }

    fn flush(&mut self) -> bool {
        if self.batch.is_empty() {
            return true;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(READ_BATCH));
        self.tx.blocking_send(Ok(batch)).is_ok()
    }
}

/// Reads one task object, an array of them (element by element, never the whole array at once), or a
/// stream of objects (JSON Lines), telling them apart by the first character.
fn read_tasks(input: Box<dyn Read + Send>, origin: &str, out: &mut BatchSender) -> Result<(), String> {
    let mut r = BufReader::with_capacity(1 << 16, input);
    let first = loop {
        let buf = r.fill_buf().map_err(|e| format!("reading {origin}: {e}"))?;
        if buf.is_empty() {
            break None;
        }
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(k) => {
                let b = buf[k];
                r.consume(k);
                break Some(b);
            }
            None => {
                let n = buf.len();
                r.consume(n);
            }
        }
    };
    let bad = |e: serde_json::Error, position: usize| {
        if e.is_data() {
            format!("{origin}, task #{position}: {e}")
        } else {
            format!("{origin} is not valid JSON: {e}")
        }
    };
    match first {
        None => {
            Err(format!("{origin} is empty: give a task object, an array of them, or one object per line"))
        }
        Some(b'[') => {
            let mut de = serde_json::Deserializer::from_reader(r);
            serde::Deserializer::deserialize_seq(&mut de, ArrayOfTasks { out: &mut *out })
                .map_err(|e| bad(e, out.count + 1))?;
            de.end().map_err(|e| bad(e, out.count + 1))
        }
        Some(_) => {
            for task in serde_json::Deserializer::from_reader(r).into_iter::<NewTask>() {
                if !out.push(task.map_err(|e| bad(e, out.count + 1))?) {
                    break;
                }
            }
            Ok(())
        }
    }
}

/// Hands each element of a JSON array of tasks to the sender as soon as it is parsed.
struct ArrayOfTasks<'a> {
    out: &'a mut BatchSender,
}

impl<'de> serde::de::Visitor<'de> for ArrayOfTasks<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of task objects")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(task) = seq.next_element::<NewTask>()? {
            if !self.out.push(task) {
                return Err(serde::de::Error::custom("the writer stopped"));
            }
        }
        Ok(())
    }
}

/// Takes the tasks in as they are read: each batch is checked (a gid that makes no branch, a repo not
/// configured) and written into one open intake; any refusal drops it, so nothing is written. The
/// results are printed after the commit, when they are true.
pub(super) async fn add(ctx: &Context, args: AddArgs, as_json: bool) -> anyhow::Result<()> {
    let mut batches = tasks_to_add(args)?;
    let mut next = batches.recv().await;
    // One task is named by its gid; several also by position, as the input lists them.
    let several = matches!(&next, Some(Ok(batch)) if batch.len() > 1);
    let (mut intake, mut position, mut results) = (None, 0, Vec::new());
    while let Some(batch) = next {
        let batch = batch.map_err(UsageError)?;
        let mut checked = Vec::with_capacity(batch.len());
        for t in batch {
            position += 1;
            let Some(gid) = t.task_gid.clone() else {
                bail!(UsageError(format!("task #{position} has no task_gid")));
            };
            let which = if several { format!("task #{position} (gid {gid})") } else { format!("task {gid}") };
            check_runnable(&ctx.config, &which, &gid, &t)?;
            checked.push((gid, t));
        }
        // Opened on the first batch, not before: SQLite's write lock is not held while a slow writer of
        // standard input has yet to send anything.
        if intake.is_none() {
            intake = Some(ctx.store.begin_intake(Actor::Cli).await?);
        }
        if let Some(intake) = intake.as_mut() {
            results.extend(intake.add(&checked).await.map_err(|e| match e {
                StoreError::Refused(why) => UsageError(why).into(),
                other => anyhow::Error::from(other),
            })?);
        }
        next = batches.recv().await;
    }
    if let Some(intake) = intake {
        intake.commit().await?;
    }
    if as_json {
        let mut out = std::io::BufWriter::new(std::io::stdout());
        // Each task as it is now, read back a page at a time.
        let mut array = JsonArray::new(&mut out);
        for page in results.chunks(500) {
            let gids: Vec<TaskGid> = page.iter().map(|r| r.task_gid.clone()).collect();
            for (done, task) in page.iter().zip(ctx.store.tasks_by_gid(&gids).await?) {
                array.push(&serde_json::json!({ "result": done.result, "task": task }))?;
            }
        }
        return array.finish();
    }
    let mut out = crate::cli::output::Shown::new(std::io::BufWriter::new(std::io::stdout()));
    for done in &results {
        let gid = &done.task_gid;
        match done.result {
            Upserted::Added => writeln!(out, "added {gid} (pending)")?,
            Upserted::Updated => writeln!(out, "updated {gid} (status {} kept)", done.status)?,
            Upserted::Unchanged => writeln!(out, "unchanged {gid} (already queued with the same fields)")?,
            Upserted::Revised if done.revision_pending => writeln!(
                out,
                "revision received for {gid}: {}",
                super::super::output::revision_advice(gid, done.status)
            )?,
            Upserted::Revised => {
                writeln!(out, "revision withdrawn for {gid}: the text sent is the approved one again")?
            }
        }
    }
    out.flush()?;
    Ok(())
}

//! `executor queue`: taking tasks in (streamed, for inputs of any size), listing and showing them, and
//! the human's moves on them (approve, skip, retry, requeue).

use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};

use super::output::{ago, json, money, opt, print_events, short, table};
use super::parse::parse_gid;
use super::{Context, UsageError};
use crate::config::Config;
use crate::domain::{Actor, QueueStatus, SkippedBy, Task, TaskGid};
use crate::store::{
    AnalysisSession, EventFilter, NewTask, RunFilter, StoreError, TaskFilter, TaskSort, Upserted, now,
};

/// Tasks the reader hands to the writer at a time; two such batches wait at most, so memory stays flat
/// whatever the size of the input.
const READ_BATCH: usize = 1000;

/// What `queue list` shows on a terminal without `--limit` (a longer table is scrolled past, not read).
const TERMINAL_LIMIT: i64 = 200;

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Add a task, or update the description/notes/source of one already queued (its status and history
    /// are kept). Without --gid, reads JSON (one object, an array, or JSON Lines) from --from-json or
    /// standard input; all or nothing.
    Add(AddArgs),
    /// List tasks, most urgent first (or as --sort says).
    List {
        /// Only tasks in this status: pending, for_review, awaiting_go, approved, skip or done.
        #[arg(long, value_parser = parse_status)]
        status: Option<QueueStatus>,
        /// Only tasks from this source (its name in [[sources]], or what `queue add --source` gave).
        #[arg(long)]
        source: Option<String>,
        /// Only tasks for this repository (the task's `repo`).
        #[arg(long)]
        repo: Option<String>,
        /// Only tasks whose description or notes hold every word of this, each as a word or the start
        /// of one, ignoring case (the dashboard's search).
        #[arg(long, value_name = "WORDS")]
        search: Option<String>,
        /// Sort by priority (the default), gid, source, status, complexity, feasibility, added or
        /// updated; then by id.
        #[arg(long, value_parser = TaskSort::parse, default_value = "priority")]
        sort: TaskSort,
        /// Reverse the sort.
        #[arg(long)]
        desc: bool,
        /// Show at most this many (default: all, except 200 when writing a table to a terminal).
        #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
        limit: Option<i64>,
        /// Skip this many first (with --limit, to page through a long queue).
        #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
        offset: Option<i64>,
    },
    /// Every field of a task, its analysis, its run and its full history.
    Show {
        #[arg(value_name = "GID")]
        gid: String,
    },
    /// Give an approved task whose run was abandoned a new run (the runner creates it, on a new branch).
    Retry {
        #[arg(value_name = "GID")]
        gid: String,
        /// Why, for the history.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Send a skipped task back to pending, for the analyzer to look at again (after every new task);
    /// a pending task whose analysis failed is tried afresh. `executor reanalyze` does this in bulk.
    Requeue {
        #[arg(value_name = "GID")]
        gid: String,
        /// Why, for the history.
        #[arg(long)]
        reason: Option<String>,
    },
}

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

fn parse_status(s: &str) -> Result<QueueStatus, String> {
    s.parse().map_err(|e: crate::domain::UnknownName| e.to_string())
}

pub async fn run(ctx: &Context, command: QueueCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        QueueCommand::Add(args) => add(ctx, args, as_json).await,
        QueueCommand::List { status, source, repo, search, sort, desc, limit, offset } => {
            let filter = TaskFilter {
                status,
                source,
                repo,
                text: search,
                sort,
                descending: desc,
                limit,
                offset,
                ..Default::default()
            };
            list(ctx, filter, as_json).await
        }
        QueueCommand::Show { gid } => show(ctx, &parse_gid(&gid)?, as_json).await,
        QueueCommand::Retry { gid, reason } => {
            let gid = parse_gid(&gid)?;
            let reason = reason.unwrap_or_else(|| crate::store::RETRY_REASON.into());
            let task = ctx.store.retry_task(&gid, Actor::Cli, &reason).await?;
            if as_json {
                return json(&task);
            }
            println!("{gid}: the runner will start a new run on its next tick");
            Ok(())
        }
        QueueCommand::Requeue { gid, reason } => {
            let gid = parse_gid(&gid)?;
            let reason = reason.unwrap_or_else(|| crate::store::REQUEUE_REASON.into());
            // The same move as `executor reanalyze`: one analysis round up, the skip rule cleared.
            let crate::store::Requeued { task, from } =
                ctx.store.requeue_task(&gid, Actor::Cli, &reason).await?;
            if as_json {
                return json(&task);
            }
            if from == QueueStatus::Skip {
                println!("{gid}: skip → pending (analysis round {})", task.analysis_round);
            } else {
                println!(
                    "{gid}: its given-up analysis starts afresh (analysis round {})",
                    task.analysis_round
                );
            }
            Ok(())
        }
    }
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
async fn add(ctx: &Context, args: AddArgs, as_json: bool) -> anyhow::Result<()> {
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
    let mut out = std::io::BufWriter::new(std::io::stdout());
    if as_json {
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
    for done in &results {
        let gid = &done.task_gid;
        match done.result {
            Upserted::Added => writeln!(out, "added {gid} (pending)")?,
            Upserted::Updated => writeln!(out, "updated {gid} (status {} kept)", done.status)?,
            Upserted::Unchanged => writeln!(out, "unchanged {gid} (already queued with the same fields)")?,
            Upserted::Revised if done.revision_pending => writeln!(
                out,
                "revision received for {gid}: it is {}, so the approved text is kept and agents are told \
                 only that; compare with `executor queue show {gid}`, accept it with `executor approve {gid}`",
                done.status
            )?,
            Upserted::Revised => {
                writeln!(out, "revision withdrawn for {gid}: the text sent is the approved one again")?
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// A JSON array written element by element, laid out exactly as `output::json` lays out a whole one.
struct JsonArray<W: Write> {
    out: W,
    empty: bool,
}

impl<W: Write> JsonArray<W> {
    fn new(out: W) -> Self {
        JsonArray { out, empty: true }
    }

    fn push(&mut self, value: &impl serde::Serialize) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(value)?;
        self.out.write_all(if self.empty { b"[\n" } else { b",\n" })?;
        self.empty = false;
        // A JSON string never holds a raw newline: indenting every line indents the element.
        for (k, line) in text.lines().enumerate() {
            if k > 0 {
                self.out.write_all(b"\n")?;
            }
            self.out.write_all(b"  ")?;
            self.out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    fn finish(mut self) -> anyhow::Result<()> {
        self.out.write_all(if self.empty { b"[]\n" } else { b"\n]\n" })?;
        self.out.flush()?;
        Ok(())
    }
}

async fn list(ctx: &Context, mut filter: TaskFilter, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        let mut out = std::io::BufWriter::new(std::io::stdout());
        let mut array = JsonArray::new(&mut out);
        ctx.store.for_each_task(&filter, |t| array.push(&t)).await?;
        return array.finish();
    }
    let terminal = std::io::stdout().is_terminal();
    if terminal && filter.limit.is_none() {
        filter.limit = Some(TERMINAL_LIMIT);
    }
    let now = now();
    let mut rows: Vec<Vec<String>> = Vec::new();
    ctx.store
        .for_each_task(&filter, |t| {
            rows.push(vec![
                t.task_gid.to_string(),
                // A pending revision needs a human's eye: say so where tasks are scanned.
                match (&t.revision_at, &t.skip_rule) {
                    (Some(_), _) => format!("{} (revised)", t.status),
                    // Which filter skipped it, so a wrong rule is seen while scanning.
                    (None, Some(rule)) if t.status == QueueStatus::Skip => {
                        format!("skip ({})", short(rule, 24))
                    }
                    _ => t.status.to_string(),
                },
                opt(&t.priority),
                opt(&t.source),
                opt(&t.executor_run_id),
                ago(t.updated_at, now),
                short(t.description.as_deref().unwrap_or(""), 60),
            ]);
            Ok::<_, anyhow::Error>(())
        })
        .await?;
    if rows.is_empty() && filter.offset.unwrap_or(0) == 0 {
        println!(
            "no tasks{}",
            if filter.status.is_some() || filter.source.is_some() {
                " match"
            } else {
                " yet: add one with `executor queue add`"
            }
        );
        return Ok(());
    }
    table(&["GID", "STATUS", "PRIO", "SOURCE", "RUN", "UPDATED", "DESCRIPTION"], &rows);
    if terminal {
        let listed = filter.offset.unwrap_or(0) + rows.len() as i64;
        let more = ctx.store.count_tasks(&filter).await? - listed;
        if more > 0 {
            println!("… {more} more; use --limit N and --offset {listed} to see them");
        }
    }
    Ok(())
}

async fn show(ctx: &Context, gid: &TaskGid, as_json: bool) -> anyhow::Result<()> {
    let task = ctx.store.task(gid).await?;
    let runs = ctx.store.list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let events = ctx.store.events(&EventFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let sessions = ctx.store.analysis_sessions(gid).await?;
    if as_json {
        return json(&serde_json::json!({
            "task": task, "runs": runs, "events": events, "analysis_sessions": sessions,
        }));
    }
    let now = now();
    let field = |name: &str, value: String| println!("{:<18}{value}", format!("{name}:"));
    field("gid", task.task_gid.to_string());
    field("status", task.status.to_string());
    if let Some(skipped) = skipped_by(&task) {
        field("skipped by", skipped);
    }
    field("source", opt(&task.source));
    field("repo", opt(&task.repo));
    field("added", format!("{} ({})", task.added_at.to_rfc3339(), ago(task.added_at, now)));
    field("updated", format!("{} ({})", task.updated_at.to_rfc3339(), ago(task.updated_at, now)));
    field("priority", opt(&task.priority));
    field("complexity", opt(&task.complexity));
    field("feasibility", opt(&task.feasibility));
    println!("\ndescription:\n{}", indent(task.description.as_deref().unwrap_or("-")));
    println!("\nnotes:\n{}", indent(task.notes.as_deref().unwrap_or("-")));
    if let Some(at) = task.revision_at {
        println!(
            "\nrevision received {} ({}), NOT approved — agents are told the text above; \
             `executor approve {gid}` makes this the text:",
            at.to_rfc3339(),
            ago(at, now)
        );
        let unchanged = "- (unchanged)";
        println!(
            "  description:\n{}",
            indent(&indent(task.revision_description.as_deref().unwrap_or(unchanged)))
        );
        println!("  notes:\n{}", indent(&indent(task.revision_notes.as_deref().unwrap_or(unchanged))));
    }
    print_analysis(&task, &sessions, ctx.config.analyzer.max_attempts, now);
    println!("\nruns:");
    if runs.is_empty() {
        println!("  none");
    }
    for r in &runs {
        println!(
            "  #{} {} branch {} pr {} cost {} started {}",
            r.id,
            r.state,
            opt(&r.branch_name),
            opt(&r.pr_url),
            money(r.cost_usd, r.cost_estimated),
            ago(r.started_at, now)
        );
    }
    println!("\nhistory:");
    print_events(&events, now);
    Ok(())
}

/// What skipped a skipped task: "filter not_macos: not a macOS task", the triage, v1, or a human.
fn skipped_by(task: &Task) -> Option<String> {
    if task.status != QueueStatus::Skip {
        return None;
    }
    // Who made the last decision, as recorded with the skip (a human's skip is a human's, whatever
    // the triage said before).
    Some(match (task.skipped_by, &task.skip_rule, &task.skip_why) {
        (Some(SkippedBy::Filter), Some(rule), Some(why)) if !why.is_empty() => {
            format!("filter {rule}: {why}")
        }
        (Some(SkippedBy::Filter), Some(rule), _) => format!("filter {rule}"),
        (Some(SkippedBy::Triage), _, _) => "triage (see the analysis below)".to_string(),
        (Some(SkippedBy::Imported), _, _) => "imported skipped from v1 (see the history)".to_string(),
        _ => "a human (see the history)".to_string(),
    })
}

/// The triage's answer, the last failed analysis (`max_attempts`: `analyzer.max_attempts`, after which
/// it is given up on), and every analysis session.
fn print_analysis(task: &Task, sessions: &[AnalysisSession], max_attempts: u32, now: DateTime<Utc>) {
    println!("\nanalysis:");
    match task.analyzed_at {
        Some(at) => {
            println!("  analyzed {} ({}), round {}", at.to_rfc3339(), ago(at, now), task.analysis_round)
        }
        None => println!("  not analyzed yet (round {})", task.analysis_round),
    }
    if let Some(summary) = &task.analysis_summary {
        println!("{}", indent(summary));
    }
    if !task.acceptance_criteria.is_empty() {
        println!("  acceptance criteria:");
        for c in &task.acceptance_criteria {
            println!("    - {}", short(c, 200));
        }
    }
    if let Some(error) = &task.analysis_error {
        let gid = &task.task_gid;
        let retry = match task.analysis_retry_at {
            _ if task.status != QueueStatus::Pending => "no longer pending".to_string(),
            _ if task.analysis_attempts >= i64::from(max_attempts) => format!(
                "given up on; `executor queue requeue {gid}` or `executor reanalyze --failed` tries again"
            ),
            Some(at) if at > now => format!("next try {} ({})", at.to_rfc3339(), ago(at, now)),
            Some(_) | None => "may be tried now".to_string(),
        };
        println!("  last analysis failed ({} failed attempts; {retry}):", task.analysis_attempts);
        println!("{}", indent(&indent(error)));
    }
    if sessions.is_empty() {
        return;
    }
    println!("  sessions:");
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            vec![
                format!("  {}", s.started_at.format("%Y-%m-%d %H:%M:%S")),
                s.agent.clone(),
                match (s.end_reason, s.ended_at) {
                    (Some(r), _) => r.to_string(),
                    (None, Some(_)) => "ended".to_string(),
                    (None, None) => "running (or killed)".to_string(),
                },
                money(s.cost_usd, false),
                s.result_error.as_deref().map(|e| short(e, 60)).unwrap_or_default(),
                opt(&s.log_path),
            ]
        })
        .collect();
    table(&["  STARTED (UTC)", "AGENT", "END", "COST", "ANSWER ERROR", "LOG"], &rows);
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

pub async fn approve(ctx: &Context, gids: &[String], skip_triage: bool, as_json: bool) -> anyhow::Result<()> {
    let gids: Vec<TaskGid> = gids.iter().map(|g| parse_gid(g)).collect::<anyhow::Result<_>>()?;
    let mut failed = 0;
    let mut results = Vec::new();
    for gid in &gids {
        match ctx.store.approve_task(gid, skip_triage, Actor::Cli).await {
            Ok(done) => {
                if !as_json {
                    if done.revision_approved {
                        println!("approved the revision of {gid}: it is now the text agents are told");
                    } else {
                        println!("approved {gid}");
                    }
                }
                results.push(done.result_json());
            }
            Err(e) => {
                failed += 1;
                eprintln!("error: {gid}: {e:#}");
                results.push(serde_json::json!({ "gid": gid, "ok": false, "error": e.to_string() }));
            }
        }
    }
    if as_json {
        json(&results)?;
    }
    if failed > 0 {
        bail!("{failed} of {} tasks were not approved", gids.len());
    }
    Ok(())
}

pub async fn skip(ctx: &Context, gid: &str, reason: &str, as_json: bool) -> anyhow::Result<()> {
    let gid = parse_gid(gid)?;
    // The tracker's message first (when its source asks): recorded before the skip it tells of.
    let config = std::sync::Arc::new(ctx.config.clone());
    let outbox = crate::writeback::Outbox::new(config, ctx.store.clone(), None);
    outbox.record_human_skip(&ctx.store.task(&gid).await?, reason).await?;
    let task = ctx.store.set_task_status(&gid, QueueStatus::Skip, Actor::Cli, Some(reason)).await?;
    if as_json {
        return json(&task);
    }
    println!("skipped {gid}: {reason}");
    Ok(())
}

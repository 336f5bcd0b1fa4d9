//! The file task source: JSON Lines or CSV, for trackers without a source of their own and for tests.
//!
//! - **JSON Lines** (`.jsonl`, `.ndjson`): one object per line, in Asana's task shape or a flat one
//!   (see [`super::task_from_json`]). Blank lines are skipped.
//! - **CSV** (`.csv`): a header row naming the columns `gid` (or `task_gid`, required), `name`,
//!   `notes`, `completed`, `assignee`, `section`, `url`, `modified_at`, any of which but the id may
//!   be missing. Every column, known or not, is kept in `raw` as a string, for the filters.
//!
//! Another extension is read by its content: JSON Lines when the first non-blank byte is `{`, CSV
//! otherwise. The file is streamed, never read whole, and handed on in pages of [`FILE_PAGE`] lines
//! ([`read_file_pages`]) so the intake stores each before the next is read. A line or row that cannot be read — no id,
//! invalid UTF-8 (the bytes are checked per line, so one bad line does not refuse the file), fewer
//! columns than the header, a bad `completed` or `modified_at` — goes to [`Fetched::refused`] with
//! its line number; the rest are delivered.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::{FILE_PAGE, Fetched, Page, SourceTask, advance, task_from_json};

/// Why a file could not be read at all (a bad line or row is refused, not an error).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read the task file {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the CSV task file {path} has no usable header: {reason}")]
    Header { path: PathBuf, reason: String },
    #[error("the CSV task file {path} has no `gid` or `task_gid` column")]
    NoIdColumn { path: PathBuf },
}

/// The two formats a task file may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    JsonLines,
    Csv,
}

/// Reads the tasks of `path`; `source_name` prefixes the place of each refused line.
pub fn read_file(path: &Path, source_name: &str) -> Result<Fetched, FileError> {
    let (mut tasks, mut refused) = (Vec::new(), Vec::new());
    let cursor = read_file_pages(path, source_name, |page| {
        tasks.extend(page.tasks);
        refused.extend(page.refused);
        true
    })?;
    Ok(Fetched { tasks, refused, cursor })
}

/// As [`read_file`], handing each [`FILE_PAGE`] lines' tasks to `send` as soon as they are read (on
/// a blocking thread: `|page| sender.blocking_send(page).is_ok()`); the latest `modified_at` read
/// once every page was handed over. `send` returning false (the intake stopped storing) stops the
/// reading, without error.
pub fn read_file_pages(
    path: &Path,
    source_name: &str,
    send: impl FnMut(Page) -> bool,
) -> Result<Option<DateTime<Utc>>, FileError> {
    let io = |source| FileError::Io { path: path.to_path_buf(), source };
    let mut reader = BufReader::new(File::open(path).map_err(io)?);
    let format = match format_by_extension(path) {
        Some(format) => format,
        None => format_by_content(reader.fill_buf().map_err(io)?),
    };
    match format {
        Format::JsonLines => read_json_lines(reader, Pager::new(source_name, send)).map_err(io),
        Format::Csv => read_csv(reader, path, Pager::new(source_name, send)),
    }
}

/// Gathers a file's tasks into pages and hands each on when full.
struct Pager<'a, S> {
    source_name: &'a str,
    send: S,
    page: Page,
    /// Lines in `page`, tasks and refusals alike.
    lines: usize,
    cursor: Option<DateTime<Utc>>,
    /// `send` said stop.
    stopped: bool,
}

impl<'a, S: FnMut(Page) -> bool> Pager<'a, S> {
    fn new(source_name: &'a str, send: S) -> Self {
        Pager { source_name, send, page: Page::default(), lines: 0, cursor: None, stopped: false }
    }

    fn task(&mut self, task: SourceTask) {
        advance(&mut self.cursor, task.modified_at);
        self.page.tasks.push(task);
        self.counted();
    }

    fn refuse(&mut self, line: usize, why: String) {
        self.page.refused.push((format!("{} line {line}", self.source_name), why));
        self.counted();
    }

    fn counted(&mut self) {
        self.lines += 1;
        if self.lines == FILE_PAGE {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.lines = 0;
        let page = std::mem::take(&mut self.page);
        if !page.tasks.is_empty() || !page.refused.is_empty() {
            self.stopped = !(self.send)(page);
        }
    }

    /// The last page handed on; the cursor.
    fn finish(mut self) -> Option<DateTime<Utc>> {
        self.flush();
        self.cursor
    }
}

/// The format an extension names, if it names one.
pub fn format_by_extension(path: &Path) -> Option<Format> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "jsonl" | "ndjson" => Some(Format::JsonLines),
        "csv" => Some(Format::Csv),
        _ => None,
    }
}

/// JSON Lines when the first non-blank byte opens an object, CSV otherwise.
pub fn format_by_content(start: &[u8]) -> Format {
    let first = start.iter().find(|byte| !byte.is_ascii_whitespace());
    // A UTF-8 byte order mark is not content either.
    let first = match start.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => rest.iter().find(|byte| !byte.is_ascii_whitespace()),
        None => first,
    };
    if first == Some(&b'{') { Format::JsonLines } else { Format::Csv }
}

fn read_json_lines<S: FnMut(Page) -> bool>(
    mut reader: impl BufRead,
    mut pager: Pager<'_, S>,
) -> std::io::Result<Option<DateTime<Utc>>> {
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        if pager.stopped || reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(pager.finish());
        }
        number += 1;
        let bytes = line.strip_suffix(b"\n").unwrap_or(&line);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let bytes = if number == 1 { bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes) } else { bytes };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                pager.refuse(number, format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1));
                continue;
            }
        };
        let task = serde_json::from_str::<Value>(text)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(task_from_json);
        match task {
            Ok(task) => pager.task(task),
            Err(why) => pager.refuse(number, why),
        }
    }
}

fn read_csv<S: FnMut(Page) -> bool>(
    reader: impl BufRead,
    path: &Path,
    mut pager: Pager<'_, S>,
) -> Result<Option<DateTime<Utc>>, FileError> {
    let header_error = |reason: String| FileError::Header { path: path.to_path_buf(), reason };
    let mut csv = csv::ReaderBuilder::new().flexible(true).from_reader(reader);
    let header: Vec<String> = csv
        .byte_headers()
        .map_err(|e| header_error(e.to_string()))?
        .iter()
        .enumerate()
        .map(|(index, column)| {
            let column =
                if index == 0 { column.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(column) } else { column };
            std::str::from_utf8(column)
                .map(|column| column.trim().to_string())
                .map_err(|_| header_error(format!("column {} is not valid UTF-8", index + 1)))
        })
        .collect::<Result<_, _>>()?;
    if !header.iter().any(|column| column == "gid" || column == "task_gid") {
        return Err(FileError::NoIdColumn { path: path.to_path_buf() });
    }

    let mut record = csv::ByteRecord::new();
    loop {
        if pager.stopped {
            return Ok(pager.finish());
        }
        let more = csv.read_byte_record(&mut record);
        let line = record.position().map_or(0, |position| position.line());
        let line = usize::try_from(line).unwrap_or(usize::MAX);
        match more {
            Ok(false) => return Ok(pager.finish()),
            Ok(true) => {}
            Err(e) => match e.kind() {
                csv::ErrorKind::Io(_) => {
                    let reason = e.to_string();
                    return Err(FileError::Io {
                        path: path.to_path_buf(),
                        source: std::io::Error::other(reason),
                    });
                }
                _ => {
                    pager.refuse(line, format!("not readable as CSV: {e}"));
                    continue;
                }
            },
        }
        if record.iter().all(|field| field.is_empty()) && record.len() <= 1 {
            continue;
        }
        match row_task(&header, &record) {
            Ok(task) => pager.task(task),
            Err(why) => pager.refuse(line, why),
        }
    }
}

/// One CSV row as a task: its columns become a flat JSON object of strings (empty cells omitted).
fn row_task(header: &[String], record: &csv::ByteRecord) -> Result<SourceTask, String> {
    if record.len() != header.len() {
        return Err(format!("{} columns, but the header has {}", record.len(), header.len()));
    }
    let mut object = Map::new();
    for (index, (column, field)) in header.iter().zip(record.iter()).enumerate() {
        let text = std::str::from_utf8(field).map_err(|e| {
            format!(
                "invalid UTF-8 in column {column:?} (column {}) at byte {}",
                index + 1,
                e.valid_up_to() + 1
            )
        })?;
        if !text.is_empty() {
            object.insert(column.clone(), Value::String(text.to_string()));
        }
    }
    task_from_json(Value::Object(object))
}

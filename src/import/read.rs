//! Reading a v1 export: one JSON object `{"executor_queue": [...], "executor_runs": [...]}`, or a
//! directory holding `executor_queue.csv` and `executor_runs.csv` (headers = v1 column names). Rows stay
//! loose (column name → JSON value) so that one malformed row is refused by the planner, naming it,
//! instead of failing the whole file.

use std::path::Path;

use serde_json::{Map, Value};

use super::ImportError;

/// One v1 row as read: its position in the input (array index from 1, or CSV line) and its columns.
#[derive(Debug, Clone, PartialEq)]
pub struct V1Row {
    pub position: usize,
    /// `None` when the JSON element was not an object (the planner refuses it).
    pub columns: Option<Map<String, Value>>,
}

/// Both v1 tables as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct V1Export {
    pub queue: Vec<V1Row>,
    pub runs: Vec<V1Row>,
    /// "row" for JSON (array position), "line" for CSV (file line), for naming refused rows.
    pub position_word: &'static str,
}

pub const QUEUE_TABLE: &str = "executor_queue";
pub const RUNS_TABLE: &str = "executor_runs";

/// Reads `path`: a directory is read as the CSV pair, anything else as the JSON object.
pub fn read_export(path: &Path) -> Result<V1Export, ImportError> {
    if path.is_dir() {
        read_csv_dir(path)
    } else {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ImportError::Io(format!("reading {}: {e}", path.display())))?;
        parse_json(&text).map_err(|e| match e {
            ImportError::Json(m) => ImportError::Json(format!("{}: {m}", path.display())),
            other => other,
        })
    }
}

/// Parses the JSON form. Either table may be absent (an export of the queue alone is fine).
pub fn parse_json(text: &str) -> Result<V1Export, ImportError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ImportError::Json(e.to_string()))?;
    let Value::Object(mut top) = value else {
        return Err(ImportError::Json(format!(
            "expected an object with \"{QUEUE_TABLE}\" and \"{RUNS_TABLE}\" arrays"
        )));
    };
    let mut table = |name: &str| -> Result<Vec<V1Row>, ImportError> {
        match top.remove(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(rows)) => Ok(rows
                .into_iter()
                .enumerate()
                .map(|(i, row)| V1Row {
                    position: i + 1,
                    columns: match row {
                        Value::Object(m) => Some(m),
                        _ => None,
                    },
                })
                .collect()),
            Some(_) => Err(ImportError::Json(format!("\"{name}\" must be an array of rows"))),
        }
    };
    let queue = table(QUEUE_TABLE)?;
    let runs = table(RUNS_TABLE)?;
    if queue.is_empty() && runs.is_empty() && !top.is_empty() {
        let keys: Vec<&str> = top.keys().map(String::as_str).collect();
        return Err(ImportError::Json(format!(
            "no \"{QUEUE_TABLE}\" or \"{RUNS_TABLE}\" array; found only: {}",
            keys.join(", ")
        )));
    }
    Ok(V1Export { queue, runs, position_word: "row" })
}

/// Reads `executor_queue.csv` and `executor_runs.csv` from `dir` (a missing runs file is an empty
/// table; a missing queue file is an error, since nothing could be imported).
pub fn read_csv_dir(dir: &Path) -> Result<V1Export, ImportError> {
    let queue_path = dir.join(format!("{QUEUE_TABLE}.csv"));
    let runs_path = dir.join(format!("{RUNS_TABLE}.csv"));
    if !queue_path.exists() {
        return Err(ImportError::Io(format!(
            "{} holds no {QUEUE_TABLE}.csv (a v1 export directory holds {QUEUE_TABLE}.csv and {RUNS_TABLE}.csv)",
            dir.display()
        )));
    }
    let queue = read_csv(&queue_path)?;
    let runs = if runs_path.exists() { read_csv(&runs_path)? } else { Vec::new() };
    Ok(V1Export { queue, runs, position_word: "line" })
}

/// One CSV file with a header line. An empty cell is NULL (that is how v1's `\copy … CSV` writes it).
/// A record with fewer cells than the header lacks the rest; the planner refuses what it then misses.
fn read_csv(path: &Path) -> Result<Vec<V1Row>, ImportError> {
    let bytes =
        std::fs::read(path).map_err(|e| ImportError::Io(format!("reading {}: {e}", path.display())))?;
    let csv_error = |e: csv::Error| ImportError::Csv(format!("{}: {e}", path.display()));
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(bytes.as_slice());
    let headers: Vec<String> =
        reader.headers().map_err(csv_error)?.iter().map(|h| h.trim().to_string()).collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(csv_error)?;
        let position = record.position().map_or(rows.len() + 2, |p| line_at(&bytes, p.byte()));
        let columns = headers
            .iter()
            .zip(record.iter())
            .map(|(h, v)| (h.clone(), if v.is_empty() { Value::Null } else { Value::String(v.to_string()) }))
            .collect();
        rows.push(V1Row { position, columns: Some(columns) });
    }
    Ok(rows)
}

/// The file line (from 1) of the record starting at byte `start`. The csv crate's own line count is one
/// short after a CRLF line end (it may place a record's start on the `\n` that ends the line before), so
/// the line is counted here: line ends before the record's first byte that is not one.
fn line_at(bytes: &[u8], start: u64) -> usize {
    let start = usize::try_from(start).unwrap_or(usize::MAX).min(bytes.len());
    let first =
        bytes[start..].iter().position(|b| !matches!(b, b'\r' | b'\n')).map_or(bytes.len(), |i| start + i);
    1 + bytes[..first].iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_tables_are_read_with_positions_and_non_objects_kept_for_refusal() {
        let e = parse_json(r#"{"executor_queue": [{"task_gid": "1"}, 7], "executor_runs": []}"#).unwrap();
        assert_eq!(e.queue.len(), 2);
        assert_eq!(e.queue[1].position, 2);
        assert!(e.queue[1].columns.is_none());
        assert!(e.runs.is_empty());
    }

    #[test]
    fn json_that_is_not_an_export_is_an_error_naming_what_was_found() {
        assert!(matches!(parse_json("[1]"), Err(ImportError::Json(_))));
        let err = parse_json(r#"{"tasks": []}"#).unwrap_err().to_string();
        assert!(err.contains("found only: tasks"), "{err}");
        assert!(parse_json("{\"executor_queue\": [").is_err());
    }

    #[test]
    fn csv_empty_cells_are_null_and_lines_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("executor_queue.csv"), "task_gid,notes\n1,\n2,\"a,b\"\n").unwrap();
        let e = read_csv_dir(dir.path()).unwrap();
        let first = e.queue[0].columns.as_ref().unwrap();
        assert_eq!(first["notes"], Value::Null);
        assert_eq!(e.queue[1].position, 3);
        assert_eq!(e.queue[1].columns.as_ref().unwrap()["notes"], "a,b");
        assert!(e.runs.is_empty());
    }

    #[test]
    fn csv_lines_are_the_files_own_with_crlf_endings_too() {
        for end in ["\n", "\r\n"] {
            let dir = tempfile::tempdir().unwrap();
            let text = ["task_gid,notes", "1,\"two", "lines\"", "", "2,x", "3,y"].join(end) + end;
            std::fs::write(dir.path().join("executor_queue.csv"), text).unwrap();
            let e = read_csv_dir(dir.path()).unwrap();
            let lines: Vec<usize> = e.queue.iter().map(|r| r.position).collect();
            assert_eq!(lines, [2, 5, 6], "line ends {end:?}");
        }
    }
}

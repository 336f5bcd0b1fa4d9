//! `executor config reference` (every key, as docs/configuration.md has it) and `executor config show`
//! (the effective config, secrets masked, each value with where it came from).

use std::path::Path;

use anyhow::Context as _;
use clap::Subcommand;
use serde::Serialize;

use super::output::json;
use crate::config::reference::{self, Default, Key};
use crate::config::{ConfigSource, locate};
use crate::store::redact_url;

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print every config key with its type, default and meaning, as Markdown (docs/configuration.md is
    /// this output: `executor config reference > docs/configuration.md`).
    Reference,
    /// Print the effective config as TOML, each value marked `# file` or `# default`; the dashboard
    /// token, the notice webhook URL and a database password are masked. `--json`: one object per key.
    Show,
}

pub fn run(flag: Option<&Path>, command: ConfigCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        ConfigCommand::Reference => {
            print!("{}", reference::markdown());
            Ok(())
        }
        ConfigCommand::Show => show(flag, as_json),
    }
}

/// One key of the effective config.
#[derive(Debug, Serialize, PartialEq)]
pub struct Shown {
    /// As in the file: `runner`, `sources[0]`, `repos.app`, `pricing.default`.
    pub table: String,
    pub key: String,
    /// TOML, or words when the default depends on another key.
    pub value: String,
    /// `file` or `default`.
    pub from: &'static str,
}

fn show(flag: Option<&Path>, as_json: bool) -> anyhow::Result<()> {
    // What every command would refuse, this refuses too, with the same words.
    super::context::load_config(flag)?;
    let (found, file) = match locate(flag) {
        ConfigSource::File { path, .. } => {
            let text =
                std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let table: toml::Table =
                toml::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
            (path.display().to_string(), table)
        }
        ConfigSource::Defaults => ("none (the built-in defaults apply)".to_string(), toml::Table::new()),
    };
    let rows = effective(&file);
    if as_json {
        return json(&serde_json::json!({ "config_file": found, "keys": rows }));
    }
    println!("# config file: {found}");
    let mut table = "";
    for row in &rows {
        if row.table != table {
            table = &row.table;
            println!("\n{}", header(table));
        }
        if row.from == "default" && row.value.starts_with('(') {
            println!("# {} = {}  # default", row.key, row.value);
        } else {
            println!("{} = {}  # {}", row.key, row.value, row.from);
        }
    }
    Ok(())
}

/// `[runner]`, `[[sources]]` for `sources[0]`, `[repos.app]`.
fn header(table: &str) -> String {
    match table.split_once('[') {
        Some((array, _)) => format!("[[{array}]]"),
        None => format!("[{table}]"),
    }
}

/// Every documented key of every table the config has (or `init` writes), from `file` or its default.
pub fn effective(file: &toml::Table) -> Vec<Shown> {
    let (tables, keys) = reference::reference();
    let mut rows = Vec::new();
    for t in &tables {
        let documented: Vec<&Key> = keys.iter().filter(|k| k.table == t.name).collect();
        for (label, values) in instances(&t.name, t.written, file) {
            for k in &documented {
                rows.push(match values.and_then(|v| v.get(&k.key)) {
                    Some(v) => Shown {
                        table: label.clone(),
                        key: k.key.clone(),
                        value: mask(&t.name, &k.key, v),
                        from: "file",
                    },
                    None => Shown {
                        table: label.clone(),
                        key: k.key.clone(),
                        value: default_text(&k.default),
                        from: "default",
                    },
                });
            }
        }
    }
    rows
}

/// The instances of a documented table in `file`: `(label, its keys)`. A table `init` writes is shown
/// also when the file leaves it out (every key at its default); an example table only when present.
fn instances<'a>(name: &str, written: bool, file: &'a toml::Table) -> Vec<(String, Option<&'a toml::Table>)> {
    let array = |key: &str| match file.get(key) {
        Some(toml::Value::Array(items)) => {
            items.iter().enumerate().map(|(i, v)| (format!("{key}[{i}]"), v.as_table())).collect()
        }
        _ => Vec::new(),
    };
    match name {
        "sources" | "filters" => array(name),
        "repos.NAME" => match file.get("repos").and_then(toml::Value::as_table) {
            Some(repos) => repos.iter().map(|(n, v)| (format!("repos.{n}"), v.as_table())).collect(),
            None => Vec::new(),
        },
        _ => {
            let mut at = Some(file);
            for part in name.split('.') {
                at = at.and_then(|t| t.get(part)).and_then(toml::Value::as_table);
            }
            if at.is_some() || written { vec![(name.to_string(), at)] } else { Vec::new() }
        }
    }
}

fn default_text(default: &Default) -> String {
    match default {
        Default::Value(v) => v.clone(),
        Default::Required => "(required)".into(),
        Default::Words(w) => format!("({w})"),
    }
}

/// A value from the file as TOML, secrets masked: the dashboard token, the notice webhook (its URL is
/// its credential) and a database password.
fn mask(table: &str, key: &str, value: &toml::Value) -> String {
    match (table, key, value) {
        ("web", "token", toml::Value::String(s)) | ("notify", "webhook_url", toml::Value::String(s))
            if !s.is_empty() =>
        {
            "\"***\"".into()
        }
        ("database", "url", toml::Value::String(s)) => toml::Value::String(redact_url(s)).to_string(),
        _ => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(rows: &'a [Shown], table: &str, key: &str) -> &'a Shown {
        rows.iter().find(|r| r.table == table && r.key == key).unwrap_or_else(|| panic!("{table}.{key}"))
    }

    #[test]
    fn each_value_says_where_it_came_from_and_secrets_are_masked() {
        let file: toml::Table = toml::from_str(
            "[runner]\nmax_workers = 4\n[web]\ntoken = \"0123456789abcdef0123456789abcdef\"\n\
             [notify]\nwebhook_url = \"https://hooks.example/T000/secret\"\n\
             [database]\nurl = \"postgres://exec:hunter22@db/x\"\n\
             [repos.app]\npath = \"/src/app\"\n[[sources]]\nname = \"in\"\nkind = \"asana\"\n",
        )
        .unwrap();
        let rows = effective(&file);
        assert_eq!(
            row(&rows, "runner", "max_workers"),
            &Shown { table: "runner".into(), key: "max_workers".into(), value: "4".into(), from: "file" }
        );
        assert_eq!(row(&rows, "runner", "loop_interval").value, "\"60s\"");
        assert_eq!(row(&rows, "runner", "loop_interval").from, "default");
        assert_eq!(row(&rows, "repos.app", "forge").value, "\"local\"");
        assert_eq!(row(&rows, "sources[0]", "token_env").from, "default");
        assert_eq!(row(&rows, "web", "token").value, "\"***\"");
        assert_eq!(row(&rows, "database", "url").value, "\"postgres://exec:***@db/x\"");
        let all = format!("{rows:?}");
        for secret in ["0123456789abcdef", "hunter22", "T000/secret"] {
            assert!(!all.contains(secret), "{secret} shown: {all}");
        }
        assert!(
            !rows.iter().any(|r| r.table == "cluster"),
            "an example table absent from the file is not shown"
        );
    }
}

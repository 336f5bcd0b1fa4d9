//! docs/configuration.md is `executor config reference`'s output, and that reference documents every key
//! the config accepts — no more, no fewer — with defaults that are what leaving a key out gives.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use executor::config::Config;
use executor::config::reference::{self, Default};

/// docs/configuration.md is exactly what the command prints.
#[test]
fn docs_configuration_md_is_the_generated_reference() {
    let out = Command::new(env!("CARGO_BIN_EXE_executor")).args(["config", "reference"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed, reference::markdown());
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    let written = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        written == printed,
        "docs/configuration.md differs from `executor config reference`; regenerate it with\n    \
         cargo run -- config reference > docs/configuration.md"
    );
}

/// The keys the config's parser accepts in a table, as its "unknown field" error lists them.
fn accepted(header: &str) -> BTreeSet<String> {
    let text = format!("{header}\nnot_a_key_of_executor = 1\n");
    let err = Config::parse(&text).expect_err(&text);
    let listed = err.split_once("expected").unwrap_or_else(|| panic!("{header}: {err}")).1;
    listed.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// How a documented table is written to probe it.
fn probe_header(table: &str) -> String {
    match table {
        "sources" | "filters" => format!("[[{table}]]"),
        "repos.NAME" => "[repos.app]".into(),
        t => format!("[{t}]"),
    }
}

#[test]
fn every_key_the_config_accepts_is_documented_and_no_other() {
    let (tables, keys) = reference::reference();
    let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
    // Top level: every table the config takes (by its first part: `pricing`, `repos`, `worker`).
    let top: BTreeSet<String> = names.iter().map(|n| n.split('.').next().unwrap().to_string()).collect();
    assert_eq!(accepted(""), top, "the config's tables against the reference's");
    for t in &names {
        let mut documented: BTreeSet<String> =
            keys.iter().filter(|k| k.table == *t).map(|k| k.key.clone()).collect();
        // Subtables are keys of their table (`worker.claude` is `claude` in `[worker]`).
        documented.extend(names.iter().filter_map(|n| n.strip_prefix(&format!("{t}."))).map(str::to_string));
        assert_eq!(accepted(&probe_header(t)), documented, "the keys of {}", reference::heading(t));
    }
}

/// The smallest table the config accepts, for the tables `init` does not write.
fn minimal(table: &str) -> Option<&'static str> {
    match table {
        "sources" => Some("name = \"s\"\nkind = \"linear\""),
        "repos.NAME" => Some("path = \"/src/app\""),
        "filters" => Some("name = \"f\"\nwhen = { field = \"text\", contains = \"x\" }"),
        "intake" => Some(""),
        "web.github_login" => Some("client_id = \"c\""),
        "gitlab" => Some(""),
        _ => None,
    }
}

/// Every default the reference states as a value is what leaving the key out gives: in a table `init`
/// writes, the built-in defaults; in an example table, the same table without the key.
#[test]
fn every_stated_default_is_what_leaving_the_key_out_gives() {
    let (tables, keys) = reference::reference();
    let mut checked = 0;
    for k in &keys {
        let Default::Value(value) = &k.default else { continue };
        let t = tables.iter().find(|t| t.name == k.table).unwrap();
        let header = probe_header(&k.table);
        let line = format!("{} = {value}", k.key);
        let (with, without) = if t.written {
            if k.table == "pricing.default" {
                continue; // a price needs input and output; the template test holds these
            }
            (format!("{header}\n{line}\n"), String::new())
        } else {
            let body = minimal(&k.table).unwrap_or_else(|| panic!("no minimal {header} for {}", k.key));
            if body.contains(&format!("{} =", k.key)) {
                continue;
            }
            (format!("{header}\n{line}\n{body}\n"), format!("{header}\n{body}\n"))
        };
        let with = Config::parse(&with).unwrap_or_else(|e| panic!("{}.{}: {e}\n{with}", k.table, k.key));
        let without = Config::parse(&without).unwrap_or_else(|e| panic!("{e}\n{without}"));
        assert_eq!(with, without, "{}.{}: the reference says the default is {value}", k.table, k.key);
        checked += 1;
    }
    assert!(checked > 80, "checked {checked} defaults");
}

//! The layout ARCHITECTURE.md draws, checked from the code's own imports: which top-level modules may
//! import which (`ALLOWED`), and that no two files import each other, directly or through others.
//!
//! An import is any `crate::…`, `super::…` or `self::…` path in a file (in a `use` or inline), resolved
//! to the file of the deepest module it names. A module declaring its children (`mod x;`, `pub use
//! x::Y`) is containment, not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

/// Each top-level module and the top-level modules it may import. `cli` and `web` are the edges: nothing
/// imports them. `domain` imports nothing.
const ALLOWED: &[(&str, &[&str])] = &[
    ("domain", &[]),
    ("filter", &[]),
    ("config", &["domain", "filter"]),
    ("github", &["config", "shared_blocks"]),
    ("gitlab", &["config", "shared_blocks"]),
    ("linear", &[]),
    ("jira", &[]),
    ("env_file", &["config"]),
    ("redact", &["config", "env_file"]),
    ("store", &["domain", "shared_blocks"]),
    ("workspace", &["domain", "redact"]),
    ("instance_lock", &[]),
    ("schedule", &[]),
    ("shared_blocks", &[]),
    ("budget", &["config", "domain", "store"]),
    ("worker", &["config", "domain", "redact", "workspace"]),
    ("forge", &["config", "domain", "github", "gitlab", "shared_blocks", "store", "worker", "workspace"]),
    (
        "intake",
        &[
            "config",
            "domain",
            "filter",
            "github",
            "gitlab",
            "jira",
            "linear",
            "shared_blocks",
            "store",
            "workspace",
        ],
    ),
    ("import", &["domain", "store"]),
    (
        "analyzer",
        &["budget", "config", "domain", "filter", "intake", "store", "worker", "workspace", "writeback"],
    ),
    (
        "writeback",
        &["config", "domain", "github", "gitlab", "jira", "linear", "redact", "shared_blocks", "store"],
    ),
    (
        "runner",
        &[
            "budget",
            "config",
            "domain",
            "forge",
            "github",
            "redact",
            "store",
            "worker",
            "workspace",
            "writeback",
        ],
    ),
    ("web", &["config", "domain", "forge", "github", "redact", "store", "writeback"]),
    ("cli", &["*"]),
];

struct Tree {
    /// Module path (`["runner", "engine"]`) → its file.
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// File → the files it imports.
    imports: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/runner/engine.rs` → `["runner", "engine"]`; `mod.rs`, `lib.rs` and `main.rs` name their folder.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code without comments, strings and character literals, which may hold anything.
fn code_only(text: &str) -> String {
    let raw = Regex::new(r##"r(#+)"[\s\S]*?"#+"##).unwrap();
    let chars = Regex::new(r#"'(\\.|[^'\\\n])'"#).unwrap();
    let strings = Regex::new(r#""(\\[\s\S]|[^"\\])*""#).unwrap();
    let comments = Regex::new(r"//[^\n]*").unwrap();
    let text = raw.replace_all(text, "\"\"");
    let text = chars.replace_all(&text, "' '");
    let text = strings.replace_all(&text, "\"\"");
    comments.replace_all(&text, "").into_owned()
}

impl Tree {
    fn read() -> Tree {
        let mut files = Vec::new();
        rust_files(&src(), &mut files);
        let modules: BTreeMap<Vec<String>, PathBuf> =
            files.iter().map(|f| (module_of(f), f.clone())).collect();
        let mut tree = Tree { modules, imports: BTreeMap::new() };
        let path = Regex::new(r"\b(crate|super|self)((?:::\w+)+)(::\{([^;]*?)\})?").unwrap();
        let glob_super = Regex::new(r"use\s+super::\*").unwrap();
        for file in &files {
            let me = module_of(file);
            let code = code_only(&std::fs::read_to_string(file).unwrap());
            let mut found = BTreeSet::new();
            for m in path.captures_iter(&code) {
                let mut rest: Vec<String> =
                    m[2].split("::").filter(|s| !s.is_empty()).map(String::from).collect();
                let mut base = match &m[1] {
                    "crate" => Vec::new(),
                    "super" => me[..me.len().saturating_sub(1)].to_vec(),
                    _ => me.clone(),
                };
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest.remove(0);
                }
                base.extend(rest);
                if let Some(group) = m.get(4) {
                    for item in group.as_str().split(',') {
                        let item = item.split(" as ").next().unwrap_or("").trim();
                        let mut full = base.clone();
                        full.extend(
                            item.split("::")
                                .filter(|s| !s.is_empty() && *s != "self" && *s != "*")
                                .map(String::from),
                        );
                        found.extend(tree.resolve(&full));
                    }
                }
                found.extend(tree.resolve(&base));
            }
            if glob_super.is_match(&code) {
                found.extend(tree.resolve(&me[..me.len().saturating_sub(1)]));
            }
            found.remove(file);
            tree.imports.insert(file.clone(), found);
        }
        tree
    }

    /// The file of the deepest module a path names.
    fn resolve(&self, path: &[String]) -> Option<PathBuf> {
        (1..=path.len()).rev().find_map(|n| self.modules.get(&path[..n]).cloned())
    }

    fn name(&self, file: &Path) -> String {
        file.strip_prefix(src().parent().unwrap()).unwrap().display().to_string()
    }

    /// One cycle through `start`, if any: a path of files back to it.
    fn cycle_from(&self, start: &Path) -> Option<Vec<PathBuf>> {
        let mut stack = vec![(start.to_path_buf(), vec![start.to_path_buf()])];
        let mut seen = BTreeSet::new();
        while let Some((file, trail)) = stack.pop() {
            for next in self.imports.get(&file).into_iter().flatten() {
                if next == start {
                    return Some(trail.clone());
                }
                if seen.insert(next.clone()) {
                    let mut longer = trail.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
        None
    }
}

#[test]
fn no_two_files_import_each_other() {
    let tree = Tree::read();
    assert!(tree.imports.len() > 100, "read {} files under src/", tree.imports.len());
    let cycles: BTreeSet<String> = tree
        .imports
        .keys()
        .filter_map(|f| tree.cycle_from(f))
        .map(|trail| {
            let mut names: Vec<String> = trail.iter().map(|f| tree.name(f)).collect();
            // One line per cycle, whichever file it was found from.
            let first = names.iter().enumerate().min_by_key(|(_, n)| n.as_str()).map(|(i, _)| i).unwrap_or(0);
            names.rotate_left(first);
            names.push(names[0].clone());
            names.join(" → ")
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "files that import each other:\n{}",
        cycles.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn each_module_imports_only_the_modules_below_it() {
    let tree = Tree::read();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (file, imports) in &tree.imports {
        let Some(from) = module_of(file).first().cloned() else { continue };
        let Some(may) = allowed.get(from.as_str()) else {
            wrong.push(format!(
                "{}: module `{from}` is not in ALLOWED (tests/architecture.rs)",
                tree.name(file)
            ));
            continue;
        };
        for target in imports {
            let Some(to) = module_of(target).first().cloned() else { continue };
            if to != from && !may.contains(&"*") && !may.contains(&to.as_str()) {
                wrong.push(format!(
                    "{} imports {} (`{from}` may import {may:?})",
                    tree.name(file),
                    tree.name(target)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layering:\n{}", wrong.join("\n"));
}

/// The check itself sees an import: a file of the tree is known to import another.
#[test]
fn the_import_reader_sees_imports() {
    let tree = Tree::read();
    let engine = src().join("runner/engine.rs");
    let state = src().join("runner/state.rs");
    assert!(tree.imports[&engine].contains(&state), "runner/engine.rs imports runner/state.rs");
    let client = src().join("github/client.rs");
    assert!(tree.imports[&client].contains(&src().join("github/auth.rs")));
}

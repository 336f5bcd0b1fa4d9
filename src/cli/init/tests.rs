use super::*;

/// The README and the guide's pages that hold ```toml blocks (docs/configuration.md is generated).
const DOCS: &[&str] = &[
    include_str!("../../../README.md"),
    include_str!("../../../docs/getting-started.md"),
    include_str!("../../../docs/trackers.md"),
    include_str!("../../../docs/github.md"),
    include_str!("../../../docs/several-hosts.md"),
    include_str!("../../../docs/dashboard.md"),
    include_str!("../../../docs/agents.md"),
    include_str!("../../../docs/operations.md"),
];

/// Every ```toml block of the README and the guide, appended as it is to what `executor init` writes,
/// loads: a newcomer pasting a snippet never gets a duplicate table. A block that names a repository
/// without defining one follows the first block (the README's quick start adds `[repos.app]`).
#[test]
fn every_readme_snippet_appends_to_the_init_config() {
    let readme = DOCS.join("\n");
    let mut blocks = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "```toml" {
            let indent = line.len() - line.trim_start().len();
            let block: Vec<&str> = lines
                .by_ref()
                .take_while(|l| l.trim() != "```")
                .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
                .collect();
            blocks.push(block.join("\n"));
        }
    }
    assert!(blocks.len() >= 3, "found {} toml blocks", blocks.len());
    let written = init_text();
    for block in &blocks {
        let base = if block.contains("[repos.") { "" } else { blocks[0].as_str() };
        let text = format!("{written}\n{base}\n{block}\n");
        if let Err(e) = Config::parse(&text) {
            panic!("this documented snippet does not append to the init config: {e}\n{block}");
        }
    }
}

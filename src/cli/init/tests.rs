use super::*;

/// Every ```toml block of the README, appended as it is to what `executor init` writes, loads: a
/// newcomer pasting a snippet never gets a duplicate table. A block that names a repository without
/// defining one follows the first block (the README's step 1 adds `[repos.app]`).
#[test]
fn every_readme_snippet_appends_to_the_init_config() {
    let readme = include_str!("../../../README.md");
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
            panic!("this README snippet does not append to the init config: {e}\n{block}");
        }
    }
}

//! Atlassian Document Format (ADF), the JSON rich text of Jira Cloud's REST API v3: descriptions
//! and comments. [`to_text`] reads any value as plain text and never fails; [`from_text`] writes
//! executor's plain-text messages as a document.
//!
//! The walk is total: blocks (paragraphs, headings, lists, code blocks, quotes, panels, tables) become
//! lines, inline nodes their text — a mention its `@name`, a link its text and, when different, its
//! address, a card its address — and a node this walker does not know gives the text of its content.
//! A string (Data Center's wiki markup, or a v2 answer) is its own text. Depth needs no guard:
//! `serde_json` refuses documents nested more than 128 levels when it parses them.

use serde_json::{Value, json};

/// The plain text of an ADF document (or any JSON value), blocks separated by blank lines.
pub fn to_text(doc: &Value) -> String {
    let mut out = Text::default();
    walk(doc, &mut out, "");
    out.finish()
}

/// What the walk writes: finished blocks, and the line being built.
#[derive(Default)]
struct Text {
    blocks: Vec<String>,
    line: String,
}

impl Text {
    /// Ends the current block (if it has text) with `prefix` (a list item's bullet, a quote's `> `).
    fn end_block(&mut self, prefix: &str) {
        let line = std::mem::take(&mut self.line);
        let text = line.trim_end();
        if !text.trim().is_empty() {
            let lines: Vec<String> = text.lines().map(|l| format!("{prefix}{l}")).collect();
            self.blocks.push(lines.join("\n"));
        }
    }

    fn finish(mut self) -> String {
        self.end_block("");
        self.blocks.join("\n\n")
    }
}

fn children(node: &Value) -> &[Value] {
    node.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn attr<'a>(node: &'a Value, name: &str) -> Option<&'a str> {
    node.pointer(&format!("/attrs/{name}")).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Writes `node` into `out`; `prefix` goes before each line of the blocks it ends (nested lists).
fn walk(node: &Value, out: &mut Text, prefix: &str) {
    let kind = match node {
        Value::String(text) => return out.line.push_str(text),
        Value::Array(items) => return items.iter().for_each(|item| walk(item, out, prefix)),
        Value::Object(_) => node.get("type").and_then(Value::as_str).unwrap_or(""),
        _ => return,
    };
    match kind {
        "text" => inline_text(node, out),
        "hardBreak" => out.line.push('\n'),
        "mention" => {
            let name = attr(node, "text").or_else(|| attr(node, "id")).unwrap_or("someone");
            if !name.starts_with('@') {
                out.line.push('@');
            }
            out.line.push_str(name);
        }
        "emoji" => out.line.push_str(attr(node, "text").or_else(|| attr(node, "shortName")).unwrap_or("")),
        "inlineCard" | "blockCard" | "embedCard" => {
            out.line.push_str(attr(node, "url").unwrap_or(""));
            if kind != "inlineCard" {
                out.end_block(prefix);
            }
        }
        "status" | "placeholder" => out.line.push_str(attr(node, "text").unwrap_or("")),
        "date" => out.line.push_str(attr(node, "timestamp").unwrap_or("")),
        "rule" => {
            out.end_block(prefix);
            out.blocks.push("---".into());
        }
        "heading" => {
            out.end_block(prefix);
            let level = node.pointer("/attrs/level").and_then(Value::as_u64).unwrap_or(1).clamp(1, 6);
            out.line.push_str(&"#".repeat(level as usize));
            out.line.push(' ');
            children(node).iter().for_each(|c| walk(c, out, prefix));
            out.end_block(prefix);
        }
        "codeBlock" => {
            out.end_block(prefix);
            let language = attr(node, "language").unwrap_or("");
            let code: String = children(node).iter().map(to_text).collect();
            out.blocks.push(format!("{prefix}```{language}\n{code}\n{prefix}```"));
        }
        "bulletList" | "orderedList" => {
            out.end_block(prefix);
            let start = node.pointer("/attrs/order").and_then(Value::as_u64).unwrap_or(1);
            let items: Vec<String> = children(node)
                .iter()
                .enumerate()
                .map(|(n, item)| {
                    let bullet = match kind {
                        "orderedList" => format!("{}. ", start + n as u64),
                        _ => "- ".into(),
                    };
                    list_item(item, prefix, &bullet)
                })
                .collect();
            if !items.is_empty() {
                out.blocks.push(items.join("\n"));
            }
        }
        "blockquote" => {
            out.end_block(prefix);
            let inner = format!("{prefix}> ");
            children(node).iter().for_each(|c| walk(c, out, &inner));
            out.end_block(&inner);
        }
        "tableRow" => {
            out.end_block(prefix);
            let cells: Vec<String> = children(node).iter().map(|c| to_text(c).replace('\n', " ")).collect();
            out.line.push_str(&format!("| {} |", cells.join(" | ")));
            out.end_block(prefix);
        }
        // Blocks whose content is inline: what they hold is one block of text.
        "paragraph" => {
            out.end_block(prefix);
            children(node).iter().for_each(|c| walk(c, out, prefix));
            out.end_block(prefix);
        }
        // `doc`, panels, tables, expands, media and anything newer: their content, in order.
        _ => {
            let block = !matches!(kind, "doc" | "");
            children(node).iter().for_each(|c| walk(c, out, prefix));
            if block && !out.line.is_empty() {
                out.end_block(prefix);
            }
        }
    }
}

/// A text node: its text, and a link's address after it when the text does not show it.
fn inline_text(node: &Value, out: &mut Text) {
    let text = node.get("text").and_then(Value::as_str).unwrap_or("");
    out.line.push_str(text);
    let marks = node.get("marks").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let href = marks.iter().find(|m| m.get("type").and_then(Value::as_str) == Some("link"));
    if let Some(href) = href.and_then(|m| attr(m, "href"))
        && href != text
    {
        out.line.push_str(&format!(" ({href})"));
    }
}

/// One list item's lines: its first block after `bullet`, the rest indented under it.
fn list_item(item: &Value, prefix: &str, bullet: &str) -> String {
    let mut inner = Text::default();
    let indent = " ".repeat(bullet.len());
    walk(item, &mut inner, "");
    let body = inner.finish();
    let mut lines = body.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("");
    let mut text = format!("{prefix}{bullet}{first}");
    for line in lines {
        text.push_str(&format!("\n{prefix}{indent}{line}"));
    }
    text
}

/// An ADF document of plain `text`: a paragraph per block (blank-line separated), its lines joined by
/// hard breaks, and each `http(s)://` address a link, so a pull request's address can be clicked.
pub fn from_text(text: &str) -> Value {
    let paragraphs: Vec<Value> = text
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut content = Vec::new();
            for (n, line) in block.lines().enumerate() {
                if n > 0 {
                    content.push(json!({"type": "hardBreak"}));
                }
                content.extend(inline(line));
            }
            json!({"type": "paragraph", "content": content})
        })
        .collect();
    json!({"type": "doc", "version": 1, "content": paragraphs})
}

/// Text nodes for one line, addresses as links. (ADF refuses an empty text node, so none is made.)
fn inline(line: &str) -> Vec<Value> {
    let mut nodes = Vec::new();
    let mut plain = String::new();
    for word in line.split_inclusive(' ') {
        let bare = word.trim_end_matches(' ');
        let address = bare.trim_end_matches(['.', ',', ')', ';', ':']);
        if address.starts_with("https://") || address.starts_with("http://") {
            if !plain.is_empty() {
                nodes.push(json!({"type": "text", "text": std::mem::take(&mut plain)}));
            }
            nodes.push(json!({"type": "text", "text": address,
                "marks": [{"type": "link", "attrs": {"href": address}}]}));
            plain.push_str(&word[address.len()..]);
        } else {
            plain.push_str(word);
        }
    }
    if !plain.is_empty() {
        nodes.push(json!({"type": "text", "text": plain}));
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Value {
        json!({"type": "text", "text": t})
    }

    #[test]
    fn blocks_become_lines_and_inline_nodes_their_text() {
        let doc = json!({"type": "doc", "version": 1, "content": [
            {"type": "heading", "attrs": {"level": 2}, "content": [text("Steps")]},
            {"type": "paragraph", "content": [
                text("Ask "), {"type": "mention", "attrs": {"id": "5b10", "text": "@Alex Doe"}},
                text(" about "), {"type": "text", "text": "the spec", "marks": [{"type": "link", "attrs": {"href": "https://x.test/spec"}}]},
                {"type": "hardBreak"}, text("then "), {"type": "inlineCard", "attrs": {"url": "https://x.test/APP-2"}},
            ]},
            {"type": "bulletList", "content": [
                {"type": "listItem", "content": [{"type": "paragraph", "content": [text("one")]},
                    {"type": "orderedList", "content": [
                        {"type": "listItem", "content": [{"type": "paragraph", "content": [text("one.a")]}]}]}]},
                {"type": "listItem", "content": [{"type": "paragraph", "content": [text("two")]}]},
            ]},
            {"type": "codeBlock", "attrs": {"language": "rust"}, "content": [text("fn main() {}")]},
            {"type": "panel", "attrs": {"panelType": "info"}, "content": [{"type": "paragraph", "content": [text("Note")]}]},
            {"type": "someFutureNode", "content": [{"type": "paragraph", "content": [text("kept")]}]},
        ]});
        assert_eq!(
            to_text(&doc),
            "## Steps\n\nAsk @Alex Doe about the spec (https://x.test/spec)\nthen https://x.test/APP-2\n\n\
             - one\n  1. one.a\n- two\n\n```rust\nfn main() {}\n```\n\nNote\n\nkept"
        );
    }

    #[test]
    fn anything_reads_as_text() {
        assert_eq!(to_text(&json!(null)), "");
        assert_eq!(to_text(&json!("h1. wiki text")), "h1. wiki text");
        assert_eq!(to_text(&json!({"type": "doc"})), "");
        assert_eq!(to_text(&json!({"type": "mention", "attrs": {"id": "5b10"}})), "@5b10");
        assert_eq!(to_text(&json!([1, true, {"content": "x"}])), "");
    }

    #[test]
    fn text_becomes_paragraphs_with_links_and_reads_back() {
        let message =
            "Opened https://github.com/o/r/pull/7. Branch x.\nSecond line\n\nAnother [executor wb-1]";
        let doc = from_text(message);
        assert_eq!(doc["content"].as_array().unwrap().len(), 2);
        let first = &doc["content"][0]["content"];
        assert_eq!(first[1]["marks"][0]["attrs"]["href"], "https://github.com/o/r/pull/7");
        assert_eq!(first[2]["text"], ". Branch x.");
        assert_eq!(to_text(&doc), message);
    }
}

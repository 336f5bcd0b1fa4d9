//! CSV for the exports (`/api/v1/tasks.csv`, `/api/v1/runs.csv`): RFC 4180 quoting, CRLF line ends, and
//! cells made safe for spreadsheets. Task text and branch names come from other people: a cell that
//! starts with `=`, `+`, `-` or `@` (or a tab or carriage return) would run as a formula when the file is
//! opened in Excel or LibreOffice, so it is written with a leading `'`, which they show as text.

/// One cell of text: prefixed when a spreadsheet would read it as a formula, quoted when it holds a
/// separator, a quote or a line break.
pub fn cell(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        std::borrow::Cow::Owned(format!("'{text}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.into_owned()
    }
}

/// A CSV document: a header row, then rows of cells already made with [`cell`] (or numbers, which are
/// our own and never a formula).
pub struct Csv {
    out: String,
}

impl Csv {
    pub fn new(header: &[&str]) -> Csv {
        let mut csv = Csv { out: String::new() };
        csv.row(header.iter().map(|h| cell(h)).collect());
        csv
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.out.push_str(&cells.join(","));
        self.out.push_str("\r\n");
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// An optional text cell: empty when absent.
pub fn opt(text: Option<&str>) -> String {
    text.map(cell).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_and_never_formulas() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("two\nlines"), "\"two\nlines\"");
        for formula in ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx"] {
            assert!(cell(formula).trim_start_matches('"').starts_with('\''), "{formula:?}");
        }
        assert_eq!(cell("=HYPERLINK(\"http://x\",\"y\")"), "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"");
        assert_eq!(cell("a=b"), "a=b", "only a leading sign makes a formula");
        let mut csv = Csv::new(&["gid", "text"]);
        csv.row(vec![cell("T-1"), cell("=cmd")]);
        assert_eq!(csv.finish(), "gid,text\r\nT-1,'=cmd\r\n");
    }
}

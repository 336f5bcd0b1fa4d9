//! Splits a growing byte stream into lines without trusting the producer: a line may be megabytes long,
//! may end without a newline, and may not be UTF-8.

/// The most of one line that is kept. The rest of an over-long line is counted and dropped, so a 10 MB
/// line costs 64 KiB of memory and the next line still parses.
pub const MAX_LINE: usize = 64 * 1024;

/// One complete line, lossily decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    /// How many bytes the producer wrote for this line (without the newline); larger than
    /// `text.len()` when the line was cut.
    pub full_len: usize,
}

impl Line {
    pub fn truncated(&self) -> bool {
        self.full_len > MAX_LINE
    }
}

/// Feeds bytes in, gets complete lines out. Tracks the stream offset just after the last complete line,
/// which is where a restarted supervisor can resume reading.
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
    partial_len: usize,
    /// Offset (in the whole stream) of the first byte not yet part of a returned line.
    line_start: u64,
}

impl LineSplitter {
    /// A splitter whose first byte is at `offset` in the underlying file.
    pub fn starting_at(offset: u64) -> Self {
        LineSplitter { line_start: offset, ..Default::default() }
    }

    /// The offset just after the last complete line returned.
    pub fn offset(&self) -> u64 {
        self.line_start
    }

    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<Line>) {
        while let Some(pos) = bytes.iter().position(|b| *b == b'\n') {
            self.keep(&bytes[..pos]);
            out.push(self.take());
            self.line_start += 1; // the newline
            bytes = &bytes[pos + 1..];
        }
        self.keep(bytes);
    }

    /// The unterminated last line, if any: called once the producer has exited.
    pub fn finish(&mut self) -> Option<Line> {
        (self.partial_len > 0).then(|| self.take())
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        self.partial.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.partial_len += bytes.len();
    }

    fn take(&mut self) -> Line {
        let mut bytes = std::mem::take(&mut self.partial);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        let line = Line { text: String::from_utf8_lossy(&bytes).into_owned(), full_len: self.partial_len };
        self.line_start += self.partial_len as u64;
        self.partial_len = 0;
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_lines_split_across_reads_and_tracks_offset() {
        let mut s = LineSplitter::default();
        let mut out = Vec::new();
        s.push(b"ab", &mut out);
        assert!(out.is_empty());
        s.push(b"c\nde\r\nf", &mut out);
        assert_eq!(out.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["abc", "de"]);
        assert_eq!(s.offset(), 8);
        assert_eq!(s.finish().unwrap().text, "f");
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn caps_a_huge_line_and_keeps_going() {
        let mut s = LineSplitter::starting_at(100);
        let mut out = Vec::new();
        let chunk = vec![b'x'; 1024 * 1024];
        for _ in 0..10 {
            s.push(&chunk, &mut out);
        }
        s.push(b"\n{\"ok\":1}\n", &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].text.len(), MAX_LINE);
        assert!(out[0].truncated());
        assert_eq!(out[0].full_len, 10 * 1024 * 1024);
        assert_eq!(out[1].text, "{\"ok\":1}");
        assert_eq!(s.offset(), 100 + 10 * 1024 * 1024 + 1 + 9);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_an_error() {
        let mut s = LineSplitter::default();
        let mut out = Vec::new();
        s.push(b"\xff\xfeok\n", &mut out);
        assert!(out[0].text.ends_with("ok"));
    }
}

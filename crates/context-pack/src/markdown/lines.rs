//! Markdown recognised one line at a time, for the readers that walk a
//! text line by line and read more than Markdown: the README reader (which
//! also reads reStructuredText and plain text, with its own block rules)
//! and the starter's reading of one code block. A whole-document parse
//! does not fit them; these are the only hand-written definitions of a
//! fence and an ATX heading, and on a line at a document's top level they
//! agree with pulldown-cmark (a property test holds them to it).
//!
//! The one deliberate difference: a fence may have any indentation. These
//! readers do not track list items, and a fence indented under one is
//! still a fence to its author.

/// A code fence: its character (backtick or tilde) and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fence {
    ch: char,
    len: usize,
}

impl Fence {
    /// The fence `line` opens: three or more backticks or tildes after any
    /// indentation, then an info string (which after backticks holds no
    /// backtick, else the line is inline code).
    pub(crate) fn open(line: &str) -> Option<Fence> {
        let t = line.trim_start();
        let ch = t.chars().next()?;
        if ch != '`' && ch != '~' {
            return None;
        }
        let len = t.bytes().take_while(|&b| b == ch as u8).count();
        if len < 3 || (ch == '`' && t[len..].contains('`')) {
            return None;
        }
        Some(Fence { ch, len })
    }

    /// The info string of `line`, the line that opened this fence
    /// (`python` of ```` ```python ````), trimmed; empty when there is none.
    pub(crate) fn info(self, line: &str) -> &str {
        line.trim_start().get(self.len..).unwrap_or("").trim()
    }

    /// Whether `line` closes this fence: only its character, at least as
    /// many times, and nothing else but spaces.
    pub(crate) fn closes(self, line: &str) -> bool {
        let t = line.trim();
        t.len() >= self.len && t.bytes().all(|b| b == self.ch as u8)
    }

    /// A line that closes this fence.
    pub(crate) fn closing(self) -> String {
        std::iter::repeat_n(self.ch, self.len).collect()
    }
}

/// An ATX heading, `## Title ##`: its level and title. Up to three
/// columns of indentation, one to six `#`, then a space, a tab or the
/// line's end; a closing run of `#` is dropped when a space precedes it
/// (`# C#` is titled `C#`).
pub(crate) fn atx(line: &str) -> Option<(usize, &str)> {
    if indent(line) > 3 {
        return None;
    }
    let t = line.trim_start();
    let level = t.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim();
    let without = title.trim_end_matches('#');
    let title = if without.is_empty() || without.ends_with(char::is_whitespace) {
        without.trim_end()
    } else {
        title
    };
    Some((level, title))
}

/// The columns of a line's indentation, a tab counting four.
pub(crate) fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

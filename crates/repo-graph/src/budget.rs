//! The per-file budgets that keep a hostile file's cost bounded, and the
//! linear pre-scan that enforces the nesting budgets before tree-sitter
//! sees the text.
//!
//! Measured on 2 MB of `[[[ ... ]]]`, tree-sitter alone took 740 MB and
//! 12 s (docs/PERFORMANCE.md, "Adversarial input"): its parse stack and
//! tree grow with nesting depth far faster than with size. No valid
//! Python nests that deep (CPython refuses more than 200 open brackets
//! and more than 100 indentation levels), and no Java a human wrote does,
//! so [`limit_nesting`] blanks what lies deeper than [`MAX_NESTING`] (or,
//! in Python, is indented deeper than [`MAX_INDENT`]) before parsing. It
//! replaces every byte of the region except line breaks with a space:
//! byte offsets and line numbers stay those of the file, the brackets
//! around the region stay balanced, and everything after it is analysed
//! as usual. Ordinary code pays one pass over its bytes and no copy.
//!
//! The scan knows just enough of each language's lexical syntax not to
//! count brackets in strings and comments: Python's prefixed, triple
//! quoted and f-strings (whose replacement fields hold code that
//! tree-sitter parses, so their brackets count), Java's strings, text
//! blocks, character literals and comments. A bracket it miscounts (a
//! quote of the same kind nested in an f-string field, say) can only
//! misplace a region in a file that is nested past the budget anyway:
//! the depth is restored when each string ends.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::model::{Budget, Language};

/// Deepest bracket nesting (`(`, `[`, `{`) parsed: CPython's own limit
/// (its tokenizer's `MAXLEVEL`); Java code nests far less in practice.
pub const MAX_NESTING: u32 = 200;

/// Deepest Python indentation parsed, in levels: CPython's own limit
/// (`MAXINDENT`).
pub const MAX_INDENT: u32 = 100;

/// Most fact units one file may hold: every record its extraction keeps
/// (name reads, bindings, call sites, effects, value expression nodes,
/// definitions, locals, fields, imports, names). Past it the rest of the
/// file is not walked, and the file is reported analysed in part
/// ([`Budget::Facts`]).
///
/// Real code holds at most 0.4 units per byte (sympy's `test_spin.py`,
/// 132,000 units in 345 KB, is the densest file of Django and sympy), so
/// a file of real code at the default size limit (2 MiB) fits; shapes
/// made to be expensive reach 1 to 12 units per byte (a Java call chain
/// copies its receiver into every call). At about 128 bytes per unit
/// ([`crate::Analyzer::memory_ceiling`]) a file holds at most ~130 MB.
pub const MAX_FILE_FACTS: u64 = 1_000_000;

/// Where a file went over one of its budgets: what was cut, from which
/// line. Part of the cached facts, since it depends only on the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Cut {
    pub budget: Budget,
    /// 1-based line where the budget ran out.
    pub line: u32,
}

impl Cut {
    /// The earlier of two cuts (the first one a reader meets).
    pub(crate) fn first(a: Option<Cut>, b: Option<Cut>) -> Option<Cut> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.line < a.line { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

/// A file's text with the regions past the nesting budgets blanked.
#[derive(Debug)]
pub(crate) struct Limited<'a> {
    /// The text to parse: borrowed when nothing had to be blanked.
    pub text: Cow<'a, str>,
    /// The first region blanked.
    pub cut: Option<Cut>,
}

/// Blanks the parts of `text` nested deeper than [`MAX_NESTING`] brackets
/// (and, for Python, indented deeper than [`MAX_INDENT`] levels).
pub(crate) fn limit_nesting(text: &str, language: Language) -> Limited<'_> {
    limit_nesting_to(text, language, MAX_NESTING, MAX_INDENT)
}

/// [`limit_nesting`] with explicit budgets (tests use small ones).
pub(crate) fn limit_nesting_to(
    text: &str,
    language: Language,
    max_nesting: u32,
    max_indent: u32,
) -> Limited<'_> {
    let mut scan = Scan::new(text.as_bytes(), max_nesting, max_indent);
    match language {
        Language::Python => scan.python(),
        Language::Java => scan.java(),
    }
    if scan.regions.is_empty() {
        return Limited {
            text: Cow::Borrowed(text),
            cut: None,
        };
    }
    let mut bytes = text.as_bytes().to_vec();
    for region in &scan.regions {
        let end = region.end.min(bytes.len());
        // Whether the byte at `at` is escaped by the backslash before it.
        let mut escaped = false;
        for at in region.start..end {
            let byte = bytes[at];
            // Line breaks stay, and so, inside a string, does a backslash
            // that escapes one: it is what keeps the string going. One
            // escaped itself (`\\` before the break) does not.
            let keep = match byte {
                b'\n' | b'\r' => true,
                b'\\' => {
                    region.in_string && !escaped && matches!(bytes.get(at + 1), Some(b'\n' | b'\r'))
                }
                _ => false,
            };
            escaped = region.in_string && byte == b'\\' && !escaped;
            if !keep {
                bytes[at] = b' ';
            }
        }
    }
    // Regions start at an ASCII bracket or a line start and end after an
    // ASCII bracket, a line break or at the end, so every character is
    // either kept whole or blanked whole: the bytes stay UTF-8.
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    };
    Limited {
        text: Cow::Owned(text),
        cut: scan.cut,
    }
}

/// A region being blanked: where it started and the depth (brackets or
/// indentation levels) at which it ends.
#[derive(Debug, Clone, Copy)]
struct Open {
    start: usize,
    base: u32,
    /// It opened inside a string (an f-string's replacement field).
    in_string: bool,
}

/// A region to blank.
#[derive(Debug, Clone, Copy)]
struct Region {
    start: usize,
    end: usize,
    in_string: bool,
}

impl Open {
    fn until(self, end: usize) -> Region {
        Region {
            start: self.start,
            end,
            in_string: self.in_string,
        }
    }
}

/// A table of the bytes a scanner must look at; runs of other bytes are
/// skipped in one search, which is what keeps the scan cheap on ordinary
/// code (mostly names and spaces).
const fn stops(bytes: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
}

const PYTHON_CODE: [bool; 256] = stops(b"\n#\\'\"()[]{}");
const PYTHON_STRING: [bool; 256] = stops(b"\n\\'\"");
const PYTHON_F_STRING: [bool; 256] = stops(b"\n\\'\"()[]{}");
const JAVA_CODE: [bool; 256] = stops(b"\n/\"'()[]{}");
const JAVA_QUOTED: [bool; 256] = stops(b"\n\\\"'");
const JAVA_BLOCK_COMMENT: [bool; 256] = stops(b"\n*");
const LINE_END: [bool; 256] = stops(b"\n");

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    line: u32,
    depth: u32,
    max_nesting: u32,
    max_indent: u32,
    /// The bracket region being blanked.
    brackets: Option<Open>,
    /// The indentation region being blanked (Python).
    indent: Option<Open>,
    regions: Vec<Region>,
    /// The scan is inside a string literal.
    in_string: bool,
    cut: Option<Cut>,
}

impl<'a> Scan<'a> {
    fn new(bytes: &'a [u8], max_nesting: u32, max_indent: u32) -> Self {
        Scan {
            bytes,
            at: 0,
            line: 1,
            depth: 0,
            max_nesting,
            max_indent,
            brackets: None,
            indent: None,
            regions: Vec::new(),
            in_string: false,
            cut: None,
        }
    }

    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.at + offset).copied()
    }

    /// Moves past the current byte and the run of bytes after it that are
    /// not in `stops`.
    fn skip_plain(&mut self, stops: &[bool; 256]) {
        self.at += 1;
        let rest = self.bytes.get(self.at..).unwrap_or(&[]);
        self.at += rest
            .iter()
            .position(|b| stops[usize::from(*b)])
            .unwrap_or(rest.len());
    }

    fn note_cut(&mut self, budget: Budget) {
        if self.cut.is_none() {
            self.cut = Some(Cut {
                budget,
                line: self.line,
            });
        }
    }

    /// An opening bracket at `self.at`.
    fn open(&mut self) {
        self.depth = self.depth.saturating_add(1);
        if self.depth > self.max_nesting && self.brackets.is_none() {
            self.brackets = Some(Open {
                start: self.at,
                base: self.depth - 1,
                in_string: self.in_string,
            });
            self.note_cut(Budget::Nesting);
        }
    }

    /// A closing bracket at `self.at`; a stray one is ignored.
    fn close(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if let Some(open) = self.brackets
            && self.depth <= open.base
        {
            self.regions.push(open.until(self.at + 1));
            self.brackets = None;
        }
    }

    /// Restores the bracket depth after a string whose replacement fields
    /// may have left it unbalanced; a region opened inside the string ends
    /// before its closing quote (at `self.at`).
    fn restore_depth(&mut self, depth: u32, string_start: usize) {
        self.in_string = false;
        if let Some(open) = self.brackets
            && open.start >= string_start
        {
            // An escape at the very end can leave `at` one past it.
            self.regions.push(open.until(self.at.min(self.bytes.len())));
            self.brackets = None;
        }
        self.depth = depth;
    }

    /// Ends the scan: regions still open run to the end of the text.
    fn finish(&mut self) {
        let end = self.bytes.len();
        for open in [self.brackets.take(), self.indent.take()]
            .into_iter()
            .flatten()
        {
            self.regions.push(open.until(end));
        }
    }

    fn newline(&mut self) {
        self.line = self.line.saturating_add(1);
    }

    // ---- Python ----

    fn python(&mut self) {
        // Indentation widths of the open blocks; a width is pushed only
        // when a line is indented deeper than the last, so the stack is at
        // most as long as the file's widest indentation.
        let mut widths: Vec<usize> = vec![0];
        let mut line_start = true;
        while self.at < self.bytes.len() {
            if line_start {
                line_start = false;
                self.python_indentation(&mut widths);
                continue;
            }
            let byte = self.bytes[self.at];
            match byte {
                b'\n' => {
                    self.newline();
                    self.at += 1;
                    line_start = self.depth == 0;
                }
                b'#' => self.skip_line(),
                b'\\' => {
                    // A line continuation (or a stray backslash): the next
                    // line is not a logical line of its own.
                    if self.peek(1) == Some(b'\n') {
                        self.newline();
                        self.at += 2;
                    } else if self.peek(1) == Some(b'\r') && self.peek(2) == Some(b'\n') {
                        self.newline();
                        self.at += 3;
                    } else {
                        self.at += 1;
                    }
                }
                b'\'' | b'"' => self.python_string(),
                b'(' | b'[' | b'{' => {
                    self.open();
                    self.at += 1;
                }
                b')' | b']' | b'}' => {
                    self.close();
                    self.at += 1;
                }
                _ => self.skip_plain(&PYTHON_CODE),
            }
        }
        self.finish();
    }

    /// At the start of a logical line: measures its indentation and opens
    /// or closes the indentation region.
    fn python_indentation(&mut self, widths: &mut Vec<usize>) {
        let start = self.at;
        let mut column = 0usize;
        while let Some(byte) = self.peek(0) {
            match byte {
                b' ' => column += 1,
                b'\t' => column = (column / 8 + 1) * 8,
                b'\x0c' => column = 0,
                _ => break,
            }
            self.at += 1;
        }
        // Blank and comment-only lines do not change the indentation.
        if matches!(self.peek(0), None | Some(b'\n' | b'\r' | b'#')) {
            return;
        }
        // A dedent to a width between two open blocks (an error to
        // CPython) opens a block of that width, as a line indented past
        // the enclosing block would: otherwise the level would depend on
        // the widths of lines a blanked region removed, and a second pass
        // over the blanked text would cut again.
        while widths.len() > 1 && widths.last().is_some_and(|w| *w > column) {
            widths.pop();
        }
        if column > widths.last().copied().unwrap_or(0) {
            widths.push(column);
        }
        let level = u32::try_from(widths.len() - 1).unwrap_or(u32::MAX);
        match self.indent {
            None if level > self.max_indent => {
                self.indent = Some(Open {
                    start,
                    base: self.max_indent,
                    in_string: false,
                });
                self.note_cut(Budget::Indentation);
            }
            Some(open) if level <= open.base => {
                self.regions.push(open.until(start));
                self.indent = None;
            }
            _ => {}
        }
    }

    /// Moves to the end of the line (a comment), not past its line break.
    fn skip_line(&mut self) {
        if self.peek(0).is_some_and(|b| b != b'\n') {
            self.skip_plain(&LINE_END);
        }
    }

    /// A string literal whose opening quote is at `self.at`.
    fn python_string(&mut self) {
        let start = self.at;
        let quote = self.bytes[self.at];
        let is_f = self.python_prefix_is_f();
        let triple = self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        self.at += if triple { 3 } else { 1 };
        let depth_before = self.depth;
        self.in_string = true;
        // Brackets opened inside this string's replacement fields.
        let mut field_depth = 0u32;
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => {
                    if self.peek(1) == Some(b'\n') {
                        self.newline();
                    }
                    self.at += 2;
                    continue;
                }
                b'\n' => {
                    if !triple {
                        // An unterminated string ends with its line.
                        break;
                    }
                    self.newline();
                }
                _ if byte == quote
                    && (!triple
                        || (self.peek(1) == Some(quote) && self.peek(2) == Some(quote))) =>
                {
                    self.restore_depth(depth_before, start);
                    self.at += if triple { 3 } else { 1 };
                    return;
                }
                b'{' if is_f && field_depth == 0 && self.peek(1) == Some(b'{') => {
                    self.at += 2;
                    continue;
                }
                b'}' if is_f && field_depth == 0 && self.peek(1) == Some(b'}') => {
                    self.at += 2;
                    continue;
                }
                b'(' | b'[' | b'{' if is_f => {
                    field_depth += 1;
                    self.open();
                }
                b')' | b']' | b'}' if is_f && field_depth > 0 => {
                    field_depth -= 1;
                    self.close();
                }
                b'\'' | b'"' if is_f && field_depth > 0 => {
                    // A string of the other quote inside a replacement field.
                    // Escapes are read as in the enclosing string, so a
                    // backslash the blanking keeps means the same in both.
                    self.at += 1;
                    while let Some(inner) = self.peek(0) {
                        if inner == byte || inner == b'\n' {
                            break;
                        }
                        if inner == b'\\' {
                            if self.peek(1) == Some(b'\n') {
                                self.newline();
                            }
                            self.at += 2;
                            continue;
                        }
                        self.at += 1;
                    }
                    if self.peek(0) == Some(byte) {
                        self.at += 1;
                    }
                    continue;
                }
                _ => {
                    self.skip_plain(if is_f {
                        &PYTHON_F_STRING
                    } else {
                        &PYTHON_STRING
                    });
                    continue;
                }
            }
            self.at += 1;
        }
        self.restore_depth(depth_before, start);
    }

    /// Whether the letters just before the quote at `self.at` make an
    /// f-string (or a template string) prefix.
    fn python_prefix_is_f(&self) -> bool {
        let mut i = self.at;
        let mut is_f = false;
        let mut letters = 0;
        while i > 0 && letters < 3 {
            let byte = self.bytes[i - 1];
            match byte.to_ascii_lowercase() {
                b'f' | b't' => is_f = true,
                b'r' | b'b' | b'u' => {}
                _ => break,
            }
            i -= 1;
            letters += 1;
        }
        // A longer identifier ending in those letters is a name, not a prefix.
        let standalone = i == 0
            || !matches!(self.bytes[i - 1], b'_' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | 0x80..);
        is_f && standalone && letters <= 2
    }

    // ---- Java ----

    fn java(&mut self) {
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\n' => {
                    self.newline();
                    self.at += 1;
                }
                b'/' if self.peek(1) == Some(b'/') => self.skip_line(),
                b'/' if self.peek(1) == Some(b'*') => {
                    self.at += 2;
                    while let Some(inner) = self.peek(0) {
                        if inner == b'*' && self.peek(1) == Some(b'/') {
                            self.at += 2;
                            break;
                        }
                        if inner == b'\n' {
                            self.newline();
                        }
                        self.skip_plain(&JAVA_BLOCK_COMMENT);
                    }
                }
                b'"' if self.peek(1) == Some(b'"') && self.peek(2) == Some(b'"') => {
                    self.at += 3;
                    self.java_quoted(b'"', true);
                }
                b'"' | b'\'' => {
                    self.at += 1;
                    self.java_quoted(byte, false);
                }
                b'(' | b'[' | b'{' => {
                    self.open();
                    self.at += 1;
                }
                b')' | b']' | b'}' => {
                    self.close();
                    self.at += 1;
                }
                _ => self.skip_plain(&JAVA_CODE),
            }
        }
        self.finish();
    }

    /// The rest of a string, character literal or (when `block`) text block.
    fn java_quoted(&mut self, quote: u8, block: bool) {
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => {
                    if self.peek(1) == Some(b'\n') {
                        self.newline();
                    }
                    self.at += 2;
                    continue;
                }
                b'\n' if !block => return,
                b'\n' => self.newline(),
                _ if byte == quote
                    && (!block || (self.peek(1) == Some(quote) && self.peek(2) == Some(quote))) =>
                {
                    self.at += if block { 3 } else { 1 };
                    return;
                }
                _ => {
                    self.skip_plain(&JAVA_QUOTED);
                    continue;
                }
            }
            self.at += 1;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limit(text: &str, language: Language, nesting: u32, indent: u32) -> (String, Option<Cut>) {
        let limited = limit_nesting_to(text, language, nesting, indent);
        (limited.text.into_owned(), limited.cut)
    }

    #[test]
    fn ordinary_code_is_borrowed_unchanged() {
        let text = "def f(a, b=[1, (2, {3: 4})]):\n    return g(a)[b]\n";
        let limited = limit_nesting(text, Language::Python);
        assert!(matches!(limited.text, Cow::Borrowed(_)));
        assert_eq!(limited.cut, None);
    }

    #[test]
    fn brackets_past_the_budget_are_blanked_keeping_offsets_and_lines() {
        let text = "x = [[[[1,\n2]]]]\ny = 1\n";
        let (out, cut) = limit(text, Language::Python, 2, 100);
        assert_eq!(out, "x = [[    \n   ]]\ny = 1\n");
        assert_eq!(out.len(), text.len());
        assert_eq!(
            cut,
            Some(Cut {
                budget: Budget::Nesting,
                line: 1
            })
        );
    }

    #[test]
    fn calls_keep_their_innermost_callee_name() {
        let (out, _) = limit("f(f(f(f(0))))\n", Language::Python, 2, 100);
        assert_eq!(out, "f(f(f      ))\n");
    }

    #[test]
    fn brackets_in_strings_and_comments_do_not_count() {
        let text = "a = '(((('  # ((((\nb = \"\"\"[[[[\n]]\"\"\"\nc = r'\\'((((('\n";
        let limited = limit_nesting_to(text, Language::Python, 2, 100);
        assert!(
            matches!(limited.text, Cow::Borrowed(_)),
            "{:?}",
            limited.text
        );
    }

    #[test]
    fn f_string_fields_count_and_literal_braces_do_not_leak() {
        // Literal `{{` many times over never adds up to a cut.
        let text = "x = f'{{'\n".repeat(10);
        assert_eq!(limit(&text, Language::Python, 2, 100).1, None);
        // Nesting inside a replacement field is code and is cut, and the
        // region ends before the closing quote.
        let (out, cut) = limit("x = f'{[[[1]]]}'\ny = 2\n", Language::Python, 2, 100);
        assert_eq!(out, "x = f'{[     ]}'\ny = 2\n");
        assert!(cut.is_some());
    }

    #[test]
    fn deep_indentation_is_blanked_up_to_the_next_shallow_line() {
        let mut text = String::from("def f(x):\n");
        for level in 1..=4 {
            text.push_str(&" ".repeat(level));
            text.push_str("if x:\n");
        }
        text.push_str("     g()\n\n    # comment\ng()\n");
        let (out, cut) = limit(&text, Language::Python, 200, 2);
        let blank = |n: usize| " ".repeat(n);
        assert_eq!(
            out,
            format!(
                "def f(x):\n if x:\n  if x:\n{}\n{}\n{}\n\n{}\ng()\n",
                blank(8),
                blank(9),
                blank(8),
                blank(13)
            )
        );
        assert_eq!(
            cut,
            Some(Cut {
                budget: Budget::Indentation,
                line: 4
            })
        );
    }

    #[test]
    fn java_strings_text_blocks_chars_and_comments_do_not_count() {
        let text = "class A { String s = \"((((\"; char c = '('; /* (((( */ // ((((\n String t = \"\"\"\n ((((\n \"\"\"; }\n";
        let limited = limit_nesting_to(text, Language::Java, 2, 0);
        assert!(
            matches!(limited.text, Cow::Borrowed(_)),
            "{:?}",
            limited.text
        );
        let (out, cut) = limit(
            "class A { void m() { if (x) { g(); } } }\n",
            Language::Java,
            2,
            0,
        );
        assert_eq!(
            out,
            format!("class A {{ void m() {{ if {} }} }}\n", " ".repeat(12))
        );
        assert_eq!(cut.map(|c| c.budget), Some(Budget::Nesting));
    }

    #[test]
    fn unclosed_regions_run_to_the_end_and_stray_closers_are_ignored() {
        let (out, _) = limit(")))\nx = [[[[1\n", Language::Python, 2, 100);
        assert_eq!(out, ")))\nx = [[   \n");
    }

    /// Cases the property below once found: an escape at the end of the
    /// text, an escaped line break inside a blanked f-string field, a
    /// continuation line inside a blanked indentation region, a dedent
    /// to a width between two open blocks after one, and escaped line
    /// breaks inside a string nested in a blanked replacement field.
    #[test]
    fn blanking_does_not_change_how_the_rest_is_read() {
        for text in [
            "''''''f''''()([['f'{{'",
            "f\"{''['f'\\\n\"\"\"\"\"\"((((((",
            "\"\"\"\"\"\"}}\n \"\"\"\"\"\"{{'\n}})\n  (((\\\n",
            "f'(\n '((\n\t if x:\n  (",
            "f'(((('\"\"\"\"\"\"{{[f'([\"rb\"\"\\\nf'{{",
            "f'{[\"\\\\\n",
        ] {
            let first = limit_nesting_to(text, Language::Python, 1, 1);
            assert!(first.cut.is_some(), "{text:?}");
            let second = limit_nesting_to(&first.text, Language::Python, 1, 1);
            assert_eq!(second.cut, None, "{text:?} -> {:?}", first.text);
        }
    }

    /// Pieces that exercise every state of both scanners.
    const PIECES: &[&str] = &[
        "(", ")", "[", "]", "{", "}", "{{", "}}", "'", "\"", "'''", "\"\"\"", "f'", "rb\"", "f\"{",
        "#", "//", "/*", "*/", "\\", "\n", "\r\n", " ", "  ", "\t", "\x0c", "x", "é", "if x:\n",
        "g()", "x.a()",
    ];

    fn piece_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(PIECES), 0..300)
            .prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        /// Blanking keeps every offset and line, and what it leaves is
        /// within the budgets: a second pass finds nothing to cut.
        #[test]
        fn blanking_keeps_offsets_and_leaves_nothing_past_the_budget(
            text in piece_text(),
            java in any::<bool>(),
            nesting in 1u32..6,
            indent in 1u32..4,
        ) {
            let language = if java { Language::Java } else { Language::Python };
            let first = limit_nesting_to(&text, language, nesting, indent);
            prop_assert_eq!(first.text.len(), text.len());
            for (a, b) in first.text.bytes().zip(text.bytes()) {
                prop_assert!(a == b || a == b' ', "only blanks are written");
                prop_assert_eq!(a == b'\n', b == b'\n');
            }
            prop_assert_eq!(first.cut.is_some(), matches!(first.text, Cow::Owned(_)));
            let second = limit_nesting_to(&first.text, language, nesting, indent);
            prop_assert_eq!(second.cut, None, "{:?} -> {:?}", text, first.text);
        }
    }

    #[test]
    fn multibyte_text_inside_a_region_stays_utf8() {
        let (out, cut) = limit("x = [[[\"é€\"]]]\n", Language::Python, 2, 100);
        assert!(cut.is_some());
        assert_eq!(out.len(), "x = [[[\"é€\"]]]\n".len());
        assert!(out.starts_with("x = [[ "));
    }
}

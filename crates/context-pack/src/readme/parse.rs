// ---------------------------------------------------------------------------
// Parsing: lines into headings, prose paragraphs and code blocks.

use rustc_hash::FxHashSet;

use super::{Block, Flavor, Kind};
use crate::markdown::{Fence, atx, indent};

/// What follows a reST paragraph: an indented block to read as code, to
/// drop, or to keep with its directive.
#[derive(Debug, Clone, Copy)]
enum After {
    /// The paragraph ended with `::`.
    Literal,
    /// A code directive at lines `start..end`; it and its content are code.
    CodeDirective(usize, usize),
    /// An image, figure or raw directive: dropped with its content.
    Drop,
    /// Another directive at `start..end` (a note, a table of contents):
    /// prose, kept with its content.
    Directive(usize, usize),
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    base: usize,
    after: After,
}

pub(super) struct Parser<'t> {
    lines: Vec<&'t str>,
    flavor: Flavor,
    blocks: Vec<Block>,
    /// reST adornment styles (character, overlined) in order of appearance:
    /// the first is level 1.
    styles: Vec<(char, bool)>,
    image_subs: FxHashSet<String>,
}

impl<'t> Parser<'t> {
    pub(super) fn new(text: &'t str, flavor: Flavor) -> Self {
        Parser {
            lines: text.lines().collect(),
            flavor,
            blocks: Vec::new(),
            styles: Vec::new(),
            image_subs: FxHashSet::default(),
        }
    }

    pub(super) fn run(mut self) -> (Vec<Block>, FxHashSet<String>) {
        let n = self.lines.len();
        let mut i = 0;
        let mut para: Option<usize> = None;
        let mut pending: Option<Pending> = None;
        while i < n {
            let line = self.lines[i];
            if line.trim().is_empty() {
                if let Some(start) = para.take() {
                    pending = self.flush(start, i);
                }
                i += 1;
                continue;
            }
            if para.is_none()
                && let Some(p) = pending.take()
            {
                let next = self.resolve(p, i, true);
                if next != i {
                    i = next;
                    continue;
                }
            }
            if let Some(fence) = Fence::open(line) {
                self.end_paragraph(&mut para, i);
                let start = i;
                i += 1;
                let mut closed = false;
                while i < n {
                    let l = self.lines[i];
                    i += 1;
                    if fence.closes(l) {
                        closed = true;
                        break;
                    }
                }
                let mut text = self.lines[start..i].join("\n");
                // An unclosed fence would swallow whatever follows it.
                if !closed {
                    text.push('\n');
                    text.push_str(&fence.closing());
                }
                self.blocks.push(Block {
                    kind: Kind::Code,
                    text,
                });
                continue;
            }
            if self.flavor != Flavor::Rst
                && let Some((level, title)) = atx(line)
            {
                self.end_paragraph(&mut para, i);
                self.push_heading(level, title, line.trim_end().to_string(), true);
                i += 1;
                continue;
            }
            if let Some(start) = para
                && start + 1 == i
                && let Some(c) = self.adornment(line)
                && self.title_line(self.lines[start])
            {
                let title = self.lines[start];
                let level = self.level(c, false);
                let raw = format!("{}\n{}", title.trim_end(), line.trim_end());
                self.push_heading(level, title.trim(), raw, false);
                para = None;
                i += 1;
                continue;
            }
            if para.is_none()
                && self.flavor != Flavor::Markdown
                && let Some(c) = self.adornment(line)
                && let (Some(&title), Some(&under)) = (self.lines.get(i + 1), self.lines.get(i + 2))
                && !title.trim().is_empty()
                && self.title_line(title)
                && self.adornment(under) == Some(c)
            {
                let level = self.level(c, true);
                let raw = format!(
                    "{}\n{}\n{}",
                    line.trim_end(),
                    title.trim_end(),
                    under.trim_end()
                );
                self.push_heading(level, title.trim(), raw, false);
                i += 3;
                continue;
            }
            if para.is_none() {
                para = Some(i);
            }
            i += 1;
        }
        if let Some(start) = para {
            pending = self.flush(start, n);
        }
        if let Some(p) = pending {
            self.resolve(p, n, false);
        }
        (self.blocks, self.image_subs)
    }

    /// Ends the paragraph at `i` when something other than a blank line
    /// (a fence, a heading) interrupts it.
    fn end_paragraph(&mut self, para: &mut Option<usize>, i: usize) {
        if let Some(start) = para.take()
            && let Some(p) = self.flush(start, i)
        {
            self.resolve(p, i, false);
        }
    }

    fn push_heading(&mut self, level: usize, title: &str, raw: String, atx: bool) {
        self.blocks.push(Block {
            kind: Kind::Heading {
                level,
                title: title.to_string(),
                atx,
            },
            text: raw,
        });
    }

    /// A paragraph at lines `start..end` becomes a block, or waits for the
    /// indented block a reST directive or `::` announces.
    fn flush(&mut self, start: usize, end: usize) -> Option<Pending> {
        let lines = &self.lines[start..end];
        let first = lines.first()?.trim_start();
        let base = indent(lines.first()?);
        if first.starts_with(">>>") {
            self.blocks.push(Block {
                kind: Kind::Code,
                text: lines.join("\n"),
            });
            return None;
        }
        if self.flavor != Flavor::Markdown
            && let Some(directive) = directive(first)
        {
            let after = match directive {
                Directive::Code => After::CodeDirective(start, end),
                Directive::Image(sub) => {
                    if let Some(sub) = sub {
                        self.image_subs.insert(sub.to_lowercase());
                    }
                    After::Drop
                }
                Directive::Other => After::Directive(start, end),
            };
            return Some(Pending { base, after });
        }
        let literal = self.flavor != Flavor::Markdown
            && lines.last().is_some_and(|l| l.trim_end().ends_with("::"));
        self.blocks.push(Block {
            kind: Kind::Prose,
            text: lines.join("\n"),
        });
        literal.then_some(Pending {
            base,
            after: After::Literal,
        })
    }

    /// Reads the block indented under a pending paragraph, starting at line
    /// `i` (when `read` and it is indented deeper), and returns the line
    /// after it (`i` when there was none).
    fn resolve(&mut self, p: Pending, i: usize, read: bool) -> usize {
        let mut end = i;
        if read && self.lines.get(i).is_some_and(|l| indent(l) > p.base) {
            let mut j = i;
            while let Some(l) = self.lines.get(j) {
                if l.trim().is_empty() {
                    j += 1;
                } else if indent(l) > p.base {
                    j += 1;
                    end = j;
                } else {
                    break;
                }
            }
        }
        let (kind, range) = match p.after {
            After::Literal => (Kind::Code, (end > i).then_some((i, end))),
            After::CodeDirective(s, e) => (Kind::Code, Some((s, end.max(e)))),
            After::Drop => (Kind::Code, None),
            After::Directive(s, e) => (Kind::Prose, Some((s, end.max(e)))),
        };
        if let Some((s, e)) = range
            && let Some(lines) = self.lines.get(s..e)
        {
            self.blocks.push(Block {
                kind,
                text: lines.join("\n"),
            });
        }
        end
    }

    /// The character of a heading underline (or overline): a run of at
    /// least three of one punctuation character.
    fn adornment(&self, line: &str) -> Option<char> {
        let t = if self.flavor == Flavor::Markdown {
            line.trim()
        } else {
            line.trim_end()
        };
        let c = t.chars().next()?;
        let allowed = if self.flavor == Flavor::Markdown {
            "=-"
        } else {
            "=-~^*+#\"'`:._<>"
        };
        (allowed.contains(c) && t.chars().count() >= 3 && t.chars().all(|x| x == c)).then_some(c)
    }

    /// Whether a one-line paragraph can be a heading's title.
    fn title_line(&self, line: &str) -> bool {
        let t = line.trim();
        // A fence in a title would leave the fences unbalanced.
        if Fence::open(line).is_some() {
            return false;
        }
        if self.flavor == Flavor::Rst {
            return !t.starts_with("..");
        }
        indent(line) < 4
            && list_marker(t).is_none()
            && !t.starts_with('|')
            && !t.starts_with('>')
            && !t.starts_with('<')
    }

    fn level(&mut self, c: char, over: bool) -> usize {
        if self.flavor == Flavor::Markdown {
            return if c == '=' { 1 } else { 2 };
        }
        let style = (c, over);
        match self.styles.iter().position(|&s| s == style) {
            Some(p) => p + 1,
            None => {
                self.styles.push(style);
                self.styles.len()
            }
        }
    }
}

enum Directive {
    Code,
    /// An image (its substitution name, when it defines one), figure or raw HTML.
    Image(Option<String>),
    Other,
}

/// The reST directive a paragraph opens with, if any.
fn directive(first: &str) -> Option<Directive> {
    let rest = first.strip_prefix(".. ")?.trim_start();
    let (sub, rest) = match rest.strip_prefix('|') {
        Some(after) => {
            let end = after.find('|')?;
            (
                Some(after[..end].to_string()),
                after[end + 1..].trim_start(),
            )
        }
        None => (None, rest),
    };
    let name = rest[..rest.find("::")?].trim().to_lowercase();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    Some(match name.as_str() {
        "code-block" | "code" | "sourcecode" | "doctest" | "ipython" | "jupyter-execute"
        | "prompt" | "testcode" => Directive::Code,
        "image" | "figure" | "raw" => Directive::Image(sub),
        _ => Directive::Other,
    })
}

/// The length of a list marker (`- `, `* `, `+ `, `1. `, `2) `, `#. `) at
/// the start of `t`, counting the space after it.
pub(crate) fn list_marker(t: &str) -> Option<usize> {
    let b = t.as_bytes();
    let marker = match b.first()? {
        b'-' | b'*' | b'+' => 1,
        b'#' if b.get(1) == Some(&b'.') => 2,
        b'0'..=b'9' => {
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 9 || !matches!(b.get(digits), Some(b'.' | b')')) {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    match b.get(marker) {
        Some(b' ' | b'\t') => Some(marker + 1),
        None => Some(marker),
        _ => None,
    }
}

/// A prose block split before each top-level list item (one at the
/// indentation of the block's first item), so a long list can be cut
/// between items. A block that is not a list is one piece.
pub(super) fn list_items(text: &str) -> Vec<&str> {
    let mut top: Option<usize> = None;
    let mut starts = vec![0];
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if list_marker(t).is_some() {
            let level = indent(line);
            let starts_item = match top {
                None => {
                    top = Some(level);
                    true
                }
                Some(l) => level <= l,
            };
            if starts_item && offset > 0 {
                starts.push(offset);
            }
        }
        offset += line.len();
    }
    starts.push(text.len());
    starts
        .windows(2)
        .filter_map(|w| text.get(w[0]..w[1]))
        .map(|p| p.trim_end_matches('\n'))
        .filter(|p| !p.trim().is_empty())
        .collect()
}

/// A YAML front-matter block (`---` ... `---` at the very start) is
/// metadata for a site generator, not text.
pub(super) fn strip_front_matter(text: &str) -> &str {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return text;
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            return &rest[offset..];
        }
        // A long "front matter" is a README that starts with a rule.
        if offset > 8 * 1024 {
            break;
        }
    }
    text
}

/// Removes HTML comments outside code fences. A `<!--` with no `-->`
/// after it is text, not the start of a comment that hides the rest.
pub(super) fn strip_comments(text: &str) -> String {
    let Some(last_close) = text.rfind("-->") else {
        return text.to_owned();
    };
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<Fence> = None;
    let mut in_comment = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let bare = line.trim_end_matches(['\n', '\r']);
        if !in_comment {
            if let Some(f) = &fence {
                if f.closes(bare) {
                    fence = None;
                }
                out.push_str(line);
                continue;
            }
            if let Some(f) = Fence::open(bare) {
                fence = Some(f);
                out.push_str(line);
                continue;
            }
        }
        let mut touched = in_comment;
        let mut kept = String::new();
        let mut pos = 0;
        while pos < bare.len() {
            if in_comment {
                match bare[pos..].find("-->") {
                    Some(p) => {
                        pos += p + 3;
                        in_comment = false;
                    }
                    None => pos = bare.len(),
                }
            } else {
                match bare[pos..].find("<!--") {
                    Some(p) if start + pos + p < last_close => {
                        kept.push_str(&bare[pos..pos + p]);
                        pos += p + 4;
                        in_comment = true;
                        touched = true;
                    }
                    _ => {
                        kept.push_str(&bare[pos..]);
                        pos = bare.len();
                    }
                }
            }
        }
        if touched {
            // A blank line, not nothing: the comment separated what was around it.
            if !kept.trim().is_empty() {
                out.push_str(kept.trim_end());
            }
            out.push('\n');
        } else {
            out.push_str(line);
        }
    }
    out
}

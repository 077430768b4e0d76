//! Block (a) of the initial context: the README, by usefulness.
//!
//! A README is written for people on a web page. Badges, logos and lists of
//! links cost an agent tokens and tell it nothing, and the part it needs
//! (how to install and call the package) often comes after the feature
//! list and the benchmarks, where a cut in document order loses it. So:
//!
//! 1. The README is cleaned of what carries no text: badges and images,
//!    HTML tags with nothing between them, HTML comments, reST image
//!    directives and their substitutions, lines and list items that are only
//!    links, sections left empty, runs of blank lines. Code is never
//!    touched: fenced blocks, reST literal blocks (after `::` or a code
//!    directive) and doctest paragraphs pass through byte for byte.
//! 2. If the cleaned README fits, it goes in whole.
//! 3. Otherwise it is split into sections at its headings (Markdown ATX and
//!    setext, reST underlines) and the sections are ranked: usage-type
//!    titles first (installation, usage, quick start, examples, API, ...),
//!    then by how well the section's text matches the task (BM25), code
//!    examples raising a section a little; licence, citation, benchmarks
//!    and the like come last. A subsection inherits its parent's kind, so
//!    "Installation > From source" ranks as installation and "License >
//!    Third party" as little wanted. The introduction leads, cut to its
//!    first paragraphs when long.
//! 4. Sections are taken whole in rank order while they fit; one that does
//!    not may be cut at a paragraph (or top-level list item) boundary,
//!    never inside a code block and never so that it loses its first code
//!    block; a low-value section is never cut, a fragment of it being
//!    clutter. The kept sections are shown in their original order under
//!    their own headings (and their parents'), so the README still reads
//!    as written, and a note names what was left out and how to read the
//!    whole file.
//!
//! Every block is counted once; the sum (plus a token per separator) is the
//! estimate the selection works with, and the rendered text is counted
//! whole at the end, dropping the last choice while it is over the share.
//! Work is linear in the README (which is read up to 512 KiB).

use std::borrow::Cow;
use std::io::Read as _;
use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::TokenCounter;
use crate::bm25::{Bm25, terms};
use crate::markdown;

/// The README is read up to this many bytes; the share is far smaller.
const MAX_BYTES: u64 = 512 * 1024;
/// How many omitted sections the note names.
const LISTED: usize = 8;
/// Characters of a title the note shows.
const TITLE_CHARS: usize = 60;
/// How far an inline construct (tag, link, image) may reach, so a stray
/// `<` or `[` costs a bounded look ahead, not a scan of the rest.
const REACH: usize = 2048;
/// Rounds of the final exact check before giving up on the selection.
const FIX_ROUNDS: usize = 8;

/// The README block for the repository at `root`: empty when there is no
/// README, nothing in it but badges and links, or no room.
pub(crate) fn readme_block(
    root: &Path,
    task: Option<&str>,
    counter: &TokenCounter,
    share: usize,
) -> String {
    match find_readme(root) {
        Some((name, text)) => render(&name, &text, task, counter, share),
        None => String::new(),
    }
}

/// The README at the root: README.md, .rst, .txt or no extension, any case.
pub(crate) fn find_readme(root: &Path) -> Option<(String, String)> {
    let entries = std::fs::read_dir(root).ok()?;
    let mut candidates: Vec<(usize, String, std::path::PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let rank = match name.to_lowercase().as_str() {
                "readme.md" | "readme.markdown" => 0,
                "readme.rst" => 1,
                "readme.txt" => 2,
                "readme" => 3,
                _ => return None,
            };
            e.path().is_file().then_some((rank, name, e.path()))
        })
        .collect();
    candidates.sort();
    let (_, name, path) = candidates.into_iter().next()?;
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .ok()?
        .take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some((name, String::from_utf8_lossy(&bytes).into_owned()))
}

/// The README block for a README called `name` holding `text`, within
/// `share` tokens.
fn render(
    name: &str,
    text: &str,
    task: Option<&str>,
    counter: &TokenCounter,
    share: usize,
) -> String {
    let name = markdown::one_line(name);
    let heading = format!("## README ({name})\n\n");
    let room = share.saturating_sub(counter.count(&heading) + 2);
    if room < 16 {
        return String::new();
    }
    let doc = Document::new(text, Flavor::of(&name));
    if !doc.has_content() {
        return String::new();
    }
    let all = vec![true; doc.blocks.len()];
    let whole = format!("{heading}{}", doc.render(&all, &FxHashMap::default()));
    if counter.count_within(&whole, share).is_some() {
        return whole;
    }
    Fitter {
        doc: &doc,
        counter,
        room,
        cache: vec![None; doc.blocks.len()],
    }
    .fit(&name, &heading, task, share)
}

/// Which markup the README is written in, by its extension. A README
/// without one may be either, so both kinds of heading are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Markdown,
    Rst,
    Plain,
}

impl Flavor {
    fn of(name: &str) -> Self {
        let lower = name.to_lowercase();
        if lower.ends_with(".rst") {
            Flavor::Rst
        } else if lower.ends_with(".md") || lower.ends_with(".markdown") {
            Flavor::Markdown
        } else {
            Flavor::Plain
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// `atx`: written `## Title`, so a cleaned title is re-rendered that way.
    Heading {
        level: usize,
        title: String,
        atx: bool,
    },
    Prose,
    Code,
}

#[derive(Debug, Clone)]
struct Block {
    kind: Kind,
    text: String,
}

impl Block {
    fn is_heading(&self) -> bool {
        matches!(self.kind, Kind::Heading { .. })
    }
}

/// A heading and the blocks up to the next heading. Section 0 is the
/// introduction: what precedes the first heading, plus the document's
/// title and what follows it when the first heading is the only one of its
/// level.
#[derive(Debug, Clone)]
struct Section {
    heading: Option<usize>,
    level: usize,
    title: String,
    parent: Option<usize>,
    /// Block indices; prose and code, and in the introduction the title.
    /// A section left empty by cleaning shows no heading unless a
    /// subsection shows something.
    body: Vec<usize>,
}

#[derive(Debug)]
struct Document {
    blocks: Vec<Block>,
    sections: Vec<Section>,
}

impl Document {
    fn new(text: &str, flavor: Flavor) -> Self {
        let text = strip_front_matter(text);
        // HTML comments are Markdown's; reST has its own and no HTML.
        let text: Cow<'_, str> = if flavor == Flavor::Rst {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(strip_comments(text))
        };
        let (raw, image_subs) = Parser::new(&text, flavor).run();
        let mut blocks = Cleaner::new(&raw, flavor, image_subs).clean(raw);
        if flavor != Flavor::Rst {
            blocks = drop_orphan_definitions(blocks);
        }
        let sections = sectionize(&blocks);
        Document { blocks, sections }
    }

    fn has_content(&self) -> bool {
        self.blocks.iter().any(|b| !b.is_heading())
    }

    /// The kept blocks in document order, under the headings of every
    /// section that shows something. `cuts` replace some blocks' text.
    fn render(&self, kept: &[bool], cuts: &FxHashMap<usize, String>) -> String {
        let mut shown = vec![false; self.sections.len()];
        for (s, section) in self.sections.iter().enumerate() {
            shown[s] = section
                .body
                .iter()
                .any(|&b| kept.get(b) == Some(&true) && !self.blocks[b].is_heading());
        }
        for s in (0..self.sections.len()).rev() {
            if shown[s]
                && let Some(parent) = self.sections[s].parent
            {
                shown[parent] = true;
            }
        }
        let mut print = vec![false; self.blocks.len()];
        for (s, section) in self.sections.iter().enumerate() {
            // The introduction's title shows whenever it was kept.
            if !shown[s] && s != 0 {
                continue;
            }
            if let Some(h) = section.heading {
                print[h] = true;
            }
            for &b in &section.body {
                print[b] = kept.get(b) == Some(&true);
            }
        }
        let mut parts: Vec<&str> = Vec::new();
        for (b, block) in self.blocks.iter().enumerate() {
            if !print[b] {
                continue;
            }
            parts.push(cuts.get(&b).unwrap_or(&block.text));
        }
        parts.join("\n\n")
    }
}

// ---------------------------------------------------------------------------
// Parsing: lines into headings, prose paragraphs and code blocks.

/// A Markdown code fence: its character and length.
struct Fence {
    ch: char,
    len: usize,
}

impl Fence {
    fn open(line: &str) -> Option<Fence> {
        let t = line.trim_start();
        let ch = t.chars().next()?;
        if ch != '`' && ch != '~' {
            return None;
        }
        let len = t.chars().take_while(|&c| c == ch).count();
        // A backtick fence's info string holds no backtick (else it is inline code).
        if len < 3 || (ch == '`' && t[len..].contains('`')) {
            return None;
        }
        Some(Fence { ch, len })
    }

    fn closes(&self, line: &str) -> bool {
        let t = line.trim();
        t.chars().count() >= self.len && t.chars().all(|c| c == self.ch)
    }

    fn closing(&self) -> String {
        std::iter::repeat_n(self.ch, self.len).collect()
    }
}

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

struct Parser<'t> {
    lines: Vec<&'t str>,
    flavor: Flavor,
    blocks: Vec<Block>,
    /// reST adornment styles (character, overlined) in order of appearance:
    /// the first is level 1.
    styles: Vec<(char, bool)>,
    image_subs: FxHashSet<String>,
}

impl<'t> Parser<'t> {
    fn new(text: &'t str, flavor: Flavor) -> Self {
        Parser {
            lines: text.lines().collect(),
            flavor,
            blocks: Vec::new(),
            styles: Vec::new(),
            image_subs: FxHashSet::default(),
        }
    }

    fn run(mut self) -> (Vec<Block>, FxHashSet<String>) {
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

/// An ATX heading: `## Title ##`, up to three spaces in.
fn atx(line: &str) -> Option<(usize, &str)> {
    if indent(line) > 3 {
        return None;
    }
    let t = line.trim_start();
    let level = t.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim_end();
    Some((level, title))
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

fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// The length of a list marker (`- `, `* `, `+ `, `1. `, `2) `, `#. `) at
/// the start of `t`, counting the space after it.
fn list_marker(t: &str) -> Option<usize> {
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
fn list_items(text: &str) -> Vec<&str> {
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
fn strip_front_matter(text: &str) -> &str {
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
fn strip_comments(text: &str) -> String {
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

// ---------------------------------------------------------------------------
// Cleaning: what carries no text goes.

struct Cleaner {
    flavor: Flavor,
    /// reST substitutions defined as images (`.. |name| image::`), lowercase.
    image_subs: FxHashSet<String>,
    /// Markdown reference labels whose URL is a badge, lowercase.
    badge_labels: FxHashSet<String>,
}

impl Cleaner {
    fn new(blocks: &[Block], flavor: Flavor, image_subs: FxHashSet<String>) -> Self {
        let mut badge_labels = FxHashSet::default();
        for block in blocks.iter().filter(|b| b.kind == Kind::Prose) {
            for line in block.text.lines() {
                if let Some((label, url)) = reference_definition(line)
                    && is_badge(url)
                {
                    badge_labels.insert(label.to_lowercase());
                }
            }
        }
        Cleaner {
            flavor,
            image_subs,
            badge_labels,
        }
    }

    fn clean(&self, blocks: Vec<Block>) -> Vec<Block> {
        let was_prose: Vec<bool> = blocks.iter().map(|b| b.kind == Kind::Prose).collect();
        let mut out: Vec<Option<Block>> = blocks
            .into_iter()
            .map(|block| match &block.kind {
                Kind::Code => Some(block),
                Kind::Prose => self.prose(&block.text).map(|text| Block {
                    kind: Kind::Prose,
                    text,
                }),
                Kind::Heading { level, title, atx } => {
                    let cleaned = self.inline(title);
                    let cleaned = cleaned.trim();
                    if !self.has_text(cleaned) {
                        // A heading that is only a logo: its text joins the section before.
                        return None;
                    }
                    if cleaned == title {
                        return Some(block);
                    }
                    let text = if *atx {
                        format!("{} {cleaned}", "#".repeat(*level))
                    } else {
                        block
                            .text
                            .lines()
                            .map(|l| if l.trim() == title { cleaned } else { l })
                            .collect::<Vec<_>>()
                            .join("\n")
                    };
                    Some(Block {
                        kind: Kind::Heading {
                            level: *level,
                            title: cleaned.to_string(),
                            atx: *atx,
                        },
                        text,
                    })
                }
            })
            .collect();
        // "Tutorials in several languages:" says nothing once the list of
        // links it introduced is gone.
        for i in 1..out.len() {
            let lead_in = matches!(&out[i - 1], Some(b) if b.kind == Kind::Prose && b.text.trim_end().ends_with(':'));
            if lead_in && out[i].is_none() && was_prose[i] {
                out[i - 1] = None;
            }
        }
        out.into_iter().flatten().collect()
    }

    /// A paragraph without its badges, empty tags, tag-only lines and
    /// link-only items; `None` when nothing with text is left.
    fn prose(&self, text: &str) -> Option<String> {
        let text = self.inline(text);
        let mut units: Vec<Vec<&str>> = Vec::new();
        for line in text.lines() {
            let blank = line.trim().is_empty();
            if !blank && (only_tags(line) || self.badge_definition(line)) {
                continue;
            }
            match units.last_mut() {
                Some(unit) if blank || list_marker(line.trim_start()).is_none() => unit.push(line),
                _ => units.push(vec![line]),
            }
        }
        let mut keep: Vec<bool> = units
            .iter()
            .map(|unit| {
                let content: Vec<&str> = unit
                    .iter()
                    .map(|l| {
                        let t = l.trim_start();
                        list_marker(t).map_or(t, |m| &t[m.min(t.len())..])
                    })
                    .collect();
                self.has_text(&content.join("\n"))
            })
            .collect();
        // A lead-in whose list of links is gone goes with it.
        if let Some(last) = keep.iter().rposition(|&k| k)
            && units[last + 1..]
                .iter()
                .any(|u| u.iter().any(|l| !l.trim().is_empty()))
            && units[last]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.trim_end().ends_with(':'))
        {
            keep[last] = false;
        }
        let mut out = String::new();
        let mut last_blank = true;
        for (unit, keep) in units.into_iter().zip(keep) {
            if !keep {
                continue;
            }
            for line in unit {
                let blank = line.trim().is_empty();
                if blank && last_blank {
                    continue;
                }
                out.push_str(line);
                out.push('\n');
                last_blank = blank;
            }
        }
        let out = out.trim_end();
        (!out.is_empty()).then(|| out.to_string())
    }

    fn badge_definition(&self, line: &str) -> bool {
        if let Some((_, url)) = reference_definition(line) {
            return is_badge(url);
        }
        // reST: `.. _name: url`
        line.trim_start()
            .strip_prefix(".. _")
            .and_then(|rest| rest.split_once(": "))
            .is_some_and(|(_, url)| is_badge(url.trim()))
    }

    /// `text` without void HTML tags (`<img>`, `<br>`), badge images
    /// (linked or not) and image substitutions, outside inline code.
    fn inline(&self, text: &str) -> String {
        let spans = code_spans(text);
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut next_span = 0;
        let mut i = 0;
        while i < bytes.len() {
            while spans.get(next_span).is_some_and(|&(s, _)| s < i) {
                next_span += 1;
            }
            if let Some(&(s, e)) = spans.get(next_span)
                && s == i
            {
                i = e;
                next_span += 1;
                continue;
            }
            let rest = &bytes[i..];
            let skip = match bytes[i] {
                b'<' => void_tag(rest),
                b'!' => self.badge_image(rest),
                b'[' => self.linked_badge(rest),
                b'|' => self.image_substitution(rest),
                _ => None,
            };
            match skip {
                Some(len) => {
                    out.push_str(&text[copied..i]);
                    i += len;
                    copied = i;
                }
                None => i += 1,
            }
        }
        out.push_str(&text[copied..]);
        out
    }

    /// The length of a badge image `![alt](url)` or `![alt][label]` at the
    /// start of `s`.
    fn badge_image(&self, s: &[u8]) -> Option<usize> {
        let (len, target) = image(s)?;
        self.is_badge_target(target).then_some(len)
    }

    /// The length of a link around a badge image, `[![alt](img)](url)`.
    fn linked_badge(&self, s: &[u8]) -> Option<usize> {
        let (inner, target) = image(s.get(1..)?)?;
        if !self.is_badge_target(target) {
            return None;
        }
        let after = 1 + inner;
        if s.get(after) != Some(&b']') {
            return None;
        }
        let tail = match s.get(after + 1) {
            Some(b'(') => closing(&s[after + 1..], b'(', b')')?,
            Some(b'[') => closing(&s[after + 1..], b'[', b']')?,
            _ => 0,
        };
        Some(after + 1 + tail)
    }

    fn is_badge_target(&self, target: Target<'_>) -> bool {
        match target {
            Target::Url(url) => is_badge(url),
            Target::Label(label) => self.badge_labels.contains(&label.to_lowercase()),
        }
    }

    /// The length of `|name|` (`|name|_`) when `name` is an image substitution.
    fn image_substitution(&self, s: &[u8]) -> Option<usize> {
        let len = substitution(s)?;
        let name = std::str::from_utf8(&s[1..len])
            .ok()?
            .trim_end_matches(['|', '_']);
        self.image_subs
            .contains(&name.to_lowercase())
            .then_some(len)
    }

    /// Whether `s` says anything once links, images, tags, bare URLs and
    /// substitution references are taken out: a letter or digit is left.
    fn has_text(&self, s: &str) -> bool {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let rest = &b[i..];
            let skip = match b[i] {
                b'!' if rest.get(1) == Some(&b'[') => image(rest).map(|(len, _)| len),
                b'[' => link(rest),
                b'<' => any_tag(rest),
                b'`' => rst_link(rest),
                b'|' if self.flavor != Flavor::Markdown => substitution(rest),
                b'h' | b'w' => bare_url(rest),
                b'&' => entity(rest),
                _ => None,
            };
            if let Some(len) = skip {
                i += len.max(1);
                continue;
            }
            // Skips end on ASCII delimiters, so `i` is always a char boundary here.
            match s.get(i..).and_then(|t| t.chars().next()) {
                Some(c) if c.is_alphanumeric() => return true,
                Some(c) => i += c.len_utf8(),
                None => i += 1,
            }
        }
        false
    }
}

/// Where an image points: a URL, or a reference label.
#[derive(Clone, Copy)]
enum Target<'a> {
    Url(&'a str),
    Label(&'a str),
}

/// An image `![alt](url "title")`, `![alt][label]` or `![label]` at the
/// start of `s`: its length and target.
fn image(s: &[u8]) -> Option<(usize, Target<'_>)> {
    if !s.starts_with(b"![") {
        return None;
    }
    let alt = closing(&s[1..], b'[', b']')?;
    let after = 1 + alt;
    match s.get(after) {
        Some(b'(') => {
            let len = closing(&s[after..], b'(', b')')?;
            let inside = std::str::from_utf8(&s[after + 1..after + len - 1]).ok()?;
            let url = inside
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_matches(['<', '>']);
            Some((after + len, Target::Url(url)))
        }
        Some(b'[') => {
            let len = closing(&s[after..], b'[', b']')?;
            let label = std::str::from_utf8(&s[after + 1..after + len - 1]).ok()?;
            let label = if label.is_empty() {
                std::str::from_utf8(&s[2..after - 1]).ok()?
            } else {
                label
            };
            Some((after + len, Target::Label(label)))
        }
        _ => Some((
            after,
            Target::Label(std::str::from_utf8(&s[2..after - 1]).ok()?),
        )),
    }
}

/// The length of a Markdown link `[text](url)` or `[text][label]` at the
/// start of `s` (the text may hold an image). Bare `[text]` is text.
fn link(s: &[u8]) -> Option<usize> {
    let text = closing(s, b'[', b']')?;
    match s.get(text) {
        Some(b'(') => Some(text + closing(&s[text..], b'(', b')')?),
        Some(b'[') => Some(text + closing(&s[text..], b'[', b']')?),
        _ => None,
    }
}

/// The length of a bracketed run starting at `s[0] == open`, nested
/// brackets included, within [`REACH`] and one line break.
fn closing(s: &[u8], open: u8, close: u8) -> Option<usize> {
    if s.first() != Some(&open) {
        return None;
    }
    let mut depth = 0usize;
    let mut breaks = 0;
    for (k, &c) in s.iter().enumerate().take(REACH) {
        if c == open {
            depth += 1;
        } else if c == close {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Some(k + 1);
            }
        } else if c == b'\n' {
            breaks += 1;
            if breaks > 1 {
                return None;
            }
        }
    }
    None
}

/// Tags with no content of their own.
const VOID_TAGS: &[&str] = &["img", "br", "hr", "source", "wbr"];

/// HTML tags a README uses for layout; a line of nothing but these says nothing.
const HTML_TAGS: &str = "a abbr audio b big blockquote br center code dd details div dl dt em \
    figcaption figure font h1 h2 h3 h4 h5 h6 hr i iframe img kbd li ol p \
    picture pre s small source span strong sub summary sup table tbody td \
    tfoot th thead tr tt u ul video wbr";

/// An HTML tag at the start of `s`: its length and lowercase name.
fn tag(s: &[u8]) -> Option<(usize, String)> {
    if s.first() != Some(&b'<') {
        return None;
    }
    let name_start = if s.get(1) == Some(&b'/') { 2 } else { 1 };
    let name_len = s
        .get(name_start..)?
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    if name_len == 0 || !s.get(name_start)?.is_ascii_alphabetic() {
        return None;
    }
    let after = name_start + name_len;
    if !matches!(
        s.get(after),
        Some(b'>' | b'/' | b' ' | b'\t' | b'\n' | b'\r')
    ) {
        return None;
    }
    let name = String::from_utf8_lossy(&s[name_start..after]).to_lowercase();
    let mut quote: Option<u8> = None;
    for (k, &c) in s.iter().enumerate().take(REACH).skip(after) {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None if c == b'>' => return Some((k + 1, name)),
            None if c == b'<' => return None,
            None => {}
        }
    }
    None
}

fn is_html_tag(name: &str) -> bool {
    HTML_TAGS.split_whitespace().any(|t| t == name)
}

fn void_tag(s: &[u8]) -> Option<usize> {
    let (len, name) = tag(s)?;
    VOID_TAGS.contains(&name.as_str()).then_some(len)
}

/// A known HTML tag, or an autolink `<https://...>`.
fn any_tag(s: &[u8]) -> Option<usize> {
    if let Some((len, name)) = tag(s) {
        return is_html_tag(&name).then_some(len);
    }
    let rest = s.get(1..)?;
    if rest.starts_with(b"http://") || rest.starts_with(b"https://") || rest.starts_with(b"mailto:")
    {
        let end = rest.iter().take(REACH).position(|&c| c == b'>')?;
        if !rest[..end].iter().any(u8::is_ascii_whitespace) {
            return Some(end + 2);
        }
    }
    None
}

/// Whether a line is nothing but known HTML tags (and `&nbsp;`).
fn only_tags(line: &str) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    let mut any = false;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let rest = &b[i..];
        let len = match tag(rest) {
            Some((len, name)) if is_html_tag(&name) => len,
            _ => match entity(rest) {
                Some(len) => len,
                None => return false,
            },
        };
        any = true;
        i += len;
    }
    any
}

/// `&nbsp;` and its kin: spacing, not text.
fn entity(s: &[u8]) -> Option<usize> {
    [&b"&nbsp;"[..], b"&emsp;", b"&ensp;", b"&#160;"]
        .iter()
        .find(|e| s.starts_with(e))
        .map(|e| e.len())
}

/// A reST link `` `text <url>`_ `` or `` `text`_ `` at the start of `s`.
fn rst_link(s: &[u8]) -> Option<usize> {
    let end = s.iter().skip(1).take(REACH).position(|&c| c == b'`')? + 1;
    let underscores = s[end + 1..].iter().take_while(|&&c| c == b'_').count();
    (underscores > 0).then_some(end + 1 + underscores)
}

/// A substitution reference `|name|`, `|name|_` or `|name|__` at the start
/// of `s`. Its name does not start or end with a space, which tells it
/// from a table cell.
fn substitution(s: &[u8]) -> Option<usize> {
    let end = s
        .iter()
        .skip(1)
        .take(100)
        .position(|&c| c == b'|' || c == b'\n')?
        + 1;
    if s[end] != b'|' || end < 2 {
        return None;
    }
    if s[1].is_ascii_whitespace() || s[end - 1].is_ascii_whitespace() {
        return None;
    }
    let underscores = s[end + 1..]
        .iter()
        .take(2)
        .take_while(|&&c| c == b'_')
        .count();
    Some(end + 1 + underscores)
}

/// A bare URL at the start of `s`, up to the next space.
fn bare_url(s: &[u8]) -> Option<usize> {
    if !(s.starts_with(b"http://") || s.starts_with(b"https://") || s.starts_with(b"www.")) {
        return None;
    }
    Some(s.iter().take_while(|c| !c.is_ascii_whitespace()).count())
}

/// A Markdown reference definition `[label]: url`: its label and URL.
fn reference_definition(line: &str) -> Option<(&str, &str)> {
    if indent(line) > 3 {
        return None;
    }
    let rest = line.trim_start().strip_prefix('[')?;
    let (label, url) = rest.split_once("]:")?;
    if label.is_empty() || label.contains('[') {
        return None;
    }
    let url = url.split_whitespace().next()?;
    Some((label, url.trim_matches(['<', '>'])))
}

/// Markdown reference definitions (`[label]: url`) that nothing refers to
/// any more, once the badges that used them are gone, go too.
fn drop_orphan_definitions(blocks: Vec<Block>) -> Vec<Block> {
    let is_prose = |b: &Block| b.kind == Kind::Prose;
    if !blocks
        .iter()
        .filter(|b| is_prose(b))
        .any(|b| b.text.lines().any(|l| reference_definition(l).is_some()))
    {
        return blocks;
    }
    // Innermost bracket contents, in one pass: `[text][label]` and `[label]`.
    let mut used: FxHashSet<String> = FxHashSet::default();
    for block in blocks.iter().filter(|b| is_prose(b)) {
        for line in block.text.lines() {
            if reference_definition(line).is_some() {
                continue;
            }
            let mut open: Option<usize> = None;
            for (k, c) in line.char_indices() {
                match c {
                    '[' => open = Some(k + 1),
                    ']' => {
                        if let Some(start) = open.take() {
                            used.insert(line[start..k].to_lowercase());
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    blocks
        .into_iter()
        .filter_map(|block| {
            if !is_prose(&block) {
                return Some(block);
            }
            let kept: Vec<&str> = block
                .text
                .lines()
                .filter(|l| {
                    reference_definition(l)
                        .is_none_or(|(label, _)| used.contains(&label.to_lowercase()))
                })
                .collect();
            let text = kept.join("\n");
            if text.trim().is_empty() {
                None
            } else if kept.len() == block.text.lines().count() {
                Some(block)
            } else {
                Some(Block {
                    kind: Kind::Prose,
                    text: text.trim_end().to_string(),
                })
            }
        })
        .collect()
}

/// Whether an image URL is a status badge (build, coverage, version, downloads).
fn is_badge(url: &str) -> bool {
    const HOSTS: &str = "shields.io badge badgen.net travis-ci. circleci.com codecov.io \
        coveralls.io appveyor.com pepy.tech pypip.in codacy.com \
        codeclimate.com snyk.io deepsource.io app.fossa gitter.im \
        /workflows/ pypistats anaconda.org/conda-forge/ repology.org \
        star-history.com opencollective.com sonarcloud.io";
    let lower = url.to_lowercase();
    HOSTS.split_whitespace().any(|h| lower.contains(h))
}

/// Byte ranges of inline code spans: a run of backticks up to the next run
/// of the same length, found in one pass.
fn code_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let start = i;
            while i < bytes.len() && bytes[i] == b'`' {
                i += 1;
            }
            runs.push((start, i - start));
        } else {
            i += 1;
        }
    }
    let mut next_same = vec![None; runs.len()];
    let mut last_of_len: FxHashMap<usize, usize> = FxHashMap::default();
    for k in (0..runs.len()).rev() {
        next_same[k] = last_of_len.get(&runs[k].1).copied();
        last_of_len.insert(runs[k].1, k);
    }
    let mut spans = Vec::new();
    let mut k = 0;
    while k < runs.len() {
        match next_same[k] {
            Some(j) => {
                spans.push((runs[k].0, runs[j].0 + runs[j].1));
                k = j + 1;
            }
            None => k += 1,
        }
    }
    spans
}

// ---------------------------------------------------------------------------
// Sections.

fn sectionize(blocks: &[Block]) -> Vec<Section> {
    let headings: Vec<(usize, usize)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| match b.kind {
            Kind::Heading { level, .. } => Some((i, level)),
            _ => None,
        })
        .collect();
    // The first heading is the document's title when no other heading is as high.
    let title = headings
        .split_first()
        .and_then(|(&(i, level), rest)| rest.iter().all(|&(_, l)| l > level).then_some(i));
    let mut sections = vec![Section {
        heading: None,
        level: 0,
        title: "introduction".into(),
        parent: None,
        body: Vec::new(),
    }];
    let mut stack: Vec<usize> = Vec::new();
    let mut current = 0;
    for (i, block) in blocks.iter().enumerate() {
        match &block.kind {
            Kind::Heading {
                level, title: t, ..
            } if Some(i) != title => {
                while stack
                    .last()
                    .is_some_and(|&top| sections[top].level >= *level)
                {
                    stack.pop();
                }
                sections.push(Section {
                    heading: Some(i),
                    level: *level,
                    title: t.clone(),
                    parent: stack.last().copied(),
                    body: Vec::new(),
                });
                current = sections.len() - 1;
                stack.push(current);
            }
            Kind::Heading { .. } => {
                sections[0].body.push(i);
                current = 0;
            }
            _ => sections[current].body.push(i),
        }
    }
    sections
}

/// What a section is for, by its title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    Usage,
    Intro,
    Neutral,
    Low,
}

impl Category {
    fn of(title: &str) -> Self {
        const LOW_PREFIXES: &[&str] = &[
            "licen",
            "contribut",
            "citation",
            "citing",
            "cite",
            "acknowledg",
            "changelog",
            "author",
            "badge",
            "sponsor",
            "alternative",
            "evaluat",
            "benchmark",
            "contact",
            "credit",
            "funding",
            "maintainer",
            "donat",
        ];
        const LOW_WORDS: &[&str] = &["history", "changes", "thanks", "support", "related", "team"];
        const LOW_PHRASES: &[&str] = &[
            "release notes",
            "change log",
            "code of conduct",
            "see also",
            "similar projects",
            "other projects",
        ];
        const USAGE_PREFIXES: &[&str] = &["install", "usage", "quickstart", "example", "tutorial"];
        const USAGE_WORDS: &[&str] = &[
            "api", "cli", "using", "basic", "basics", "setup", "demo", "commands",
        ];
        const USAGE_PHRASES: &[&str] = &[
            "quick start",
            "getting started",
            "get started",
            "how to use",
            "how to",
            "command line",
            "hello world",
            "first steps",
        ];
        const INTRO_WORDS: &[&str] = &[
            "introduction",
            "overview",
            "about",
            "description",
            "summary",
            "intro",
        ];
        const INTRO_PHRASES: &[&str] = &["what is"];
        let words: Vec<String> = title
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let phrase = format!(" {} ", words.join(" "));
        let prefix = |ps: &[&str]| words.iter().any(|w| ps.iter().any(|p| w.starts_with(p)));
        let word = |ws: &[&str]| words.iter().any(|w| ws.contains(&w.as_str()));
        let phrased = |ps: &[&str]| ps.iter().any(|p| phrase.contains(&format!(" {p} ")));
        if prefix(LOW_PREFIXES) || word(LOW_WORDS) || phrased(LOW_PHRASES) {
            Category::Low
        } else if prefix(USAGE_PREFIXES) || word(USAGE_WORDS) || phrased(USAGE_PHRASES) {
            Category::Usage
        } else if word(INTRO_WORDS) || phrased(INTRO_PHRASES) {
            Category::Intro
        } else {
            Category::Neutral
        }
    }

    /// (base, weight of task relevance in [0, 1], weight of having code).
    /// Usage stays ahead of everything else and low-value sections behind
    /// everything, whatever they match; in between, a section that matches
    /// the task well can pass the introduction.
    fn weights(self) -> (f64, f64, f64) {
        match self {
            Category::Usage => (4.0, 1.2, 0.3),
            Category::Intro => (2.0, 1.2, 0.3),
            Category::Neutral => (1.0, 1.2, 0.3),
            Category::Low => (0.0, 0.5, 0.2),
        }
    }
}

// ---------------------------------------------------------------------------
// Fitting.

/// A section, or the rest of the introduction, competing for the share.
struct Candidate {
    section: usize,
    blocks: Vec<usize>,
    score: f64,
    /// A low-value section goes whole or not at all: a fragment of a
    /// licence or a benchmark is clutter.
    cut_ok: bool,
}

struct Fitter<'d> {
    doc: &'d Document,
    counter: &'d TokenCounter,
    room: usize,
    cache: Vec<Option<usize>>,
}

impl Fitter<'_> {
    /// A block's tokens, counted once; a block over the room counts as
    /// more than the room without being tokenized whole.
    fn cost(&mut self, b: usize) -> usize {
        if let Some(Some(c)) = self.cache.get(b) {
            return *c;
        }
        let text = self.doc.blocks.get(b).map_or("", |x| x.text.as_str());
        let c = self
            .counter
            .count_within(text, self.room)
            .unwrap_or(self.room + 1);
        if let Some(slot) = self.cache.get_mut(b) {
            *slot = Some(c);
        }
        c
    }

    fn fit(mut self, name: &str, heading: &str, task: Option<&str>, share: usize) -> String {
        let doc = self.doc;
        let n = doc.blocks.len();
        let reserve = self.marker_reserve(name) + 2;
        let limit = self.room.saturating_sub(reserve);
        let mut kept = vec![false; n];
        let mut cuts: FxHashMap<usize, String> = FxHashMap::default();
        // What was taken, in order, so the exact check can undo the last.
        let mut taken: Vec<Vec<usize>> = Vec::new();
        let mut used = 0usize;

        // The introduction leads: its title, then its first paragraphs up to
        // a third of the room (the first one in any case, cut if it must be).
        let intro_cap = self.room / 3;
        let mut forced = Vec::new();
        let mut rest = Vec::new();
        let mut intro_used = 0;
        let mut taking = true;
        let mut first = true;
        for &b in &doc.sections[0].body {
            let t = self.cost(b) + 1;
            if doc.blocks[b].is_heading() {
                if used + t <= limit {
                    forced.push(b);
                    used += t;
                }
                continue;
            }
            if taking && used + t <= limit && (first || intro_used + t <= intro_cap) {
                forced.push(b);
                used += t;
                intro_used += t;
                first = false;
                continue;
            }
            let was_first = taking && first;
            taking = false;
            first = false;
            if was_first {
                // Cut to the introduction's cap, leaving the rest to usage.
                let avail = limit.saturating_sub(used).min(intro_cap);
                if let Some((text, cost)) = self.head_of(b, avail, true) {
                    // Its tail is what the note calls the rest of the introduction.
                    used += cost + 1;
                    forced.push(b);
                    cuts.insert(b, text);
                    continue;
                }
            }
            rest.push(b);
        }
        for &b in &forced {
            kept[b] = true;
        }
        taken.push(forced);

        let mut candidates = self.candidates(rest, task);
        candidates.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.section.cmp(&b.section))
        });
        let mut head_paid = vec![false; doc.sections.len()];
        for candidate in &candidates {
            let mut heads = Vec::new();
            let mut s = Some(candidate.section);
            while let Some(x) = s {
                if let Some(h) = doc.sections[x].heading
                    && !head_paid[x]
                {
                    heads.push((x, h));
                }
                s = doc.sections[x].parent;
            }
            let head_cost: usize = heads.iter().map(|&(_, h)| self.cost(h) + 1).sum();
            let mut prefix = Vec::new();
            let mut acc = head_cost;
            let mut partial: Option<(usize, String)> = None;
            for &b in &candidate.blocks {
                let t = self.cost(b) + 1;
                if used + acc + t <= limit {
                    acc += t;
                    prefix.push(b);
                    continue;
                }
                // A list may stop between its items, as prose between paragraphs.
                let avail = limit.saturating_sub(used + acc);
                if let Some((text, cost)) = self.head_of(b, avail, false) {
                    acc += cost + 1;
                    prefix.push(b);
                    partial = Some((b, text));
                }
                break;
            }
            if prefix.len() < candidate.blocks.len() || partial.is_some() {
                if !candidate.cut_ok {
                    continue;
                }
                // A section without its first example is not worth its prose.
                let first_code = candidate
                    .blocks
                    .iter()
                    .position(|&b| doc.blocks[b].kind == Kind::Code);
                if first_code.is_some_and(|c| c >= prefix.len()) {
                    continue;
                }
                // Nor does a cut end on the line that introduces what was cut.
                while partial.is_none()
                    && prefix.len() > 1
                    && prefix.last().is_some_and(|&b| {
                        doc.blocks[b].kind == Kind::Prose
                            && doc.blocks[b].text.trim_end().ends_with(':')
                    })
                {
                    if let Some(b) = prefix.pop() {
                        acc -= self.cost(b) + 1;
                    }
                }
            }
            if prefix.is_empty() {
                continue;
            }
            used += acc;
            for &(x, _) in &heads {
                head_paid[x] = true;
            }
            for &b in &prefix {
                kept[b] = true;
            }
            if let Some((b, text)) = partial {
                cuts.insert(b, text);
            }
            taken.push(prefix);
        }

        // The exact check: the estimate counted separators as one token and
        // joins can merge tokens, so count the result and undo while over.
        for _ in 0..FIX_ROUNDS {
            let text = self.assemble(heading, name, &kept, &cuts);
            if self.counter.count_within(&text, share).is_some() {
                return text;
            }
            let Some(last) = taken.pop() else { break };
            for b in last {
                kept[b] = false;
                cuts.remove(&b);
            }
        }
        let none = vec![false; n];
        let text = self.assemble(heading, name, &none, &FxHashMap::default());
        if self.counter.count_within(&text, share).is_some() {
            return text;
        }
        String::new()
    }

    /// The head of prose block `b` that fits in `avail` tokens, and its
    /// tokens: whole top-level list items while they fit; else, when
    /// `truncate` (the introduction's first paragraph), as many tokens as
    /// fit, marked as cut. `None` when nothing with text fits.
    fn head_of(&mut self, b: usize, avail: usize, truncate: bool) -> Option<(String, usize)> {
        let block = self.doc.blocks.get(b)?;
        if block.kind != Kind::Prose {
            return None;
        }
        let pieces = list_items(&block.text);
        if pieces.len() > 1 {
            let mut end = 0;
            let mut acc = 0;
            for piece in &pieces {
                let t = self.counter.count_within(piece, avail).unwrap_or(avail + 1) + 1;
                if acc + t > avail {
                    break;
                }
                acc += t;
                end += 1;
            }
            if end > 0 {
                let text = pieces[..end].join("\n");
                let cost = self.counter.count(&text);
                return (cost <= avail).then_some((text, cost));
            }
        }
        if !truncate || avail < 4 {
            return None;
        }
        let head = self
            .counter
            .truncate(&block.text, avail.saturating_sub(3))
            .trim_end();
        if !head.chars().any(char::is_alphanumeric) {
            return None;
        }
        let text = format!("{head} …");
        let cost = self.counter.count(&text);
        (cost <= avail).then_some((text, cost))
    }

    fn candidates(&mut self, intro_rest: Vec<usize>, task: Option<&str>) -> Vec<Candidate> {
        let doc = self.doc;
        let mut out: Vec<(Candidate, Category, String)> = Vec::new();
        if !intro_rest.is_empty() {
            let text = block_text(doc, &intro_rest);
            out.push((
                Candidate {
                    section: 0,
                    blocks: intro_rest,
                    score: 0.0,
                    cut_ok: true,
                },
                Category::Intro,
                text,
            ));
        }
        for (s, section) in doc.sections.iter().enumerate().skip(1) {
            if section.body.is_empty() {
                continue;
            }
            // A subsection of "Installation" is installation too, and one of
            // "License" as little wanted; under "Introduction" it is itself.
            let mut category = Category::of(&section.title);
            let mut titles = section.title.clone();
            let mut up = section.parent;
            while let Some(p) = up {
                let parent = &doc.sections[p];
                if category == Category::Neutral {
                    category = match Category::of(&parent.title) {
                        Category::Intro => Category::Neutral,
                        other => other,
                    };
                }
                titles.push(' ');
                titles.push_str(&parent.title);
                up = parent.parent;
            }
            let text = format!("{titles} {}", block_text(doc, &section.body));
            out.push((
                Candidate {
                    section: s,
                    blocks: section.body.clone(),
                    score: 0.0,
                    cut_ok: true,
                },
                category,
                text,
            ));
        }
        let relevance = match task {
            Some(task) if !terms(task).is_empty() && !out.is_empty() => {
                let index = Bm25::new(out.iter().map(|(_, _, text)| text.as_str()));
                let scores = index.scores(task);
                let max = scores.iter().copied().fold(0.0, f64::max);
                scores
                    .into_iter()
                    .map(|s| if max > 0.0 { s / max } else { 0.0 })
                    .collect()
            }
            _ => vec![0.0; out.len()],
        };
        out.into_iter()
            .zip(relevance)
            .map(|((mut candidate, category, _), relevance)| {
                let (base, w_relevance, w_code) = category.weights();
                let has_code = candidate
                    .blocks
                    .iter()
                    .any(|&b| doc.blocks[b].kind == Kind::Code);
                candidate.score =
                    base + w_relevance * relevance + if has_code { w_code } else { 0.0 };
                candidate.cut_ok = category != Category::Low;
                candidate
            })
            .collect()
    }

    /// What the note names: each section with text that is not shown
    /// whole, in document order.
    fn omitted(&self, kept: &[bool], cuts: &FxHashMap<usize, String>) -> Vec<String> {
        let mut out = Vec::new();
        for (s, section) in self.doc.sections.iter().enumerate() {
            let body: Vec<usize> = section
                .body
                .iter()
                .copied()
                .filter(|&b| !self.doc.blocks[b].is_heading())
                .collect();
            if body.is_empty() {
                continue;
            }
            let shown = body.iter().filter(|&&b| kept[b]).count();
            let whole = shown == body.len() && !body.iter().any(|b| cuts.contains_key(b));
            let title = note_title(if s == 0 {
                "introduction"
            } else {
                &section.title
            });
            if shown == 0 {
                out.push(title);
            } else if !whole {
                out.push(format!("{title} (rest)"));
            }
        }
        out
    }

    fn assemble(
        &self,
        heading: &str,
        name: &str,
        kept: &[bool],
        cuts: &FxHashMap<usize, String>,
    ) -> String {
        let body = self.doc.render(kept, cuts);
        let note = marker(&self.omitted(kept, cuts), name);
        if body.is_empty() {
            format!("{heading}{note}")
        } else {
            format!("{heading}{body}\n\n{note}")
        }
    }

    /// Tokens the note can take at most: the longest names it could list.
    fn marker_reserve(&self, name: &str) -> usize {
        let mut names: Vec<(usize, String)> = self
            .doc
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.body.iter().any(|&b| !self.doc.blocks[b].is_heading()))
            .map(|(i, s)| {
                let title = format!(
                    "{} (rest)",
                    note_title(if i == 0 { "introduction" } else { &s.title })
                );
                (self.counter.count(&title), title)
            })
            .collect();
        let total = names.len();
        names.sort_by_key(|n| std::cmp::Reverse(n.0));
        let mut longest: Vec<String> = names.into_iter().take(LISTED).map(|(_, t)| t).collect();
        // Pad to the full count so "and N more" is priced too.
        while longest.len() < total {
            longest.push(String::new());
        }
        self.counter.count(&marker(&longest, name))
    }
}

fn block_text(doc: &Document, blocks: &[usize]) -> String {
    blocks
        .iter()
        .filter_map(|&b| doc.blocks.get(b))
        .map(|b| b.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn note_title(title: &str) -> String {
    let one = markdown::one_line(title);
    match one.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &one[..cut]),
        None => one,
    }
}

/// The note that ends a trimmed README.
fn marker(omitted: &[String], name: &str) -> String {
    if omitted.is_empty() {
        return format!("[README trimmed to fit; read_document {name} shows it whole]");
    }
    let listed: Vec<&str> = omitted.iter().take(LISTED).map(String::as_str).collect();
    let more = omitted.len() - listed.len();
    let more = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    format!(
        "[README trimmed to fit: {} section(s) omitted: {}{more}; read_document {name} shows it whole]",
        omitted.len(),
        listed.join("; ")
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use proptest::prelude::*;

    use super::*;

    fn counter() -> TokenCounter {
        TokenCounter::new(Default::default()).unwrap()
    }

    /// The cleaned README, as it would go in whole.
    fn cleaned(text: &str, flavor: Flavor) -> String {
        let doc = Document::new(text, flavor);
        doc.render(&vec![true; doc.blocks.len()], &FxHashMap::default())
    }

    /// Code fences balance, read the way CommonMark does (a fence closes
    /// only with its own character and at least its length).
    fn fences_balanced(text: &str) -> bool {
        let mut open: Option<Fence> = None;
        for line in text.lines() {
            match &open {
                Some(f) if f.closes(line) => open = None,
                Some(_) => {}
                None => open = Fence::open(line),
            }
        }
        open.is_none()
    }

    #[test]
    fn badges_logos_and_comments_go_code_stays() {
        let text = "# Tool\n\n<p align=\"center\">\n  <a href=\"https://x.org\"><img src=\"logo.png\" width=\"200\"/></a>\n</p>\n<br>\n\n[![CI](https://github.com/o/r/actions/workflows/ci.yml/badge.svg)](https://github.com/o/r/actions)\n[![PyPI](https://img.shields.io/pypi/v/tool.svg)](https://pypi.org/project/tool)\n\n<!-- a note\nfor maintainers -->\nTool converts things. ![build](https://travis-ci.org/o/r.svg) Fast.\n\n```html\n<img src=\"kept.png\">\n[![x](https://img.shields.io/x)](y)\n<!-- kept -->\n```\n";
        let out = cleaned(text, Flavor::Markdown);
        assert_eq!(
            out,
            "# Tool\n\nTool converts things.  Fast.\n\n```html\n<img src=\"kept.png\">\n[![x](https://img.shields.io/x)](y)\n<!-- kept -->\n```"
        );
    }

    #[test]
    fn link_only_lines_and_items_go_items_with_text_stay() {
        let text = "## Links\n\n[Docs](https://d.org) | [Blog](https://b.org) · <https://c.org>\n\n- [Home](https://h.org)\n- **[API](https://a.org)**\n- Usage: [CLI](https://u.org/cli), [Python](https://u.org/py)\n- See [the guide](https://g.org) first.\n\nRead the [docs](https://d.org).\n\n[docs]: https://d.org\n[badge]: https://img.shields.io/b.svg\n\nhttps://bare.example.org/path\n";
        let out = cleaned(text, Flavor::Markdown);
        assert_eq!(
            out,
            "## Links\n\n- Usage: [CLI](https://u.org/cli), [Python](https://u.org/py)\n- See [the guide](https://g.org) first.\n\nRead the [docs](https://d.org).\n\n[docs]: https://d.org"
        );
    }

    #[test]
    fn a_lead_in_goes_with_its_links() {
        let text = "Intro.\n\nVideo tutorials in several languages:\n\n- [English](https://y.org/en)\n- [German](https://y.org/de)\n\nSee also:\n- [Blog](https://b.org)\n\nKept because its list stays:\n- [A](https://a.org): the A tool\n";
        assert_eq!(
            cleaned(text, Flavor::Markdown),
            "Intro.\n\nKept because its list stays:\n- [A](https://a.org): the A tool"
        );
    }

    #[test]
    fn a_section_left_empty_loses_its_heading() {
        let text = "# P\n\nIntro.\n\n## Badges\n\n[![a](https://img.shields.io/a)](b)\n\n## Use\n\nCall it.\n";
        assert_eq!(
            cleaned(text, Flavor::Markdown),
            "# P\n\nIntro.\n\n## Use\n\nCall it."
        );
    }

    #[test]
    fn inline_code_is_not_cleaned() {
        let text = "Write `<br>` or `![x](https://img.shields.io/x)` to break.\n";
        assert_eq!(cleaned(text, Flavor::Markdown), text.trim_end());
    }

    #[test]
    fn an_unclosed_comment_is_text() {
        let text = "Intro <!-- not closed\n\n## Usage\n\nrun\n";
        assert_eq!(cleaned(text, Flavor::Markdown), text.trim_end());
    }

    #[test]
    fn rst_images_substitutions_and_literals() {
        let text = "=====\nTitle\n=====\n\n|pypi| |ci|\n\n.. |pypi| image:: https://img.shields.io/pypi/v/t.svg\n   :target: https://pypi.org/project/t\n.. |ci| image:: https://github.com/o/t/workflows/ci/badge.svg\n\n.. image:: docs/logo.png\n   :width: 200\n\nIntro text |pypi|.\n\nUsage\n-----\n\nCall it::\n\n    >>> import t\n    >>> t.run()  # |ci| stays\n\n.. code-block:: python\n\n   t.run(fast=True)\n\n.. note::\n\n   Be careful.\n\nSee `the docs <https://t.org>`_ and `PyPI <https://pypi.org>`_.\n\n`Docs <https://t.org>`_ | `Code <https://github.com/o/t>`__\n";
        let out = cleaned(text, Flavor::Rst);
        assert_eq!(
            out,
            "=====\nTitle\n=====\n\nIntro text .\n\nUsage\n-----\n\nCall it::\n\n    >>> import t\n    >>> t.run()  # |ci| stays\n\n.. code-block:: python\n\n   t.run(fast=True)\n\n.. note::\n\n   Be careful.\n\nSee `the docs <https://t.org>`_ and `PyPI <https://pypi.org>`_."
        );
    }

    #[test]
    fn headings_of_every_kind_make_sections() {
        let md = "Title\n=====\n\nintro\n\nSub\n---\n\ntext\n\n### Deep ###\n\nmore\n\n```\n# not a heading\n```\n";
        let doc = Document::new(md, Flavor::Markdown);
        let titles: Vec<(&str, usize, Option<usize>)> = doc
            .sections
            .iter()
            .map(|s| (s.title.as_str(), s.level, s.parent))
            .collect();
        assert_eq!(
            titles,
            [
                ("introduction", 0, None),
                ("Sub", 2, None),
                ("Deep", 3, Some(1))
            ]
        );
        let rst = "Project\n#######\n\nintro\n\nInstall\n=======\n\npip\n\nFrom source\n-----------\n\nmake\n\nLicense\n=======\n\nMIT\n";
        let doc = Document::new(rst, Flavor::Rst);
        let titles: Vec<(&str, usize, Option<usize>)> = doc
            .sections
            .iter()
            .map(|s| (s.title.as_str(), s.level, s.parent))
            .collect();
        assert_eq!(
            titles,
            [
                ("introduction", 0, None),
                ("Install", 2, None),
                ("From source", 3, Some(1)),
                ("License", 2, None)
            ]
        );
    }

    #[test]
    fn a_fence_is_never_a_title() {
        // Found by the property test: an overline and underline around a fence.
        let text = "```python\n```\n======\n```python\n======";
        let doc = Document::new(text, Flavor::Plain);
        assert!(doc.blocks.iter().all(|b| !b.is_heading()), "{doc:?}");
        let out = render("README", text, None, &counter(), 23);
        assert!(fences_balanced(&out), "{out}");
    }

    #[test]
    fn categories_by_title() {
        for (title, expected) in [
            ("Installation", Category::Usage),
            ("Quick start", Category::Usage),
            ("Basic extraction example", Category::Usage),
            ("How to use", Category::Usage),
            ("Command line", Category::Usage),
            ("API reference", Category::Usage),
            ("Evaluation and alternatives", Category::Low),
            ("Licence", Category::Low),
            ("Acknowledgements", Category::Low),
            ("Citing Trafilatura", Category::Low),
            ("Introduction", Category::Intro),
            ("Features", Category::Neutral),
            ("Rapid capital", Category::Neutral),
        ] {
            assert_eq!(Category::of(title), expected, "{title}");
        }
    }

    #[test]
    fn a_subsection_inherits_its_parents_kind_and_brings_its_heading() {
        let mut text = String::from("# P\n\nShort intro.\n\n## Features\n\n");
        for i in 0..40 {
            text.push_str(&format!("- Feature number {i} does a thing well\n"));
        }
        text.push_str("\n## Installation\n\n### From source\n\n```sh\nmake install\n```\n");
        let out = render("README.md", &text, None, &counter(), 120);
        assert!(
            out.contains("## Installation\n\n### From source\n\n```sh\nmake install\n```"),
            "{out}"
        );
        assert!(!out.contains("Feature number 39"), "{out}");
        assert!(out.contains("Feature number 0 does"), "{out}");
        assert!(out.contains("omitted: Features (rest);"), "{out}");
    }

    #[test]
    fn a_long_section_is_cut_between_paragraphs() {
        let mut text = String::from("# P\n\n## Usage\n\n");
        for i in 0..30 {
            text.push_str(&format!(
                "Paragraph {i} explains one more option of the tool.\n\n"
            ));
        }
        let out = render("README.md", &text, None, &counter(), 150);
        assert!(out.contains("Paragraph 0 explains"), "{out}");
        assert!(!out.contains("Paragraph 29"), "{out}");
        assert!(out.contains("Usage (rest)"), "{out}");
        assert!(
            out.lines().all(|l| l.is_empty()
                || l.starts_with('#')
                || l.starts_with('[')
                || l.ends_with("tool.")),
            "{out}"
        );
    }

    #[test]
    fn a_long_introduction_keeps_its_first_paragraphs() {
        let mut text = String::from("# P\n\n");
        for i in 0..30 {
            text.push_str(&format!(
                "Intro paragraph {i} tells the story of the project.\n\n"
            ));
        }
        text.push_str("## Usage\n\n```python\nimport p\n```\n");
        let out = render("README.md", &text, None, &counter(), 200);
        assert!(out.contains("Intro paragraph 0 tells"), "{out}");
        assert!(!out.contains("Intro paragraph 29"), "{out}");
        assert!(out.contains("```python\nimport p\n```"), "{out}");
        assert!(out.contains("introduction (rest)"), "{out}");
    }

    #[test]
    fn a_list_is_cut_between_its_top_level_items() {
        let text = "Lead in:\n- one\n  - one.a\n- two\n  continued\n- three";
        assert_eq!(
            list_items(text),
            [
                "Lead in:",
                "- one\n  - one.a",
                "- two\n  continued",
                "- three"
            ]
        );
        assert_eq!(
            list_items("Just a paragraph\nof prose."),
            ["Just a paragraph\nof prose."]
        );
    }

    #[test]
    fn definitions_left_without_a_use_go() {
        let text = "[![PyPI][pypi-badge]][pypi]\n\nSee the [guide][g].\n\n[pypi-badge]: https://img.shields.io/pypi/v/x.svg\n[pypi]: https://pypi.org/project/x\n[g]: https://x.org/guide\n";
        assert_eq!(
            cleaned(text, Flavor::Markdown),
            "See the [guide][g].\n\n[g]: https://x.org/guide"
        );
    }

    #[test]
    fn a_huge_first_paragraph_is_cut_once() {
        let text = format!("# P\n\n{}\n\n## Usage\n\nrun it\n", "word ".repeat(2_000));
        let c = counter();
        let out = render("README.md", &text, None, &c, 200);
        assert!(c.count(&out) <= 200, "{out}");
        assert_eq!(out.matches(" …").count(), 1, "{out}");
        assert!(out.contains("## Usage\n\nrun it"), "{out}");
        assert!(out.contains("omitted: introduction (rest);"), "{out}");
    }

    #[test]
    fn nothing_but_badges_is_no_block() {
        let text = "[![a](https://img.shields.io/a)](b)\n<img src=\"logo.png\">\n";
        assert_eq!(render("README.md", text, None, &counter(), 500), "");
    }

    #[test]
    fn the_note_is_bounded() {
        let mut text = String::from("# P\n\nIntro.\n\n");
        for i in 0..50 {
            text.push_str(&format!("## Section {i}\n\n{}\n\n", "word ".repeat(40)));
        }
        let c = counter();
        let out = render("README.md", &text, None, &c, 300);
        assert!(c.count(&out) <= 300);
        assert!(out.contains("; and "), "{out}");
        assert!(
            out.ends_with("; read_document README.md shows it whole]"),
            "{out}"
        );
    }

    #[test]
    fn a_half_megabyte_readme_is_handled_in_bounded_time() {
        let mut text = String::new();
        let mut i = 0;
        while text.len() < 512 * 1024 {
            text.push_str(&format!(
                "## Part {i}\n\nSome [link](https://x.org/{i}) text `code` <br> and more text.\n\n```\nexample {i}\n```\n\n"
            ));
            i += 1;
        }
        // Long lines of what the scanners look ahead for.
        text.push_str(&"[`<|".repeat(20_000));
        text.push('\n');
        let c = counter();
        let start = std::time::Instant::now();
        for share in [500, 5_000] {
            let out = render("README.md", &text, Some("example part"), &c, share);
            assert!(c.count(&out) <= share);
        }
        assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
    }

    fn markdownish() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            Just("# Title".to_string()),
            Just("## Usage".to_string()),
            Just("## License".to_string()),
            Just("### Example".to_string()),
            Just("Setext".to_string()),
            Just("======".to_string()),
            Just("------".to_string()),
            Just("```python".to_string()),
            Just("```".to_string()),
            Just("~~~~".to_string()),
            Just("".to_string()),
            Just("".to_string()),
            Just("[![b](https://img.shields.io/x)](y)".to_string()),
            Just("<p align=\"center\"><img src=\"a.png\"></p>".to_string()),
            Just("<!-- c".to_string()),
            Just("-->".to_string()),
            Just("- [link](https://x.org)".to_string()),
            Just(".. image:: x.png".to_string()),
            Just("Literal::".to_string()),
            Just("    indented code".to_string()),
            Just(">>> run()".to_string()),
            "[a-z ]{0,60}",
            "[ -~]{0,80}",
            "\\PC{0,40}",
        ];
        proptest::collection::vec(line, 0..80).prop_map(|lines| lines.join("\n"))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn never_over_the_share_and_fences_balance(
            text in markdownish(),
            share in 0usize..1_500,
            name in prop_oneof![Just("README.md"), Just("README.rst"), Just("README")],
            task in proptest::option::of("[a-z ]{0,30}"),
        ) {
            let c = counter();
            let out = render(name, &text, task.as_deref(), &c, share);
            prop_assert!(c.count(&out) <= share, "{} > {share}:\n{out}", c.count(&out));
            prop_assert!(fences_balanced(&out), "{out}");
        }
    }
}

//! A specification read the way a code generator needs it (DeepCode, seed
//! 004, section 3.1.1): split into sections keyed by their headings, so an
//! agent fetches "API Definitions" instead of holding the whole document,
//! plus the facts a blueprint and a generated repository are checked
//! against: the endpoints the text declares ([`declared_endpoints`]) and
//! the port it names ([`declared_port`]).
//!
//! ```
//! use context_pack::spec::{SpecDocument, declared_endpoints, declared_port};
//!
//! let readme = "Flask Service\n\nPort\n\nThe service listens on port 5000.\n\n\
//!               API Definitions\n\nGET /health\n\nReturns ok.\n";
//! let doc = SpecDocument::parse(readme);
//! let health = doc.find("health")[0];
//! assert_eq!(health.heading, "GET /health");
//! assert_eq!(health.parents, ["Flask Service", "API Definitions"]);
//! assert_eq!(health.text, "Returns ok.");
//! assert_eq!(declared_port(readme), Some(5000));
//! assert_eq!(declared_endpoints(readme)[0].label(), "GET /health");
//! ```
//!
//! # Headings
//!
//! Markdown is read by [`markdown::outline`] (CommonMark: never in a code
//! block, not inside a list item or quote), with two rules of this
//! module on top: a fenced code block that is never closed is read as
//! text, so one stray fence does not hide the rest of the document; and a
//! setext title is one line, not a table row or HTML. Three styles:
//!
//! - **ATX**: `#` to `######`, up to three spaces in, then a space or the
//!   line's end; the level is the number of `#`.
//! - **Setext**: a one-line paragraph underlined with `=` (level 1) or `-`
//!   (level 2). A `---` after a blank line is a rule.
//! - **Plain**, only in a document with neither of the above (its author
//!   had no heading syntax, as in the RepoGenesis READMEs; in a Markdown
//!   document a short standalone line is a caption or a bold label): a line
//!   that starts the document or follows a blank line and reads as a title.
//!   It is at most 72 characters and 10 words, starts with a capital (or a
//!   multi-level number, `3.1 Model`), ends without `.`, `,`, `;`, `:`, `!`
//!   or `?`, holds no code, markup, quotes, brackets or `=`, and is not a
//!   list item, table row, quote or HTML. A colon is allowed only before a
//!   capitalised title without digits or slashes (`Phase 1: Blueprint`
//!   is a heading, `Port: 8080` and `Namespace prefix: /api` are not).
//!   The document's first line, when it qualifies, is the title (level 1);
//!   other plain headings are one below it, a `3.1` heading one further
//!   per number. A line that is only an endpoint (`GET /users/{id}`,
//!   `` POST `/items` ``, optionally followed by a short description) is a
//!   heading one below the last other heading.
//!
//! Text before the first heading is a preamble section with an empty
//! heading. Every line that is not a heading belongs to exactly one
//! section's text (blank lines at a section's edges are dropped).
//!
//! Parsing is linear in the text and never fails. On hostile input it is
//! bounded: at most [`MAX_SECTIONS`] sections (later headings are read as
//! text) and headings of at most [`MAX_HEADING_BYTES`], so the parents
//! every section carries stay small. The text after each stray fence is
//! parsed again, up to four times the text in all; a stray fence past that
//! runs to the end, as in CommonMark.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use repo_graph::{Endpoint, HttpMethod};
use serde::{Deserialize, Serialize};

use crate::markdown;
use crate::markdown::indent;
use crate::readme::list_marker;

/// Sections a document is split into at most; later headings are text.
pub const MAX_SECTIONS: usize = 10_000;
/// Bytes of a heading kept (cut at a character boundary).
pub const MAX_HEADING_BYTES: usize = 200;
/// Characters of a plain-text heading at most.
const PLAIN_CHARS: usize = 72;
/// Words of a plain-text heading at most.
const PLAIN_WORDS: usize = 10;
/// Levels a heading can have (Markdown's six).
const MAX_LEVEL: u8 = 6;
/// Times over the text the Markdown parser may read it, stray fences
/// making it read again what follows them.
const MAX_READS: usize = 4;
/// The verbs an endpoint line starts with.
const VERBS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

/// How a section's heading is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadingKind {
    /// No heading: the text before the first one.
    Preamble,
    /// `## Title`.
    Atx,
    /// `Title` underlined with `===` or `---` on the next line.
    Setext,
    /// A standalone title line in a document without Markdown headings.
    Plain,
    /// A standalone `METHOD /path` line in a document without Markdown
    /// headings.
    Endpoint,
}

/// One section of a specification: a heading and the text under it, up to
/// the next heading of any level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecSection {
    /// The heading without its markup (`#`s, emphasis); empty for the
    /// preamble.
    pub heading: String,
    /// 1 to 6; 0 for the preamble.
    pub level: u8,
    /// The headings of the enclosing sections, outermost first.
    pub parents: Vec<String>,
    /// The body without the heading line (or lines, for setext), blank
    /// lines at its start and end dropped.
    pub text: String,
    /// The 1-based line of the heading (1 for the preamble).
    pub line: u32,
    /// How the heading is written.
    pub kind: HeadingKind,
}

impl SpecSection {
    /// The enclosing headings then this one.
    pub fn path(&self) -> impl Iterator<Item = &str> {
        self.parents
            .iter()
            .map(String::as_str)
            .chain(std::iter::once(self.heading.as_str()))
    }

    /// The section as Markdown for a model: its heading path on one line
    /// (`## Service > API > GET /health`), then its text.
    ///
    /// ```
    /// let doc = context_pack::spec::SpecDocument::parse("# Service\n## API\nGET /health returns ok.\n");
    /// assert_eq!(doc.sections()[1].render(), "## Service > API\n\nGET /health returns ok.\n");
    /// ```
    pub fn render(&self) -> String {
        let path: Vec<String> = self
            .path()
            .filter(|h| !h.is_empty())
            .map(markdown::one_line)
            .collect();
        let mut out = String::with_capacity(self.text.len() + 64);
        if !path.is_empty() {
            out.push_str(&"#".repeat(usize::from(self.level.clamp(1, MAX_LEVEL))));
            out.push(' ');
            out.push_str(&path.join(" > "));
            out.push_str("\n\n");
        }
        if !self.text.is_empty() {
            out.push_str(&self.text);
            out.push('\n');
        }
        out
    }
}

/// A specification split into sections (hierarchical content segmentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecDocument {
    sections: Vec<SpecSection>,
}

/// A heading found on a line.
#[derive(Debug, Clone, Copy)]
struct Found<'t> {
    kind: HeadingKind,
    level: u8,
    title: &'t str,
    /// Lines the heading takes (2 for setext).
    lines: usize,
}

impl SpecDocument {
    /// `text` split at its headings (see the [module](self) for which
    /// lines are headings).
    ///
    /// ```
    /// use context_pack::spec::{HeadingKind, SpecDocument};
    ///
    /// let doc = SpecDocument::parse("Service\n=======\n\n```sh\n# not a heading\n```\n## Port\n8080\n");
    /// let kinds: Vec<(HeadingKind, &str, u32)> = doc
    ///     .sections()
    ///     .iter()
    ///     .map(|s| (s.kind, s.heading.as_str(), s.line))
    ///     .collect();
    /// assert_eq!(kinds, [(HeadingKind::Setext, "Service", 1), (HeadingKind::Atx, "Port", 7)]);
    /// assert_eq!(doc.sections()[1].parents, ["Service"]);
    /// ```
    pub fn parse(text: &str) -> SpecDocument {
        let lines: Vec<&str> = text.lines().collect();
        let (code, mut headings) = markdown_lines(text, &lines);
        if headings.iter().all(Option::is_none) {
            headings = plain_headings(&lines, &code);
        }
        build(&lines, &headings)
    }

    /// The sections in document order.
    pub fn sections(&self) -> &[SpecSection] {
        &self.sections
    }

    /// The sections about `keyword` (case-insensitive): those whose heading
    /// holds it, then those whose text does, each group in document order.
    /// Nothing for a blank keyword.
    ///
    /// ```
    /// let doc = context_pack::spec::SpecDocument::parse(
    ///     "# Setup\nInstall the API server.\n# API\n## GET /users\nLists users.\n",
    /// );
    /// let found: Vec<&str> = doc.find("api").iter().map(|s| s.heading.as_str()).collect();
    /// assert_eq!(found, ["API", "Setup"]);
    /// ```
    pub fn find(&self, keyword: &str) -> Vec<&SpecSection> {
        let keyword = keyword.trim().to_lowercase();
        if keyword.is_empty() {
            return Vec::new();
        }
        let mut by_heading = Vec::new();
        let mut by_text = Vec::new();
        for section in &self.sections {
            if section.heading.to_lowercase().contains(&keyword) {
                by_heading.push(section);
            } else if section.text.to_lowercase().contains(&keyword) {
                by_text.push(section);
            }
        }
        by_heading.extend(by_text);
        by_heading
    }

    /// `section` and the sections nested in it, in document order: what to
    /// render to show all of it. Empty when `section` is not one of this
    /// document's.
    ///
    /// ```
    /// let doc = context_pack::spec::SpecDocument::parse("# API\n## GET /a\n## GET /b\n# Notes\n");
    /// let api = doc.find("API")[0];
    /// assert_eq!(doc.subtree(api).len(), 3);
    /// ```
    pub fn subtree(&self, section: &SpecSection) -> &[SpecSection] {
        let Ok(start) = self
            .sections
            .binary_search_by_key(&section.line, |s| s.line)
        else {
            return &[];
        };
        if self.sections[start] != *section {
            return &[];
        }
        let end = if section.kind == HeadingKind::Preamble {
            start + 1
        } else {
            self.sections[start + 1..]
                .iter()
                .position(|s| s.level <= section.level)
                .map_or(self.sections.len(), |k| start + 1 + k)
        };
        &self.sections[start..end]
    }

    /// The table of contents as a nested Markdown list with each heading's
    /// line, for a model to choose what to [`find`](Self::find).
    ///
    /// ```
    /// let doc = context_pack::spec::SpecDocument::parse("Intro.\n# API\n## GET /a\n");
    /// assert_eq!(doc.outline(), "- (preamble) (line 1)\n- API (line 2)\n  - GET /a (line 3)\n");
    /// ```
    pub fn outline(&self) -> String {
        let mut out = String::new();
        for section in &self.sections {
            let depth = usize::from(section.level.saturating_sub(1));
            out.push_str(&"  ".repeat(depth));
            out.push_str("- ");
            if section.kind == HeadingKind::Preamble {
                out.push_str("(preamble)");
            } else {
                out.push_str(&markdown::one_line(&section.heading));
            }
            out.push_str(&format!(" (line {})\n", section.line));
        }
        out
    }
}

fn blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// Which lines are in fenced code blocks (fences included), and the
/// Markdown headings by line, as [`markdown::outline`] reads them, with
/// this module's two rules on top: a stray fence (one nothing closes, so
/// it runs to the end) is text and what follows it is read again, and a
/// setext heading has a one-line title that is not a table row or HTML.
///
/// Each stray fence costs a reading of the text after it; readings stop
/// at [`MAX_READS`] times the text, and a stray fence past that runs to
/// the end as CommonMark says, so hostile input stays linear.
fn markdown_lines<'t>(text: &'t str, lines: &[&'t str]) -> (Vec<bool>, Vec<Option<Found<'t>>>) {
    let n = lines.len();
    let mut code = vec![false; n];
    let mut found: Vec<Option<Found<'t>>> = vec![None; n];
    let starts: Vec<usize> = text
        .split_inclusive('\n')
        .scan(0, |offset, line| {
            let start = *offset;
            *offset += line.len();
            Some(start)
        })
        .collect();
    let line_of = |offset: usize| {
        starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
            .min(n.saturating_sub(1))
    };
    let budget = text.len().saturating_mul(MAX_READS);
    let mut read = 0usize;
    let mut from = 0usize;
    while from < text.len() {
        let part = &text[from..];
        read += part.len();
        let outline = markdown::outline(part);
        // What follows a stray fence is read again while the readings stay
        // within the budget (it is shorter than this part).
        let stray = outline
            .fenced
            .last()
            .filter(|b| b.unclosed && part[b.range.end..].trim().is_empty())
            .filter(|_| read + part.len() <= budget)
            .map(|b| b.range.start);
        for block in &outline.fenced {
            if Some(block.range.start) == stray {
                continue;
            }
            let last = line_of(from + block.range.end.saturating_sub(1).max(block.range.start));
            for line in &mut code[line_of(from + block.range.start)..=last] {
                *line = true;
            }
        }
        for heading in outline.headings {
            let first = line_of(from + heading.range.start);
            let last = line_of(from + heading.range.end.saturating_sub(1).max(heading.range.start));
            // Two headings on one line of ours (a bare CR between them):
            // the first one is the line's.
            if found[first].is_some()
                || (heading.setext && (last != first + 1 || !setext_title(lines[first])))
            {
                continue;
            }
            found[first] = Some(Found {
                kind: if heading.setext {
                    HeadingKind::Setext
                } else {
                    HeadingKind::Atx
                },
                level: heading.level.clamp(1, MAX_LEVEL),
                title: heading.text,
                lines: last - first + 1,
            });
        }
        let Some(start) = stray else {
            break;
        };
        from = starts
            .get(line_of(from + start) + 1)
            .copied()
            .unwrap_or(text.len());
    }
    (code, found)
}

/// Whether the one-line title of a setext heading reads as a title: a
/// table row (`| a |`), HTML or a line of only `=` and `-` is not one,
/// whatever the underline says.
fn setext_title(line: &str) -> bool {
    let t = line.trim();
    !t.starts_with(['|', '<']) && !t.bytes().all(|b| b == b'=' || b == b'-')
}

/// A plain-text line read as a heading.
enum Plain {
    /// A title; `numbers` is how many numbers label it (`3.1` is 2), 0 for
    /// none.
    Title { numbers: u8 },
    /// `METHOD /path`.
    Endpoint,
}

/// Plain-text headings, by line, for a document without Markdown ones.
fn plain_headings<'t>(lines: &[&'t str], code: &[bool]) -> Vec<Option<Found<'t>>> {
    let n = lines.len();
    let mut found: Vec<Option<Found<'t>>> = vec![None; n];
    let Some(first) = lines.iter().position(|l| !blank(l)) else {
        return found;
    };
    let titled = !code[first] && matches!(plain(lines[first]), Some(Plain::Title { numbers: 0 }));
    let base = u8::from(titled);
    // The level of the last heading that is not an endpoint: endpoints nest
    // one below it.
    let mut last_title = base;
    for i in first..n {
        if code[i] || !(i == first || blank(lines[i - 1])) {
            continue;
        }
        let Some(kind) = plain(lines[i]) else {
            continue;
        };
        let (kind, level) = match kind {
            _ if i == first && titled => (HeadingKind::Plain, 1),
            Plain::Title { numbers } => {
                let level = base.saturating_add(numbers.max(1)).min(MAX_LEVEL);
                last_title = level;
                (HeadingKind::Plain, level)
            }
            Plain::Endpoint => (HeadingKind::Endpoint, (last_title + 1).min(MAX_LEVEL)),
        };
        found[i] = Some(Found {
            kind,
            level,
            title: lines[i].trim(),
            lines: 1,
        });
    }
    found
}

/// `t` without emphasis markers around all of it (`**Title**`, `_x_`).
fn unwrap_emphasis(mut t: &str) -> &str {
    for _ in 0..2 {
        for mark in ["**", "__", "*", "_"] {
            if t.len() > 2 * mark.len() && t.starts_with(mark) && t.ends_with(mark) {
                t = t[mark.len()..t.len() - mark.len()].trim();
                break;
            }
        }
    }
    t
}

/// Whether `t` starts with a verb and a path (in backticks or not):
/// `Some(true)` for an endpoint line (at most a short description after
/// it), `Some(false)` for an example request (`GET /x HTTP/1.1`), `None`
/// for any other line.
fn endpoint_line(t: &str) -> Option<bool> {
    let (verb, rest) = t.split_once(char::is_whitespace)?;
    let verb = verb.trim_matches(['`', '*']);
    let rest = rest.trim_start_matches(['`', '*', ' ', '\t']);
    (VERBS.contains(&verb) && rest.starts_with('/')).then(|| !rest.contains(" HTTP/"))
}

/// How many numbers label a title (`3.1 Model` and `3.1. Model` are 2);
/// `None` unless there are at least two (a single `3.` is a list item)
/// followed by a space and a capitalised word.
fn numbering(t: &str) -> Option<u8> {
    let (label, rest) = t.split_once(' ')?;
    let label = label.strip_suffix('.').unwrap_or(label);
    let mut numbers = 0u8;
    for part in label.split('.') {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        numbers = numbers.saturating_add(1);
    }
    let capital = rest
        .trim_start()
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() && !c.is_lowercase());
    (numbers >= 2 && capital).then_some(numbers)
}

/// What a plain-text line is as a heading, if it reads as one (the rules
/// are in the module's documentation).
fn plain(line: &str) -> Option<Plain> {
    if indent(line) > 3 {
        return None;
    }
    let t = unwrap_emphasis(line.trim());
    if t.is_empty()
        || t.chars().count() > PLAIN_CHARS
        || t.split_whitespace().count() > PLAIN_WORDS
        || t.ends_with(['.', ',', ';', ':', '!', '?'])
        || t.chars().any(char::is_control)
    {
        return None;
    }
    if let Some(endpoint) = endpoint_line(t) {
        return endpoint.then_some(Plain::Endpoint);
    }
    if t.contains([
        '`', '|', '{', '}', '[', ']', '<', '>', '=', '"', '\\', '#', '*',
    ]) || list_marker(t).is_some()
    {
        return None;
    }
    if let Some((_, after)) = t.split_once(':') {
        let title = after.trim_start();
        let capital = title
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() && !c.is_lowercase());
        if title.len() == after.len()
            || !capital
            || after.contains(|c: char| c.is_ascii_digit() || c == '/')
        {
            return None;
        }
    }
    let first = t.chars().next()?;
    if first.is_ascii_digit() {
        return numbering(t).map(|numbers| Plain::Title { numbers });
    }
    (first.is_alphabetic() && !first.is_lowercase()).then_some(Plain::Title { numbers: 0 })
}

/// `raw` as a heading: emphasis unwrapped, at most [`MAX_HEADING_BYTES`].
fn heading_text(raw: &str) -> String {
    let t = unwrap_emphasis(raw.trim());
    t[..t.floor_char_boundary(MAX_HEADING_BYTES)].to_owned()
}

/// Lines `from..to` without blank lines at either end, joined.
fn body(lines: &[&str], from: usize, to: usize) -> String {
    let slice = &lines[from.min(to)..to];
    let start = slice.iter().position(|l| !blank(l)).unwrap_or(slice.len());
    let end = slice
        .iter()
        .rposition(|l| !blank(l))
        .map_or(start, |k| k + 1);
    slice[start..end].join("\n")
}

fn line_number(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

/// The sections, from the headings found on each line.
fn build(lines: &[&str], headings: &[Option<Found<'_>>]) -> SpecDocument {
    let mut sections: Vec<SpecSection> = Vec::new();
    // Enclosing (level, heading) pairs, outermost first; at most six deep.
    let mut stack: Vec<(u8, String)> = Vec::new();
    let mut open: Option<SpecSection> = None;
    let mut body_start = 0;
    let mut i = 0;
    while i < lines.len() {
        let found = headings[i].filter(|_| sections.len() + 1 < MAX_SECTIONS);
        let Some(found) = found else {
            i += 1;
            continue;
        };
        match open.take() {
            Some(mut section) => {
                section.text = body(lines, body_start, i);
                sections.push(section);
            }
            None if lines[..i].iter().any(|l| !blank(l)) => sections.push(SpecSection {
                heading: String::new(),
                level: 0,
                parents: Vec::new(),
                text: body(lines, 0, i),
                line: 1,
                kind: HeadingKind::Preamble,
            }),
            None => {}
        }
        let heading = heading_text(found.title);
        while stack.last().is_some_and(|(level, _)| *level >= found.level) {
            stack.pop();
        }
        open = Some(SpecSection {
            heading: heading.clone(),
            level: found.level,
            parents: stack.iter().map(|(_, h)| h.clone()).collect(),
            text: String::new(),
            line: line_number(i),
            kind: found.kind,
        });
        stack.push((found.level, heading));
        i += found.lines;
        body_start = i;
    }
    match open {
        Some(mut section) => {
            section.text = body(lines, body_start, lines.len());
            sections.push(section);
        }
        None if lines.iter().any(|l| !blank(l)) => sections.push(SpecSection {
            heading: String::new(),
            level: 0,
            parents: Vec::new(),
            text: body(lines, 0, lines.len()),
            line: 1,
            kind: HeadingKind::Preamble,
        }),
        None => {}
    }
    SpecDocument { sections }
}

// ---------------------------------------------------------------------------
// Facts stated in the text.

/// A path in running text: up to a space, markup, a quote, a bracket or a
/// separator; a whole segment `<id>` or `<int:id>` (Flask's parameters) is
/// kept, while a `<` elsewhere opens a tag (`/results</code>`, `/a<br>`)
/// and ends the path.
macro_rules! path_pattern {
    () => {
        r"(/(?:<[^\s<>/]+>)?(?:[^\s`'\x22|*<>()\[\],;/]|/(?:<[^\s<>/]+>)?)*)"
    };
}

/// `METHOD /path` on one line, with markup between them.
static INLINE_ENDPOINT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(GET|POST|PUT|DELETE|PATCH)\b[\s*`:|]*",
        path_pattern!()
    ))
    .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

/// `Method: GET` (any case for the label).
static METHOD_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i:\bmethod\b)[\s*`:]*(GET|POST|PUT|DELETE|PATCH)\b")
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

/// `Path: /x`, `Endpoint: /x`, `URL: /x`, `Route: /x`, `Interface: /x`.
static PATH_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i:\b(?:path|endpoint|url|route|interface)\b)[\s*`:]*",
        path_pattern!()
    ))
    .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

fn clean_path(raw: &str) -> String {
    let path = raw.split(['?', '#']).next().unwrap_or(raw);
    let path = path.trim_end_matches(['.', ',', ';', ':', ')']);
    if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    }
}

/// The endpoints `text` declares, in order of appearance, without
/// duplicates (by method and [`repo_graph::same_path`]).
///
/// Read more carefully than the RepoGenesis coverage scripts do:
/// `METHOD /path` anywhere on a line (backticks, bold, table cells), and
/// `Method: X` / `Path: /y` label pairs on nearby lines. Example requests
/// (`... HTTP/1.1`) and `curl` lines are not declarations.
///
/// ```
/// use context_pack::spec::declared_endpoints;
///
/// let readme = "- Method: GET\n- Path: `/`\n\n**POST** `/users/{id}`\n\n```\nGET /health HTTP/1.1\n```\n";
/// let labels: Vec<String> = declared_endpoints(readme).iter().map(|e| e.label()).collect();
/// assert_eq!(labels, ["GET /", "POST /users/{id}"]);
/// ```
pub fn declared_endpoints(text: &str) -> Vec<Endpoint> {
    const PAIR_DISTANCE: usize = 3;
    let mut found: Vec<(usize, Endpoint)> = Vec::new();
    let mut methods: Vec<(usize, HttpMethod)> = Vec::new();
    let mut paths: Vec<(usize, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.contains(" HTTP/") || line.contains("curl ") {
            continue;
        }
        let mut inline = false;
        for m in INLINE_ENDPOINT.captures_iter(line) {
            let (Some(verb), Some(path)) = (m.get(1), m.get(2)) else {
                continue;
            };
            let Some(method) = HttpMethod::from_verb(verb.as_str()) else {
                continue;
            };
            inline = true;
            found.push((i, Endpoint::new(method, clean_path(path.as_str()))));
        }
        if inline {
            continue;
        }
        if let Some(m) = METHOD_LABEL.captures(line)
            && let Some(method) = m.get(1).and_then(|v| HttpMethod::from_verb(v.as_str()))
        {
            methods.push((i, method));
        } else if let Some(m) = PATH_LABEL.captures(line)
            && let Some(path) = m.get(1)
        {
            paths.push((i, clean_path(path.as_str())));
        }
    }
    let mut used = vec![false; paths.len()];
    for (line, method) in methods {
        // Paths are in line order: only those within the distance are looked at.
        let from = paths.partition_point(|(at, _)| *at + PAIR_DISTANCE < line);
        let nearest = paths[from..]
            .iter()
            .enumerate()
            .take_while(|(_, (at, _))| *at <= line + PAIR_DISTANCE)
            .filter(|(k, _)| !used[from + k])
            .min_by_key(|(_, (at, _))| (at.abs_diff(line), *at > line));
        if let Some((k, (at, path))) = nearest {
            used[from + k] = true;
            found.push((line.min(*at), Endpoint::new(method, path.clone())));
        }
    }
    found.sort_by_key(|(line, _)| *line);
    let mut seen = BTreeSet::new();
    found
        .into_iter()
        .map(|(_, e)| e)
        .filter(|e| seen.insert((e.method, e.path_key())))
        .collect()
}

/// `port 5000`, `Port: 8080`, `PORT=3000`, `**Port**: \`8080\``, `--port 8000`,
/// `port (default): 5000`: "port", at most 24 characters of anything but
/// digits on the same line, then the number.
static PORT_STATEMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bport\b[^0-9\n]{0,24}?\b([0-9]{1,6})\b")
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

/// A local address with a port: `http://localhost:8000`, `127.0.0.1:5000`,
/// `https://host.example:8443`.
static ADDRESS_PORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:\bhttps?://[a-z0-9.\-]+|\blocalhost|\b127\.0\.0\.1|\b0\.0\.0\.0|\[::1?\]):([0-9]{1,6})\b",
    )
    .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

/// The port `text` says the service listens on: the first explicit
/// statement (`listens on port 5000`, `Port: 8080`, `PORT=3000`), else the
/// first local address (`http://localhost:8000`). 0 and numbers above
/// 65535 are not ports.
///
/// ```
/// use context_pack::spec::declared_port;
///
/// assert_eq!(declared_port("Base URL: http://localhost:8000\n- **Port**: `8080`\n"), Some(8080));
/// assert_eq!(declared_port("Try http://127.0.0.1:5001/health"), Some(5001));
/// assert_eq!(declared_port("port 0, port 70000"), None);
/// ```
pub fn declared_port(text: &str) -> Option<u16> {
    let valid = |m: regex::Captures<'_>| {
        m.get(1)
            .and_then(|n| n.as_str().parse::<u16>().ok())
            .filter(|&p| p != 0)
    };
    PORT_STATEMENT
        .captures_iter(text)
        .find_map(valid)
        .or_else(|| ADDRESS_PORT.captures_iter(text).find_map(valid))
}

#[cfg(test)]
mod tests;

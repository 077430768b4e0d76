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

mod clean;
mod fit;
mod parse;

use std::borrow::Cow;
use std::io::Read as _;
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::TokenCounter;
use crate::markdown;

use clean::{Cleaner, drop_orphan_definitions};
use fit::{Fitter, sectionize};
use parse::{Parser, strip_comments, strip_front_matter};
// The specification reader reads list items the same way.
pub(crate) use parse::list_marker;

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

/// What [`find_readme`] found at a repository's root: the README it read,
/// and a line for each README it refused to read (a link out of the tree,
/// a pipe, a binary file), in the order they were tried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Readme {
    /// The file name and its text.
    pub(crate) shown: Option<(String, String)>,
    /// The refused candidates: their names, and a line saying why each is
    /// not shown ("README.md not shown: it is a symbolic link out of the
    /// repository.").
    pub(crate) refused: Vec<(String, String)>,
}

/// The README block for the repository at `root`: empty when there is no
/// README, nothing in it but badges and links, or no room. `readme` is
/// what [`find_readme`] read (the context reads it once for every block).
/// A refused README is a line saying why, in place of (or after) the one
/// shown.
pub(crate) fn readme_block(
    readme: &Readme,
    task: Option<&str>,
    counter: &TokenCounter,
    share: usize,
) -> String {
    let notes: Vec<&str> = readme
        .refused
        .iter()
        .map(|(_, line)| line.as_str())
        .collect();
    let notes = notes.join("\n");
    let notes_tokens = if notes.is_empty() {
        0
    } else {
        counter.count(&notes) + 2
    };
    let shown = match &readme.shown {
        Some((name, text)) => render(
            name,
            text,
            task,
            counter,
            share.saturating_sub(notes_tokens),
        ),
        None => String::new(),
    };
    if notes.is_empty() {
        return shown;
    }
    let with_notes = if shown.is_empty() {
        format!("## README\n\n{notes}")
    } else {
        format!("{shown}\n\n{notes}")
    };
    if counter.count_within(&with_notes, share).is_some() {
        with_notes
    } else {
        shown
    }
}

/// The README at the root: README.md, .rst, .txt or no extension, any case,
/// in that order of preference. Each is read the way every repository file
/// is ([`repo_files::open_in_tree`]): only a regular file inside the root,
/// without blocking, at most [`MAX_BYTES`] of it. A candidate that cannot
/// be read, or holds binary data, is refused with a line saying why, and
/// the next one is tried.
pub(crate) fn find_readme(root: &Path) -> Readme {
    let mut readme = Readme::default();
    let Ok(entries) = std::fs::read_dir(root) else {
        return readme;
    };
    let mut candidates: Vec<(usize, String)> = entries
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
            // Not followed: a link is judged by where it leads when opened.
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (!is_dir).then_some((rank, name))
        })
        .collect();
    candidates.sort();
    for (_, name) in candidates.into_iter().take(MAX_CANDIDATES) {
        match read_readme(root, &name) {
            Ok(text) => {
                readme.shown = Some((name, text));
                break;
            }
            Err(reason) => {
                tracing::warn!(file = %name, %reason, "README not read");
                let line = format!("{} not shown: {reason}.", markdown::one_line(&name));
                readme.refused.push((name, line));
            }
        }
    }
    readme
}

/// Directories whose pages hold usage examples besides the README's.
const DOC_DIRS: &[&str] = &["docs", "doc", "examples", "example"];
/// Pages of documentation read for examples, at most.
const MAX_PAGES: usize = 100;
/// Levels below a documentation directory walked, at most.
const MAX_PAGE_DEPTH: usize = 4;
/// Directory entries looked at while walking, at most.
const MAX_PAGE_ENTRIES: usize = 5_000;

/// The repository's documentation pages (Markdown and reStructuredText
/// under `docs/`, `doc/`, `examples/` or `example/`), as paths relative to
/// `root` with their text, in breadth-first path order: a user guide's
/// `docs/user/*.md` comes before what sits deeper. Read the way the README
/// is (inside the root, no links followed, at most [`MAX_BYTES`] each,
/// binary files left out); the walk is bounded in pages, depth and entries.
pub(crate) fn usage_pages(root: &Path) -> Vec<(String, String)> {
    let mut pages = Vec::new();
    let mut looked = 0usize;
    let mut level: Vec<String> = DOC_DIRS.iter().map(|d| (*d).to_string()).collect();
    for _ in 0..=MAX_PAGE_DEPTH {
        let mut next = Vec::new();
        for dir in &level {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            let mut names: Vec<(bool, String)> = Vec::new();
            for entry in entries.filter_map(Result::ok) {
                looked += 1;
                if looked > MAX_PAGE_ENTRIES {
                    break;
                }
                let name = entry.file_name().to_string_lossy().to_string();
                if name.starts_with(['.', '_']) {
                    continue;
                }
                // Not followed: a link is judged by where it leads when opened.
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                names.push((kind.is_dir(), name));
            }
            names.sort();
            for (is_dir, name) in names {
                let path = format!("{dir}/{name}");
                if is_dir {
                    next.push(path);
                } else if is_page(&name) && pages.len() < MAX_PAGES {
                    match read_readme(root, &path) {
                        Ok(text) => pages.push((path, text)),
                        Err(reason) => tracing::debug!(file = %path, %reason, "page not read"),
                    }
                }
            }
        }
        if next.is_empty() || pages.len() >= MAX_PAGES || looked > MAX_PAGE_ENTRIES {
            break;
        }
        level = next;
    }
    pages
}

fn is_page(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".md", ".markdown", ".rst"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// A code block of a README, with the titles of the sections it sits
/// under (outermost first; none in the introduction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodeSample {
    pub(crate) titles: Vec<String>,
    /// The block as written: its fences or directive line, indentation and
    /// doctest prompts included.
    pub(crate) text: String,
}

/// The code blocks of the README called `name`, in document order, read
/// the way the README block reads them (fenced blocks, reST literal and
/// code-directive blocks, doctest paragraphs).
pub(crate) fn code_samples(name: &str, text: &str) -> Vec<CodeSample> {
    let doc = Document::new(text, Flavor::of(name));
    let mut samples: Vec<(usize, CodeSample)> = Vec::new();
    for section in &doc.sections {
        let mut titles = Vec::new();
        let mut at = section.heading.map(|_| section);
        // A parent chain is at most as long as the heading levels.
        while let Some(s) = at {
            titles.push(s.title.clone());
            at = s
                .parent
                .and_then(|p| doc.sections.get(p))
                .filter(|p| p.heading.is_some());
        }
        titles.reverse();
        for &b in &section.body {
            if let Some(block) = doc.blocks.get(b)
                && block.kind == Kind::Code
            {
                samples.push((
                    b,
                    CodeSample {
                        titles: titles.clone(),
                        text: block.text.clone(),
                    },
                ));
            }
        }
    }
    samples.sort_by_key(|(b, _)| *b);
    samples.into_iter().map(|(_, s)| s).collect()
}

/// At most this many README candidates are tried (any case of four names).
const MAX_CANDIDATES: usize = 8;

/// The text of one README candidate, or why it is not shown.
fn read_readme(root: &Path, name: &str) -> Result<String, String> {
    let opened = repo_files::open_in_tree(root, Path::new(name))
        .map_err(|e| crate::unread::why_not_read(&e))?;
    let mut bytes = Vec::new();
    opened
        .file
        .take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("it cannot be read ({e})"))?;
    // A sparse terabyte of zeros, or an image named README.
    if bytes.iter().take(BINARY_PROBE).any(|b| *b == 0) {
        return Err(format!("it is a binary file ({} bytes)", opened.len));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Bytes looked at for a NUL that marks a binary file.
const BINARY_PROBE: usize = 8192;

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

#[cfg(test)]
mod tests;

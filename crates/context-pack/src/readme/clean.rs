// ---------------------------------------------------------------------------
// Cleaning: what carries no text goes.

use rustc_hash::{FxHashMap, FxHashSet};

use super::parse::list_marker;
use super::{Block, Flavor, Kind, REACH};
use crate::markdown::indent;

pub(super) struct Cleaner {
    flavor: Flavor,
    /// reST substitutions defined as images (`.. |name| image::`), lowercase.
    image_subs: FxHashSet<String>,
    /// Markdown reference labels whose URL is a badge, lowercase.
    badge_labels: FxHashSet<String>,
}

impl Cleaner {
    pub(super) fn new(blocks: &[Block], flavor: Flavor, image_subs: FxHashSet<String>) -> Self {
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

    pub(super) fn clean(&self, blocks: Vec<Block>) -> Vec<Block> {
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
pub(super) fn drop_orphan_definitions(blocks: Vec<Block>) -> Vec<Block> {
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

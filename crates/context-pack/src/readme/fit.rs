// ---------------------------------------------------------------------------
// Sections.

use rustc_hash::FxHashMap;

use crate::TokenCounter;
use crate::bm25::{Bm25, terms};
use crate::markdown;

use super::parse::list_items;
use super::{Block, Document, FIX_ROUNDS, Kind, LISTED, Section, TITLE_CHARS};

pub(super) fn sectionize(blocks: &[Block]) -> Vec<Section> {
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
pub(super) enum Category {
    Usage,
    Intro,
    Neutral,
    Low,
}

impl Category {
    pub(super) fn of(title: &str) -> Self {
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

pub(super) struct Fitter<'d> {
    pub(super) doc: &'d Document,
    pub(super) counter: &'d TokenCounter,
    pub(super) room: usize,
    pub(super) cache: Vec<Option<usize>>,
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

    pub(super) fn fit(
        mut self,
        name: &str,
        heading: &str,
        task: Option<&str>,
        share: usize,
    ) -> String {
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

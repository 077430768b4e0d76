//! "Where to look": the functions and classes that best match the task,
//! shown by their declaration line and the first line of their
//! documentation, grouped by file, so the model sees *where* the code is,
//! not only that a module matters.
//!
//! The search is BM25 over each function's and class's name (split into
//! words, counted twice), its file's name, its first six parameters (a
//! class: its public methods' names) and the head of its docstring, with a
//! light stemmer on both sides; plus a name match weighted by each word's
//! rarity, and importance. Entities the README's code or the usage facts
//! name are raised. Tests, private names and
//! dunder methods are lowered, since a task almost never starts there.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use importance::Ranking;
use repo_graph::{EntityId, RepoGraph};

use crate::TokenCounter;
use crate::bm25::{Bm25, stem, terms};
use crate::markdown;

/// How many entities are considered for the block at most.
const MAX_HITS: usize = 40;
/// How many entities one file shows at most.
const PER_FILE: usize = 4;
/// Characters of a declaration shown before it is cut.
const MAX_DECLARATION: usize = 120;

/// A scored entity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hit {
    pub(crate) entity: EntityId,
    pub(crate) score: f64,
    /// Which of the task's identifiers ([`task_identifiers`]) its source
    /// holds, one bit each.
    pub(crate) held: u16,
}

/// Identifiers of a task looked up at most (one bit each in [`Hit::held`]).
const MAX_IDENTIFIERS: usize = 12;

/// The names a task spells the way code does: ASCII words of at least three
/// characters with an inner underscore (`c_header`, `SCR_Onsets`) or a
/// lower-to-upper turn (`excelRC`, `getText`), distinct, in order. A task
/// that names the fields it wants (GitTaskBench Eparse_02: `c_header`,
/// `r_header`, `excel_RC`) names the code that makes them; BM25 over names
/// and docstrings never sees a function's dictionary keys.
pub(crate) fn task_identifiers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for word in text.split(|c: char| !is_word(c)) {
        let core = word.trim_matches('_');
        let starts = core.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
        let bytes = core.as_bytes();
        let inner_underscore = core.contains('_');
        let camel = bytes
            .windows(2)
            .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
        if starts
            && core.len() >= 3
            && (inner_underscore || camel)
            && !out.iter().any(|o| o == core)
            && out.len() < MAX_IDENTIFIERS
        {
            out.push(core.to_owned());
        }
    }
    out
}

/// The bits of `identifiers` that occur in `source` as whole words.
fn held_by(source: &str, identifiers: &[String]) -> u16 {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = source.as_bytes();
    let mut held = 0u16;
    for (bit, ident) in identifiers.iter().enumerate().take(MAX_IDENTIFIERS) {
        let mut from = 0;
        while let Some(at) = source[from..].find(ident.as_str()) {
            let start = from + at;
            let end = start + ident.len();
            let before = start.checked_sub(1).map(|i| bytes[i]);
            if !before.is_some_and(is_word) && !bytes.get(end).is_some_and(|&b| is_word(b)) {
                held |= 1 << bit;
                break;
            }
            from = end;
        }
    }
    held
}

/// What the search is for: the task's words and any extra search terms.
pub(crate) fn query_terms(task: Option<&str>, keywords: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for text in task.into_iter().chain(keywords.iter().map(String::as_str)) {
        out.extend(terms(&split_scripts(text)).iter().map(|t| stem(t)));
    }
    out
}

/// BM25 scores of `docs` for `query`, both split the way the search
/// splits them (scripts apart, identifiers into words, stemmed), so every
/// block of the context agrees on what matches a task.
pub(crate) fn stemmed_scores(docs: &[String], query: &str) -> Vec<f64> {
    let index = Bm25::from_terms(
        docs.iter()
            .map(|d| terms(&split_scripts(d)).iter().map(|t| stem(t)).collect()),
    );
    index.scores_for_terms(query_terms(Some(query), &[]))
}

/// Puts a space where Latin letters or digits meet another script, so that
/// "提取PDF文件" yields the term `pdf` (Chinese has no spaces between words).
fn split_scripts(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous_ascii: Option<bool> = None;
    for c in text.chars() {
        let ascii = c.is_ascii();
        if c.is_alphanumeric() && previous_ascii.is_some_and(|p| p != ascii) {
            out.push(' ');
        }
        previous_ascii = c.is_alphanumeric().then_some(ascii);
        out.push(c);
    }
    out
}

/// The index the task search scores every class and function with (BM25
/// over the documents described above). Building it is most of a context's
/// cost on a large repository (Django: about 40,000 entities), so a caller
/// that builds many contexts over one graph builds it once
/// ([`crate::ContextBuilder::task_index`]).
pub struct TaskIndex {
    /// Classes, then functions, in the graph's order.
    entities: Vec<EntityId>,
    index: Bm25,
}

impl TaskIndex {
    /// Indexes every class and function of `graph`.
    pub fn new(graph: &RepoGraph) -> Self {
        let entities: Vec<EntityId> = graph
            .class_ids()
            .map(EntityId::Class)
            .chain(graph.function_ids().map(EntityId::Function))
            .collect();
        let index = Bm25::from_terms(entities.iter().map(|&e| document(graph, e)));
        TaskIndex { entities, index }
    }

    /// Whether this index can serve `graph`: made from a graph with the
    /// same classes and functions. An index of another graph is never
    /// used (the search then indexes `graph` itself).
    fn fits(&self, graph: &RepoGraph) -> bool {
        self.entities.len() == graph.classes().len() + graph.functions().len()
    }
}

impl std::fmt::Debug for TaskIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskIndex")
            .field("entities", &self.entities.len())
            .finish()
    }
}

/// The entities that best match `query` (stemmed terms), best first.
/// Entities the repository shows as its way in (the public API, console
/// scripts, what example scripts call, names used in the README's code)
/// get a bonus on top of their match.
pub(crate) fn search(
    graph: &RepoGraph,
    ranking: &Ranking,
    query: &[String],
    identifiers: &[String],
    readme: Option<&str>,
    prebuilt: Option<&TaskIndex>,
) -> Search {
    let mut search = Search {
        hits: Vec::new(),
        classes: Vec::new(),
        functions: Vec::new(),
    };
    if query.is_empty() && identifiers.is_empty() {
        return search;
    }
    let built;
    let TaskIndex { entities, index } = match prebuilt.filter(|p| p.fits(graph)) {
        Some(index) => index,
        None => {
            built = TaskIndex::new(graph);
            &built
        }
    };
    let relevance = index.scores_for_terms(query.to_vec());
    let max_relevance = relevance.iter().copied().fold(0.0, f64::max);
    if max_relevance <= 0.0 && identifiers.is_empty() {
        return search;
    }
    // Identifiers alone can find code that no word of the task names.
    let max_relevance = max_relevance.max(f64::EPSILON);
    let classes = graph.classes().len();
    search.classes = relevance[..classes]
        .iter()
        .map(|r| r / max_relevance)
        .collect();
    search.functions = relevance[classes..]
        .iter()
        .map(|r| r / max_relevance)
        .collect();
    let importance = Importance::new(graph, ranking);
    let bonus = Bonus::new(graph, readme);
    let mut query_set: Vec<&str> = query.iter().map(String::as_str).collect();
    query_set.sort_unstable();
    query_set.dedup();
    // A name matching a rare word of the task ("rotate", "watermark")
    // says more than one matching a word every file uses ("pdf", "page").
    let idf: Vec<f64> = query_set.iter().map(|t| index.idf(t)).collect();
    let max_idf = idf.iter().copied().fold(0.0, f64::max).max(f64::EPSILON);
    let weight = |term: &str| {
        query_set
            .binary_search(&term)
            .map_or(0.0, |i| idf[i] / max_idf)
    };
    let named = identifiers.len().min(MAX_IDENTIFIERS);
    let held = |entity: EntityId| match entity {
        // Functions only: a class's source holds its methods' again.
        EntityId::Function(_) if named > 0 => {
            graph.source(entity).map_or(0, |s| held_by(s, identifiers))
        }
        _ => 0,
    };
    let mut hits: Vec<Hit> = entities
        .iter()
        .zip(&relevance)
        .filter_map(|(&entity, &r)| {
            let held = held(entity);
            if r <= 0.0 && held == 0 {
                return None;
            }
            let mut score = r / max_relevance
                + 0.6 * name_match(graph, entity, &weight)
                + 0.35 * importance.of(entity);
            score += bonus.of(entity);
            // The task's own identifiers in the code are the surest sign of
            // where its result is made.
            score += 1.5 * f64::from(held.count_ones()) / named.max(1) as f64;
            score *= demotion(graph, entity);
            Some(Hit {
                entity,
                score,
                held,
            })
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| graph.qualname(a.entity).cmp(&graph.qualname(b.entity)))
    });
    // A docstring that mentions one of the words in passing is no hit: keep
    // what scores near the best.
    let floor = hits.first().map_or(0.0, |h| h.score * MIN_SHARE_OF_BEST);
    hits.retain(|h| h.score >= floor);
    hits.truncate(MAX_HITS);
    search.hits = hits;
    search
}

/// What [`search`] found: the best hits, and every class's and function's
/// text relevance (BM25 normalised to [0, 1]; empty without a query), which
/// the context's ordering of modules and classes reuses instead of
/// indexing the repository again.
pub(crate) struct Search {
    pub(crate) hits: Vec<Hit>,
    pub(crate) classes: Vec<f64>,
    pub(crate) functions: Vec<f64>,
}

/// A hit must score at least this share of the best one.
const MIN_SHARE_OF_BEST: f64 = 0.4;

/// How much of the entity's name the query names, each word weighted by
/// its rarity in the repository (`weight`, 0 for a word the query lacks):
/// `extract` for "extract the text" is near 1, `extract_metadata` about
/// half that. A name is the strongest evidence of what code does, and
/// BM25 over a long docstring and parameter list dilutes it.
fn name_match(graph: &RepoGraph, entity: EntityId, weight: &dyn Fn(&str) -> f64) -> f64 {
    let name = match entity {
        EntityId::Class(c) => graph.class(c).map_or("", |c| c.name.as_str()),
        EntityId::Function(f) => graph.function(f).map_or("", |f| f.name.as_str()),
        EntityId::Module(_) => "",
    };
    let words: Vec<String> = terms(name)
        .iter()
        .filter(|t| !t.contains('_'))
        .map(|t| stem(t))
        .collect();
    // A compound name is also listed whole ("extract_text" and its parts);
    // count the parts only, unless it is a single word.
    let parts: Vec<&String> = if words.len() > 1 {
        words
            .iter()
            .filter(|w| **w != stem(&name.to_lowercase()))
            .collect()
    } else {
        words.iter().collect()
    };
    if parts.is_empty() {
        return 0.0;
    }
    let matched: f64 = parts.iter().map(|w| weight(w.as_str())).sum();
    matched / parts.len() as f64
}

/// How many distinct words of `text` name something in the repository
/// (a function's or class's name or docstring words, a module's name): the
/// measure of whether a task's own words can steer the context, or whether
/// search terms must be asked for (a task in another language finds none).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("pdf.py"), "def extract_text(path):\n    '''Reads a PDF.'''\n")?;
/// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
/// assert_eq!(context_pack::task_terms_found(&graph, "Extract the text of a PDF"), 3);
/// // Chinese words find nothing; the Latin ones among them still count.
/// assert_eq!(context_pack::task_terms_found(&graph, "提取文件的文本"), 0);
/// assert_eq!(context_pack::task_terms_found(&graph, "提取PDF文件的文本"), 1);
/// # Ok(())
/// # }
/// ```
pub fn task_terms_found(graph: &RepoGraph, text: &str) -> usize {
    let mut wanted = query_terms(Some(text), &[]);
    wanted.retain(|t| t.is_ascii());
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return 0;
    }
    let mut found = vec![false; wanted.len()];
    let mut mark = |terms: Vec<String>| {
        for term in terms {
            if let Ok(i) = wanted.binary_search(&term) {
                found[i] = true;
            }
        }
    };
    for m in graph.modules() {
        mark(terms(&m.name).iter().map(|t| stem(t)).collect());
    }
    for class in graph.class_ids() {
        mark(document(graph, EntityId::Class(class)));
    }
    for function in graph.function_ids() {
        mark(document(graph, EntityId::Function(function)));
    }
    found.iter().filter(|f| **f).count()
}

/// The terms one entity is found by. The name counts twice: a function
/// called `extract` is about extracting more surely than one whose
/// docstring mentions it once.
fn document(graph: &RepoGraph, entity: EntityId) -> Vec<String> {
    let mut text = String::new();
    let (name, doc) = match entity {
        EntityId::Class(c) => match graph.class(c) {
            Some(class) => {
                for &method in &class.methods {
                    if let Some(f) = graph.function(method)
                        && !f.name.starts_with('_')
                    {
                        text.push(' ');
                        text.push_str(&f.name);
                    }
                }
                (class.name.as_str(), class.docstring.as_deref())
            }
            None => return Vec::new(),
        },
        EntityId::Function(f) => match graph.function(f) {
            Some(function) => {
                // A few parameters say what goes in; thirty only dilute.
                for p in function.params.iter().filter(|p| p.name != "self").take(6) {
                    text.push(' ');
                    text.push_str(&p.name);
                }
                (function.name.as_str(), function.docstring.as_deref())
            }
            None => return Vec::new(),
        },
        EntityId::Module(_) => return Vec::new(),
    };
    // The file's name says what its contents are about ("page", "reader");
    // the whole qualified name would lend every method its class's words.
    let module = graph
        .module_of(entity)
        .and_then(|m| graph.module(m))
        .map_or("", |m| m.name.rsplit('.').next().unwrap_or(""));
    let _ = write!(text, " {name} {name} {module}");
    if let Some(doc) = doc {
        // The first paragraph says what it does; the rest is detail.
        let head: String = doc.chars().take(400).collect();
        text.push(' ');
        text.push_str(&head);
    }
    terms(&text).iter().map(|t| stem(t)).collect()
}

/// Extra score for the entities a repository presents as its way in.
struct Bonus {
    classes: Vec<f64>,
    functions: Vec<f64>,
}

impl Bonus {
    const PUBLIC_API: f64 = 0.3;
    const README_CODE: f64 = 0.25;
    const EXAMPLE: f64 = 0.2;
    const ENTRY_POINT: f64 = 0.2;

    fn new(graph: &RepoGraph, readme: Option<&str>) -> Self {
        let mut bonus = Bonus {
            classes: vec![0.0; graph.classes().len()],
            functions: vec![0.0; graph.functions().len()],
        };
        let usage = graph.usage();
        for entry in &usage.public_api {
            if let Some(entity) = entry.entity {
                bonus.add(entity, Self::PUBLIC_API);
            }
        }
        for entry in &usage.entry_points {
            if let Some(entity) = entry.entity {
                bonus.add(entity, Self::ENTRY_POINT);
            }
        }
        for example in &usage.examples {
            for &entity in example.calls.iter().chain(&example.imports) {
                bonus.add(entity, Self::EXAMPLE);
            }
        }
        let named = readme.map(code_identifiers).unwrap_or_default();
        if !named.is_empty() {
            for (i, class) in graph.classes().iter().enumerate() {
                if named.contains(class.name.as_str()) {
                    bonus.classes[i] += Self::README_CODE;
                }
            }
            for (i, function) in graph.functions().iter().enumerate() {
                if !function.name.starts_with('_') && named.contains(function.name.as_str()) {
                    bonus.functions[i] += Self::README_CODE;
                }
            }
        }
        bonus
    }

    /// Each kind of evidence counts once per entity.
    fn add(&mut self, entity: EntityId, amount: f64) {
        let slot = match entity {
            EntityId::Class(c) => self.classes.get_mut(c.index()),
            EntityId::Function(f) => self.functions.get_mut(f.index()),
            EntityId::Module(_) => None,
        };
        if let Some(slot) = slot {
            *slot = (*slot).max(amount);
        }
    }

    fn of(&self, entity: EntityId) -> f64 {
        match entity {
            EntityId::Class(c) => self.classes.get(c.index()).copied().unwrap_or(0.0),
            EntityId::Function(f) => self.functions.get(f.index()).copied().unwrap_or(0.0),
            EntityId::Module(_) => 0.0,
        }
    }
}

/// Identifiers of three or more characters used in the README's code:
/// fenced blocks and `>>>` lines (reST's indented `::` blocks are not told
/// apart from prose). How the authors call their library is the best hint
/// of where a user starts.
fn code_identifiers(readme: &str) -> rustc_hash::FxHashSet<String> {
    let mut names = rustc_hash::FxHashSet::default();
    let fenced = crate::markdown::fenced_blocks(readme);
    // A prompt inside a fenced block is read twice; the set keeps one.
    let prompts = readme
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix(">>>"));
    for code in fenced.iter().map(|b| b.body).chain(prompts) {
        for word in code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.len() >= 3 && !word.starts_with(|c: char| c.is_ascii_digit()) {
                names.insert(word.to_owned());
            }
        }
    }
    names
}

/// Importance of functions and classes, each normalised to [0, 1].
struct Importance {
    classes: Vec<f64>,
    functions: Vec<f64>,
}

impl Importance {
    fn new(graph: &RepoGraph, ranking: &Ranking) -> Self {
        let mut classes = vec![0.0; graph.classes().len()];
        let mut functions = vec![0.0; graph.functions().len()];
        for c in &ranking.classes {
            if let Some(slot) = classes.get_mut(c.id.index()) {
                *slot = c.score;
            }
        }
        for f in &ranking.functions {
            if let Some(slot) = functions.get_mut(f.id.index()) {
                *slot = f.score;
            }
        }
        normalise(&mut classes);
        normalise(&mut functions);
        Importance { classes, functions }
    }

    fn of(&self, entity: EntityId) -> f64 {
        match entity {
            EntityId::Class(c) => self.classes.get(c.index()).copied().unwrap_or(0.0),
            EntityId::Function(f) => self.functions.get(f.index()).copied().unwrap_or(0.0),
            EntityId::Module(_) => 0.0,
        }
    }
}

fn normalise(values: &mut [f64]) {
    let max = values.iter().copied().fold(0.0, f64::max);
    if max > 0.0 {
        for v in values {
            *v /= max;
        }
    }
}

/// Factor for places a task rarely starts: tests, private names, dunder
/// methods.
fn demotion(graph: &RepoGraph, entity: EntityId) -> f64 {
    let path = graph
        .module_of(entity)
        .and_then(|m| graph.module(m))
        .map_or("", |m| m.path.as_str());
    let mut factor = 1.0;
    if is_test_path(path) {
        factor *= 0.25;
    }
    let name = match entity {
        EntityId::Class(c) => graph.class(c).map_or("", |c| c.name.as_str()),
        EntityId::Function(f) => graph.function(f).map_or("", |f| f.name.as_str()),
        EntityId::Module(_) => "",
    };
    if name.starts_with("__") && name.ends_with("__") {
        factor *= 0.3;
    } else if name.starts_with('_') {
        factor *= 0.5;
    }
    factor
}

fn is_test_path(path: &str) -> bool {
    path.split('/').any(|part| {
        matches!(part, "test" | "tests" | "testing" | "conftest.py")
            || part.starts_with("test_")
            || part.ends_with("_test.py")
            || part.ends_with("Test.java")
    })
}

/// Renders the hits as a Markdown block within `share` tokens: files in
/// the order of their best hit, each with its entities' declarations.
pub(crate) fn hits_block(
    graph: &RepoGraph,
    hits: &[Hit],
    identifiers: &[String],
    counter: &TokenCounter,
    share: usize,
) -> String {
    let heading = "## Where to look for this task\n";
    if hits.is_empty() || counter.count(heading) + 24 > share {
        return String::new();
    }
    // Files in the order of their best hit.
    let mut files: Vec<(&str, Vec<(EntityId, u16)>)> = Vec::new();
    let mut position: BTreeMap<&str, usize> = BTreeMap::new();
    for hit in hits {
        let Some(module) = graph.module_of(hit.entity).and_then(|m| graph.module(m)) else {
            continue;
        };
        let slot = *position.entry(module.path.as_str()).or_insert_with(|| {
            files.push((module.path.as_str(), Vec::new()));
            files.len() - 1
        });
        if let Some((_, entities)) = files.get_mut(slot)
            && entities.len() < PER_FILE
        {
            entities.push((hit.entity, hit.held));
        }
    }
    let mut text = String::from(heading);
    let mut used = counter.count(&text);
    let mut shown = 0usize;
    'files: for (path, entities) in files {
        let file_line = format!("\n{}\n", markdown::code_span(path));
        let file_tokens = counter.count(&file_line);
        let mut lines = String::new();
        let mut lines_tokens = 0usize;
        for (entity, held) in entities {
            let line = entry_line(graph, entity, held, identifiers);
            let tokens = counter.count(&line);
            if used + file_tokens + lines_tokens + tokens > share {
                if lines.is_empty() {
                    break 'files;
                }
                break;
            }
            lines.push_str(&line);
            lines_tokens += tokens;
        }
        if lines.is_empty() {
            continue;
        }
        text.push_str(&file_line);
        text.push_str(&lines);
        used += file_tokens + lines_tokens;
        shown += 1;
    }
    if shown == 0 {
        return String::new();
    }
    text.trim_end().to_owned()
}

/// `- `def name(params):` (line 12, in `Class`) — first docstring line`
fn entry_line(graph: &RepoGraph, entity: EntityId, held: u16, identifiers: &[String]) -> String {
    let mut declaration = graph.declaration(entity);
    if declaration.chars().count() > MAX_DECLARATION {
        declaration = declaration
            .chars()
            .take(MAX_DECLARATION)
            .collect::<String>()
            + " …";
    }
    let (line, owner, doc) = match entity {
        EntityId::Class(c) => graph.class(c).map_or((0, None, None), |c| {
            (c.span.start_line, None, c.docstring.as_deref())
        }),
        EntityId::Function(f) => graph.function(f).map_or((0, None, None), |f| {
            let owner = match f.parent {
                EntityId::Class(c) => graph.class(c).map(|c| c.name.as_str()),
                _ => None,
            };
            (f.span.start_line, owner, f.docstring.as_deref())
        }),
        EntityId::Module(_) => (0, None, None),
    };
    let mut out = format!("- {} (line {line}", markdown::code_span(&declaration));
    if let Some(owner) = owner {
        let _ = write!(out, ", in {}", markdown::code_span(owner));
    }
    out.push(')');
    let names: Vec<String> = identifiers
        .iter()
        .take(MAX_IDENTIFIERS)
        .enumerate()
        .filter(|(bit, _)| held & (1 << bit) != 0)
        .map(|(_, name)| markdown::code_span(name))
        .collect();
    if !names.is_empty() {
        let _ = write!(out, " — uses the task's {}", names.join(", "));
    }
    if let Some(first) = doc.and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty())) {
        let first: String = first.chars().take(120).collect();
        let _ = write!(out, " — {}", markdown::one_line(&first));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readme_code_names_come_from_code_only() {
        let names = code_identifiers(
            "Use extract to get text.\n\n```python\nfrom pkg import extract_text\nx = extract_text(doc)\n```\n>>> fetch_url('u')\n",
        );
        assert!(names.contains("extract_text") && names.contains("fetch_url"));
        assert!(!names.contains("extract"), "prose is not code");
        // A fence inside a longer one is code, and does not end the block.
        let names = code_identifiers(
            "````markdown\n```python\nfrom pkg import inner_call\n```\n````\nprose_word\n",
        );
        assert!(names.contains("inner_call"), "{names:?}");
        assert!(!names.contains("prose_word"), "{names:?}");
    }

    #[test]
    fn identifiers_of_a_task_are_the_words_spelled_as_code() {
        assert_eq!(
            task_identifiers(
                "提取包括 row（行号）、c_header（列头信息）、excel_RC（Excel 坐标）和 f_name 等字段, getText"
            ),
            ["c_header", "excel_RC", "f_name", "getText"]
        );
        assert!(task_identifiers("Extract the PDF's text, __init__ x_ _y").is_empty());
    }

    #[test]
    fn an_identifier_is_held_only_as_a_whole_word() {
        let ids = vec!["c_header".to_string(), "excel_RC".to_string()];
        assert_eq!(held_by("d = {'c_header': 1, 'excel_RC': 2}", &ids), 0b11);
        assert_eq!(held_by("xc_header = excel_RCs", &ids), 0);
        assert_eq!(held_by("xc_header + c_header", &ids), 0b01);
    }

    #[test]
    fn test_paths_are_recognised() {
        assert!(is_test_path("pkg/tests/test_core.py"));
        assert!(is_test_path("test_x.py"));
        assert!(is_test_path("src/test/java/AppTest.java"));
        assert!(!is_test_path("pkg/core.py"));
        assert!(!is_test_path("pkg/testimony.py"));
    }

    #[test]
    fn query_terms_are_stemmed_and_merged() {
        let q = query_terms(Some("Extracting pages"), &["watermarks".into()]);
        assert_eq!(q, ["extract", "page", "watermark"]);
        assert!(
            query_terms(Some("根据仓库内容"), &[])
                .iter()
                .all(|t| !t.is_ascii())
        );
        assert_eq!(split_scripts("提取PDF文件"), "提取 PDF 文件");
        assert_eq!(split_scripts("a-b 文c"), "a-b 文 c");
    }
}

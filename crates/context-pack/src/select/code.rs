//! Code view: a file or entity as structure plus the relevant bodies.

use std::fmt::Write as _;
use std::path::Path;

use repo_graph::{EntityId, ModuleId, RepoGraph};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{SelectOptions, View};
use crate::TokenCounter;
use crate::bm25::Bm25;

/// What a code view shows: a whole module, or one class or function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeTarget {
    /// A module (file).
    Module(ModuleId),
    /// A class or function.
    Entity(EntityId),
}

impl CodeTarget {
    /// Resolves a path (relative to the root, or absolute under it) or a
    /// qualified name such as `pkg.mod.Class.method`.
    pub fn resolve(graph: &RepoGraph, target: &str) -> Result<Self, crate::Error> {
        let trimmed = target.trim().trim_start_matches("./");
        let path = std::path::Path::new(trimmed);
        // `..` and symbolic links in either path: compare canonical forms.
        let canonical = || {
            let canonical = std::fs::canonicalize(path).ok()?;
            let root = std::fs::canonicalize(graph.root()).ok()?;
            canonical.strip_prefix(root).ok().map(Path::to_path_buf)
        };
        let relative = if path.is_absolute() {
            canonical().or_else(|| path.strip_prefix(graph.root()).ok().map(Path::to_path_buf))
        } else {
            None
        };
        let relative = relative.map(|p| p.to_string_lossy().replace('\\', "/"));
        if let Some(m) = graph.module_by_path(relative.as_deref().unwrap_or(trimmed)) {
            return Ok(CodeTarget::Module(m));
        }
        match graph.entity(trimmed) {
            Some(EntityId::Module(m)) => Ok(CodeTarget::Module(m)),
            Some(entity) => Ok(CodeTarget::Entity(entity)),
            None => Err(crate::Error::UnknownTarget(target.to_string())),
        }
    }
}

/// Conservative bytes-per-token used to plan which bodies fit; the final
/// text is counted exactly.
const BYTES_PER_TOKEN: usize = 3;

/// Code view of `target` (a path or qualified name).
///
/// When the source fits in `options.max_tokens` it is returned unchanged.
/// Otherwise the view keeps the imports, every class and function signature
/// with its docstring's first line and its line numbers, and the full bodies
/// of the entities most relevant to `query` (BM25 over names, docstrings and
/// code; without a query, the first ones) while they fit; other bodies are
/// elided with their line ranges so they can be asked for.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use context_pack::select::{code, SelectOptions};
/// let dir = tempfile::tempdir()?;
/// let mut src = String::new();
/// for i in 0..300 {
///     src.push_str(&format!("def f{i}(x):\n    \"\"\"Step {i}.\"\"\"\n    return x + {i}\n\n"));
/// }
/// std::fs::write(dir.path().join("big.py"), src)?;
/// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
/// let counter = context_pack::TokenCounter::new(Default::default())?;
/// let options = SelectOptions { max_tokens: 1_000, ..SelectOptions::default() };
/// let view = code(&graph, "big.py", Some("f7"), &counter, &options)?;
/// assert!(view.reduced && view.tokens <= 1_000);
/// assert!(view.text.contains("return x + 7"));
/// assert!(view.text.contains("body elided"));
/// # Ok(())
/// # }
/// ```
pub fn code(
    graph: &RepoGraph,
    target: &str,
    query: Option<&str>,
    counter: &TokenCounter,
    options: &SelectOptions,
) -> Result<View, crate::Error> {
    let resolved = CodeTarget::resolve(graph, target)?;
    let (module, root) = match resolved {
        CodeTarget::Module(m) => (m, EntityId::Module(m)),
        CodeTarget::Entity(e) => match graph.module_of(e) {
            Some(m) => (m, e),
            None => return Err(crate::Error::UnknownTarget(target.to_string())),
        },
    };
    let full = graph.source(root).unwrap_or("");
    if let Some(tokens) = counter.count_within(full, options.max_tokens) {
        return Ok(View {
            text: full.to_string(),
            tokens,
            reduced: false,
        });
    }
    let source = graph.module_source(module).unwrap_or("");
    let lines: Vec<&str> = source.lines().collect();
    let path = graph.module(module).map_or("", |m| m.path.as_str());

    // Every entity under the root, in source order, with its parent.
    let mut entities: Vec<(EntityId, Option<EntityId>)> = Vec::new();
    let mut stack: Vec<(EntityId, Option<EntityId>)> = match root {
        EntityId::Module(_) => graph
            .children(root)
            .iter()
            .rev()
            .map(|e| (*e, None))
            .collect(),
        other => vec![(other, None)],
    };
    while let Some((entity, parent)) = stack.pop() {
        entities.push((entity, parent));
        stack.extend(
            graph
                .children(entity)
                .iter()
                .rev()
                .map(|c| (*c, Some(entity))),
        );
    }
    let parents: FxHashMap<EntityId, EntityId> = entities
        .iter()
        .filter_map(|(e, p)| p.map(|p| (*e, p)))
        .collect();
    let parent_of = |e: EntityId| parents.get(&e).copied();

    // Relevance order: BM25 against the query, else source order.
    let order: Vec<EntityId> = match query.filter(|q| !q.trim().is_empty()) {
        Some(q) => {
            let docs: Vec<String> = entities
                .iter()
                .map(|(e, _)| {
                    format!(
                        "{} {}",
                        graph.qualname(*e).unwrap_or_default().replace('.', " "),
                        graph.source(*e).unwrap_or("")
                    )
                })
                .collect();
            let scores = Bm25::new(docs.iter().map(String::as_str)).scores(q);
            let mut ranked: Vec<(EntityId, f64)> =
                entities.iter().map(|(e, _)| *e).zip(scores).collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            let (hits, rest): (Vec<_>, Vec<_>) = ranked.into_iter().partition(|(_, s)| *s > 0.0);
            hits.into_iter().chain(rest).map(|(e, _)| e).collect()
        }
        None => entities.iter().map(|(e, _)| *e).collect(),
    };

    // Plan with estimated sizes: bodies of the most relevant functions
    // first (up to 60 % of the limit), then signature lines in relevance
    // order while they fit; an entity's enclosing classes are always shown.
    let depths = depths(&entities);
    let draw = |visible: &[EntityId], expanded: &[EntityId]| {
        render(
            graph, &entities, &depths, &lines, visible, expanded, root, path, query,
        )
    };
    let limit_bytes = options.max_tokens * BYTES_PER_TOKEN;
    // Headers, imports and the "omitted" marker are paid for first.
    let mut used = draw(&[], &[]).len();
    let mut visible: Vec<EntityId> = Vec::new();
    let mut shown: FxHashSet<EntityId> = FxHashSet::default();
    let mut expanded: Vec<EntityId> = Vec::new();
    let mut show = |e: EntityId, visible: &mut Vec<EntityId>, used: &mut usize| {
        let mut chain = vec![e];
        let mut current = parent_of(e);
        while let Some(p) = current {
            chain.push(p);
            current = parent_of(p);
        }
        for x in chain.into_iter().rev() {
            if shown.insert(x) {
                visible.push(x);
                *used += graph.signature(x).len() + 60;
            }
        }
    };
    for &e in &order {
        if !matches!(e, EntityId::Function(_)) || used >= limit_bytes * 6 / 10 {
            continue;
        }
        let size = graph.source(e).map_or(0, str::len) + 16 * 8;
        if used + size <= limit_bytes * 6 / 10 {
            used += size;
            expanded.push(e);
            show(e, &mut visible, &mut used);
        }
    }
    for &e in &order {
        if used + graph.signature(e).len() + 60 > limit_bytes {
            break;
        }
        show(e, &mut visible, &mut used);
    }
    let mut text = draw(&visible, &expanded);
    // The plan used estimates; drop the least relevant tenth until the exact count fits.
    while counter.count(&text) > options.max_tokens && (!expanded.is_empty() || visible.len() > 1) {
        if expanded.is_empty() {
            let keep = visible.len() - visible.len().div_ceil(10);
            visible.truncate(keep.max(1));
        } else {
            expanded.truncate(expanded.len() - expanded.len().div_ceil(10));
        }
        text = draw(&visible, &expanded);
    }
    if counter.count(&text) > options.max_tokens {
        let marker = "\n[... code view cut to fit the limit ...]";
        let keep = options.max_tokens.saturating_sub(counter.count(marker) + 1);
        text = format!("{}{marker}", counter.truncate(&text, keep));
    }
    let tokens = counter.count(&text);
    Ok(View {
        text,
        tokens,
        reduced: true,
    })
}

/// Start and end line of an entity.
fn span_of(graph: &RepoGraph, entity: EntityId) -> Option<(u32, u32)> {
    match entity {
        EntityId::Class(c) => graph.class(c).map(|c| (c.span.start_line, c.span.end_line)),
        EntityId::Function(f) => graph
            .function(f)
            .map(|f| (f.span.start_line, f.span.end_line)),
        EntityId::Module(m) => graph.module(m).map(|m| (1, m.line_count)),
    }
}

fn numbered(out: &mut String, lines: &[&str], start: u32, end: u32) {
    for n in start..=end {
        if let Some(line) = lines.get(n.saturating_sub(1) as usize) {
            let _ = writeln!(out, "{n:>5} | {line}");
        }
    }
}

/// Nesting depth of each entity below the view's root.
fn depths(entities: &[(EntityId, Option<EntityId>)]) -> FxHashMap<EntityId, usize> {
    let mut depths: FxHashMap<EntityId, usize> = FxHashMap::default();
    // Parents come before their children in `entities`.
    for (entity, parent) in entities {
        let depth = parent
            .and_then(|p| depths.get(&p).map(|d| d + 1))
            .unwrap_or(0);
        depths.insert(*entity, depth);
    }
    depths
}

#[allow(clippy::too_many_arguments)]
fn render(
    graph: &RepoGraph,
    entities: &[(EntityId, Option<EntityId>)],
    depths: &FxHashMap<EntityId, usize>,
    lines: &[&str],
    visible: &[EntityId],
    expanded: &[EntityId],
    root: EntityId,
    path: &str,
    query: Option<&str>,
) -> String {
    let mut out = String::new();
    let (start, end) = span_of(graph, root).unwrap_or((1, 1));
    let _ = write!(
        out,
        "# {path} lines {start}-{end}: structure view, {} of {} definitions shown, {} with full bodies",
        visible.len(),
        entities.len(),
        expanded.len()
    );
    match query {
        Some(q) if !q.trim().is_empty() => {
            let _ = writeln!(out, " (most relevant to \"{}\")", q.trim());
        }
        _ => out.push('\n'),
    }
    out.push_str("# elided bodies and omitted definitions show their line ranges: view those lines to read them\n");
    if let EntityId::Module(m) = root
        && let Some(module) = graph.module(m)
    {
        let mut import_lines: Vec<u32> = module
            .imports
            .iter()
            .filter(|i| !i.in_function)
            .map(|i| i.line)
            .collect();
        import_lines.dedup();
        for line in import_lines.iter().take(50) {
            numbered(&mut out, lines, *line, *line);
        }
        if import_lines.len() > 50 {
            let _ = writeln!(
                out,
                "      | ... {} more import lines",
                import_lines.len() - 50
            );
        }
    }
    // Hidden definitions between shown ones collapse into one marker line.
    let mut hidden: Option<(usize, u32, u32, usize)> = None; // (count, first line, last line, depth)
    let flush = |out: &mut String, hidden: &mut Option<(usize, u32, u32, usize)>| {
        if let Some((count, first, last, depth)) = hidden.take() {
            let indent = "    ".repeat(depth);
            let _ = writeln!(
                out,
                "      | {indent}... {count} definitions omitted: lines {first}-{last}"
            );
        }
    };
    let visible: FxHashSet<EntityId> = visible.iter().copied().collect();
    let expanded: FxHashSet<EntityId> = expanded.iter().copied().collect();
    let mut inside_expanded: Option<u32> = None;
    for &(entity, _) in entities {
        let Some((start, end)) = span_of(graph, entity) else {
            continue;
        };
        if inside_expanded.is_some_and(|last| start <= last) {
            continue;
        }
        inside_expanded = None;
        let depth = depths.get(&entity).copied().unwrap_or(0);
        if !visible.contains(&entity) {
            let entry = hidden.get_or_insert((0, start, end, depth));
            entry.0 += 1;
            entry.2 = entry.2.max(end);
            continue;
        }
        flush(&mut out, &mut hidden);
        let indent = "    ".repeat(depth);
        if expanded.contains(&entity) {
            numbered(&mut out, lines, start, end);
            inside_expanded = Some(end);
            continue;
        }
        // Declaration, first line of documentation and elided body, as the
        // entity's language writes them; the declaration carries the number.
        let outline = graph.outline(entity, &format!("body elided: lines {start}-{end}"));
        for (i, line) in outline.lines.iter().enumerate() {
            if i == outline.declaration {
                let _ = writeln!(out, "{start:>5} | {indent}{line}");
            } else {
                let _ = writeln!(out, "      | {indent}{line}");
            }
        }
    }
    flush(&mut out, &mut hidden);
    out
}

//! One-line module summaries for the context's summary table.

use repo_graph::{EntityId, ModuleId, RepoGraph};

/// Writes a short summary of a module. The built-in [`StaticSummarizer`]
/// needs no model; a model-backed one (the `llm` crate's) caches its answers
/// by the module's content hash. Implementations are synchronous: an async
/// summarizer computes its summaries first and answers from its cache here.
pub trait Summarizer: Send + Sync {
    /// A one-line summary of `module`.
    fn summarize(&self, graph: &RepoGraph, module: ModuleId) -> Result<String, crate::Error>;
}

/// The first sentence of the module docstring, else the module's main
/// classes and functions with their signatures.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use context_pack::{StaticSummarizer, Summarizer};
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("m.py"), "\"\"\"Reads PDF files. More text.\"\"\"\n")?;
/// std::fs::write(dir.path().join("n.py"), "class A:\n    pass\ndef load(path): pass\n")?;
/// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
/// let m = graph.module_by_name("m").unwrap();
/// let n = graph.module_by_name("n").unwrap();
/// assert_eq!(StaticSummarizer.summarize(&graph, m)?, "Reads PDF files.");
/// assert_eq!(StaticSummarizer.summarize(&graph, n)?, "Defines class A; def load(path)");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct StaticSummarizer;

/// Longest summary kept, in characters.
const MAX_SUMMARY: usize = 160;

impl Summarizer for StaticSummarizer {
    fn summarize(&self, graph: &RepoGraph, module: ModuleId) -> Result<String, crate::Error> {
        let Some(m) = graph.module(module) else {
            return Ok(String::new());
        };
        if let Some(sentence) = m.docstring.as_deref().and_then(first_sentence) {
            return Ok(clip(&sentence));
        }
        let items: Vec<String> = graph
            .children(EntityId::Module(module))
            .iter()
            .filter(|e| {
                !graph
                    .qualname(**e)
                    .unwrap_or_default()
                    .rsplit('.')
                    .next()
                    .unwrap_or("")
                    .starts_with('_')
            })
            .take(4)
            .map(|e| graph.signature(*e))
            .collect();
        Ok(if items.is_empty() {
            format!("{} lines, no public definitions", m.line_count)
        } else {
            clip(&format!("Defines {}", items.join("; ")))
        })
    }
}

/// The docstring's first sentence (up to the first period followed by a
/// space or the end of its first paragraph).
pub(crate) fn first_sentence(doc: &str) -> Option<String> {
    let paragraph: String = doc
        .split("\n\n")
        .next()?
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let paragraph = paragraph.trim();
    if paragraph.is_empty() {
        return None;
    }
    let end = paragraph
        .match_indices(". ")
        .next()
        .map_or(paragraph.len(), |(i, _)| i + 1);
    Some(paragraph[..end].to_string())
}

fn clip(text: &str) -> String {
    let single: String = text.replace(['\n', '|'], " ");
    if single.chars().count() <= MAX_SUMMARY {
        return single;
    }
    let cut: String = single.chars().take(MAX_SUMMARY - 1).collect();
    format!("{cut}…")
}

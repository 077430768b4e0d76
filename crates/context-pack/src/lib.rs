//! Token-budgeted context for an LLM agent working with a repository
//! (RepoMaster, seed 001, sections 3.2.3 and 3.3.3).
//!
//! [`ContextBuilder`] turns a [`repo_graph::RepoGraph`] and an
//! [`importance::Ranking`] into the initial repository context: the README,
//! a summary table of the top modules, the source (or skeleton) of the core
//! classes, and the paths of the other important modules, all within a hard
//! token budget. The [`select`] views keep every later observation under
//! the per-interaction limit: [`select::code`] shows a file or entity as
//! structure plus the relevant bodies, [`select::document`] keeps the most
//! relevant chunks of a text (and previews tables), and [`select::log`]
//! keeps a log's head, tail and every traceback.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("README.md"), "# Demo\n\nConverts PDFs to text.\n")?;
//! std::fs::write(dir.path().join("pdf.py"), "class Reader:\n    \"\"\"Reads PDFs.\"\"\"\n    def extract_text(self):\n        return ''\n")?;
//! let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
//! let ranking = importance::Ranker::new().rank(&graph);
//!
//! let context = context_pack::ContextBuilder::new(&graph, &ranking)
//!     .budget(2_000)
//!     .task("extract the text of a PDF")
//!     .build()?;
//! assert!(context.total_tokens <= 2_000);
//! assert!(context.render_markdown().contains("class Reader"));
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod bm25;
mod context;
mod hits;
pub mod markdown;
mod readme;
pub mod search;
pub mod select;
pub mod spec;
pub mod starter;
mod summary;
pub mod task_values;
mod unread;
mod usage;

pub use context::{Block, BlockKind, ContextBuilder, RepoContext};
pub use hits::{TaskIndex, task_terms_found};
/// Token counting is `llm`'s: one type for context budgets and usage.
pub use llm::{Encoding, TokenCounter};
pub use summary::{StaticSummarizer, Summarizer};
pub use unread::why_not_read;

/// How the repository is used (its command-line entry points, public API
/// with signatures and example scripts), as the context's usage block
/// renders it, within `budget` tokens; the API and examples that match
/// `task` come first. Empty when the analysis found no usage facts.
pub fn usage_view(
    graph: &repo_graph::RepoGraph,
    task: Option<&str>,
    counter: &TokenCounter,
    budget: usize,
) -> String {
    usage::usage_block(graph, task, counter, budget)
}

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tokenizer's data could not be loaded (a build problem).
    #[error("the {0:?} tokenizer could not be loaded; reinstall or rebuild repo-agent")]
    Tokenizer(Encoding),
    /// A code-view target names no file or entity of the repository.
    #[error(
        "`{0}` is neither a file of the repository nor a qualified name it defines; search for the name or list the directory first"
    )]
    UnknownTarget(String),
    /// A summarizer failed.
    #[error("summarizing {module} failed: {message}")]
    Summarizer {
        /// The module being summarized.
        module: String,
        /// What went wrong.
        message: String,
    },
}

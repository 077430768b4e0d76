//! `repo-agent analyze`: the structural model of a repository.

use std::path::PathBuf;

use anyhow::Context;
use clap::ValueEnum;
use repo_graph::{Analyzer, Language, RepoGraph};

use crate::output;

/// What `analyze` prints.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// Summary counts as one JSON object.
    Stats,
    /// The whole graph as JSON (see docs/GRAPH_SCHEMA.md).
    Json,
    /// The hierarchical code tree as indented text.
    Tree,
    /// `{"calls": {caller: [internal callee]}, "external": {caller: [external callee]}}`.
    Calls,
    /// The module dependency graph for Graphviz.
    Dot,
    /// Web routes (method, path, handler, framework, file, line) as JSON.
    Routes,
}

/// A language `--lang` keeps.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Lang {
    /// `.py`, `.pyi` and notebooks.
    Python,
    /// `.java`.
    Java,
}

impl From<Lang> for Language {
    fn from(lang: Lang) -> Self {
        match lang {
            Lang::Python => Language::Python,
            Lang::Java => Language::Java,
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The repository's top-level directory.
    path: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "stats")]
    format: Format,
    /// Analyse only these languages (repeat or separate with commas; default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    lang: Vec<Lang>,
    /// Write to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Skip files larger than this many bytes.
    #[arg(long, default_value_t = repo_graph::DEFAULT_MAX_FILE_SIZE)]
    max_file_size: u64,
    /// Keep per-file analysis results in this directory so the next run only
    /// re-parses changed files (default: the user cache, see REPO_AGENT_HOME).
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Do not read or write the on-disk cache.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let languages: Vec<Language> = args.lang.iter().map(|l| Language::from(*l)).collect();
    let graph = analyze_languages(
        &args.path,
        args.max_file_size,
        cache_dir(&args)?,
        &languages,
    )?;
    let text = render(&graph, args.format)?;
    output::emit(&text, args.output.as_deref())?;
    // The process ends here: the graph is not taken apart first.
    std::mem::forget(graph);
    Ok(())
}

/// Analyses `path` with a progress bar.
pub fn analyze(
    path: &std::path::Path,
    max_file_size: u64,
    cache_dir: Option<PathBuf>,
) -> anyhow::Result<RepoGraph> {
    analyze_languages(path, max_file_size, cache_dir, &[])
}

/// Analyses the files of `languages` (all when empty) under `path` with a progress bar.
pub fn analyze_languages(
    path: &std::path::Path,
    max_file_size: u64,
    cache_dir: Option<PathBuf>,
    languages: &[Language],
) -> anyhow::Result<RepoGraph> {
    let bar = output::progress_bar("analysing");
    let progress = bar.clone();
    let mut analyzer = Analyzer::new(path)
        .max_file_size(max_file_size)
        .languages(languages.iter().copied())
        .on_progress(move |p| {
            progress.set_length(p.files_total as u64);
            progress.set_position(p.files_done as u64);
        });
    if let Some(dir) = cache_dir {
        analyzer = analyzer.cache_dir(dir);
    }
    let graph = analyzer
        .analyze()
        .with_context(|| format!("analysis of {} failed", path.display()))?;
    bar.finish_and_clear();
    // The analyzer keeps every file's facts for a next analysis, which this
    // command does not make: they are freed while the graph is used (on
    // Django that took about 60 ms before any output was written). A
    // command that ends first does not wait for it.
    let _ = std::thread::Builder::new()
        .name("analyzer-free".into())
        .spawn(move || drop(analyzer));
    Ok(graph)
}

fn render(graph: &RepoGraph, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Stats => serde_json::to_string_pretty(&graph.stats())? + "\n",
        Format::Json => serde_json::to_string(&graph.to_document())? + "\n",
        Format::Tree => graph.tree_text(),
        Format::Calls => {
            let document = serde_json::json!({
                "calls": graph.calls_map(),
                "external": graph.external_calls_map(),
            });
            serde_json::to_string_pretty(&document)? + "\n"
        }
        Format::Dot => graph.dot(),
        Format::Routes => serde_json::to_string_pretty(&graph.routes_document())? + "\n",
    })
}

/// The on-disk cache for `args.path`: `--cache-dir`, nothing with
/// `--no-cache`, else the per-user default (see [`crate::paths`]).
fn cache_dir(args: &Args) -> anyhow::Result<Option<PathBuf>> {
    if args.no_cache {
        return Ok(None);
    }
    if let Some(dir) = &args.cache_dir {
        return Ok(Some(dir.clone()));
    }
    agent::graph_cache_dir(&args.path)
}

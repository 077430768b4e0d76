//! `repo-agent analyze`: the structural model of a repository.

use std::path::PathBuf;

use anyhow::Context;
use clap::ValueEnum;
use repo_graph::{Analyzer, RepoGraph};

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
    /// Every function, method and module mapped to the internal definitions it calls.
    Calls,
    /// The module dependency graph for Graphviz.
    Dot,
}

#[derive(clap::Args)]
pub struct Args {
    /// The repository's top-level directory.
    path: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "stats")]
    format: Format,
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
    let graph = analyze(&args.path, args.max_file_size, cache_dir(&args)?)?;
    let text = render(&graph, args.format)?;
    output::emit(&text, args.output.as_deref())
}

/// Analyses `path` with a progress bar.
pub fn analyze(
    path: &std::path::Path,
    max_file_size: u64,
    cache_dir: Option<PathBuf>,
) -> anyhow::Result<RepoGraph> {
    let bar = output::progress_bar("analysing");
    let progress = bar.clone();
    let mut analyzer = Analyzer::new(path)
        .max_file_size(max_file_size)
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
    Ok(graph)
}

fn render(graph: &RepoGraph, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Stats => serde_json::to_string_pretty(&graph.stats())? + "\n",
        Format::Json => serde_json::to_string(&graph.to_document())? + "\n",
        Format::Tree => graph.tree_text(),
        Format::Calls => serde_json::to_string_pretty(&graph.calls_map())? + "\n",
        Format::Dot => graph.dot(),
    })
}

/// The on-disk cache for `args.path`: under `$REPO_AGENT_HOME/cache/graph/`
/// (default `~/.cache/repo-agent`), one directory per canonical root path.
fn cache_dir(args: &Args) -> anyhow::Result<Option<PathBuf>> {
    if args.no_cache {
        return Ok(None);
    }
    if let Some(dir) = &args.cache_dir {
        return Ok(Some(dir.clone()));
    }
    let Some(home) = repo_agent_home() else {
        tracing::warn!("no home directory; the analysis cache is disabled");
        return Ok(None);
    };
    let root = std::fs::canonicalize(&args.path)
        .with_context(|| format!("cannot read {}; check the path exists", args.path.display()))?;
    let key = format!("{:016x}", fnv1a(root.to_string_lossy().as_bytes()));
    Ok(Some(home.join("cache").join("graph").join(key)))
}

/// `$REPO_AGENT_HOME`, else `$XDG_CACHE_HOME/repo-agent`, else `~/.cache/repo-agent`.
pub fn repo_agent_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("REPO_AGENT_HOME") {
        return Some(PathBuf::from(home));
    }
    if let Some(cache) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(cache).join("repo-agent"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("repo-agent"))
}

/// FNV-1a: a stable, dependency-free hash for naming cache directories.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

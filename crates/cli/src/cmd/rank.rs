//! `repo-agent rank`: the most important modules, classes and functions.

use std::path::PathBuf;

use anyhow::Context;
use clap::ValueEnum;
use importance::{Ranker, Ranking, Weights};

use crate::output;

/// How `rank` prints.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// Aligned tables with the feature breakdown.
    Table,
    /// One JSON object with `modules`, `classes` and `functions`.
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The repository's top-level directory.
    path: PathBuf,
    /// How many modules (and functions) to show.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// How many classes (core components) to show.
    #[arg(long, default_value_t = 10)]
    classes: usize,
    /// Feature weights: `paper` (all 1), `published` (RepoMaster's code), or a TOML file.
    #[arg(long, default_value = "paper")]
    weights: String,
    /// Most recent commits the Git feature reads.
    #[arg(long, default_value_t = importance::DEFAULT_MAX_COMMITS)]
    max_commits: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Write to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Do not read or write the analysis cache.
    #[arg(long)]
    no_cache: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let weights = Weights::from_name_or_file(&args.weights)?;
    let cache = if args.no_cache {
        None
    } else {
        agent::graph_cache_dir(&args.path)?
    };
    let graph = crate::cmd::analyze::analyze(&args.path, repo_graph::DEFAULT_MAX_FILE_SIZE, cache)?;
    let ranking = Ranker::new()
        .weights(weights)
        .max_commits(args.max_commits)
        .rank(&graph);
    let text = match args.format {
        Format::Json => json(&ranking, args.top, args.classes)?,
        Format::Table => ranking.table(args.top, args.classes),
    };
    output::emit(&text, args.output.as_deref())
}

fn json(ranking: &Ranking, top: usize, classes: usize) -> anyhow::Result<String> {
    let value = serde_json::json!({
        "modules": ranking.top_modules(top),
        "classes": ranking.top_classes(classes),
        "functions": ranking.top_functions(top),
        "weights": ranking.weights,
        "commits_read": ranking.commits_read,
    });
    Ok(serde_json::to_string_pretty(&value).context("cannot encode the ranking")? + "\n")
}

//! `repo-agent context` and `repo-agent view`: what the agent is shown.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::ValueEnum;
use context_pack::select::{SelectOptions, code};
use context_pack::{ContextBuilder, TokenCounter};
use importance::Ranker;

use crate::output;

/// How `context` prints.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// The context as the model sees it.
    Markdown,
    /// `{"blocks":[{"kind","tokens","text"}...],"total_tokens","budget"}`.
    Json,
}

#[derive(clap::Args)]
pub struct ContextArgs {
    /// The repository's top-level directory.
    path: PathBuf,
    /// Bias the context toward this task.
    #[arg(long)]
    task: Option<String>,
    /// Extra search terms for the task, comma-separated: English words and
    /// likely identifiers (what `run` asks the model for when the task's own
    /// words find nothing, e.g. a task written in Chinese).
    #[arg(long, value_delimiter = ',', value_name = "A,B,C")]
    keywords: Vec<String>,
    /// The hard limit, in tokens.
    #[arg(long, default_value_t = 8_000)]
    budget: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "markdown")]
    format: Format,
    /// Write to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Do not read or write the analysis cache.
    #[arg(long)]
    no_cache: bool,
    /// Ask the model for search terms for --task first (the call `run`
    /// makes when the task's words find too little), print them on stderr
    /// as `search terms: A, B, C`, and add them to --keywords.
    #[arg(long, requires = "task")]
    model_terms: bool,
    #[command(flatten)]
    model: crate::cmd::ModelArgs,
}

#[derive(clap::Args)]
pub struct ViewArgs {
    /// The repository's top-level directory.
    path: PathBuf,
    /// A file of the repository or a qualified name (`pkg.mod.Class.method`).
    target: String,
    /// Show in full the bodies most relevant to this query.
    #[arg(long)]
    query: Option<String>,
    /// The most tokens the view may hold.
    #[arg(long, default_value_t = context_pack::select::DEFAULT_MAX_TOKENS)]
    budget: usize,
    /// Do not read or write the analysis cache.
    #[arg(long)]
    no_cache: bool,
}

fn graph(path: &std::path::Path, no_cache: bool) -> anyhow::Result<repo_graph::RepoGraph> {
    let cache = if no_cache {
        None
    } else {
        agent::graph_cache_dir(path)?
    };
    crate::cmd::analyze::analyze(path, repo_graph::DEFAULT_MAX_FILE_SIZE, cache)
}

pub fn run_context(args: ContextArgs) -> anyhow::Result<()> {
    let graph = graph(&args.path, args.no_cache)?;
    let ranking = Ranker::new().rank(&graph);
    let mut builder = ContextBuilder::new(&graph, &ranking).budget(args.budget);
    if let Some(task) = &args.task {
        builder = builder.task(task.clone());
    }
    let mut keywords: Vec<String> = args.keywords.iter().map(|k| k.trim().to_owned()).collect();
    if let (true, Some(task)) = (args.model_terms, &args.task) {
        let terms = model_terms(&args, task)?;
        eprintln!("search terms: {}", terms.join(", "));
        keywords.extend(terms);
    }
    let context = builder.keywords(keywords).build()?;
    let text = match args.format {
        Format::Markdown => context.render_markdown() + "\n",
        Format::Json => {
            serde_json::to_string_pretty(&context).context("cannot encode the context")? + "\n"
        }
    };
    output::emit(&text, args.output.as_deref())
}

/// The model's search terms for `task` in the repository at `args.path`.
fn model_terms(args: &ContextArgs, task: &str) -> anyhow::Result<Vec<String>> {
    let loaded = args
        .model
        .spec()
        .load(&mut |message| eprintln!("{message}"))?;
    let repo = std::path::absolute(&args.path)?
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (terms, event) = runtime.block_on(agent::search_terms(loaded.chat.as_ref(), task, &repo));
    if event.result.starts_with("failed:") {
        anyhow::bail!("the model gave no search terms: {}", event.result);
    }
    Ok(terms)
}

pub fn run_view(args: ViewArgs) -> anyhow::Result<()> {
    let graph = graph(&args.path, args.no_cache)?;
    let counter = TokenCounter::new(Default::default())?;
    let options = SelectOptions {
        max_tokens: args.budget,
        ..SelectOptions::default()
    };
    let view = code(
        &graph,
        &args.target,
        args.query.as_deref(),
        &counter,
        &options,
    )?;
    output::emit(&(view.text + "\n"), None)
}

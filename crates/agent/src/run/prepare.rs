//! Setting an episode up: analyse and rank every repository, build the
//! initial context (with the model's module summaries when asked), the
//! tools and the sandbox.

use std::path::Path;

use context_pack::{BlockKind, ContextBuilder, TokenCounter};
use llm::ChatModel;
use sandbox::{Isolation, Sandbox, SandboxConfig};

use crate::Error;
use crate::redact::{RedactingModel, Redactor};
use crate::run::episode::{AgentConfig, AnalysisCache, SearchTerms, Summaries};
use crate::run::prompt::FirstStep;
use crate::run::summaries::ModelSummarizer;
use crate::run::task::TaskSpec;
use crate::run::tools::Tools;
use crate::run::tools::policy::{Access, PathPolicy, RootKind, canonical_or_lexical};
use crate::trajectory::{SetupEvent, SetupPurpose};

/// The tools and the initial context of a task, ready for
/// [`run_episode`](crate::run_episode).
#[derive(Debug)]
pub struct Prepared {
    /// The tools, bound to the repository and sandbox.
    pub tools: Tools,
    /// The initial repository context (Markdown), redacted by the run's
    /// redactor (the tools' [`Tools::redactor`]).
    pub context: String,
    /// Model calls made while preparing (search terms, module summaries),
    /// for the trajectory and the run's token totals.
    pub setup: Vec<SetupEvent>,
    /// End the task prompt with the first step to take, and the README
    /// example to start from when one fits the task
    /// ([`AgentConfig::first_step`]).
    pub first_step: Option<FirstStep>,
}

/// Analyses and ranks every repository of the task, builds the initial
/// context and the sandbox. Creates the output directory.
///
/// The primary (first) repository gets two thirds of the context budget
/// when there are others, which share the rest; each repository's context
/// is headed by its name and path.
///
/// Module summaries are the docstrings'; [`prepare_with_model`] lets the
/// model write them when the configuration asks for it.
pub async fn prepare(task: &TaskSpec, config: &AgentConfig) -> Result<Prepared, Error> {
    prepare_with_model(task, config, None).await
}

/// [`prepare`], with the model that writes the module summaries when
/// `config.summaries` is [`Summaries::Model`], and that is asked for
/// English search terms when fewer than two of the task's words name
/// anything in the primary repository (a task in another language). A
/// summary or search-term request that fails leaves the docstrings and the
/// task's own words in place and is logged: the episode can run without
/// them.
///
/// One [`Redactor`] is built here for the run, from the agent's
/// credential variables: every request to `model` and its answers pass it
/// ([`RedactingModel`]), so do the initial context and every tool output.
pub async fn prepare_with_model(
    task: &TaskSpec,
    config: &AgentConfig,
    model: Option<&dyn ChatModel>,
) -> Result<Prepared, Error> {
    task.validate()?;
    // Built once for the run: the tools, the conversation and every model
    // request share it.
    let redactor = Redactor::from_env();
    let redacting = model.map(|m| RedactingModel::new(m, redactor.clone()));
    let model = redacting.as_ref().map(|m| m as &dyn ChatModel);
    if task.repositories.is_empty() {
        return Err(Error::Task("the task names no repository".into()));
    }
    let mut graphs = Vec::with_capacity(task.repositories.len());
    for repo in &task.repositories {
        if !repo.path.is_dir() {
            return Err(Error::Task(format!(
                "repository {} is not a directory",
                repo.path.display()
            )));
        }
        // On a blocking thread, so that a time limit around `prepare` can
        // end the run while a large repository is still being analysed.
        let (path, cache) = (repo.path.clone(), config.analysis_cache.clone());
        let graph = tokio::task::spawn_blocking(move || analyze(&path, &cache))
            .await
            .map_err(|e| Error::Task(format!("the analysis stopped: {e}")))??;
        graphs.push(graph);
    }
    let encoding = context_pack::Encoding::default();
    let counter = TokenCounter::new(encoding)
        .map_err(|_| Error::Context(context_pack::Error::Tokenizer(encoding)))?;
    let mut setup = Vec::new();
    let mut keywords = Vec::new();
    if let (Some(model), Some(primary)) = (model, graphs.first()) {
        let found = context_pack::task_terms_found(primary, &task.description);
        let ask = match config.search_terms {
            SearchTerms::Auto => found < crate::run::keywords::MIN_TERMS_FOUND,
            SearchTerms::Always => true,
            SearchTerms::Never => false,
        };
        if ask {
            let name = task.repositories.first().map_or("", |r| r.name.as_str());
            let (terms, event) =
                crate::run::keywords::search_terms(model, &task.description, name).await;
            tracing::info!(found, terms = ?terms, "asked the model for search terms");
            keywords = terms;
            setup.push(event);
        }
    }
    let budgets = context_budgets(config.context_budget, graphs.len());
    let mut contexts = Vec::with_capacity(graphs.len());
    for ((graph, repo), budget) in graphs.iter().zip(&task.repositories).zip(budgets) {
        let ranking = importance::Ranker::new().rank(graph);
        let summarizer = match (config.summaries, model) {
            (Summaries::Model, Some(model)) => {
                let (summarizer, event) =
                    model_summaries(model, graph, &ranking, &config.analysis_cache).await;
                setup.push(event);
                Some(summarizer)
            }
            _ => None,
        };
        let mut builder = ContextBuilder::new(graph, &ranking);
        if let Some(summarizer) = &summarizer {
            builder = builder.summarizer(summarizer);
        }
        let built = builder
            .keywords(keywords.iter().cloned())
            .budget(budget)
            .task(task.description.clone())
            .build()?;
        let text = if config.hierarchical_analysis {
            built.render_markdown()
        } else {
            built
                .blocks
                .iter()
                .filter(|b| b.kind == BlockKind::Readme)
                .map(|b| b.text.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        contexts.push(if graphs.len() > 1 {
            format!(
                "# Repository {} ({})\n\n{text}",
                repo.name,
                repo.path.display()
            )
        } else {
            text
        });
    }
    // The repository wrote it: a README may hold anything.
    let context = redactor.redact_owned(contexts.join("\n\n"));
    let first_step = config.first_step.then(|| {
        let values = context_pack::task_values::task_values(&task.description);
        FirstStep {
            starter: starter(task, &keywords).map(|mut starter| {
                starter.put_task_values(&values);
                let inputs: Vec<&Path> = task.inputs.iter().map(|i| i.path.as_path()).collect();
                let query = format!("{} {}", task.description, keywords.join(" "));
                if starter.keep_reading_half(&query, &inputs, &task.output_dir) {
                    tracing::info!(reading = ?starter.reading_half, "the example's round trip cut to its reading half");
                }
                starter.code = redactor.redact_owned(starter.code);
                starter
            }),
            values,
            numbers: context_pack::task_values::task_numbers(&task.description),
        }
    });
    std::fs::create_dir_all(&task.output_dir).map_err(|e| {
        Error::Task(format!(
            "cannot create the output directory {}: {e}",
            task.output_dir.display()
        ))
    })?;
    let work_dir = task.effective_work_dir();
    // pip's cache stays the sandbox's own (its default): code that can run
    // `setup.py` could poison a cache later tasks trust.
    let builder = SandboxConfig::builder(&work_dir);
    let isolation = config.isolation;
    let code_user = config
        .code_user
        .resolve(rustix::process::geteuid().as_raw())
        .map_err(Error::Task)?;
    let mut builder = builder
        .isolation(isolation)
        .run_as(code_user)
        .timeout(config.exec_timeout)
        .package_registry(config.package_registry)
        .read_write_path(&task.output_dir);
    // Every repository the working directory is not: with `--work-dir`
    // elsewhere, the primary one must be mounted too, or its package
    // cannot be imported inside the container.
    for repo in &task.repositories {
        if !same_dir(&repo.path, &work_dir) {
            builder = builder.read_only_path(&repo.path);
        }
    }
    // Scripts written anywhere can import the repositories' packages.
    let python_path = std::env::join_paths(task.repositories.iter().map(|r| r.path.as_os_str()))
        .map_err(|e| {
            Error::Task(format!(
                "a repository path cannot be put on PYTHONPATH: {e}"
            ))
        })?;
    builder = builder.env("PYTHONPATH", python_path);
    // The input files themselves, not their directories: a sibling of an
    // input (another task's files, the repository's parent) stays hidden.
    for input in &task.inputs {
        builder = builder.read_only_path(&input.path);
    }
    let mut context = context;
    if let Some(environment) = &config.environment {
        // The prepared virtualenv: `python`/`pip` in a shell and
        // `run_python` use it, so the code the model writes sees the
        // packages that were installed for it.
        builder = builder
            .read_only_path(&environment.venv)
            .env("PATH", crate::environment::venv_path(&environment.venv))
            .env("VIRTUAL_ENV", environment.venv.as_os_str())
            .python(environment.python().as_os_str());
        context.push_str("\n\n");
        context.push_str(&redactor.redact_owned(environment.prompt_note()));
    }
    let sandbox = Sandbox::new(builder.build()?).await?;
    check_isolation(config, &sandbox, code_user)?;
    if let Some(environment) = &config.environment {
        // The sandbox falls back to a system interpreter when the code's
        // user cannot reach the configured one (process isolation, a venv
        // over a pyenv interpreter under a 0700 /root): the model would be
        // told of packages its code cannot import.
        let python = sandbox.python_executable()?;
        if !python.starts_with(&environment.venv) {
            return Err(Error::Task(format!(
                "the prepared environment {} cannot be used here: code runs with {} instead                  (in {:?} isolation its user cannot reach the environment's interpreter);                  prepare it again in this isolation, or run with namespaces",
                environment.venv.display(),
                python.display(),
                sandbox.isolation()
            )));
        }
    }
    Ok(Prepared {
        tools: Tools::new(
            graphs,
            path_policy(task, &work_dir),
            sandbox,
            counter,
            config.tools,
        )
        .with_redactor(redactor)
        .with_task(
            &task.description,
            task.inputs.iter().map(|i| i.path.clone()).collect(),
        ),
        context,
        setup,
        first_step,
    })
}

/// The primary repository's README or documentation example for the task, its paths
/// replaced by the task's ([`context_pack::starter`]); the search terms
/// count as the task's words (a task written in Chinese matches an
/// English README through them).
fn starter(task: &TaskSpec, keywords: &[String]) -> Option<context_pack::starter::Starter> {
    let repo = task.primary_repo()?;
    let query = format!("{} {}", task.description, keywords.join(" "));
    let inputs: Vec<&Path> = task.inputs.iter().map(|i| i.path.as_path()).collect();
    let starter =
        context_pack::starter::readme_starter(&repo.path, &query, &inputs, &task.output_dir);
    match &starter {
        Some(s) => tracing::info!(
            file = %s.file,
            section = ?s.section,
            swaps = s.swaps.len(),
            "a README example to start from"
        ),
        None => tracing::info!("no README example fits the task"),
    }
    starter
}

fn same_dir(a: &Path, b: &Path) -> bool {
    canonical_or_lexical(a) == canonical_or_lexical(b)
}

/// Says which isolation `auto` chose and what it cannot contain, and
/// refuses `--no-network` where nothing can enforce it.
fn check_isolation(
    config: &AgentConfig,
    sandbox: &Sandbox,
    code_user: Option<sandbox::RunAs>,
) -> Result<(), Error> {
    let chosen = sandbox.isolation();
    let memory = sandbox.memory_cap();
    no_network_enforced(chosen, config.require_no_network)?;
    if config.isolation == Isolation::Auto {
        match chosen {
            Isolation::Process => {
                let user = match code_user {
                    Some(user) => format!("uid {}", user.uid),
                    None => "the agent's own user (it can signal the agent; a guard \
                             still ends the trajectory if it does)"
                        .into(),
                };
                tracing::warn!(
                    "sandbox: --isolation auto chose process isolation (no bubblewrap or user \
                     namespaces here): model-written code runs as {user}, keeps the network \
                     and sees the host's files that user can read; memory limit: {memory}"
                );
            }
            other => tracing::warn!(
                "sandbox: --isolation auto chose {other} isolation: the code sees only the \
                 task's files, with no network beyond the package registry; memory limit: \
                 {memory}"
            ),
        }
    }
    Ok(())
}

/// Refuses `--no-network` where nothing can enforce it: process isolation
/// cannot keep code off the network.
pub(crate) fn no_network_enforced(chosen: Isolation, required: bool) -> Result<(), Error> {
    if chosen == Isolation::Process && required {
        return Err(Error::Task(
            "--no-network needs namespace isolation (bubblewrap), which is not available here; \
             process isolation cannot keep code off the network. Install bubblewrap or drop \
             --no-network"
                .into(),
        ));
    }
    Ok(())
}

/// What the file tools may touch: the same roots, with the same access, as
/// the sandbox gets (the repositories and inputs read-only, the working and
/// output directories read-write).
fn path_policy(task: &TaskSpec, work_dir: &Path) -> PathPolicy {
    let mut policy = PathPolicy::new(work_dir)
        .root(work_dir, RootKind::WorkDir, Access::ReadWrite)
        .root(&task.output_dir, RootKind::OutputDir, Access::ReadWrite);
    for repo in &task.repositories {
        policy = policy.root(&repo.path, RootKind::Repository, Access::Read);
    }
    for input in &task.inputs {
        policy = policy.root(&input.path, RootKind::Input, Access::Read);
    }
    // The marker lies in a directory code may write, but all it can change
    // is which read-only root explains a missing file.
    if work_dir.join(crate::work_copy::MARKER).is_file()
        && let Some(repo) = task.primary_repo()
    {
        policy = policy.work_copy_of(work_dir, &repo.path);
    }
    policy
}

/// Analyses the repository at `root`, from and into the cache when one is
/// configured (the same cache as `repo-agent analyze`).
fn analyze(root: &Path, cache: &AnalysisCache) -> Result<repo_graph::RepoGraph, Error> {
    let mut analyzer = repo_graph::Analyzer::new(root);
    if let AnalysisCache::Home(home) = cache {
        match crate::paths::graph_cache_dir_in(home, root) {
            Ok(dir) => analyzer = analyzer.cache_dir(dir),
            Err(error) => tracing::warn!(%error, "analysis cache disabled"),
        }
    }
    Ok(analyzer.analyze()?)
}

/// The model's summaries of the modules the context lists, cached per
/// file content hash under the home when there is one.
async fn model_summaries(
    model: &dyn ChatModel,
    graph: &repo_graph::RepoGraph,
    ranking: &importance::Ranking,
    cache: &AnalysisCache,
) -> (ModelSummarizer, SetupEvent) {
    let mut summarizer = ModelSummarizer::new();
    if let AnalysisCache::Home(home) = cache {
        summarizer = summarizer.cache_file(crate::paths::summary_cache_file(home));
    }
    let modules: Vec<_> = ranking
        .top_modules(SUMMARISED_MODULES)
        .iter()
        .map(|m| m.id)
        .collect();
    let (usage, result) = match summarizer.prepare(model, graph, &modules).await {
        Ok(usage) => {
            tracing::info!(
                modules = modules.len(),
                calls = usage.calls,
                tokens = usage.total_tokens(),
                "module summaries written by the model"
            );
            (usage, format!("{} modules summarised", modules.len()))
        }
        Err(error) => {
            tracing::warn!(%error, "module summaries by the model failed; docstrings stand in");
            (llm::Usage::default(), format!("failed: {error}"))
        }
    };
    let event = SetupEvent {
        purpose: SetupPurpose::ModuleSummaries,
        usage,
        result,
    };
    (summarizer, event)
}

/// Modules the context's summary table lists (context-pack's default).
const SUMMARISED_MODULES: usize = 20;

/// Splits the context budget: all of it for a single repository, else two
/// thirds for the primary one and an equal share of the rest for each other.
fn context_budgets(total: usize, repositories: usize) -> Vec<usize> {
    match repositories {
        0 => Vec::new(),
        1 => vec![total],
        n => {
            let primary = total * 2 / 3;
            let other = (total - primary) / (n - 1);
            std::iter::once(primary)
                .chain(std::iter::repeat_n(other, n - 1))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{context_budgets, no_network_enforced};
    use sandbox::Isolation;

    #[test]
    fn no_network_is_refused_where_nothing_enforces_it() {
        let err = no_network_enforced(Isolation::Process, true).unwrap_err();
        assert!(
            err.to_string()
                .contains("Install bubblewrap or drop --no-network"),
            "{err}"
        );
        assert!(no_network_enforced(Isolation::Namespaces, true).is_ok());
        assert!(no_network_enforced(Isolation::Process, false).is_ok());
    }

    #[test]
    fn the_primary_repository_gets_most_of_the_context() {
        assert_eq!(context_budgets(8_000, 1), vec![8_000]);
        assert_eq!(context_budgets(8_000, 2), vec![5_333, 2_667]);
        assert_eq!(context_budgets(9_000, 4), vec![6_000, 1_000, 1_000, 1_000]);
        assert!(context_budgets(8_000, 0).is_empty());
    }
}

//! The model-backed summarizer: one request per new module content, cached
//! on disk, used by context-pack's summary table.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agent::ModelSummarizer;
use context_pack::{ContextBuilder, Summarizer};
use llm::Scripted;

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("reader.py"),
        "def read_pdf(path):\n    return open(path).read()\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("writer.py"),
        "def write_pdf(path, data):\n    pass\n",
    )
    .unwrap();
    dir
}

#[tokio::test]
async fn summaries_are_cached_by_content_hash() {
    let dir = repo();
    let cache = tempfile::tempdir().unwrap();
    let cache_file = cache.path().join("summaries.json");
    let graph = repo_graph::Analyzer::new(dir.path()).analyze().unwrap();
    let modules: Vec<_> = graph.module_ids().collect();

    let model = Arc::new(
        Scripted::new()
            .then_text("Reads PDF files from disk.\nextra line ignored")
            .then_text("Writes PDF files."),
    );
    let summarizer = ModelSummarizer::new().cache_file(&cache_file);
    let usage = summarizer
        .prepare(model.as_ref(), &graph, &modules)
        .await
        .unwrap();
    assert_eq!(model.requests().len(), 2);
    assert_eq!(usage.calls, 2);
    let reader = graph.module_by_name("reader").unwrap();
    assert_eq!(
        summarizer.summarize(&graph, reader).unwrap(),
        "Reads PDF files from disk."
    );
    let prompt = format!("{:?}", model.requests()[0]);
    assert!(prompt.contains("def read_pdf(path)"), "{prompt}");

    // A second summarizer loads the cache and asks nothing.
    let silent = Arc::new(Scripted::new());
    let again = ModelSummarizer::new().cache_file(&cache_file);
    again
        .prepare(silent.as_ref(), &graph, &modules)
        .await
        .unwrap();
    assert!(silent.requests().is_empty());

    // The summary table of the initial context uses the model's words.
    let ranking = importance::Ranker::new().git(false).rank(&graph);
    let context = ContextBuilder::new(&graph, &ranking)
        .summarizer(&again)
        .build()
        .unwrap();
    assert!(context.render_markdown().contains("Writes PDF files."));

    // A changed file is summarised again; an unprepared module falls back to the static summary.
    std::fs::write(
        dir.path().join("reader.py"),
        "def read_pdf(path, pages=None):\n    return b''\n",
    )
    .unwrap();
    let changed = repo_graph::Analyzer::new(dir.path()).analyze().unwrap();
    let reader = changed.module_by_name("reader").unwrap();
    assert_eq!(
        again.summarize(&changed, reader).unwrap(),
        "Defines def read_pdf(path, pages=None)"
    );
    let fresh = Arc::new(Scripted::new().then_text("Reads some pages of a PDF."));
    let third = ModelSummarizer::new().cache_file(&cache_file);
    third
        .prepare(fresh.as_ref(), &changed, &[reader])
        .await
        .unwrap();
    assert_eq!(fresh.requests().len(), 1);
}

/// `repo-agent run --summaries model`: the episode's setup asks the model
/// for the listed modules' summaries, puts them in the initial context,
/// caches them under the home with the analysis, and a second setup asks
/// nothing.
#[tokio::test]
async fn episodes_use_model_summaries_when_asked() {
    let dir = repo();
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // Words the repository has: no request for search terms first.
    let task = agent::TaskSpec::new(
        "Read a PDF and write it back".to_string(),
        dir.path().to_path_buf(),
        out.path().to_path_buf(),
    );
    let config = agent::AgentConfig::builder()
        .isolation(sandbox::Isolation::Process)
        .package_registry(false)
        .analysis_cache(agent::AnalysisCache::Home(home.path().to_path_buf()))
        .summaries(agent::Summaries::Model)
        .build();
    let model = Scripted::new()
        .then_text("Model words about one module.")
        .then_text("Model words about one module.");
    let prepared = agent::prepare_with_model(&task, &config, Some(&model))
        .await
        .unwrap();
    assert_eq!(model.requests().len(), 2);
    // The calls are reported for the trajectory and the run's totals.
    assert_eq!(prepared.setup.len(), 1);
    assert_eq!(
        prepared.setup[0].purpose,
        agent::SetupPurpose::ModuleSummaries
    );
    assert_eq!(prepared.setup[0].usage.calls, 2);
    assert!(
        prepared.context.contains("Model words about one module."),
        "{}",
        prepared.context
    );
    assert!(agent::summary_cache_file(home.path()).is_file());
    assert!(
        std::fs::read_dir(home.path().join("cache").join("graph"))
            .unwrap()
            .next()
            .is_some(),
        "the analysis is cached under the same home"
    );

    let silent = Scripted::new();
    let again = agent::prepare_with_model(&task, &config, Some(&silent))
        .await
        .unwrap();
    assert!(silent.requests().is_empty());
    assert!(again.context.contains("Model words about one module."));

    // Docstring summaries (the default) never ask the model.
    let docstrings = {
        let mut docstrings = config;
        docstrings.summaries = agent::Summaries::Docstrings;
        docstrings
    };
    let quiet = Scripted::new();
    let plain = agent::prepare_with_model(&task, &docstrings, Some(&quiet))
        .await
        .unwrap();
    assert!(quiet.requests().is_empty());
    assert!(!plain.context.contains("Model words"));
}

/// A request that fails does not cost the other modules their summaries:
/// they are asked for anyway, and the failure is reported at the end.
#[tokio::test]
async fn a_failed_summary_request_does_not_stop_the_others() {
    let dir = repo();
    let graph = repo_graph::Analyzer::new(dir.path()).analyze().unwrap();
    let reader = graph.module_by_name("reader").unwrap();
    let writer = graph.module_by_name("writer").unwrap();
    let model = Scripted::new()
        .then_error(llm::LlmError::Server {
            status: 500,
            message: "the server fell over".into(),
        })
        .then_text("Writes PDF files.");
    let summarizer = ModelSummarizer::new();
    let result = summarizer.prepare(&model, &graph, &[reader, writer]).await;
    assert!(result.is_err());
    assert_eq!(model.requests().len(), 2);
    assert_eq!(
        summarizer.summarize(&graph, writer).unwrap(),
        "Writes PDF files."
    );
    assert_eq!(
        summarizer.summarize(&graph, reader).unwrap(),
        "Defines def read_pdf(path)"
    );
}

//! Module summaries written by a chat model, for context-pack's summary
//! table (seed 001, section 3.2: the important modules are summarised in
//! the initial context). It lives here, where models and context meet, so
//! that `llm` stays a leaf; `repo-agent run --summaries model` uses it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use context_pack::{StaticSummarizer, Summarizer};
use repo_graph::{EntityId, ModuleId, RepoGraph};

use llm::{ChatModel, ChatRequest, LlmError, Message, Usage, UsageMeter};

const SYSTEM_PROMPT: &str = "You summarize source files for a developer who must decide which file to read. \
Answer with one sentence of at most 25 words that says what the module provides. No preamble, no Markdown.";

/// Source characters sent per module after the outline.
const MAX_SOURCE_CHARS: usize = 6_000;

/// Summaries written by a model and cached by the module's content hash, so
/// an unchanged file is never summarised twice.
///
/// [`Summarizer::summarize`] is synchronous and never calls the model: it
/// answers from the cache, and falls back to [`StaticSummarizer`] for
/// modules not summarised yet. Call [`ModelSummarizer::prepare`] (async)
/// first for the modules the context will list.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use context_pack::Summarizer;
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("m.py"), "def f():\n    return 1\n")?;
/// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
/// let module = graph.module_by_name("m").unwrap();
///
/// let model = llm::Scripted::new().then_text("Returns the number one.");
/// let summarizer = agent::ModelSummarizer::new();
/// summarizer.prepare(&model, &graph, &[module]).await?;
/// assert_eq!(summarizer.summarize(&graph, module)?, "Returns the number one.");
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct ModelSummarizer {
    cache: Mutex<BTreeMap<String, String>>,
    cache_file: Option<PathBuf>,
}

impl ModelSummarizer {
    /// A summarizer with an in-memory cache.
    pub fn new() -> Self {
        ModelSummarizer::default()
    }

    /// Also keep the cache in `path` (JSON: content hash → summary); an
    /// existing file is loaded, an unreadable one is ignored with a warning.
    pub fn cache_file(mut self, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        match std::fs::read_to_string(&path) {
            Ok(text) => match serde_json::from_str::<BTreeMap<String, String>>(&text) {
                Ok(entries) => {
                    if let Ok(mut cache) = self.cache.lock() {
                        cache.extend(entries);
                    }
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "summary cache unreadable; starting empty")
                }
            },
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(path = %path.display(), %error, "summary cache unreadable; starting empty");
            }
            Err(_) => {}
        }
        self.cache_file = Some(path);
        self
    }

    /// Asks `model` to summarise each of `modules` whose content is not
    /// cached yet, one request per module, and saves the cache. Returns the
    /// usage of the requests made. A failed request does not stop the
    /// others (that module keeps its docstring summary); the call then fails
    /// with the first error, keeping every summary obtained.
    pub async fn prepare(
        &self,
        model: &dyn ChatModel,
        graph: &RepoGraph,
        modules: &[ModuleId],
    ) -> Result<Usage, LlmError> {
        let meter = UsageMeter::default();
        let result = self.prepare_inner(model, graph, modules, &meter).await;
        self.save();
        result.map(|()| meter.summary())
    }

    async fn prepare_inner(
        &self,
        model: &dyn ChatModel,
        graph: &RepoGraph,
        modules: &[ModuleId],
        meter: &UsageMeter,
    ) -> Result<(), LlmError> {
        let mut first_error = None;
        for &id in modules {
            let Some(module) = graph.module(id) else {
                continue;
            };
            if self.cached(&module.content_hash).is_some() {
                continue;
            }
            let request = ChatRequest::new(vec![
                Message::system(SYSTEM_PROMPT),
                Message::user(prompt(graph, id)),
            ])
            .with_max_tokens(80)
            .with_temperature(0.0);
            let response = match model.complete(&request).await {
                Ok(response) => response,
                Err(error) => {
                    meter.record_error(model.model_name(), &error);
                    first_error.get_or_insert(error);
                    continue;
                }
            };
            meter.record_response(model.model_name(), &response);
            let summary = response
                .content
                .as_deref()
                .and_then(|c| c.lines().map(str::trim).find(|l| !l.is_empty()))
                .unwrap_or("")
                .to_string();
            if !summary.is_empty()
                && let Ok(mut cache) = self.cache.lock()
            {
                cache.insert(module.content_hash.clone(), summary);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn cached(&self, hash: &str) -> Option<String> {
        self.cache.lock().ok()?.get(hash).cloned()
    }

    fn save(&self) {
        let Some(path) = &self.cache_file else { return };
        let Ok(cache) = self.cache.lock() else { return };
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let text = serde_json::to_string_pretty(&*cache).map_err(std::io::Error::other)?;
            let temp = temp_path(path);
            std::fs::write(&temp, text)?;
            std::fs::rename(temp, path)
        };
        if let Err(error) = write() {
            tracing::warn!(path = %path.display(), %error, "summary cache not written");
        }
    }
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".{}.tmp", std::process::id()));
    path.with_file_name(name)
}

impl Summarizer for ModelSummarizer {
    fn summarize(
        &self,
        graph: &RepoGraph,
        module: ModuleId,
    ) -> Result<String, context_pack::Error> {
        let cached = graph
            .module(module)
            .and_then(|m| self.cached(&m.content_hash));
        match cached {
            // Context-pack makes it fit its table cell.
            Some(summary) => Ok(summary),
            None => StaticSummarizer.summarize(graph, module),
        }
    }
}

/// The module's name, outline (signatures and docstring first lines) and
/// the start of its source.
fn prompt(graph: &RepoGraph, id: ModuleId) -> String {
    let Some(module) = graph.module(id) else {
        return String::new();
    };
    let mut text = format!("Module `{}` ({})\n\nOutline:\n", module.name, module.path);
    let mut stack: Vec<(EntityId, usize)> = graph
        .children(EntityId::Module(id))
        .iter()
        .rev()
        .map(|e| (*e, 0))
        .collect();
    while let Some((entity, depth)) = stack.pop() {
        // A module of thousands of definitions must not make the request
        // larger than the model's window.
        if text.len() > MAX_SOURCE_CHARS {
            text.push_str("...\n");
            break;
        }
        text.push_str(&"  ".repeat(depth));
        text.push_str(&graph.signature(entity));
        text.push('\n');
        stack.extend(graph.children(entity).iter().rev().map(|e| (*e, depth + 1)));
    }
    let source = graph.module_source(id).unwrap_or("");
    text.push_str("\nSource (start):\n");
    text.push_str(&source[..source.floor_char_boundary(MAX_SOURCE_CHARS)]);
    text
}

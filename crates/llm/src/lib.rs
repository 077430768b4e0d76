//! Chat models for repo-agent: one provider-neutral [`ChatModel`] trait, a
//! robust client for any OpenAI-compatible server ([`OpenAiModel`]: OpenAI,
//! DeepSeek, Anthropic-compatible gateways, vLLM, Ollama, llama.cpp), exact
//! token accounting with cost estimates ([`Metered`], [`Usage`]), and
//! recording, replaying and scripting of model sessions for tests
//! ([`Recorder`], [`Replay`], [`Scripted`]).
//!
//! ```
//! use llm::{ChatModel, ChatRequest, ChatResponse, Message, Metered, Scripted, TokenUsage, UsageMeter};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), llm::LlmError> {
//! let script = Scripted::new()
//!     .then(ChatResponse::text("4").with_usage(TokenUsage::new(12, 1)))
//!     .then_tool_call("run_python", serde_json::json!({"code": "print(2 + 2)"}));
//! let meter = UsageMeter::default();
//! let model = Metered::new(script, meter.clone());
//!
//! let request = ChatRequest::new(vec![Message::user("What is 2 + 2?")]);
//! let answer = model.complete(&request).await?;
//! assert_eq!(answer.content.as_deref(), Some("4"));
//! let answer = model.complete(&request).await?;
//! assert_eq!(answer.tool_calls[0].name, "run_python");
//!
//! let usage = meter.summary();
//! assert_eq!((usage.calls, usage.total_tokens()), (2, 13));
//! # Ok(())
//! # }
//! ```
//!
//! A real server, configured from `OPENAI_API_KEY`, `OPENAI_BASE_URL` and
//! `REPO_AGENT_MODEL`, with flags on top:
//!
//! ```no_run
//! use std::time::Duration;
//! use llm::{ChatModel, ChatRequest, Message, OpenAiConfig, OpenAiModel, RetryPolicy};
//! # async fn run() -> Result<(), llm::LlmError> {
//! let config = OpenAiConfig::from_env()
//!     .timeout(Duration::from_secs(120))
//!     .retry(RetryPolicy::new().with_max_retries(3))
//!     .build()?;
//! let model = OpenAiModel::new(config)?;
//! let answer = model
//!     .complete(&ChatRequest::new(vec![Message::user("Say hi")]))
//!     .await?;
//! println!("{:?} ({} tokens)", answer.content, answer.usage.total());
//! # Ok(())
//! # }
//! ```
//!
//! # Design
//!
//! - **async-openai** provides the wire types (request and response of
//!   `/chat/completions`, with `default-features = false` and only
//!   `chat-completion-types`). The HTTP exchange is done with reqwest, the
//!   client async-openai itself uses, because async-openai's client drops the
//!   headers of failed responses (so `Retry-After` cannot be honoured) and
//!   leaves retries to an optional middleware. Responses are normalised
//!   before being read with async-openai's types, so servers that omit
//!   `created`, invent finish reasons or send arguments as objects still work.
//! - **Failures** are typed ([`LlmError`]): transient ones are retried with
//!   exponential backoff and jitter, honouring `Retry-After`
//!   ([`RetryPolicy`]); 400, 401, 403 and 404 are not; a prompt too long for
//!   the model is [`LlmError::ContextLengthExceeded`] whatever server said it.
//! - **Tool calls** are native or, for servers without tool support, a text
//!   protocol ([`ToolMode::Text`]): tools described in the system prompt,
//!   one fenced JSON block per call. Arguments that are almost JSON (cut off
//!   by the output limit, trailing commas, single quotes) are repaired when
//!   only one reading is possible and the repair is noted in
//!   [`ToolCall::repair`]; otherwise the call fails with
//!   [`LlmError::MalformedToolCall`], which carries the raw text to show the
//!   model.
//! - **Tokens** come from the server's `usage`; when it has none they are
//!   counted with tiktoken ([`TokenCounter`], o200k_base or cl100k_base) and
//!   marked [`TokenUsage::estimated`]. [`PriceTable`] turns them into dollars.
//! - **Secrets**: the API key and secret headers are kept out of `Debug`
//!   output, and removed from every server message and HTTP error before it
//!   is returned, logged or recorded.

#![deny(missing_docs)]

mod error;
mod http;
mod json_repair;
mod model;
mod openai;
mod record;
mod retry;
mod scripted;
mod secret;

mod text_protocol;
mod tokens;
mod types;
mod usage;

pub use error::LlmError;
pub use http::{error_chain, http_client_builder};
pub use model::ChatModel;
pub use openai::OpenAiModel;
pub use openai::config::{
    DEFAULT_BASE_URL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, MaxTokensField, OpenAiConfig,
    OpenAiConfigBuilder, ToolMode,
};
pub use record::{Exchange, Outcome, Recorder, Replay};
pub use retry::{RetryPolicy, retry_after};
pub use scripted::Scripted;

pub use tokens::{CountTokens, Encoding, TokenCounter};
pub use types::{ChatRequest, ChatResponse, FinishReason, Message, Role, ToolCall, ToolDefinition};
pub use usage::{Metered, ModelPrice, PriceTable, TokenUsage, Usage, UsageMeter};

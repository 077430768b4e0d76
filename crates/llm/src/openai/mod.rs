//! The OpenAI-compatible provider.
//!
//! Request and response bodies are async-openai's chat-completion types; the
//! HTTP exchange is done here with reqwest (the client async-openai itself
//! uses), because async-openai's client drops the response headers of failed
//! requests, so `Retry-After` could not be honoured, and its retries are an
//! optional tower middleware. Doing the exchange here gives typed errors per
//! status, `Retry-After`, per-request timeouts and secret redaction.

pub(crate) mod classify;
pub(crate) mod config;
pub(crate) mod wire;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tracing::{debug, trace, warn};

use self::classify::{classify, classify_body, error_value};
use self::config::{OpenAiConfig, ToolMode};
use self::wire::{NotACompletion, WireAnswer, from_wire, to_wire};
use crate::error::LlmError;
use crate::http::error_chain;
use crate::json_repair::parse_tool_arguments;
use crate::model::ChatModel;
use crate::retry::retry_after;
use crate::text_protocol;
use crate::tokens::{CountTokens, TokenCounter};
use crate::types::{ChatRequest, ChatResponse, ToolCall};
use crate::usage::TokenUsage;

/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint:
/// OpenAI, DeepSeek, Anthropic-compatible gateways, vLLM, Ollama, llama.cpp
/// server and others.
///
/// Transient failures (connection errors, timeouts, 429, 500, 502, 503, 504,
/// 529) are retried following the [`RetryPolicy`](crate::RetryPolicy);
/// everything else comes back at once as a typed [`LlmError`]. Usage is taken
/// from the server's `usage` or, when absent, counted with tiktoken. The API
/// key and secret headers never appear in what this type returns or logs.
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    config: OpenAiConfig,
    http: reqwest::Client,
    endpoint: String,
    counter: Arc<dyn CountTokens>,
}

/// A failed attempt and how long the server asked to wait.
struct Failure {
    error: LlmError,
    retry_after: Option<Duration>,
}

impl From<LlmError> for Failure {
    fn from(error: LlmError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

impl OpenAiModel {
    /// A client for `config`. Fails only if TLS or the tokenizer cannot be
    /// set up.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let mut builder = crate::http::http_client_builder()?
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("repo-agent-llm/", env!("CARGO_PKG_VERSION")));
        if !config.env_proxy {
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| LlmError::config(format!("cannot create the HTTP client: {e}")))?;
        let counter = Arc::new(TokenCounter::new(config.encoding)?);
        let endpoint = format!(
            "{}/chat/completions",
            config.base_url.as_str().trim_end_matches('/')
        );
        Ok(Self {
            config,
            http,
            endpoint,
            counter,
        })
    }

    /// Uses `counter` instead of tiktoken for servers that report no usage.
    pub fn with_token_counter(mut self, counter: Arc<dyn CountTokens>) -> Self {
        self.counter = counter;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    async fn attempt(&self, body: &[u8]) -> Result<WireAnswer, Failure> {
        let response = self
            .http
            .post(&self.endpoint)
            .headers(self.config.headers.clone())
            .timeout(self.config.timeout)
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| self.transport_error(&e))?;
        let status = response.status().as_u16();
        let wait = retry_after(response.headers());
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(&e))?;
        let text = String::from_utf8_lossy(&bytes);
        let text = self.config.redactor.redact(&text);
        trace!(status, body = %text, "chat completion response");
        if !(200..300).contains(&status) {
            return Err(Failure {
                error: classify(status, &text, wait),
                retry_after: wait,
            });
        }
        match from_wire(&text) {
            Ok(answer) => Ok(answer),
            Err(NotACompletion::ErrorObject(value)) => {
                // Gateways that answer 200 with an error object put the real status in `code`.
                let status = value
                    .pointer("/error/code")
                    .and_then(serde_json::Value::as_u64)
                    .and_then(|code| u16::try_from(code).ok())
                    .filter(|code| (400..600).contains(code))
                    .unwrap_or(502);
                let body = error_value(&value).unwrap_or_default();
                Err(Failure {
                    error: classify_body(status, body, wait),
                    retry_after: wait,
                })
            }
            Err(NotACompletion::Invalid(message)) => {
                Err(LlmError::InvalidResponse { message }.into())
            }
        }
    }

    fn transport_error(&self, error: &reqwest::Error) -> Failure {
        let message = self
            .config
            .redactor
            .redact(&error_chain(error))
            .into_owned();
        let error = if error.is_connect() || !error.is_timeout() {
            LlmError::Connection { message }
        } else {
            LlmError::Timeout {
                timeout_ms: u64::try_from(self.config.timeout.as_millis()).unwrap_or(u64::MAX),
            }
        };
        error.into()
    }

    /// Turns the server's answer into a response: tool calls parsed and
    /// repaired, usage counted when the server gave none.
    fn finish(
        &self,
        answer: WireAnswer,
        sent: &ChatRequest,
        started: Instant,
        attempts: u32,
    ) -> Result<ChatResponse, LlmError> {
        let usage = answer.usage.unwrap_or_else(|| {
            let completion = answer
                .content
                .as_deref()
                .map_or(0, |t| self.counter.count_text(t))
                + answer
                    .tool_calls
                    .iter()
                    .map(|call| {
                        self.counter.count_text(&call.name)
                            + self.counter.count_text(&call.arguments)
                    })
                    .sum::<u64>();
            TokenUsage {
                prompt_tokens: self.counter.count_prompt(sent),
                completion_tokens: completion,
                cached_tokens: None,
                estimated: true,
            }
        });

        let mut tool_calls = Vec::with_capacity(answer.tool_calls.len());
        for call in answer.tool_calls {
            match parse_tool_arguments(&call.arguments) {
                Ok(parsed) => tool_calls.push(ToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: parsed.value,
                    repair: parsed.note,
                }),
                Err(reason) => {
                    return Err(LlmError::MalformedToolCall {
                        name: call.name,
                        raw: call.arguments,
                        reason,
                        usage,
                    });
                }
            }
        }
        let mut content = answer.content;
        if self.config.tool_mode == ToolMode::Text
            && let Some(text) = content.take()
        {
            match text_protocol::decode_response(&text) {
                Ok(decoded) => {
                    content = decoded.content;
                    tool_calls.extend(decoded.tool_calls);
                }
                Err(bad) => {
                    return Err(LlmError::MalformedToolCall {
                        name: bad.name,
                        raw: bad.raw,
                        reason: bad.reason,
                        usage,
                    });
                }
            }
        }
        for call in tool_calls.iter().filter(|call| call.repair.is_some()) {
            warn!(tool = %call.name, repair = call.repair.as_deref().unwrap_or_default(), "repaired tool-call arguments");
        }

        let model = if answer.model.is_empty() {
            self.config.model.clone()
        } else {
            answer.model
        };
        let response = ChatResponse {
            content,
            tool_calls,
            finish_reason: answer.finish_reason,
            usage,
            model,
            latency: started.elapsed(),
            attempts,
        };
        debug!(
            model = %response.model,
            prompt_tokens = usage.prompt_tokens,
            completion_tokens = usage.completion_tokens,
            estimated = usage.estimated,
            tool_calls = response.tool_calls.len(),
            attempts,
            latency_ms = response.latency.as_millis() as u64,
            "chat completion"
        );
        Ok(response)
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let sent = match self.config.tool_mode {
            ToolMode::Native => Cow::Borrowed(request),
            ToolMode::Text => Cow::Owned(text_protocol::encode_request(request)),
        };
        let wire = to_wire(&self.config.model, &sent, self.config.max_tokens_field);
        let body = serde_json::to_vec(&wire)
            .map_err(|e| LlmError::config(format!("the request cannot be encoded as JSON: {e}")))?;
        debug!(
            model = %self.config.model,
            messages = sent.messages.len(),
            tools = request.tools.len(),
            bytes = body.len(),
            "chat completion request"
        );

        let retry = &self.config.retry;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let failure = match self.attempt(&body).await {
                Ok(answer) => return self.finish(answer, &sent, started, attempt),
                Err(failure) => failure,
            };
            if !failure.error.is_retryable() {
                debug!(attempt, error = %failure.error, "chat completion failed");
                return Err(failure.error);
            }
            if attempt > retry.max_retries() {
                warn!(attempt, error = %failure.error, "chat completion failed, no retries left");
                return Err(if attempt == 1 {
                    failure.error
                } else {
                    LlmError::RetriesExhausted {
                        attempts: attempt,
                        last: Box::new(failure.error),
                    }
                });
            }
            let Some(delay) = retry.delay(attempt, failure.retry_after) else {
                warn!(
                    retry_after_ms = failure.retry_after.map(|d| d.as_millis() as u64),
                    "server asked to wait longer than the retry policy allows; giving up"
                );
                return Err(failure.error);
            };
            warn!(
                attempt,
                delay_ms = delay.as_millis() as u64,
                error = %failure.error,
                "chat completion failed, retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    fn model_name(&self) -> &str {
        &self.config.model
    }
}

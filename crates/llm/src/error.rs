use serde::{Deserialize, Serialize};

use crate::usage::TokenUsage;

/// Everything that can go wrong when asking a model.
///
/// Errors are plain data (`Clone`, serde) so that recorded sessions can
/// replay them exactly. Messages that come from a server are kept verbatim
/// (with any secret of the client removed) and each variant says what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LlmError {
    /// The client is misconfigured; nothing was sent.
    #[error("invalid model configuration: {message}")]
    Config {
        /// What is wrong and how to fix it.
        message: String,
    },
    /// HTTP 401: the server did not accept the API key.
    #[error(
        "authentication failed (HTTP 401): {message}. Check OPENAI_API_KEY (or --api-key) for this server"
    )]
    Authentication {
        /// The server's message.
        message: String,
    },
    /// HTTP 403: the key is known but may not use this model or endpoint.
    #[error(
        "permission denied (HTTP 403): {message}. The API key is not allowed to use this model or project; check its permissions or choose another model"
    )]
    PermissionDenied {
        /// The server's message.
        message: String,
    },
    /// HTTP 404: usually a wrong model name or base URL.
    #[error(
        "not found (HTTP 404): {message}. Check the model name (REPO_AGENT_MODEL or --model) and the base URL (OPENAI_BASE_URL, which usually ends in /v1)"
    )]
    NotFound {
        /// The server's message.
        message: String,
    },
    /// HTTP 400 for a reason other than the context length.
    #[error("the server rejected the request (HTTP 400): {message}")]
    BadRequest {
        /// The server's message.
        message: String,
    },
    /// The prompt (plus the requested output) does not fit the model's
    /// context window. Recognised from the messages of OpenAI, vLLM,
    /// llama.cpp, Ollama, DeepSeek, Mistral, Anthropic-style gateways and
    /// others. Shrink the context and ask again.
    #[error(
        "the conversation does not fit the model's context window{}: {message}. Shrink the context (fewer or shorter messages, or a smaller max_tokens) and try again",
        context_numbers(*limit, *requested)
    )]
    ContextLengthExceeded {
        /// The server's message.
        message: String,
        /// The model's context size in tokens, when the server said it.
        limit: Option<u64>,
        /// The tokens the request needed, when the server said it.
        requested: Option<u64>,
    },
    /// HTTP 429 (transient): too many requests.
    #[error(
        "rate limited (HTTP 429){}: {message}. Wait, lower the request rate, or raise the retry limit",
        retry_after_text(*retry_after_ms)
    )]
    RateLimited {
        /// The server's message.
        message: String,
        /// How long the server asked to wait, in milliseconds.
        retry_after_ms: Option<u64>,
    },
    /// HTTP 429 that will not go away by waiting: the account is out of quota.
    #[error(
        "quota exceeded (HTTP 429): {message}. Check the plan and billing of the account behind OPENAI_API_KEY"
    )]
    QuotaExceeded {
        /// The server's message.
        message: String,
    },
    /// HTTP 5xx.
    #[error("the model server failed (HTTP {status}): {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// Any other unsuccessful HTTP status.
    #[error("unexpected HTTP status {status}: {message}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// No complete answer within the per-request timeout.
    #[error(
        "no answer within {timeout_ms} ms. Raise the request timeout if the model is slow (large local models can take minutes)"
    )]
    Timeout {
        /// The timeout that fired, in milliseconds.
        timeout_ms: u64,
    },
    /// The server could not be reached or the connection broke.
    #[error(
        "could not talk to the model server: {message}. Check OPENAI_BASE_URL and that the server is running"
    )]
    Connection {
        /// What the HTTP client reported.
        message: String,
    },
    /// The server answered, but not with a chat completion this crate understands.
    #[error(
        "the server's answer is not a valid chat completion: {message}. Check that OPENAI_BASE_URL points at an OpenAI-compatible /v1 endpoint"
    )]
    InvalidResponse {
        /// What was wrong, with the start of the body.
        message: String,
    },
    /// The model called a tool with arguments that are not JSON and could
    /// not be repaired without guessing. Show this to the model and ask it to
    /// call the tool again; the tokens were spent and are in `usage`.
    #[error(
        "the model called tool `{name}` with arguments that are not valid JSON ({reason}); it should call the tool again with a complete JSON object. Arguments received: {}",
        preview(raw)
    )]
    MalformedToolCall {
        /// The tool's name (empty if even that was unreadable).
        name: String,
        /// The raw arguments text.
        raw: String,
        /// Why it could not be parsed.
        reason: String,
        /// Tokens the call used.
        usage: TokenUsage,
    },
    /// Transient failures went on past the retry limit.
    #[error("gave up after {attempts} attempts; the last error was: {last}")]
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<LlmError>,
    },
    /// A replayed session received a request that is not the recorded one.
    #[error(
        "replay: request #{index} does not match the recorded session (- recorded, + actual):\n{diff}\nThe code or prompts changed since recording; record the session again"
    )]
    ReplayMismatch {
        /// 0-based index of the request in this replay.
        index: usize,
        /// Line diff of the recorded and the actual request, as JSON.
        diff: String,
    },
    /// A replayed session was asked for more exchanges than it recorded.
    #[error(
        "replay: all {recorded} recorded exchanges were already served; the run makes more model calls than the recording, so record the session again"
    )]
    ReplayExhausted {
        /// Exchanges in the recording.
        recorded: usize,
    },
    /// A [`Scripted`](crate::Scripted) model ran out of responses.
    #[error(
        "the scripted model has no response left after serving {served}; add responses to the script"
    )]
    ScriptExhausted {
        /// Responses served.
        served: usize,
    },
    /// A session file could not be read or written.
    #[error("session file {path}: {message}")]
    Session {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl LlmError {
    /// Whether trying the same request again may succeed: connection errors,
    /// timeouts, rate limits, HTTP 500, 502, 503, 504 and 529 (overloaded),
    /// and a body that is not a chat completion (a proxy's error page, a
    /// reply cut off mid-JSON), which is as transient as a 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Timeout { .. }
            | LlmError::Connection { .. }
            | LlmError::RateLimited { .. }
            | LlmError::InvalidResponse { .. } => true,
            LlmError::Server { status, .. } => matches!(status, 500 | 502 | 503 | 504 | 529),
            _ => false,
        }
    }

    /// The error itself, or the last attempt's error when retries ran out.
    pub fn last_error(&self) -> &LlmError {
        match self {
            LlmError::RetriesExhausted { last, .. } => last.last_error(),
            other => other,
        }
    }

    /// Tokens spent despite the error (only a malformed tool call spends any).
    pub fn usage(&self) -> Option<&TokenUsage> {
        match self {
            LlmError::MalformedToolCall { usage, .. } => Some(usage),
            _ => None,
        }
    }

    /// HTTP attempts behind this error (1 unless retries ran out).
    pub fn attempts(&self) -> u32 {
        match self {
            LlmError::RetriesExhausted { attempts, .. } => *attempts,
            _ => 1,
        }
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        LlmError::Config {
            message: message.into(),
        }
    }
}

fn context_numbers(limit: Option<u64>, requested: Option<u64>) -> String {
    match (limit, requested) {
        (Some(limit), Some(requested)) => format!(" ({requested} tokens needed, {limit} allowed)"),
        (Some(limit), None) => format!(" ({limit} tokens allowed)"),
        (None, Some(requested)) => format!(" ({requested} tokens needed)"),
        (None, None) => String::new(),
    }
}

fn retry_after_text(retry_after_ms: Option<u64>) -> String {
    retry_after_ms
        .map(|ms| format!(", server asked to wait {ms} ms"))
        .unwrap_or_default()
}

/// Keeps error messages readable when a model wrote pages of arguments.
fn preview(raw: &str) -> String {
    const MAX: usize = 400;
    if raw.len() <= MAX {
        return raw.to_owned();
    }
    format!("{} ({} bytes in all)", shorten(raw, MAX), raw.len())
}

/// `text` cut to at most `max` bytes on a character boundary, with `...`
/// appended when something was cut: the one way this crate shortens a
/// server's or a model's text for an error message.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{}...", &text[..text.floor_char_boundary(max)])
}

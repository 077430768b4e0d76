//! Turning unsuccessful HTTP answers into typed errors.

use std::time::Duration;

use serde_json::Value;

use crate::error::{LlmError, shorten};

/// The message of an error body, however the server shaped it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ErrorBody {
    pub(crate) message: String,
    /// The `code` and `type` fields, when present.
    pub(crate) codes: Vec<String>,
    /// Numbers some servers put next to the message (llama.cpp's `n_ctx`).
    pub(crate) limit: Option<u64>,
    pub(crate) requested: Option<u64>,
}

const MAX_MESSAGE: usize = 2000;

/// Reads `{"error": {"message", "code", "type"}}` (OpenAI), `{"error": "..."}`
/// (Ollama, llama.cpp), `{"message": "..."}` and `{"detail": ...}` (vLLM and
/// other FastAPI servers), or keeps the text itself.
pub(crate) fn error_body(body: &str) -> ErrorBody {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return ErrorBody {
            message: short_message(body.trim()),
            ..ErrorBody::default()
        };
    };
    error_value(&value).unwrap_or_else(|| ErrorBody {
        message: short_message(body.trim()),
        ..ErrorBody::default()
    })
}

pub(crate) fn error_value(value: &Value) -> Option<ErrorBody> {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let error = value.get("error").unwrap_or(value);
    let message = match error {
        Value::String(message) => message.clone(),
        Value::Object(_) => ["message", "detail", "msg"]
            .iter()
            .find_map(|key| error.get(*key))
            .map(|m| text(m).unwrap_or_else(|| m.to_string()))?,
        _ => return None,
    };
    let codes = ["code", "type"]
        .iter()
        .filter_map(|key| error.get(*key).and_then(text))
        .collect();
    Some(ErrorBody {
        message: short_message(&message),
        codes,
        limit: error.get("n_ctx").and_then(Value::as_u64),
        requested: error.get("n_prompt_tokens").and_then(Value::as_u64),
    })
}

/// A server's message for an error: at most [`MAX_MESSAGE`] bytes.
fn short_message(text: &str) -> String {
    if text.is_empty() {
        return "(no message)".to_owned();
    }
    shorten(text, MAX_MESSAGE)
}

/// The typed error for an unsuccessful status and its (already redacted) body.
pub(crate) fn classify(status: u16, body: &str, retry_after: Option<Duration>) -> LlmError {
    classify_body(status, error_body(body), retry_after)
}

pub(crate) fn classify_body(
    status: u16,
    body: ErrorBody,
    retry_after: Option<Duration>,
) -> LlmError {
    let ErrorBody {
        message,
        codes,
        limit,
        requested,
    } = body;
    if !matches!(status, 401 | 403 | 404 | 429)
        && let Some((found_limit, found_requested)) = context_length(&message, &codes)
    {
        return LlmError::ContextLengthExceeded {
            message,
            limit: limit.or(found_limit),
            requested: requested.or(found_requested),
        };
    }
    match status {
        400 => LlmError::BadRequest { message },
        401 => LlmError::Authentication { message },
        403 => LlmError::PermissionDenied { message },
        404 => LlmError::NotFound { message },
        429 if is_quota(&message, &codes) => LlmError::QuotaExceeded { message },
        429 => LlmError::RateLimited {
            message,
            retry_after_ms: retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        },
        500..=599 => LlmError::Server { status, message },
        _ => LlmError::Http { status, message },
    }
}

fn is_quota(message: &str, codes: &[String]) -> bool {
    codes.iter().any(|code| {
        matches!(
            code.as_str(),
            "insufficient_quota" | "billing_hard_limit_reached"
        )
    }) || message
        .to_ascii_lowercase()
        .contains("exceeded your current quota")
}

/// Phrases servers use when the prompt does not fit: OpenAI, Azure, DeepSeek,
/// vLLM, llama.cpp, Ollama, TGI, Mistral, Anthropic-style gateways, Gemini.
const CONTEXT_PHRASES: &[&str] = &[
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    "exceeds the context window",
    "exceed context window",
    "context window exceeded",
    "reduce the length of the messages",
    "exceeds the available context size",
    "exceed_context_size",
    "prompt is too long",
    "input is too long",
    "too many input tokens",
    "maximum model length",
    "max_model_len",
    "too large for model with",
    "`max_new_tokens` must be <=",
    "exceeds the maximum number of tokens",
    "input length exceeds",
    "context size has been exceeded",
];

const CONTEXT_CODES: &[&str] = &[
    "context_length_exceeded",
    "exceed_context_size_error",
    "context_window_exceeded",
];

/// `Some((limit, requested))` when the message says the prompt is too long.
pub(crate) fn context_length(
    message: &str,
    codes: &[String],
) -> Option<(Option<u64>, Option<u64>)> {
    let lower = message.to_ascii_lowercase();
    let by_code = codes
        .iter()
        .any(|code| CONTEXT_CODES.contains(&code.as_str()));
    let by_phrase = CONTEXT_PHRASES.iter().any(|phrase| lower.contains(phrase));
    if !by_code && !by_phrase {
        return None;
    }
    let limit = [
        "maximum context length is",
        "maximum model length of",
        "max_model_len",
        "model with",
        "context size (",
        "maximum allowed (",
        "tokens allowed (",
        " > ",
        "must be <=",
        "n_ctx",
    ]
    .iter()
    .find_map(|needle| number_after(&lower, needle));
    let requested = [
        "resulted in",
        "you requested",
        "prompt is too long:",
        "(length",
        "prompt contains",
        "token count (",
        "n_prompt_tokens",
        "requested",
    ]
    .iter()
    .find_map(|needle| number_after(&lower, needle));
    Some((limit, requested))
}

/// The first integer right after `needle` (a few separator characters may
/// come between).
fn number_after(text: &str, needle: &str) -> Option<u64> {
    let start = text.find(needle)? + needle.len();
    let rest = text.get(start..)?;
    let digits_at = rest
        .char_indices()
        .take(4)
        .find(|(_, c)| c.is_ascii_digit())
        .map(|(i, _)| i)?;
    let skipped = &rest[..digits_at];
    if !skipped
        .chars()
        .all(|c| matches!(c, ' ' | ':' | '(' | '=' | '"'))
    {
        return None;
    }
    let digits: String = rest[digits_at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(status: u16, body: &str) -> (Option<u64>, Option<u64>) {
        match classify(status, body, None) {
            LlmError::ContextLengthExceeded {
                limit, requested, ..
            } => (limit, requested),
            other => panic!("{body} was classified as {other:?}"),
        }
    }

    #[test]
    fn context_errors_of_common_servers_are_recognised() {
        // OpenAI / DeepSeek / Azure.
        assert_eq!(
            context(
                400,
                r#"{"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}"#
            ),
            (Some(8192), Some(9000))
        );
        // vLLM.
        assert_eq!(
            context(
                400,
                r#"{"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "code": 400}"#
            ),
            (Some(4096), Some(5000))
        );
        assert_eq!(
            context(
                400,
                r#"{"detail": "The decoder prompt (length 5000) is longer than the maximum model length of 4096."}"#
            ),
            (Some(4096), Some(5000))
        );
        // llama.cpp server.
        assert_eq!(
            context(
                400,
                r#"{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}"#
            ),
            (Some(4096), Some(5000))
        );
        // Anthropic-style gateway.
        assert_eq!(
            context(
                400,
                r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}"#
            ),
            (Some(200000), Some(210000))
        );
        // Mistral.
        assert_eq!(
            context(
                400,
                r#"{"object": "error", "message": "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length", "type": "invalid_request_message_error"}"#
            ),
            (Some(32768), Some(40000))
        );
        // TGI.
        assert_eq!(
            context(
                422,
                r#"{"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`", "error_type": "validation"}"#
            ),
            (Some(4096), None)
        );
        // Plain text from a proxy.
        assert_eq!(context(413, "context length exceeded"), (None, None));
    }

    #[test]
    fn statuses_map_to_typed_errors() {
        let body = r#"{"error": {"message": "nope", "type": "x", "code": null}}"#;
        assert!(
            matches!(classify(400, body, None), LlmError::BadRequest { message } if message == "nope")
        );
        assert!(matches!(
            classify(401, body, None),
            LlmError::Authentication { .. }
        ));
        assert!(matches!(
            classify(403, body, None),
            LlmError::PermissionDenied { .. }
        ));
        assert!(matches!(
            classify(404, body, None),
            LlmError::NotFound { .. }
        ));
        assert!(matches!(
            classify(409, body, None),
            LlmError::Http { status: 409, .. }
        ));
        assert!(
            matches!(classify(503, "<html>busy</html>", None), LlmError::Server { status: 503, message } if message == "<html>busy</html>")
        );
        assert!(matches!(
            classify(429, body, Some(Duration::from_millis(1500))),
            LlmError::RateLimited {
                retry_after_ms: Some(1500),
                ..
            }
        ));
        let quota = r#"{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}"#;
        assert!(matches!(
            classify(429, quota, None),
            LlmError::QuotaExceeded { .. }
        ));
        assert!(!classify(429, quota, None).is_retryable());
    }

    #[test]
    fn messages_are_found_in_every_shape() {
        assert_eq!(
            error_body(r#"{"error": "model not loaded"}"#).message,
            "model not loaded"
        );
        assert_eq!(
            error_body(r#"{"detail": "Not Found"}"#).message,
            "Not Found"
        );
        assert_eq!(
            error_body(r#"{"message": "bad", "code": 400}"#).codes,
            ["400"]
        );
        assert_eq!(error_body("").message, "(no message)");
        assert!(error_body(&"x".repeat(10_000)).message.len() < 2100);
    }

    #[test]
    fn unrelated_400s_are_not_context_errors() {
        for body in [
            r#"{"error": {"message": "max_tokens is too large: 100000. This model supports at most 16384 completion tokens."}}"#,
            r#"{"error": {"message": "temperature must be <= 2"}}"#,
            r#"{"error": {"message": "Invalid schema for function 'f'"}}"#,
        ] {
            assert!(
                matches!(classify(400, body, None), LlmError::BadRequest { .. }),
                "{body}"
            );
        }
    }
}

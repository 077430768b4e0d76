//! Between this crate's types and async-openai's chat-completion types.

use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionTool, ChatCompletionTools,
    CreateChatCompletionRequest, CreateChatCompletionResponse, FunctionCall, FunctionObject,
    StopConfiguration,
};
use serde_json::{Map, Value, json};

use super::config::MaxTokensField;
use crate::error::shorten;
use crate::types::{ChatRequest, FinishReason, Message};
use crate::usage::TokenUsage;

/// How much of a body that is not a chat completion an error shows.
const MAX_PREVIEW: usize = 500;

/// The request body for `/chat/completions`.
// `max_tokens` is deprecated by OpenAI but it is what other servers understand.
#[allow(deprecated)]
pub(crate) fn to_wire(
    model: &str,
    request: &ChatRequest,
    max_tokens_field: MaxTokensField,
) -> CreateChatCompletionRequest {
    let messages = request.messages.iter().map(message_to_wire).collect();
    let tools = (!request.tools.is_empty()).then(|| {
        request
            .tools
            .iter()
            .map(|tool| {
                ChatCompletionTools::Function(ChatCompletionTool {
                    function: FunctionObject {
                        name: tool.name.clone(),
                        description: Some(tool.description.clone()),
                        parameters: Some(tool.parameters.clone()),
                        strict: None,
                    },
                })
            })
            .collect()
    });
    // Servers refuse the field in a request without tools.
    let parallel_tool_calls = tools.as_ref().and(request.parallel_tool_calls);
    let stop =
        (!request.stop.is_empty()).then(|| StopConfiguration::StringArray(request.stop.clone()));
    let (max_tokens, max_completion_tokens) = match max_tokens_field {
        MaxTokensField::MaxTokens => (request.max_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, request.max_tokens),
    };
    CreateChatCompletionRequest {
        model: model.to_owned(),
        messages,
        tools,
        temperature: request.temperature,
        parallel_tool_calls,
        stop,
        max_tokens,
        max_completion_tokens,
        stream: Some(false),
        ..CreateChatCompletionRequest::default()
    }
}

fn message_to_wire(message: &Message) -> ChatCompletionRequestMessage {
    match message {
        Message::System { content } => {
            ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
                content: ChatCompletionRequestSystemMessageContent::Text(content.clone()),
                name: None,
            })
        }
        Message::User { content } => {
            ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Text(content.clone()),
                name: None,
            })
        }
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let tool_calls = (!tool_calls.is_empty()).then(|| {
                tool_calls
                    .iter()
                    .map(|call| {
                        ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                            id: call.id.clone(),
                            function: FunctionCall {
                                name: call.name.clone(),
                                arguments: call.arguments.to_string(),
                            },
                        })
                    })
                    .collect()
            });
            ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                content: content
                    .clone()
                    .map(ChatCompletionRequestAssistantMessageContent::Text),
                tool_calls,
                ..ChatCompletionRequestAssistantMessage::default()
            })
        }
        Message::Tool {
            tool_call_id,
            content,
        } => ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
            content: ChatCompletionRequestToolMessageContent::Text(content.clone()),
            tool_call_id: tool_call_id.clone(),
        }),
    }
}

/// A tool call as the server sent it, arguments still text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireToolCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// The parts of a chat completion this crate uses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireAnswer {
    pub(crate) content: Option<String>,
    pub(crate) tool_calls: Vec<WireToolCall>,
    pub(crate) finish_reason: FinishReason,
    pub(crate) usage: Option<TokenUsage>,
    pub(crate) model: String,
}

/// Why a successful HTTP answer is not a completion.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NotACompletion {
    /// Some gateways report errors with status 200 and an `error` object.
    ErrorObject(Value),
    Invalid(String),
}

/// Parses a chat completion. Servers differ in small ways (missing `id`,
/// `created` or `object`, finish reasons OpenAI does not use, arguments as
/// objects, content as parts), so the body is normalised first and then
/// read with async-openai's response type.
pub(crate) fn from_wire(body: &str) -> Result<WireAnswer, NotACompletion> {
    let mut value: Value = serde_json::from_str(body).map_err(|e| {
        NotACompletion::Invalid(format!(
            "body is not JSON ({e}): {}",
            shorten(body, MAX_PREVIEW)
        ))
    })?;
    let Some(root) = value.as_object_mut() else {
        return Err(NotACompletion::Invalid(format!(
            "body is not a JSON object: {}",
            shorten(body, MAX_PREVIEW)
        )));
    };
    if !root.contains_key("choices")
        && let Some(error) = root.get("error")
    {
        let mut wrapped = Map::new();
        wrapped.insert("error".to_owned(), error.clone());
        return Err(NotACompletion::ErrorObject(Value::Object(wrapped)));
    }
    // DeepSeek reports cache hits beside the usage rather than in its details.
    let cache_hits = root
        .get("usage")
        .and_then(|usage| usage.get("prompt_cache_hit_tokens"))
        .and_then(Value::as_u64);
    let finish_reason = normalise(root)
        .map_err(|why| NotACompletion::Invalid(format!("{why}: {}", shorten(body, MAX_PREVIEW))))?;

    let response: CreateChatCompletionResponse = serde_json::from_value(value)
        .map_err(|e| NotACompletion::Invalid(format!("{e}: {}", shorten(body, MAX_PREVIEW))))?;
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(NotACompletion::Invalid(format!(
            "no choices: {}",
            shorten(body, MAX_PREVIEW)
        )));
    };
    let message = choice.message;
    let content = message
        .content
        .or(message.refusal)
        .filter(|text| !text.is_empty());
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .map(|call| match call {
            ChatCompletionMessageToolCalls::Function(call) => WireToolCall {
                id: call.id,
                name: call.function.name,
                arguments: call.function.arguments,
            },
            ChatCompletionMessageToolCalls::Custom(call) => WireToolCall {
                id: call.id,
                name: call.custom_tool.name,
                arguments: json!({ "input": call.custom_tool.input }).to_string(),
            },
        })
        .collect();
    let usage = response.usage.map(|usage| TokenUsage {
        prompt_tokens: u64::from(usage.prompt_tokens),
        completion_tokens: u64::from(usage.completion_tokens),
        cached_tokens: usage
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens)
            .map(u64::from)
            .or(cache_hits),
        estimated: false,
    });
    Ok(WireAnswer {
        content,
        tool_calls,
        finish_reason: finish_reason
            .as_deref()
            .map_or(FinishReason::Other(String::new()), FinishReason::from_wire),
        usage,
        model: response.model,
    })
}

/// Rewrites the server's quirks into the strict shape; returns the raw
/// finish reason of the first choice.
fn normalise(root: &mut Map<String, Value>) -> Result<Option<String>, String> {
    // Fields this crate does not use are dropped so their variations cannot fail the parse.
    root.retain(|key, _| matches!(key.as_str(), "id" | "model" | "choices" | "usage"));
    for (key, default) in [("id", ""), ("model", "")] {
        if !root.get(key).is_some_and(Value::is_string) {
            root.insert(key.to_owned(), Value::String(default.to_owned()));
        }
    }
    root.insert("object".to_owned(), json!("chat.completion"));
    root.insert("created".to_owned(), json!(0));

    let choices = match root.get_mut("choices") {
        Some(Value::Array(choices)) if !choices.is_empty() => choices,
        _ => return Err("no choices".to_owned()),
    };
    choices.truncate(1);
    let Some(Value::Object(choice)) = choices.first_mut() else {
        return Err("the choice is not an object".to_owned());
    };
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    choice.retain(|key, _| key == "message");
    choice.insert("index".to_owned(), json!(0));
    let Some(Value::Object(message)) = choice.get_mut("message") else {
        return Err("the choice has no message".to_owned());
    };
    normalise_message(message);

    let usage_ok = root.get("usage").is_some_and(|usage| {
        ["prompt_tokens", "completion_tokens"].iter().all(|key| {
            usage
                .get(*key)
                .and_then(Value::as_u64)
                .is_some_and(|n| n <= u64::from(u32::MAX))
        })
    });
    if usage_ok {
        if let Some(Value::Object(usage)) = root.get_mut("usage") {
            normalise_usage(usage);
        }
    } else {
        root.remove("usage");
    }
    Ok(finish_reason)
}

fn normalise_message(message: &mut Map<String, Value>) {
    message.retain(|key, _| matches!(key.as_str(), "content" | "refusal" | "tool_calls"));
    message.insert("role".to_owned(), json!("assistant"));
    for key in ["content", "refusal"] {
        let text = match message.get(key) {
            None | Some(Value::Null | Value::String(_)) => continue,
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            Some(other) => other.to_string(),
        };
        message.insert(key.to_owned(), Value::String(text));
    }
    let calls = match message.get_mut("tool_calls") {
        Some(Value::Array(calls)) => calls,
        _ => {
            message.remove("tool_calls");
            return;
        }
    };
    calls.retain(Value::is_object);
    for (index, call) in calls.iter_mut().enumerate() {
        let Value::Object(call) = call else { continue };
        if call
            .get("id")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            call.insert("id".to_owned(), json!(format!("call_{index}")));
        }
        if call.get("type").and_then(Value::as_str) == Some("custom") && call.contains_key("custom")
        {
            continue;
        }
        call.insert("type".to_owned(), json!("function"));
        let function = call
            .entry("function")
            .or_insert_with(|| Value::Object(Map::new()));
        if !function.is_object() {
            *function = Value::Object(Map::new());
        }
        if let Value::Object(function) = function {
            if !function.get("name").is_some_and(Value::is_string) {
                function.insert("name".to_owned(), json!(""));
            }
            let arguments = match function.get("arguments") {
                Some(Value::String(_)) => continue,
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            function.insert("arguments".to_owned(), Value::String(arguments));
        }
    }
}

fn normalise_usage(usage: &mut Map<String, Value>) {
    let prompt = usage
        .get("prompt_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let completion = usage
        .get("completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cached = usage
        .get("prompt_tokens_details")
        .and_then(|details| details.get("cached_tokens"))
        .and_then(Value::as_u64)
        .filter(|n| *n <= u64::from(u32::MAX));
    usage.clear();
    usage.insert("prompt_tokens".to_owned(), json!(prompt));
    usage.insert("completion_tokens".to_owned(), json!(completion));
    usage.insert(
        "total_tokens".to_owned(),
        json!((prompt + completion).min(u64::from(u32::MAX))),
    );
    if let Some(cached) = cached {
        usage.insert(
            "prompt_tokens_details".to_owned(),
            json!({ "cached_tokens": cached }),
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::{ToolCall, ToolDefinition};

    #[test]
    fn requests_serialise_like_the_openai_api() {
        let request = ChatRequest::new(vec![
            Message::system("sys"),
            Message::user("hi"),
            Message::assistant_tool_calls(
                None,
                vec![ToolCall::new("c1", "ls", json!({"dir": "."}))],
            ),
            Message::tool("c1", "a.py"),
        ])
        .with_tools(vec![ToolDefinition::new(
            "ls",
            "list",
            json!({"type": "object"}),
        )])
        .with_temperature(0.5)
        .with_max_tokens(100)
        .with_stop(vec!["END".into()])
        .with_parallel_tool_calls(false);
        let wire = serde_json::to_value(to_wire("m", &request, MaxTokensField::MaxTokens)).unwrap();
        assert_eq!(
            wire,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "tool_calls": [
                        {"type": "function", "id": "c1", "function": {"name": "ls", "arguments": "{\"dir\":\".\"}"}}
                    ]},
                    {"role": "tool", "content": "a.py", "tool_call_id": "c1"}
                ],
                "tools": [{"type": "function", "function": {"name": "ls", "description": "list", "parameters": {"type": "object"}}}],
                "temperature": 0.5,
                "parallel_tool_calls": false,
                "max_tokens": 100,
                "stop": ["END"],
                "stream": false
            })
        );
        let wire =
            serde_json::to_value(to_wire("m", &request, MaxTokensField::MaxCompletionTokens))
                .unwrap();
        assert_eq!(wire["max_completion_tokens"], 100);
        assert!(wire.get("max_tokens").is_none());
    }

    #[test]
    fn a_standard_completion_is_read() {
        let answer = from_wire(
            &json!({
                "id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024",
                "system_fingerprint": "fp", "service_tier": "some_new_tier",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
                    "role": "assistant", "content": null,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
                }}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                          "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0}}
            })
            .to_string(),
        )
        .unwrap();
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
        assert_eq!(answer.model, "gpt-4o-2024");
        assert_eq!(
            answer.tool_calls,
            vec![WireToolCall {
                id: "c1".into(),
                name: "ls".into(),
                arguments: "{}".into()
            }]
        );
        assert_eq!(
            answer.usage,
            Some(TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 5,
                cached_tokens: Some(4),
                estimated: false
            })
        );
    }

    #[test]
    fn quirky_servers_are_understood() {
        let answer = from_wire(
            &json!({
                "choices": [{"finish_reason": "eos", "message": {
                    "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}],
                    "tool_calls": [{"function": {"name": "ls", "arguments": {"dir": "."}}}]
                }}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 2, "prompt_cache_hit_tokens": 3}
            })
            .to_string(),
        )
        .unwrap();
        assert_eq!(answer.content.as_deref(), Some("Hello"));
        assert_eq!(answer.finish_reason, FinishReason::Stop);
        assert_eq!(answer.tool_calls[0].id, "call_0");
        assert_eq!(answer.tool_calls[0].arguments, r#"{"dir":"."}"#);
        assert_eq!(answer.usage.unwrap().cached_tokens, Some(3));

        let answer = from_wire(
            r#"{"choices": [{"message": {"content": "hi"}, "finish_reason": "abort"}], "usage": {"prompt_tokens": 1}}"#,
        )
        .unwrap();
        assert_eq!(answer.finish_reason, FinishReason::Other("abort".into()));
        assert_eq!(answer.usage, None, "partial usage is not trusted");
    }

    #[test]
    fn non_completions_are_reported() {
        assert!(
            matches!(from_wire("<html>"), Err(NotACompletion::Invalid(m)) if m.contains("not JSON"))
        );
        assert!(matches!(from_wire("[]"), Err(NotACompletion::Invalid(_))));
        assert!(
            matches!(from_wire(r#"{"choices": []}"#), Err(NotACompletion::Invalid(m)) if m.contains("no choices"))
        );
        assert!(matches!(
            from_wire(r#"{"error": {"message": "overloaded", "code": 502}}"#),
            Err(NotACompletion::ErrorObject(_))
        ));
    }
}

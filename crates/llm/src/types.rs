use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::usage::TokenUsage;

/// Who wrote a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions that frame the whole conversation.
    System,
    /// The user, or the agent speaking for the user.
    User,
    /// The model.
    Assistant,
    /// The result of a tool call the model asked for.
    Tool,
}

impl Role {
    /// The role's name on the wire (`"system"`, `"user"`, `"assistant"`, `"tool"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message of a conversation, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The instructions.
        content: String,
    },
    /// A user turn.
    User {
        /// The text.
        content: String,
    },
    /// A model turn: text, tool calls, or both.
    Assistant {
        /// The text, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// The tool calls the model made in this turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The [`ToolCall::id`] this answers.
        tool_call_id: String,
        /// The result, as text.
        content: String,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }

    /// An assistant message that calls tools (with optional text).
    pub fn assistant_tool_calls(content: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content,
            tool_calls,
        }
    }

    /// The result of the tool call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }

    /// Who wrote the message.
    pub fn role(&self) -> Role {
        match self {
            Message::System { .. } => Role::System,
            Message::User { .. } => Role::User,
            Message::Assistant { .. } => Role::Assistant,
            Message::Tool { .. } => Role::Tool,
        }
    }

    /// The message's text, if it has any.
    pub fn text(&self) -> Option<&str> {
        match self {
            Message::System { content }
            | Message::User { content }
            | Message::Tool { content, .. } => Some(content),
            Message::Assistant { content, .. } => content.as_deref(),
        }
    }
}

/// A tool the model may call, described by a JSON Schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model uses to call it (letters, digits, `_` and `-`).
    pub name: String,
    /// What the tool does and when to use it.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl ToolDefinition {
    /// A tool definition.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// A call of a tool by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Identifier that the [`Message::Tool`] answering this call repeats.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, always a JSON object.
    pub arguments: Value,
    /// Set when the model's arguments were not valid JSON and were repaired
    /// (for example a string and object closed after the output was cut off);
    /// says what was done, so the agent can tell the model its call may be
    /// incomplete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<String>,
}

impl ToolCall {
    /// A tool call with valid arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            repair: None,
        }
    }
}

/// What to send to a model.
///
/// Built with [`ChatRequest::new`] and the `with_*` methods. Defaults: no
/// tools, no stop sequences, and temperature and output limit left to the
/// server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Sampling temperature; `None` leaves the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Maximum number of output tokens; `None` leaves the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sequences at which the model stops generating.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Whether one reply may hold several tool calls; `Some(false)` asks
    /// for at most one (an in-process model stops decoding after it, so
    /// the time of the calls it would have guessed is not spent); `None`
    /// leaves the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
}

impl ChatRequest {
    /// A request with these messages and nothing else set.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            tools: Vec::new(),
            temperature: None,
            max_tokens: None,
            stop: Vec::new(),
            parallel_tool_calls: None,
        }
    }

    /// Offers these tools to the model.
    pub fn with_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Caps the number of output tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Allows or forbids several tool calls in one reply.
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Sets the stop sequences.
    pub fn with_stop(mut self, stop: Vec<String>) -> Self {
        self.stop = stop;
        self
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end or a stop sequence.
    Stop,
    /// The output token limit was reached: the answer is cut off.
    Length,
    /// The model called tools.
    ToolCalls,
    /// The provider's content filter removed output.
    ContentFilter,
    /// A reason this crate does not know, as the server said it (or empty
    /// when the server gave none).
    Other(String),
}

impl FinishReason {
    /// Maps the reasons servers use (OpenAI, vLLM, llama.cpp, Anthropic-style
    /// gateways) to the common ones.
    pub fn from_wire(reason: &str) -> Self {
        match reason {
            "stop" | "eos" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" | "model_length" => FinishReason::Length,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        }
    }
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The assistant's text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The tools the model called, arguments parsed (and repaired where that
    /// was unambiguous).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Tokens this call used.
    pub usage: TokenUsage,
    /// The model that answered, as the server named it.
    pub model: String,
    /// Wall-clock time of the whole call, retries and backoff included.
    pub latency: Duration,
    /// HTTP attempts made (1 when the first one succeeded).
    pub attempts: u32,
}

impl ChatResponse {
    /// A text answer with zero usage (for scripted models and tests).
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            tool_calls: Vec::new(),
            finish_reason: FinishReason::Stop,
            usage: TokenUsage::default(),
            model: String::new(),
            latency: Duration::ZERO,
            attempts: 1,
        }
    }

    /// An answer that calls tools, with zero usage (for scripted models and tests).
    pub fn with_tool_calls(tool_calls: Vec<ToolCall>) -> Self {
        Self {
            content: None,
            tool_calls,
            finish_reason: FinishReason::ToolCalls,
            usage: TokenUsage::default(),
            model: String::new(),
            latency: Duration::ZERO,
            attempts: 1,
        }
    }

    /// Replaces the usage.
    pub fn with_usage(mut self, usage: TokenUsage) -> Self {
        self.usage = usage;
        self
    }

    /// Replaces the model name.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The assistant message to append to the conversation.
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

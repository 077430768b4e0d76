use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

use crate::error::LlmError;
use crate::types::{ChatRequest, Message, ToolCall};

/// Counts tokens locally, for servers that report no usage and for context
/// budgeting.
///
/// Only [`count_text`](TokenCounter::count_text) is required; the chat
/// counts follow OpenAI's published accounting (3 tokens of framing per
/// message, 3 to prime the reply), which other chat templates approximate.
pub trait TokenCounter: Send + Sync + fmt::Debug {
    /// Tokens in a piece of text.
    fn count_text(&self, text: &str) -> u64;

    /// Tokens of a whole prompt: messages, tool calls in the history, and
    /// tool definitions.
    fn count_prompt(&self, request: &ChatRequest) -> u64 {
        const PER_MESSAGE: u64 = 3;
        const REPLY_PRIMING: u64 = 3;
        let mut total = REPLY_PRIMING;
        for message in &request.messages {
            total += PER_MESSAGE + self.count_text(message.role().as_str());
            total += message.text().map_or(0, |text| self.count_text(text));
            match message {
                Message::Assistant { tool_calls, .. } => {
                    total += self.count_tool_calls(tool_calls);
                }
                Message::Tool { tool_call_id, .. } => total += self.count_text(tool_call_id),
                Message::System { .. } | Message::User { .. } => {}
            }
        }
        for tool in &request.tools {
            total += self.count_text(&tool.name)
                + self.count_text(&tool.description)
                + self.count_text(&tool.parameters.to_string());
        }
        total
    }

    /// Tokens of a model's answer.
    fn count_completion(&self, content: Option<&str>, tool_calls: &[ToolCall]) -> u64 {
        content.map_or(0, |text| self.count_text(text)) + self.count_tool_calls(tool_calls)
    }

    /// Tokens of tool calls (name and JSON arguments).
    fn count_tool_calls(&self, tool_calls: &[ToolCall]) -> u64 {
        tool_calls
            .iter()
            .map(|call| self.count_text(&call.name) + self.count_text(&call.arguments.to_string()))
            .sum()
    }
}

/// A tiktoken byte-pair encoding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, o-series and later OpenAI models; the default, and a
    /// fair estimate for other modern models.
    #[default]
    O200kBase,
    /// GPT-4 and GPT-3.5.
    Cl100kBase,
}

impl Encoding {
    /// The encoding OpenAI uses for `model`; o200k_base for unknown models.
    pub fn for_model(model: &str) -> Self {
        let bare = model.rsplit('/').next().unwrap_or(model);
        let gpt4_family = bare.starts_with("gpt-4") && !bare.starts_with("gpt-4o");
        let legacy = (gpt4_family && !bare.starts_with("gpt-4.")) || bare.starts_with("gpt-3.5");
        if legacy {
            Encoding::Cl100kBase
        } else {
            Encoding::O200kBase
        }
    }
}

/// [`TokenCounter`] with OpenAI's tiktoken encodings (`tiktoken-rs`).
///
/// The encoding tables are built once per process and shared; building one
/// takes a fraction of a second.
#[derive(Clone, Copy)]
pub struct Tiktoken {
    encoding: Encoding,
    bpe: &'static CoreBPE,
}

impl fmt::Debug for Tiktoken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tiktoken")
            .field("encoding", &self.encoding)
            .finish()
    }
}

impl Tiktoken {
    /// A counter with `encoding`.
    pub fn new(encoding: Encoding) -> Result<Self, LlmError> {
        static O200K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
        static CL100K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
        let cell = match encoding {
            Encoding::O200kBase => O200K
                .get_or_init(|| tiktoken_rs::o200k_base().map_err(|e| format!("o200k_base: {e}"))),
            Encoding::Cl100kBase => CL100K.get_or_init(|| {
                tiktoken_rs::cl100k_base().map_err(|e| format!("cl100k_base: {e}"))
            }),
        };
        match cell {
            Ok(bpe) => Ok(Self { encoding, bpe }),
            Err(message) => Err(LlmError::config(format!(
                "cannot load the tiktoken encoding {message}"
            ))),
        }
    }

    /// The encoding in use.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

impl TokenCounter for Tiktoken {
    fn count_text(&self, text: &str) -> u64 {
        self.bpe.encode_ordinary(text).len() as u64
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::ToolDefinition;

    #[test]
    fn counts_match_tiktoken() {
        let o200k = Tiktoken::new(Encoding::O200kBase).unwrap();
        let cl100k = Tiktoken::new(Encoding::Cl100kBase).unwrap();
        assert_eq!(o200k.count_text("hello world"), 2);
        assert_eq!(cl100k.count_text("hello world"), 2);
        assert_eq!(o200k.count_text(""), 0);
        // Special-token text counts as plain text, never as a control token.
        assert!(o200k.count_text("<|endoftext|>") > 1);
    }

    #[test]
    fn prompt_count_follows_openai_framing() {
        let counter = Tiktoken::new(Encoding::O200kBase).unwrap();
        let request = ChatRequest::new(vec![Message::user("hello world")]);
        // 3 reply priming + 3 framing + 1 for "user" + 2 for the text.
        assert_eq!(counter.count_prompt(&request), 9);
        let with_tools = request.with_tools(vec![ToolDefinition::new(
            "ls",
            "list files",
            json!({"type": "object"}),
        )]);
        assert!(counter.count_prompt(&with_tools) > 9);
    }

    #[test]
    fn encoding_follows_the_model() {
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-4.1"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-4-turbo"), Encoding::Cl100kBase);
        assert_eq!(
            Encoding::for_model("openai/gpt-3.5-turbo"),
            Encoding::Cl100kBase
        );
        assert_eq!(Encoding::for_model("qwen2.5-coder"), Encoding::O200kBase);
    }
}

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

use crate::error::LlmError;
use crate::types::{ChatRequest, Message, ToolCall};

/// How a model's tokens are counted: for servers that report no usage, and
/// for fitting a conversation into a model's window. [`TokenCounter`]
/// (tiktoken) implements it, and so does an embedded model's own
/// tokenizer (`llm-local`).
///
/// Only [`count_text`](CountTokens::count_text) is required; the chat
/// counts follow OpenAI's published accounting (3 tokens of framing per
/// message, 3 to prime the reply), which other chat templates approximate.
pub trait CountTokens: Send + Sync + fmt::Debug {
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

fn bpe(encoding: Encoding) -> Result<&'static CoreBPE, LlmError> {
    static O200K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
    static CL100K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
    let cell = match encoding {
        Encoding::O200kBase => {
            O200K.get_or_init(|| tiktoken_rs::o200k_base().map_err(|e| format!("o200k_base: {e}")))
        }
        Encoding::Cl100kBase => CL100K
            .get_or_init(|| tiktoken_rs::cl100k_base().map_err(|e| format!("cl100k_base: {e}"))),
    };
    cell.as_ref()
        .map_err(|message| LlmError::config(format!("cannot load the tiktoken encoding {message}")))
}

/// Texts at most this long are counted without touching the cache.
const UNCACHED_LEN: usize = 256;

/// Counts tokens with OpenAI's tiktoken encodings (`tiktoken-rs`): the one
/// token-counting type of the workspace (context budgets in context-pack,
/// usage estimates here). Clones share one cache of counts keyed by a hash
/// of the text, so re-counting an unchanged observation is a hash lookup;
/// the encoding tables are built once per process.
///
/// ```
/// let counter = llm::TokenCounter::new(llm::Encoding::default()).unwrap();
/// assert_eq!(counter.count("hello world"), 2);
/// assert_eq!(counter.count(""), 0);
/// ```
#[derive(Clone)]
pub struct TokenCounter {
    bpe: &'static CoreBPE,
    encoding: Encoding,
    cache: Arc<Mutex<FxHashMap<u64, usize>>>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

impl TokenCounter {
    /// A counter for `encoding` (loading it the first time takes ~0.1 s).
    pub fn new(encoding: Encoding) -> Result<Self, LlmError> {
        Ok(TokenCounter {
            bpe: bpe(encoding)?,
            encoding,
            cache: Arc::new(Mutex::new(FxHashMap::default())),
        })
    }

    /// The encoding this counter measures in.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Number of tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        if text.len() <= UNCACHED_LEN {
            return self.bpe.encode_ordinary(text).len();
        }
        let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        if let Ok(cache) = self.cache.lock()
            && let Some(count) = cache.get(&key)
        {
            return *count;
        }
        let count = self.bpe.encode_ordinary(text).len();
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, count);
        }
        count
    }

    /// `Some(count)` when `text` holds at most `limit` tokens, else `None`,
    /// without tokenizing all of a text that is far over the limit: if a
    /// prefix already holds more than `limit` (plus a margin for merges at
    /// the cut), the whole does too.
    ///
    /// ```
    /// let counter = llm::TokenCounter::new(Default::default()).unwrap();
    /// assert_eq!(counter.count_within("hello world", 5), Some(2));
    /// assert_eq!(counter.count_within(&"word ".repeat(100_000), 50), None);
    /// ```
    pub fn count_within(&self, text: &str, limit: usize) -> Option<usize> {
        let probe = limit.saturating_add(16).saturating_mul(12);
        if text.len() > probe {
            let end = text.floor_char_boundary(probe);
            if self.count(&text[..end]) > limit.saturating_add(16) {
                return None;
            }
        }
        let count = self.count(text);
        (count <= limit).then_some(count)
    }

    /// The longest prefix of `text` that fits in `max_tokens`, cut at a
    /// line boundary when one exists in the last quarter of the prefix.
    pub fn truncate<'t>(&self, text: &'t str, max_tokens: usize) -> &'t str {
        if self.count(text) <= max_tokens {
            return text;
        }
        let tokens = self.bpe.encode_ordinary(text);
        let kept = tokens.get(..max_tokens).unwrap_or(&tokens);
        let prefix_len = self.bpe.decode(kept).map(|s| s.len()).unwrap_or(0);
        let mut end = text.floor_char_boundary(prefix_len);
        // Decoding may merge differently; shrink until it really fits.
        while end > 0 && self.count(&text[..end]) > max_tokens {
            end = text.floor_char_boundary(end - 1);
        }
        let prefix = &text[..end];
        match prefix.rfind('\n') {
            Some(nl) if nl >= prefix.len() * 3 / 4 => &prefix[..=nl],
            _ => prefix,
        }
    }
}

impl CountTokens for TokenCounter {
    fn count_text(&self, text: &str) -> u64 {
        self.count(text) as u64
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::ToolDefinition;

    #[test]
    fn counts_match_tiktoken() {
        let o200k = TokenCounter::new(Encoding::O200kBase).unwrap();
        let cl100k = TokenCounter::new(Encoding::Cl100kBase).unwrap();
        assert_eq!(o200k.count_text("hello world"), 2);
        assert_eq!(cl100k.count_text("hello world"), 2);
        assert_eq!(o200k.count_text(""), 0);
        // Special-token text counts as plain text, never as a control token.
        assert!(o200k.count_text("<|endoftext|>") > 1);
    }

    #[test]
    fn prompt_count_follows_openai_framing() {
        let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
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

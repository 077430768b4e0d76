//! Turning a [`ChatRequest`] into prompt tokens with the model's chat
//! template.
//!
//! SmolLM2 (like Qwen and many others) uses ChatML:
//! `<|im_start|>{role}\n{content}<|im_end|>\n` per message, then
//! `<|im_start|>assistant\n`. The GGUF's `tokenizer.chat_template` is a
//! Jinja program; rather than embed a Jinja engine, the template is
//! recognised as ChatML (and its default system prompt, if it has one, is
//! read from it). A template that is not ChatML is logged and ChatML is used.
//!
//! The control tokens are inserted by id and the message texts are
//! encoded as plain text, so text that spells `<|im_end|>` cannot end a
//! message early.
//!
//! Tools are described in the system prompt and the model is told to
//! answer with one JSON object `{"name": ..., "arguments": {...}}`; earlier
//! calls are shown in that form and tool results come back as user
//! messages (the model has no tool role).

use std::collections::HashMap;

use serde_json::Value;
use tracing::{debug, warn};

use super::LocalError;
use super::tokenizer::Tokenizer;
use llm::{ChatRequest, Message, ToolCall, ToolDefinition};

/// The chat template of a model.
#[derive(Debug, Clone)]
pub(crate) struct ChatTemplate {
    im_start: u32,
    im_end: u32,
    bos: Option<u32>,
    /// The system prompt the template adds when a conversation has none.
    default_system: Option<String>,
}

impl ChatTemplate {
    /// The template for a model, from its `tokenizer.chat_template`.
    pub(crate) fn new(
        tokenizer: &Tokenizer,
        template: Option<&str>,
        add_bos: bool,
    ) -> Result<Self, LocalError> {
        let (Some(im_start), Some(im_end)) = (
            tokenizer.token_id("<|im_start|>"),
            tokenizer.token_id("<|im_end|>"),
        ) else {
            return Err(LocalError::Unsupported(
                "a chat template other than ChatML: the vocabulary has no <|im_start|>/<|im_end|> tokens".into(),
            ));
        };
        let default_system = match template {
            Some(t) if t.contains("<|im_start|>") => default_system_prompt(t),
            Some(_) => {
                warn!("the model's chat template is not ChatML; using ChatML anyway");
                None
            }
            None => {
                debug!("the model has no chat template; using ChatML");
                None
            }
        };
        Ok(Self {
            im_start,
            im_end,
            bos: if add_bos { tokenizer.bos() } else { None },
            default_system,
        })
    }

    /// The end-of-turn token.
    pub(crate) fn im_end(&self) -> u32 {
        self.im_end
    }

    /// The prompt tokens for `request`, ending with the start of the
    /// assistant's turn.
    pub(crate) fn render(&self, tokenizer: &Tokenizer, request: &ChatRequest) -> Vec<u32> {
        let mut ids = Vec::new();
        ids.extend(self.bos);
        for (role, content) in self.turns(request) {
            ids.push(self.im_start);
            ids.extend(tokenizer.encode(&format!("{role}\n{content}")));
            ids.push(self.im_end);
            ids.extend(tokenizer.encode("\n"));
        }
        ids.push(self.im_start);
        ids.extend(tokenizer.encode("assistant\n"));
        ids
    }

    /// The conversation as ChatML turns.
    fn turns(&self, request: &ChatRequest) -> Vec<(&'static str, String)> {
        let tools = (!request.tools.is_empty()).then(|| describe_tools(&request.tools));
        let mut turns = Vec::with_capacity(request.messages.len() + 1);
        let mut system_seen = false;
        let mut call_names: HashMap<&str, &str> = HashMap::new();
        for message in &request.messages {
            match message {
                Message::System { content } => {
                    let content = match (&tools, system_seen) {
                        (Some(tools), false) => format!("{content}\n\n{tools}"),
                        _ => content.clone(),
                    };
                    system_seen = true;
                    turns.push(("system", content));
                }
                Message::User { content } => turns.push(("user", content.clone())),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    let mut text = content.clone().unwrap_or_default();
                    for call in tool_calls {
                        call_names.insert(&call.id, &call.name);
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&call_text(call));
                    }
                    turns.push(("assistant", text));
                }
                Message::Tool {
                    tool_call_id,
                    content,
                } => {
                    let name = call_names
                        .get(tool_call_id.as_str())
                        .copied()
                        .unwrap_or("?");
                    turns.push((
                        "user",
                        format!("Result of tool call `{name}` ({tool_call_id}):\n{content}"),
                    ));
                }
            }
        }
        if !system_seen {
            let base = self.default_system.clone();
            let content = match (base, tools) {
                (Some(base), Some(tools)) => Some(format!("{base}\n\n{tools}")),
                (None, Some(tools)) => Some(tools),
                (base, None) => base,
            };
            if let Some(content) = content {
                turns.insert(0, ("system", content));
            }
        }
        turns
    }
}

/// A call as the model is asked to write it.
pub(crate) fn call_text(call: &ToolCall) -> String {
    format!(
        "{{\"name\": {}, \"arguments\": {}}}",
        Value::String(call.name.clone()),
        call.arguments
    )
}

fn describe_tools(tools: &[ToolDefinition]) -> String {
    let mut prompt = String::from(
        "# Tools\nYou can call these tools. To call one, answer with only a JSON object \
         {\"name\": \"tool_name\", \"arguments\": {...}} whose arguments follow the tool's \
         schema; the result comes back in the next message. To answer without a tool, write \
         plain text.\n",
    );
    for tool in tools {
        prompt.push_str(&format!(
            "\n## {}\n{}\nArguments (JSON Schema): {}\n",
            tool.name, tool.description, tool.parameters
        ));
    }
    prompt
}

/// SmolLM2's template starts with
/// `{{ '<|im_start|>system\nYou are a helpful AI assistant ...<|im_end|>\n' }}`
/// inside a "no system message" branch.
fn default_system_prompt(template: &str) -> Option<String> {
    // The newline is a real one in SmolLM2's GGUF, an escape in some copies.
    let marker = "'<|im_start|>system";
    let rest = template.get(template.find(marker)? + marker.len()..)?;
    let rest = rest
        .strip_prefix("\\n")
        .or_else(|| rest.strip_prefix('\n'))?;
    let end = rest.find("<|im_end|>")?;
    let text = rest.get(..end)?;
    if text.contains('\'') || text.contains('{') {
        return None;
    }
    Some(text.replace("\\n", "\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_system_prompt_is_read_from_smollm2s_template() {
        assert_eq!(
            default_system_prompt("{{ '<|im_start|>system\nBe brief.<|im_end|>\n' }}").as_deref(),
            Some("Be brief.")
        );
        let template = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
        assert_eq!(
            default_system_prompt(template).as_deref(),
            Some("You are a helpful AI assistant named SmolLM, trained by Hugging Face")
        );
        assert_eq!(
            default_system_prompt("{{'<|im_start|>' + message['role'] + '\\n'}}"),
            None
        );
    }

    #[test]
    fn tool_traffic_becomes_text() {
        let call = ToolCall::new("c1", "read_file", serde_json::json!({"path": "a.py"}));
        assert_eq!(
            call_text(&call),
            r#"{"name": "read_file", "arguments": {"path":"a.py"}}"#
        );
        let text = describe_tools(&[ToolDefinition::new(
            "read_file",
            "Reads a file.",
            serde_json::json!({"type": "object"}),
        )]);
        assert!(text.contains("## read_file\nReads a file."));
    }
}

//! Turning a [`ChatRequest`] into prompt tokens with the model's chat
//! template.
//!
//! SmolLM2, Qwen and many others use ChatML:
//! `<|im_start|>{role}\n{content}<|im_end|>\n` per message, then
//! `<|im_start|>assistant\n`. The GGUF's `tokenizer.chat_template` is a
//! Jinja program; rather than embed a Jinja engine, the template is
//! recognised and reproduced here ([`Style`]):
//!
//! - **Qwen2.5** (the template mentions `<tools>` and `<tool_call>`): the
//!   prompt is exactly what the template renders (checked against jinja2 on
//!   Qwen2.5-Coder's GGUF, `tests/data/qwen2_chat_template.json`): the
//!   default system prompt ("You are Qwen, ..."), the tools as JSON lines
//!   inside `<tools></tools>` with Qwen's instructions, assistant calls as
//!   `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`, and tool
//!   results as a user turn of `<tool_response>` blocks. JSON is written as
//!   Python's `json.dumps` writes it (`", "`, `": "`); object keys come in
//!   `serde_json`'s order (sorted).
//! - **ChatML** otherwise (SmolLM2): its default system prompt, if the
//!   template has one, is read from it; tools are described in the system
//!   prompt and the model is told to answer with one bare JSON object
//!   `{"name": ..., "arguments": {...}}`; earlier calls are shown in that
//!   form and tool results come back as user messages. A template that is
//!   not ChatML is logged and ChatML is used.
//!
//! The control tokens are inserted by id and the texts between them are
//! encoded as plain text, so text that spells `<|im_end|>` cannot end a
//! message early. (Qwen's `<tool_call>` is a user-defined token, which text
//! is encoded to, as in the model's own tokenizer.)

use std::collections::HashMap;

use serde_json::Value;
use tracing::{debug, warn};

use super::LocalError;
use super::tokenizer::Tokenizer;
use llm::{ChatRequest, Message, ToolCall, ToolDefinition};

/// How a model writes its tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolFormat {
    /// A bare JSON object `{"name": ..., "arguments": {...}}` (SmolLM2).
    Json,
    /// `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, one
    /// block per call (Qwen2.5, Hermes).
    Tagged,
}

/// The chat template families reproduced here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Plain ChatML with this crate's own tool prompt.
    ChatMl,
    /// Qwen2.5's template.
    Qwen,
}

/// Qwen2.5's text between the system prompt and the tool list.
const QWEN_TOOLS_HEAD: &str = "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
/// Qwen2.5's text after the tool list (its template writes the braces
/// doubled, inside a string literal, so they come out doubled).
const QWEN_TOOLS_TAIL: &str = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>";

/// A piece of a rendered prompt.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Bos,
    ImStart,
    ImEnd,
    Text(String),
}

/// Collects a prompt's parts, merging adjacent texts (so that text is
/// split into tokens as the model's tokenizer splits the rendered
/// template).
#[derive(Debug, Default)]
struct Parts(Vec<Part>);

impl Parts {
    fn push(&mut self, part: Part) {
        self.0.push(part);
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(Part::Text(last)) = self.0.last_mut() {
            last.push_str(text);
        } else {
            self.0.push(Part::Text(text.to_owned()));
        }
    }

    /// `<|im_start|>{role}\n{content}<|im_end|>\n`.
    fn turn(&mut self, role: &str, content: &str) {
        self.push(Part::ImStart);
        self.text(role);
        self.text("\n");
        self.text(content);
        self.push(Part::ImEnd);
        self.text("\n");
    }
}

/// The chat template of a model.
#[derive(Debug, Clone)]
pub(crate) struct ChatTemplate {
    im_start: u32,
    im_end: u32,
    bos: Option<u32>,
    /// The system prompt the template adds when a conversation has none.
    default_system: Option<String>,
    style: Style,
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
        let (style, default_system) = match template {
            Some(t) if t.contains("<|im_start|>") => {
                let style = if t.contains("<tools>") && t.contains("<tool_call>") {
                    Style::Qwen
                } else {
                    Style::ChatMl
                };
                (style, default_system_prompt(t))
            }
            Some(_) => {
                warn!("the model's chat template is not ChatML; using ChatML anyway");
                (Style::ChatMl, None)
            }
            None => {
                debug!("the model has no chat template; using ChatML");
                (Style::ChatMl, None)
            }
        };
        debug!(?style, "chat template");
        Ok(Self {
            im_start,
            im_end,
            bos: if add_bos { tokenizer.bos() } else { None },
            default_system,
            style,
        })
    }

    /// The end-of-turn token.
    pub(crate) fn im_end(&self) -> u32 {
        self.im_end
    }

    /// How the model writes tool calls.
    pub(crate) fn tool_format(&self) -> ToolFormat {
        match self.style {
            Style::ChatMl => ToolFormat::Json,
            Style::Qwen => ToolFormat::Tagged,
        }
    }

    /// The prompt tokens for `request`, ending with the start of the
    /// assistant's turn.
    pub(crate) fn render(&self, tokenizer: &Tokenizer, request: &ChatRequest) -> Vec<u32> {
        let mut ids = Vec::new();
        for part in self.parts(request).0 {
            match part {
                Part::Bos => ids.extend(self.bos),
                Part::ImStart => ids.push(self.im_start),
                Part::ImEnd => ids.push(self.im_end),
                Part::Text(text) => ids.extend(tokenizer.encode(&text)),
            }
        }
        ids
    }

    /// The prompt as text, control tokens spelled out.
    #[cfg(test)]
    fn render_text(&self, request: &ChatRequest) -> String {
        self.parts(request)
            .0
            .into_iter()
            .map(|part| match part {
                Part::Bos => String::from(if self.bos.is_some() { "<bos>" } else { "" }),
                Part::ImStart => "<|im_start|>".into(),
                Part::ImEnd => "<|im_end|>".into(),
                Part::Text(text) => text,
            })
            .collect()
    }

    fn parts(&self, request: &ChatRequest) -> Parts {
        let mut parts = Parts::default();
        parts.push(Part::Bos);
        match self.style {
            Style::ChatMl => {
                for (role, content) in self.turns(request) {
                    parts.turn(role, &content);
                }
            }
            Style::Qwen => self.qwen_parts(request, &mut parts),
        }
        parts.push(Part::ImStart);
        parts.text("assistant\n");
        parts
    }

    /// Qwen2.5's template, statement by statement.
    fn qwen_parts(&self, request: &ChatRequest, parts: &mut Parts) {
        let messages = &request.messages;
        let first_system = match messages.first() {
            Some(Message::System { content }) => Some(content.as_str()),
            _ => None,
        };
        let system = first_system.or(self.default_system.as_deref());
        if request.tools.is_empty() {
            if let Some(system) = system {
                parts.turn("system", system);
            }
        } else {
            parts.push(Part::ImStart);
            parts.text("system\n");
            parts.text(system.unwrap_or_default());
            parts.text(QWEN_TOOLS_HEAD);
            for tool in &request.tools {
                parts.text("\n");
                parts.text(&qwen_tool_json(tool));
            }
            parts.text(QWEN_TOOLS_TAIL);
            parts.push(Part::ImEnd);
            parts.text("\n");
        }
        for (i, message) in messages.iter().enumerate() {
            match message {
                Message::System { .. } if i == 0 => {}
                Message::System { content } => parts.turn("system", content),
                Message::User { content } => parts.turn("user", content),
                Message::Assistant {
                    content,
                    tool_calls,
                } if tool_calls.is_empty() => {
                    parts.turn("assistant", content.as_deref().unwrap_or_default());
                }
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    parts.push(Part::ImStart);
                    parts.text("assistant");
                    if let Some(content) = content.as_deref().filter(|c| !c.is_empty()) {
                        parts.text("\n");
                        parts.text(content);
                    }
                    for call in tool_calls {
                        parts.text("\n<tool_call>\n");
                        parts.text(&call_text(call, ToolFormat::Tagged));
                        parts.text("\n</tool_call>");
                    }
                    parts.push(Part::ImEnd);
                    parts.text("\n");
                }
                Message::Tool { content, .. } => {
                    let is_tool = |m: Option<&Message>| matches!(m, Some(Message::Tool { .. }));
                    if i == 0 || !is_tool(messages.get(i - 1)) {
                        parts.push(Part::ImStart);
                        parts.text("user");
                    }
                    parts.text("\n<tool_response>\n");
                    parts.text(content);
                    parts.text("\n</tool_response>");
                    if !is_tool(messages.get(i + 1)) {
                        parts.push(Part::ImEnd);
                        parts.text("\n");
                    }
                }
            }
        }
    }

    /// The conversation as ChatML turns, with this crate's tool prompt.
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
                        text.push_str(&call_text(call, ToolFormat::Json));
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

/// A call as the model is asked to write it (without Qwen's tags).
pub(crate) fn call_text(call: &ToolCall, format: ToolFormat) -> String {
    match format {
        ToolFormat::Json => format!(
            "{{\"name\": {}, \"arguments\": {}}}",
            Value::String(call.name.clone()),
            call.arguments
        ),
        ToolFormat::Tagged => format!(
            "{{\"name\": {}, \"arguments\": {}}}",
            py_json(&Value::String(call.name.clone())),
            py_json(&call.arguments)
        ),
    }
}

/// A tool as Qwen's template lists it (`tool | tojson` of the OpenAI form).
fn qwen_tool_json(tool: &ToolDefinition) -> String {
    format!(
        "{{\"type\": \"function\", \"function\": {{\"name\": {}, \"description\": {}, \"parameters\": {}}}}}",
        py_json(&Value::String(tool.name.clone())),
        py_json(&Value::String(tool.description.clone())),
        py_json(&tool.parameters)
    )
}

/// JSON as Python's `json.dumps(value, ensure_ascii=False)` writes it:
/// `", "` between items, `": "` after keys (Jinja's `tojson` in
/// transformers). Floats are written as `serde_json` writes them.
fn py_json(value: &Value) -> String {
    let mut out = String::new();
    write_py_json(value, &mut out);
    out
}

fn write_py_json(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push_str(": ");
                write_py_json(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
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

/// The system prompt a template adds when the conversation has none: the
/// first `'<|im_start|>system\n...<|im_end|>` string literal without
/// expressions (SmolLM2: `{{ '<|im_start|>system\nYou are a helpful AI
/// assistant ...<|im_end|>\n' }}`; Qwen2.5: `'<|im_start|>system\nYou are
/// Qwen, ...<|im_end|>\n'` after two literals that concatenate the
/// conversation's own).
fn default_system_prompt(template: &str) -> Option<String> {
    // The newline is a real one in SmolLM2's GGUF, an escape in some copies.
    let marker = "'<|im_start|>system";
    template.match_indices(marker).find_map(|(at, _)| {
        let rest = template.get(at + marker.len()..)?;
        let rest = rest
            .strip_prefix("\\n")
            .or_else(|| rest.strip_prefix('\n'))?;
        let end = rest.find("<|im_end|>")?;
        let text = rest.get(..end)?;
        if text.contains('\'') || text.contains('{') {
            return None;
        }
        Some(text.replace("\\n", "\n"))
    })
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
        let call = ToolCall::new(
            "c1",
            "read_file",
            serde_json::json!({"path": "a.py", "n": [1, 2]}),
        );
        assert_eq!(
            call_text(&call, ToolFormat::Json),
            r#"{"name": "read_file", "arguments": {"n":[1,2],"path":"a.py"}}"#
        );
        assert_eq!(
            call_text(&call, ToolFormat::Tagged),
            r#"{"name": "read_file", "arguments": {"n": [1, 2], "path": "a.py"}}"#
        );
        let text = describe_tools(&[ToolDefinition::new(
            "read_file",
            "Reads a file.",
            serde_json::json!({"type": "object"}),
        )]);
        assert!(text.contains("## read_file\nReads a file."));
        assert_eq!(
            py_json(&serde_json::json!({"a": "é\n\"", "b": [true, null, 1.5, {}], "c": []})),
            r#"{"a": "é\n\"", "b": [true, null, 1.5, {}], "c": []}"#
        );
    }

    fn tokenizer() -> Tokenizer {
        Tokenizer::for_tests(&[
            ("<|im_start|>", crate::tokenizer::TOKEN_TYPE_CONTROL),
            ("<|im_end|>", crate::tokenizer::TOKEN_TYPE_CONTROL),
            ("<tool_call>", crate::tokenizer::TOKEN_TYPE_USER_DEFINED),
            ("</tool_call>", crate::tokenizer::TOKEN_TYPE_USER_DEFINED),
        ])
    }

    fn qwen() -> ChatTemplate {
        let template = include_str!("../tests/data/qwen2.5_chat_template.jinja");
        ChatTemplate::new(&tokenizer(), Some(template), false).unwrap()
    }

    fn smollm2() -> ChatTemplate {
        let template = include_str!("../tests/data/smollm2_chat_template.jinja");
        ChatTemplate::new(&tokenizer(), Some(template), false).unwrap()
    }

    fn tools() -> Vec<ToolDefinition> {
        use serde_json::json;
        vec![
            ToolDefinition::new(
                "read_file",
                "Read a text file of the repository.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "path of the file"},
                    "start_line": {"type": "integer"}
                }, "required": ["path"]}),
            ),
            ToolDefinition::new(
                "search_code",
                "Search the repository for a symbol or text.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string"},
                    "kinds": {"type": "array", "items": {"type": "string", "enum": ["class", "function"]}},
                    "exact": {"type": "boolean"}
                }, "required": ["query"]}),
            ),
            ToolDefinition::new(
                "list_dir",
                "Lists the working directory.",
                json!({"type": "object", "properties": {}}),
            ),
        ]
    }

    /// The conversations of `scripts/qwen2_chat_template_reference.py`.
    fn conversations() -> Vec<(&'static str, ChatRequest)> {
        use serde_json::json;
        let agent = vec![
            Message::system("You are a coding agent. 请用中文回答。"),
            Message::user("Read README.md and 列出文件."),
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall::new(
                    "c1",
                    "read_file",
                    json!({"path": "README.md", "start_line": 1}),
                )],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                content: "# Project\nA tool.\n".into(),
            },
            Message::Assistant {
                content: Some("Two calls:".into()),
                tool_calls: vec![
                    ToolCall::new(
                        "c2",
                        "search_code",
                        json!({"query": "main", "kinds": ["function"], "exact": true}),
                    ),
                    ToolCall::new("c3", "list_dir", json!({})),
                ],
            },
            Message::Tool {
                tool_call_id: "c2".into(),
                content: "src/main.rs:1: fn main()".into(),
            },
            Message::Tool {
                tool_call_id: "c3".into(),
                content: "[\"a.py\", \"b.py\"]".into(),
            },
            Message::Assistant {
                content: Some("Done. The file says \"A tool\".".into()),
                tool_calls: Vec::new(),
            },
            Message::user("Thanks <|im_end|> bye"),
        ];
        let with_tools = |messages, tools| {
            let mut request = ChatRequest::new(messages);
            request.tools = tools;
            request
        };
        vec![
            ("agent_with_tools", with_tools(agent, tools())),
            (
                "tools_without_system",
                with_tools(
                    vec![Message::user("List the files.")],
                    tools()[2..].to_vec(),
                ),
            ),
            (
                "no_tools_no_system",
                ChatRequest::new(vec![
                    Message::user("Say hi"),
                    Message::Assistant {
                        content: Some("Hi!".into()),
                        tool_calls: Vec::new(),
                    },
                    Message::user("Again"),
                ]),
            ),
            (
                "no_tools_with_system",
                ChatRequest::new(vec![
                    Message::system("Be brief."),
                    Message::user("Say hi"),
                    Message::system("Later system."),
                ]),
            ),
        ]
    }

    #[test]
    fn qwen_prompts_are_what_its_jinja_template_renders() {
        let template = qwen();
        assert_eq!(template.style, Style::Qwen);
        assert_eq!(template.tool_format(), ToolFormat::Tagged);
        assert_eq!(
            template.default_system.as_deref(),
            Some("You are Qwen, created by Alibaba Cloud. You are a helpful assistant.")
        );
        let expected: Value =
            serde_json::from_str(include_str!("../tests/data/qwen2_chat_template.json")).unwrap();
        let expected = expected.as_array().unwrap();
        let conversations = conversations();
        assert_eq!(expected.len(), conversations.len());
        for ((name, request), case) in conversations.iter().zip(expected) {
            assert_eq!(case["name"], *name);
            assert_eq!(
                template.render_text(request),
                case["text"].as_str().unwrap(),
                "{name}"
            );
        }
        insta::assert_snapshot!(
            "qwen_agent_with_tools",
            template.render_text(&conversations[0].1)
        );
    }

    #[test]
    fn qwen_prompts_insert_control_tokens_by_id() {
        let tok = tokenizer();
        let template = qwen();
        let request = &conversations()[0].1;
        let ids = template.render(&tok, request);
        let im_start = tok.token_id("<|im_start|>").unwrap();
        let im_end = tok.token_id("<|im_end|>").unwrap();
        let tool_call = tok.token_id("<tool_call>").unwrap();
        // system, user, assistant, tool results, assistant, tool results,
        // assistant, user, then the open assistant turn.
        assert_eq!(ids.iter().filter(|&&id| id == im_start).count(), 9);
        // The user's "<|im_end|>" is text.
        assert_eq!(ids.iter().filter(|&&id| id == im_end).count(), 8);
        // Two in the instructions, three calls.
        assert_eq!(ids.iter().filter(|&&id| id == tool_call).count(), 5);
        assert_eq!(
            tok.decode(&ids),
            template
                .render_text(request)
                .replace("<|im_start|>", "")
                .replace("<|im_end|>", "")
                .replace("Thanks  bye", "Thanks <|im_end|> bye")
        );
    }

    #[test]
    fn smollm2_keeps_its_chatml_prompt() {
        let template = smollm2();
        assert_eq!(template.style, Style::ChatMl);
        assert_eq!(template.tool_format(), ToolFormat::Json);
        insta::assert_snapshot!(
            "smollm2_agent_with_tools",
            template.render_text(&conversations()[0].1)
        );
        insta::assert_snapshot!(
            "smollm2_no_system",
            template.render_text(&conversations()[2].1)
        );
    }
}

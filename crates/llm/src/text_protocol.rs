//! Tool calling for servers without native tool support.
//!
//! The tools are described in the system prompt and the model answers with
//! one fenced JSON block per call:
//!
//! ````text
//! ```json
//! {"name": "read_file", "arguments": {"path": "setup.py"}}
//! ```
//! ````
//!
//! History is rewritten the same way: earlier calls become such blocks in
//! the assistant's text and tool results become user messages, so any
//! chat server can hold the conversation.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::json_repair::{parse_lenient, parse_tool_arguments};
use crate::types::{ChatRequest, Message, ToolCall, ToolDefinition};

/// A block that is meant as a tool call but cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BadCall {
    pub(crate) name: String,
    pub(crate) raw: String,
    pub(crate) reason: String,
}

/// The text left once tool-call blocks are taken out, and the calls.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decoded {
    pub(crate) content: Option<String>,
    pub(crate) tool_calls: Vec<ToolCall>,
}

/// The same request with tools moved into the system prompt and tool traffic
/// rewritten as text.
pub(crate) fn encode_request(request: &ChatRequest) -> ChatRequest {
    let tools_prompt = (!request.tools.is_empty()).then(|| describe_tools(&request.tools));
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let mut tools_placed = tools_prompt.is_none();
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    for message in &request.messages {
        match message {
            Message::System { content } if !tools_placed => {
                let prompt = tools_prompt.as_deref().unwrap_or_default();
                messages.push(Message::system(format!("{content}\n\n{prompt}")));
                tools_placed = true;
            }
            Message::System { .. } | Message::User { .. } => messages.push(message.clone()),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut text = content.clone().unwrap_or_default();
                for call in tool_calls {
                    call_names.insert(&call.id, &call.name);
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(&call_block(call));
                }
                messages.push(Message::assistant(text));
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let name = call_names
                    .get(tool_call_id.as_str())
                    .copied()
                    .unwrap_or("?");
                messages.push(Message::user(format!(
                    "Result of tool call `{name}` ({tool_call_id}):\n{content}"
                )));
            }
        }
    }
    if let (false, Some(prompt)) = (tools_placed, tools_prompt) {
        messages.insert(0, Message::system(prompt));
    }
    ChatRequest {
        messages,
        tools: Vec::new(),
        temperature: request.temperature,
        max_tokens: request.max_tokens,
        stop: request.stop.clone(),
        // The server sees no tools now, and would refuse the field.
        parallel_tool_calls: None,
    }
}

fn describe_tools(tools: &[ToolDefinition]) -> String {
    let mut prompt = String::from(
        "# Tools\n\
         You can call the tools below. To call one, write a fenced JSON block like this, then stop \
         and wait: the result comes back in the next message.\n\
         ```json\n\
         {\"name\": \"tool_name\", \"arguments\": {\"parameter\": \"value\"}}\n\
         ```\n\
         Put one call in each block and make `arguments` a JSON object that follows the tool's \
         schema. When you do not need a tool, answer without a JSON block.\n",
    );
    for tool in tools {
        prompt.push_str(&format!(
            "\n## {}\n{}\nArguments (JSON Schema): {}\n",
            tool.name, tool.description, tool.parameters
        ));
    }
    prompt
}

fn call_block(call: &ToolCall) -> String {
    // Written by hand so that `name` comes first whatever map order serde_json uses.
    format!(
        "```json\n{{\"name\": {}, \"arguments\": {}}}\n```",
        Value::String(call.name.clone()),
        call.arguments
    )
}

/// Finds the tool calls in a model's text answer.
pub(crate) fn decode_response(text: &str) -> Result<Decoded, BadCall> {
    let mut kept: Vec<&str> = Vec::new();
    let mut tool_calls = Vec::new();
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let Some(tag) = line.trim_start().strip_prefix("```") else {
            kept.push(line);
            continue;
        };
        let mut block: Vec<&str> = Vec::new();
        let mut closing = None;
        for inner in lines.by_ref() {
            if inner.trim_start().starts_with("```") {
                closing = Some(inner);
                break;
            }
            block.push(inner);
        }
        let body: String = block.concat();
        match read_call(tag.trim(), &body, tool_calls.len())? {
            Some(call) => tool_calls.push(call),
            None => {
                kept.push(line);
                kept.extend(block);
                kept.extend(closing);
            }
        }
    }
    let content = kept.concat().trim().to_owned();
    Ok(Decoded {
        content: (!content.is_empty()).then_some(content),
        tool_calls,
    })
}

/// `Ok(None)` for a block that is not a tool call (say, JSON the model shows
/// as part of an answer).
fn read_call(tag: &str, body: &str, index: usize) -> Result<Option<ToolCall>, BadCall> {
    let tag = tag.to_ascii_lowercase();
    let body = body.trim();
    if !matches!(tag.as_str(), "" | "json" | "tool" | "tool_call") || !body.starts_with('{') {
        return Ok(None);
    }
    let looks_like_call = body.contains("\"name\"") || body.contains("'name'");
    let object = match parse_lenient(body) {
        Ok(repaired) => match repaired.value {
            Value::Object(object) => (object, repaired.note),
            _ => return Ok(None),
        },
        Err(reason) if looks_like_call => {
            return Err(BadCall {
                name: guess_name(body),
                raw: body.to_owned(),
                reason,
            });
        }
        Err(_) => return Ok(None),
    };
    let (mut object, outer_note) = object;
    let Some(Value::String(name)) = object.remove("name") else {
        return Ok(None);
    };
    let arguments = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|key| object.remove(*key))
        .unwrap_or(Value::Null);
    let parsed = match arguments {
        Value::String(raw) => parse_tool_arguments(&raw).map_err(|reason| BadCall {
            name: name.clone(),
            raw: raw.clone(),
            reason,
        })?,
        Value::Object(map) => crate::json_repair::Repaired {
            value: Value::Object(map),
            note: None,
        },
        Value::Null => crate::json_repair::Repaired {
            value: Value::Object(Map::new()),
            note: None,
        },
        other => {
            return Err(BadCall {
                name,
                raw: body.to_owned(),
                reason: format!("`arguments` must be a JSON object, got {other}"),
            });
        }
    };
    let repair = match (outer_note, parsed.note) {
        (None, None) => None,
        (a, b) => Some(a.into_iter().chain(b).collect::<Vec<_>>().join("; ")),
    };
    Ok(Some(ToolCall {
        id: format!("call_{index}"),
        name,
        arguments: parsed.value,
        repair,
    }))
}

/// Best effort, for the error message only.
fn guess_name(body: &str) -> String {
    let Some(start) = body.find("\"name\"") else {
        return String::new();
    };
    let rest = &body[start + "\"name\"".len()..];
    let rest = rest.trim_start().trim_start_matches(':').trim_start();
    let Some(rest) = rest.strip_prefix('"') else {
        return String::new();
    };
    rest.split('"').next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition::new(
            "read_file",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )]
    }

    #[test]
    fn tools_go_into_the_existing_system_prompt() {
        let request = ChatRequest::new(vec![Message::system("Be brief."), Message::user("hi")])
            .with_tools(tools());
        let encoded = encode_request(&request);
        assert!(encoded.tools.is_empty());
        assert_eq!(encoded.messages.len(), 2);
        let system = encoded.messages[0].text().unwrap();
        assert!(system.starts_with("Be brief.\n\n# Tools"), "{system}");
        assert!(system.contains("## read_file\nRead a file"), "{system}");
    }

    #[test]
    fn a_system_prompt_is_added_when_missing() {
        let encoded =
            encode_request(&ChatRequest::new(vec![Message::user("hi")]).with_tools(tools()));
        assert_eq!(encoded.messages.len(), 2);
        assert!(encoded.messages[0].text().unwrap().starts_with("# Tools"));
    }

    #[test]
    fn history_is_rewritten_as_text() {
        let call = ToolCall::new("c1", "read_file", json!({"path": "a.py"}));
        let request = ChatRequest::new(vec![
            Message::user("read a.py"),
            Message::assistant_tool_calls(Some("Reading.".into()), vec![call]),
            Message::tool("c1", "print(1)"),
        ]);
        let encoded = encode_request(&request);
        assert_eq!(
            encoded.messages[1],
            Message::assistant(
                "Reading.\n\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\":\"a.py\"}}\n```"
            )
        );
        assert_eq!(
            encoded.messages[2],
            Message::user("Result of tool call `read_file` (c1):\nprint(1)")
        );
    }

    #[test]
    fn a_fenced_block_becomes_a_tool_call() {
        let decoded = decode_response(
            "I will read it.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\"}}\n```\n",
        )
        .unwrap();
        assert_eq!(decoded.content.as_deref(), Some("I will read it."));
        assert_eq!(
            decoded.tool_calls,
            vec![ToolCall::new(
                "call_0",
                "read_file",
                json!({"path": "a.py"})
            )]
        );
    }

    #[test]
    fn encoded_calls_decode_back() {
        let call = ToolCall::new("call_0", "read_file", json!({"path": "a.py"}));
        let decoded = decode_response(&call_block(&call)).unwrap();
        assert_eq!(decoded.tool_calls, vec![call]);
        assert_eq!(decoded.content, None);
    }

    #[test]
    fn other_blocks_stay_in_the_text() {
        let text = "Use this config:\n```json\n{\"debug\": true}\n```\nand run:\n```sh\nmake\n```";
        let decoded = decode_response(text).unwrap();
        assert!(decoded.tool_calls.is_empty());
        assert_eq!(decoded.content.as_deref(), Some(text));
    }

    #[test]
    fn string_arguments_and_cut_off_blocks_are_repaired() {
        let decoded = decode_response(
            "```json\n{\"name\": \"write\", \"arguments\": \"{\\\"path\\\": \\\"a.py\\\"}\"}\n```",
        )
        .unwrap();
        assert_eq!(decoded.tool_calls[0].arguments, json!({"path": "a.py"}));

        let decoded =
            decode_response("```json\n{\"name\": \"write\", \"arguments\": {\"text\": \"abc")
                .unwrap();
        let call = &decoded.tool_calls[0];
        assert_eq!(call.arguments, json!({"text": "abc"}));
        assert!(call.repair.as_deref().unwrap().contains("cut-off string"));
    }

    #[test]
    fn unreadable_calls_are_errors_with_the_raw_text() {
        let err = decode_response("```json\n{\"name\": \"write\", \"arguments\": {\"text\": \n```")
            .unwrap_err();
        assert_eq!(err.name, "write");
        assert!(err.raw.contains("\"text\""));
        assert!(!err.reason.is_empty());
    }
}

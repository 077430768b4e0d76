//! The conversation of an episode, kept within the model's context window.
//!
//! When the conversation nears the window, older tool observations are
//! replaced by short digests: the tool call stays in the assistant message,
//! only its bulky output goes. When the model still reports that the
//! prompt is too long, [`History::shrink`] digests more aggressively and, as a
//! last resort, drops the oldest exchanges.
//!
//! Every message passes the run's [`Redactor`] on the way in: the history
//! is what the requests are built from and what the trajectory records,
//! so no text reaches either without it.

use context_pack::TokenCounter;
use llm::Message;

use crate::redact::Redactor;

/// Observations at most this many tokens are never digested.
const SMALL_OBSERVATION: usize = 200;

/// Observations at most this many tokens are not worth digesting even when
/// the model says the prompt is too long.
const TINY_OBSERVATION: usize = 60;

/// The conversation, with a token count per message.
#[derive(Debug, Clone)]
pub struct History {
    messages: Vec<Message>,
    tokens: Vec<usize>,
    digested: Vec<bool>,
    counter: TokenCounter,
    redactor: Redactor,
}

fn message_tokens(counter: &TokenCounter, message: &Message) -> usize {
    let mut n = 4 + message.text().map_or(0, |t| counter.count(t));
    if let Message::Assistant { tool_calls, .. } = message {
        for call in tool_calls {
            n += 4 + counter.count(&call.name) + counter.count(&call.arguments.to_string());
        }
    }
    n
}

impl History {
    /// A conversation that starts with these messages (system and task),
    /// every message redacted by `redactor`.
    pub fn new(counter: TokenCounter, redactor: Redactor, start: Vec<Message>) -> Self {
        let mut history = History {
            messages: Vec::new(),
            tokens: Vec::new(),
            digested: Vec::new(),
            counter,
            redactor,
        };
        for m in start {
            history.push(m);
        }
        history
    }

    /// Appends a message, redacted.
    pub fn push(&mut self, message: Message) {
        let message = self.redactor.redact_message(message);
        self.tokens.push(message_tokens(&self.counter, &message));
        self.digested.push(false);
        self.messages.push(message);
    }

    /// The messages to send.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Estimated prompt tokens of the whole conversation.
    pub fn tokens(&self) -> usize {
        self.tokens.iter().sum()
    }

    /// Digests old observations, oldest first, keeping the newest
    /// `keep_recent` tool messages whole, until the conversation is at most
    /// `budget` tokens. Returns how many were digested.
    pub fn compact(&mut self, budget: usize, keep_recent: usize) -> usize {
        if self.tokens() <= budget {
            return 0;
        }
        let tool_indices: Vec<usize> = self
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, Message::Tool { .. }))
            .map(|(i, _)| i)
            .collect();
        let candidates = tool_indices.len().saturating_sub(keep_recent);
        let mut done = 0;
        for &i in tool_indices.iter().take(candidates) {
            if self.tokens() <= budget {
                break;
            }
            if self.digest(i, SMALL_OBSERVATION) {
                done += 1;
            }
        }
        done
    }

    fn digest(&mut self, i: usize, min_tokens: usize) -> bool {
        if self.digested.get(i).copied().unwrap_or(true)
            || self.tokens.get(i).copied().unwrap_or(0) <= min_tokens
        {
            return false;
        }
        let Some(Message::Tool {
            tool_call_id,
            content,
        }) = self.messages.get(i)
        else {
            return false;
        };
        let first = content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let first: String = first.chars().take(160).collect();
        let digest = format!(
            "[digest] {first}\n[... {} tokens of this older observation removed to save context; call the tool again if you need it ...]",
            self.tokens[i]
        );
        let message = Message::tool(tool_call_id.clone(), digest);
        self.tokens[i] = message_tokens(&self.counter, &message);
        self.messages[i] = message;
        self.digested[i] = true;
        true
    }

    /// Shrinks after the model said the prompt is too long: digests every
    /// observation but the last, else drops the oldest exchange (an
    /// assistant turn and its tool results) after the first two messages,
    /// else digests the last observation.
    /// Returns false when nothing could be removed.
    pub fn shrink(&mut self) -> bool {
        let last_tool = self
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Tool { .. }));
        let mut any = false;
        for i in 0..self.messages.len() {
            if Some(i) != last_tool && matches!(self.messages[i], Message::Tool { .. }) {
                any |= self.digest(i, TINY_OBSERVATION);
            }
        }
        if any {
            return true;
        }
        // Drop the oldest exchange, keeping system and task and the last turn.
        let start = 2.min(self.messages.len());
        let Some(first_assistant) = self.messages[start..]
            .iter()
            .position(|m| matches!(m, Message::Assistant { .. }))
            .map(|p| p + start)
        else {
            return false;
        };
        let mut end = first_assistant + 1;
        while end < self.messages.len() && matches!(self.messages[end], Message::Tool { .. }) {
            end += 1;
        }
        if end >= self.messages.len() {
            // Only the last exchange is left: digest its observations too.
            return last_tool.is_some_and(|i| self.digest(i, TINY_OBSERVATION));
        }
        self.messages.drain(start..end);
        self.tokens.drain(start..end);
        self.digested.drain(start..end);
        true
    }
}

#[cfg(test)]
mod tests {
    use llm::ToolCall;
    use serde_json::json;

    use super::*;

    fn history() -> Result<History, llm::LlmError> {
        let counter = TokenCounter::new(context_pack::Encoding::default())?;
        let mut h = History::new(
            counter,
            Redactor::default(),
            vec![Message::system("system"), Message::user("task")],
        );
        for i in 0..4 {
            let call = ToolCall::new(format!("c{i}"), "view_file", json!({"path": "a.py"}));
            h.push(Message::assistant_tool_calls(None, vec![call]));
            h.push(Message::tool(
                format!("c{i}"),
                "line of output\n".repeat(300),
            ));
        }
        Ok(h)
    }

    #[test]
    fn compact_digests_oldest_and_keeps_calls() -> Result<(), llm::LlmError> {
        let mut h = history()?;
        let before = h.tokens();
        let n = h.compact(before / 2, 1);
        assert!(n >= 2 && h.tokens() <= before / 2, "{n} {}", h.tokens());
        assert_eq!(h.messages().len(), 10);
        assert!(
            h.messages()[3]
                .text()
                .is_some_and(|t| t.starts_with("[digest]"))
        );
        assert!(
            !h.messages()[9]
                .text()
                .is_some_and(|t| t.starts_with("[digest]"))
        );
        Ok(())
    }

    #[test]
    fn every_message_is_redacted_on_the_way_in() -> Result<(), llm::LlmError> {
        let counter = TokenCounter::new(context_pack::Encoding::default())?;
        let key = "sk-history-0123456789";
        let redactor = Redactor::new([key.to_string()]);
        let call = ToolCall::new("c", "write_file", json!({"content": key}));
        let h = History::new(
            counter,
            redactor,
            vec![
                Message::system(format!("s {key}")),
                Message::user(format!("README: {key}")),
                Message::assistant_tool_calls(Some(key.into()), vec![call]),
                Message::tool("c", format!("out {key}")),
            ],
        );
        let sent = serde_json::to_string(h.messages()).unwrap_or_default();
        assert!(!sent.contains(key), "{sent}");
        assert_eq!(sent.matches("[redacted]").count(), 5, "{sent}");
        Ok(())
    }

    #[test]
    fn shrink_digests_then_drops() -> Result<(), llm::LlmError> {
        let mut h = history()?;
        assert!(h.shrink());
        assert_eq!(h.messages().len(), 10);
        assert!(h.shrink());
        assert_eq!(h.messages().len(), 8);
        while h.shrink() {}
        assert!(h.messages().len() >= 4);
        assert!(matches!(h.messages()[2], Message::Assistant { .. }));
        Ok(())
    }
}

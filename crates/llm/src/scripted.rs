use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use serde_json::Value;

use crate::error::LlmError;
use crate::model::ChatModel;
use crate::types::{ChatRequest, ChatResponse, ToolCall};

/// A [`ChatModel`] that answers from a queue, for unit tests of code that
/// uses a model.
///
/// Answers are served in order; when the queue is empty the call fails with
/// [`LlmError::ScriptExhausted`]. Every request is kept for assertions.
/// Responses without a model name get the script's name (`"scripted"` by
/// default).
#[derive(Debug)]
pub struct Scripted {
    name: String,
    state: Mutex<ScriptState>,
}

#[derive(Debug, Default)]
struct ScriptState {
    queue: VecDeque<Result<ChatResponse, LlmError>>,
    requests: Vec<ChatRequest>,
    calls: usize,
}

impl Default for Scripted {
    fn default() -> Self {
        Self::new()
    }
}

impl Scripted {
    /// An empty script.
    pub fn new() -> Self {
        Self {
            name: "scripted".to_owned(),
            state: Mutex::new(ScriptState::default()),
        }
    }

    /// Sets the model name the script reports.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Queues a response.
    pub fn then(self, response: ChatResponse) -> Self {
        self.push(Ok(response));
        self
    }

    /// Queues a text answer.
    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.then(ChatResponse::text(text))
    }

    /// Queues an answer that calls one tool (id `call_N`, N counting queued
    /// answers from 0).
    pub fn then_tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        let id = format!("call_{}", self.lock().queue.len());
        self.then(ChatResponse::with_tool_calls(vec![ToolCall::new(
            id, name, arguments,
        )]))
    }

    /// Queues an error.
    pub fn then_error(self, error: LlmError) -> Self {
        self.push(Err(error));
        self
    }

    /// Queues an answer while the script is in use (it may be shared).
    pub fn push(&self, answer: Result<ChatResponse, LlmError>) {
        self.lock().queue.push_back(answer);
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    /// Answers not served yet.
    pub fn remaining(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> MutexGuard<'_, ScriptState> {
        // A panicking test thread must not hide the script from the others.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl ChatModel for Scripted {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut state = self.lock();
        state.requests.push(request.clone());
        let served = state.calls;
        state.calls += 1;
        match state.queue.pop_front() {
            Some(Ok(mut response)) => {
                if response.model.is_empty() {
                    response.model.clone_from(&self.name);
                }
                Ok(response)
            }
            Some(Err(error)) => Err(error),
            None => Err(LlmError::ScriptExhausted { served }),
        }
    }

    fn model_name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::Message;

    #[tokio::test]
    async fn answers_in_order_then_reports_exhaustion() {
        let script = Scripted::new()
            .then_tool_call("ls", json!({"dir": "."}))
            .then_error(LlmError::Timeout { timeout_ms: 5 })
            .then_text("done");
        let request = ChatRequest::new(vec![Message::user("go")]);
        let first = script.complete(&request).await.unwrap();
        assert_eq!(first.tool_calls[0].id, "call_0");
        assert_eq!(first.model, "scripted");
        assert_eq!(
            script.complete(&request).await,
            Err(LlmError::Timeout { timeout_ms: 5 })
        );
        assert_eq!(
            script.complete(&request).await.unwrap().content.as_deref(),
            Some("done")
        );
        let err = script.complete(&request).await.unwrap_err();
        assert_eq!(err, LlmError::ScriptExhausted { served: 3 });
        assert!(err.to_string().contains("add responses"));
        assert_eq!(script.requests().len(), 4);
        assert_eq!(script.remaining(), 0);
    }
}

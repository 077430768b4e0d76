use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::error;

use crate::error::LlmError;
use crate::model::ChatModel;
use crate::types::{ChatRequest, ChatResponse};
use crate::usage::TokenUsage;

/// One recorded call: a line of a session file.
///
/// On disk: `{"model": ..., "request": {...}, "response": {...}, "usage": {...}}`
/// or `{"model": ..., "request": {...}, "error": {"kind": ..., ...}}`, one JSON
/// object per line. Requests and responses are this crate's provider-neutral
/// types, which hold no credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The model that was asked.
    pub model: String,
    /// What was asked.
    pub request: ChatRequest,
    /// What came back.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Tokens the call used (also inside the response; repeated here so
    /// tools can sum a session without knowing the response shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}

/// The result of a recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model answered.
    Response(ChatResponse),
    /// The call failed.
    Error(LlmError),
}

impl Exchange {
    fn new(model: &str, request: &ChatRequest, result: &Result<ChatResponse, LlmError>) -> Self {
        let (outcome, usage) = match result {
            Ok(response) => (Outcome::Response(response.clone()), Some(response.usage)),
            Err(error) => (Outcome::Error(error.clone()), error.usage().copied()),
        };
        Self {
            model: model.to_owned(),
            request: request.clone(),
            outcome,
            usage,
        }
    }
}

/// A [`ChatModel`] wrapper that appends every exchange (request and response
/// or error) to a JSONL session file, for [`Replay`] and for inspecting runs.
///
/// Each line is written and flushed before the call returns, so a crash
/// loses nothing already answered. A failed write fails the call with
/// [`LlmError::Session`]: a recording with holes would not replay.
#[derive(Debug)]
pub struct Recorder<M> {
    inner: M,
    path: PathBuf,
    file: Mutex<File>,
}

impl<M: ChatModel> Recorder<M> {
    /// Records into a new file at `path`, replacing any existing one.
    pub fn create(inner: M, path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|e| session_error(&path, e))?;
        Ok(Self::with_file(inner, path, file))
    }

    /// Records at the end of the file at `path`, creating it if needed.
    pub fn append(inner: M, path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| session_error(&path, e))?;
        Ok(Self::with_file(inner, path, file))
    }

    fn with_file(inner: M, path: PathBuf, file: File) -> Self {
        Self {
            inner,
            path,
            file: Mutex::new(file),
        }
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    fn write(&self, exchange: &Exchange) -> Result<(), LlmError> {
        let mut line = serde_json::to_string(exchange).map_err(|e| LlmError::Session {
            path: self.path.display().to_string(),
            message: format!("cannot encode the exchange: {e}"),
        })?;
        line.push('\n');
        let mut file = lock(&self.file);
        // One write per line keeps lines whole when several tasks share the file.
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| session_error(&self.path, e))
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for Recorder<M> {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let result = self.inner.complete(request).await;
        self.write(&Exchange::new(self.inner.model_name(), request, &result))?;
        result
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
}

/// A [`ChatModel`] that serves a recorded session back, with no server.
///
/// Each request is matched by content (messages, tools and parameters)
/// against the exchanges not yet served, in recorded order, and gets the
/// recorded response or error, byte for byte. A request that matches none
/// fails with [`LlmError::ReplayMismatch`], whose message shows a line diff
/// against the next unserved recorded request; one past the end fails with
/// [`LlmError::ReplayExhausted`].
#[derive(Debug)]
pub struct Replay {
    model: String,
    exchanges: Vec<Exchange>,
    keys: Vec<Value>,
    state: Mutex<ReplayState>,
}

#[derive(Debug)]
struct ReplayState {
    unserved: VecDeque<usize>,
    served: usize,
}

impl Replay {
    /// Replays `exchanges`.
    pub fn new(exchanges: Vec<Exchange>) -> Self {
        let keys = exchanges.iter().map(|e| request_key(&e.request)).collect();
        let model = exchanges
            .first()
            .map_or_else(|| "replay".to_owned(), |e| e.model.clone());
        let unserved = (0..exchanges.len()).collect();
        Self {
            model,
            exchanges,
            keys,
            state: Mutex::new(ReplayState {
                unserved,
                served: 0,
            }),
        }
    }

    /// Loads a session file written by [`Recorder`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| session_error(path, e))?;
        let mut exchanges = Vec::new();
        for (number, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| session_error(path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            let exchange = serde_json::from_str(&line).map_err(|e| LlmError::Session {
                path: path.display().to_string(),
                message: format!("line {} is not a recorded exchange: {e}", number + 1),
            })?;
            exchanges.push(exchange);
        }
        Ok(Self::new(exchanges))
    }

    /// The recorded exchanges.
    pub fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }

    /// Exchanges not served yet.
    pub fn remaining(&self) -> usize {
        lock(&self.state).unserved.len()
    }
}

#[async_trait]
impl ChatModel for Replay {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let key = request_key(request);
        let mut state = lock(&self.state);
        let found = state
            .unserved
            .iter()
            .position(|&index| self.keys[index] == key);
        let Some(position) = found else {
            let error = match state.unserved.front() {
                None => LlmError::ReplayExhausted {
                    recorded: self.exchanges.len(),
                },
                Some(&next) => LlmError::ReplayMismatch {
                    index: state.served,
                    diff: line_diff(&self.keys[next], &key),
                },
            };
            error!(%error, "replay failed");
            return Err(error);
        };
        let index = state.unserved.remove(position).unwrap_or_default();
        state.served += 1;
        match &self.exchanges[index].outcome {
            Outcome::Response(response) => Ok(response.clone()),
            Outcome::Error(error) => Err(error.clone()),
        }
    }

    fn model_name(&self) -> &str {
        &self.model
    }
}

fn request_key(request: &ChatRequest) -> Value {
    // Requests hold only strings, numbers and JSON values, which always serialise.
    serde_json::to_value(request).unwrap_or(Value::Null)
}

/// The differing middle of two pretty-printed JSON values, with a little
/// context: enough to see what changed without printing whole prompts.
fn line_diff(recorded: &Value, actual: &Value) -> String {
    const CONTEXT: usize = 2;
    const MAX_LINES: usize = 40;
    let recorded = serde_json::to_string_pretty(recorded).unwrap_or_default();
    let actual = serde_json::to_string_pretty(actual).unwrap_or_default();
    let old: Vec<&str> = recorded.lines().collect();
    let new: Vec<&str> = actual.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = Vec::new();
    for line in &old[prefix.saturating_sub(CONTEXT)..prefix] {
        out.push(format!("  {line}"));
    }
    let removed = &old[prefix..old.len() - suffix];
    let added = &new[prefix..new.len() - suffix];
    for line in removed.iter().take(MAX_LINES) {
        out.push(format!("- {line}"));
    }
    if removed.len() > MAX_LINES {
        out.push(format!("- ... {} more lines", removed.len() - MAX_LINES));
    }
    for line in added.iter().take(MAX_LINES) {
        out.push(format!("+ {line}"));
    }
    if added.len() > MAX_LINES {
        out.push(format!("+ ... {} more lines", added.len() - MAX_LINES));
    }
    let after = old.len() - suffix;
    for line in &old[after..(after + CONTEXT).min(old.len())] {
        out.push(format!("  {line}"));
    }
    out.join("\n")
}

fn session_error(path: &Path, error: std::io::Error) -> LlmError {
    LlmError::Session {
        path: path.display().to_string(),
        message: error.to_string(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded data stays consistent across a panicking holder (each update is one step).
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::Message;

    #[test]
    fn diff_shows_the_changed_lines_with_context() {
        let recorded = json!({"messages": [{"role": "user", "content": "a"}], "temperature": 0.0});
        let actual = json!({"messages": [{"role": "user", "content": "b"}], "temperature": 0.0});
        let diff = line_diff(&recorded, &actual);
        assert!(diff.contains("-       \"content\": \"a\""), "{diff}");
        assert!(diff.contains("+       \"content\": \"b\""), "{diff}");
        let changed = |l: &&str| l.starts_with(['-', '+']);
        assert_eq!(diff.lines().filter(changed).count(), 2, "{diff}");
    }

    #[test]
    fn exchanges_round_trip_through_json() {
        let request = ChatRequest::new(vec![Message::user("hi")]).with_temperature(0.2);
        let ok = Exchange::new(
            "m",
            &request,
            &Ok(ChatResponse::text("hello").with_usage(TokenUsage::new(3, 1))),
        );
        let failed = Exchange::new(
            "m",
            &request,
            &Err(LlmError::RetriesExhausted {
                attempts: 3,
                last: Box::new(LlmError::Server {
                    status: 503,
                    message: "busy".into(),
                }),
            }),
        );
        for exchange in [ok, failed] {
            let line = serde_json::to_string(&exchange).unwrap();
            assert!(!line.contains('\n'));
            let back: Exchange = serde_json::from_str(&line).unwrap();
            assert_eq!(back, exchange);
            assert_eq!(request_key(&back.request), request_key(&request));
        }
    }
}

//! An OpenAI-compatible test server on 127.0.0.1 that plays a fixed list of
//! replies, one per request, and records what it received. It serves at
//! most as many requests as it has replies (later ones get a 500 saying so)
//! and stops when dropped.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use llm::{OpenAiConfig, OpenAiConfigBuilder, RetryPolicy};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

pub const API_KEY: &str = "sk-test-4f1c9a7e2b8d6053";

/// What the server answers to one request. `{AUTH}` in the body is replaced
/// by the request's `Authorization` header, to test that echoed keys are
/// redacted.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Self::raw(status, body.to_string())
    }

    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    pub fn ok(body: Value) -> Self {
        Self::json(200, body)
    }

    pub fn error(status: u16, message: &str) -> Self {
        Self::json(
            status,
            json!({"error": {"message": message, "type": "test_error", "param": null, "code": null}}),
        )
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A chat completion body.
pub fn completion(
    content: Option<&str>,
    tool_calls: Value,
    finish: &str,
    usage: Option<Value>,
) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if tool_calls.as_array().is_some_and(|calls| !calls.is_empty()) {
        message["tool_calls"] = tool_calls;
    }
    let mut body = json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model-2025",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
    });
    if let Some(usage) = usage {
        body["usage"] = usage;
    }
    body
}

pub fn usage(prompt: u64, completion: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

pub fn text_answer(text: &str, prompt: u64, completion_tokens: u64) -> Reply {
    Reply::ok(completion(
        Some(text),
        json!([]),
        "stop",
        Some(usage(prompt, completion_tokens)),
    ))
}

pub fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

pub struct TestServer {
    pub base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: JoinHandle<()>,
}

impl TestServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(
            replies
                .into_iter()
                .collect::<std::collections::VecDeque<_>>(),
        ));
        let max_connections = replies.lock().unwrap().len() + 1;
        let task = tokio::spawn({
            let seen = Arc::clone(&seen);
            async move {
                // Dropping the set (when this task is aborted) aborts the connections.
                let mut connections = JoinSet::new();
                for _ in 0..max_connections {
                    let Ok((stream, _)) = listener.accept().await else {
                        break;
                    };
                    let seen = Arc::clone(&seen);
                    let replies = Arc::clone(&replies);
                    connections.spawn(async move {
                        let service = service_fn(move |request| {
                            handle(request, Arc::clone(&seen), Arc::clone(&replies))
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                while connections.join_next().await.is_some() {}
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            seen,
            task,
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// A config for this server with fast retries, so tests stay short.
    pub fn config(&self) -> OpenAiConfigBuilder {
        OpenAiConfig::builder()
            .base_url(&self.base_url)
            .api_key(API_KEY)
            .model("test-model")
            .timeout(Duration::from_secs(5))
            .retry(fast_retries(3))
            .no_proxy()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy::new()
        .with_max_retries(max_retries)
        .with_base_delay(Duration::from_millis(10))
        .with_max_delay(Duration::from_millis(40))
        .with_jitter(0.0)
        .with_max_retry_after(Duration::from_secs(2))
}

async fn handle(
    request: Request<Incoming>,
    seen: Arc<Mutex<Vec<Seen>>>,
    replies: Arc<Mutex<std::collections::VecDeque<Reply>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path().to_owned();
    let headers: HashMap<String, String> = request
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let bytes = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let auth = headers.get("authorization").cloned().unwrap_or_default();
    seen.lock().unwrap().push(Seen {
        path,
        headers,
        body,
    });

    let reply = replies.lock().unwrap().pop_front();
    let Some(reply) = reply else {
        return Ok(Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Full::new(Bytes::from(
                "test server: no reply left for this request",
            )))
            .unwrap());
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut response = Response::builder()
        .status(reply.status)
        .header("content-type", "application/json");
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    let body = reply.body.replace("{AUTH}", &auth);
    Ok(response.body(Full::new(Bytes::from(body))).unwrap())
}

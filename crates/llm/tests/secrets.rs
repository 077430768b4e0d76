//! The API key and secret headers never show in responses, errors, logs or
//! recorded sessions, even when a server echoes them back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::{API_KEY, Reply, TestServer, completion, tool_call, usage};
use llm::{ChatModel, ChatRequest, LlmError, Message, OpenAiModel, Recorder};
use serde_json::json;

const GATEWAY_SECRET: &str = "gw-secret-77e0d1c2aa";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn secrets_never_leave_the_client() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    // The test runs on one thread, so a thread-local subscriber sees every event.
    let _guard = tracing::subscriber::set_default(subscriber);

    let echo = "The header was {AUTH}";
    let server = TestServer::start(vec![
        Reply::ok(completion(
            Some(echo),
            json!([tool_call("c1", "note", r#"{"text": "{AUTH}"}"#)]),
            "tool_calls",
            Some(usage(10, 5)),
        )),
        Reply::error(401, "Incorrect API key provided: {AUTH}"),
        Reply::error(500, "upstream rejected {AUTH}"),
    ])
    .await;
    let config = server
        .config()
        .secret_header("x-gateway-key", GATEWAY_SECRET)
        .header("x-trace", "visible")
        .retry(common::fast_retries(0))
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session.jsonl");
    let model = Recorder::create(OpenAiModel::new(config).unwrap(), &session).unwrap();
    let request = ChatRequest::new(vec![Message::user("hi")]);

    let answer = model.complete(&request).await.unwrap();
    let unauthorized = model.complete(&request).await.unwrap_err();
    let server_error = model.complete(&request).await.unwrap_err();

    // The server did get the credentials, so a leak would be visible below.
    let seen = server.requests();
    assert_eq!(
        seen[0].headers["authorization"],
        format!("Bearer {API_KEY}")
    );
    assert_eq!(seen[0].headers["x-gateway-key"], GATEWAY_SECRET);
    assert_eq!(seen[0].headers["x-trace"], "visible");

    assert_eq!(
        answer.content.as_deref(),
        Some("The header was Bearer [REDACTED]")
    );
    assert_eq!(
        answer.tool_calls[0].arguments,
        json!({"text": "Bearer [REDACTED]"})
    );
    assert!(matches!(unauthorized, LlmError::Authentication { .. }));
    assert!(matches!(server_error, LlmError::Server { status: 500, .. }));

    let texts = [
        format!("{answer:?}"),
        unauthorized.to_string(),
        format!("{unauthorized:?}"),
        server_error.to_string(),
        format!("{model:?}"),
        std::fs::read_to_string(&session).unwrap(),
        logs.text(),
    ];
    for text in &texts {
        assert!(!text.contains(API_KEY), "API key leaked in: {text}");
        assert!(
            !text.contains(GATEWAY_SECRET),
            "gateway secret leaked in: {text}"
        );
    }
    let logs = logs.text();
    assert!(
        logs.contains("chat completion"),
        "logging is not captured: {logs}"
    );
    assert!(
        logs.contains("[REDACTED]"),
        "response bodies are traced redacted: {logs}"
    );
}

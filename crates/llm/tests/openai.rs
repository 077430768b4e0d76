//! The OpenAI-compatible client against a real HTTP server on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{API_KEY, Reply, TestServer, completion, fast_retries, text_answer, tool_call, usage};
use llm::{
    ChatModel, ChatRequest, CountTokens, Encoding, FinishReason, LlmError, Message, Metered,
    ModelPrice, OpenAiModel, PriceTable, TokenCounter, TokenUsage, ToolCall, ToolDefinition,
    ToolMode, UsageMeter,
};
use serde_json::json;

fn question() -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("You are terse."),
        Message::user("Say hello."),
    ])
}

fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "read_file",
            "Read a file of the repository",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        ToolDefinition::new(
            "write_file",
            "Write a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}),
        ),
    ]
}

/// The model wrapped in a meter that prices `test-model-2025` at $1/$2 per
/// million tokens.
fn metered(config: llm::OpenAiConfigBuilder) -> Metered<OpenAiModel> {
    let model = OpenAiModel::new(config.build().unwrap()).unwrap();
    let prices = PriceTable::empty().with("test-model", ModelPrice::new(1.0, 2.0));
    Metered::new(model, UsageMeter::new(prices))
}

#[tokio::test]
async fn plain_answer_with_server_usage() {
    let mut body = completion(Some("Hello!"), json!([]), "stop", Some(usage(21, 3)));
    body["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 16});
    let server = TestServer::start(vec![Reply::ok(body)]).await;
    let model = metered(server.config());

    let request = question()
        .with_temperature(0.2)
        .with_max_tokens(64)
        .with_stop(vec!["END".into()]);
    let answer = model.complete(&request).await.unwrap();

    assert_eq!(answer.content.as_deref(), Some("Hello!"));
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.model, "test-model-2025");
    assert_eq!(answer.attempts, 1);
    assert_eq!(
        answer.usage,
        TokenUsage {
            prompt_tokens: 21,
            completion_tokens: 3,
            cached_tokens: Some(16),
            estimated: false
        }
    );

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(
        seen[0].headers["authorization"],
        format!("Bearer {API_KEY}")
    );
    let body = &seen[0].body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Say hello."})
    );
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["stop"], json!(["END"]));
    assert!((body["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
    assert!(body.get("tools").is_none());

    let totals = model.meter().summary();
    assert_eq!(
        (totals.calls, totals.failed_calls, totals.retries),
        (1, 0, 0)
    );
    assert_eq!(
        (
            totals.prompt_tokens,
            totals.completion_tokens,
            totals.cached_tokens
        ),
        (21, 3, 16)
    );
    assert_eq!(totals.estimated_calls, 0);
    assert!(
        (totals.cost_usd - (21.0 + 6.0) / 1e6).abs() < 1e-12,
        "{}",
        totals.cost_usd
    );
}

#[tokio::test]
async fn missing_usage_is_counted_with_tiktoken() {
    let server = TestServer::start(vec![Reply::ok(completion(
        Some("Hello there, friend."),
        json!([]),
        "stop",
        None,
    ))])
    .await;
    let model = metered(server.config().encoding(Encoding::Cl100kBase));
    let request = question();
    let answer = model.complete(&request).await.unwrap();

    let counter = TokenCounter::new(Encoding::Cl100kBase).unwrap();
    assert!(answer.usage.estimated);
    assert_eq!(
        answer.usage.completion_tokens,
        counter.count_text("Hello there, friend.")
    );
    assert_eq!(answer.usage.prompt_tokens, counter.count_prompt(&request));
    assert_eq!(answer.usage.cached_tokens, None);

    let totals = model.meter().summary();
    assert_eq!(totals.estimated_calls, 1);
    assert_eq!(totals.total_tokens(), answer.usage.total());
}

#[tokio::test]
async fn native_tool_calls_round_trip() {
    let calls = json!([
        tool_call("call_a", "read_file", r#"{"path": "setup.py"}"#),
        tool_call("call_b", "read_file", r#"{"path": "README.md"}"#),
    ]);
    let server = TestServer::start(vec![
        Reply::ok(completion(None, calls, "tool_calls", Some(usage(120, 40)))),
        text_answer("Both files read.", 200, 5),
    ])
    .await;
    let model = metered(server.config());

    let mut request = question().with_tools(tools());
    let answer = model.complete(&request).await.unwrap();
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.content, None);
    assert_eq!(
        answer.tool_calls,
        vec![
            ToolCall::new("call_a", "read_file", json!({"path": "setup.py"})),
            ToolCall::new("call_b", "read_file", json!({"path": "README.md"})),
        ]
    );
    let wire_tools = &server.requests()[0].body["tools"];
    assert_eq!(wire_tools[0]["type"], "function");
    assert_eq!(wire_tools[0]["function"]["name"], "read_file");
    assert_eq!(
        wire_tools[0]["function"]["parameters"]["required"],
        json!(["path"])
    );

    request.messages.push(answer.to_message());
    request
        .messages
        .push(Message::tool("call_a", "from setuptools import setup"));
    request.messages.push(Message::tool("call_b", "# Demo"));
    let answer = model.complete(&request).await.unwrap();
    assert_eq!(answer.content.as_deref(), Some("Both files read."));

    let history = &server.requests()[1].body["messages"];
    assert_eq!(history[2]["role"], "assistant");
    assert_eq!(history[2]["tool_calls"][1]["id"], "call_b");
    assert_eq!(
        history[2]["tool_calls"][1]["function"]["arguments"],
        r#"{"path":"README.md"}"#
    );
    assert_eq!(
        history[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "from setuptools import setup"})
    );

    let totals = model.meter().summary();
    assert_eq!(
        (totals.calls, totals.prompt_tokens, totals.completion_tokens),
        (2, 320, 45)
    );
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds() {
    let server = TestServer::start(vec![
        Reply::error(429, "Rate limit reached for requests").header("retry-after", "1"),
        text_answer("ok", 10, 1),
    ])
    .await;
    let model = metered(server.config());
    let started = Instant::now();
    let answer = model.complete(&question()).await.unwrap();

    // The policy's own backoff is 10 ms: only Retry-After explains a 1 s wait.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(answer.content.as_deref(), Some("ok"));
    assert_eq!(answer.attempts, 2);
    assert_eq!(server.count(), 2);
    let totals = model.meter().summary();
    assert_eq!(
        (totals.calls, totals.failed_calls, totals.retries),
        (1, 0, 1)
    );
    assert_eq!((totals.prompt_tokens, totals.completion_tokens), (10, 1));
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let server = TestServer::start(vec![
        Reply::error(500, "internal error"),
        Reply::raw(500, "<html>Internal Server Error</html>"),
        text_answer("recovered", 30, 2),
    ])
    .await;
    let policy = fast_retries(3)
        .with_base_delay(Duration::from_millis(30))
        .with_max_delay(Duration::from_secs(1));
    let model = metered(server.config().retry(policy));
    let started = Instant::now();
    let answer = model.complete(&question()).await.unwrap();

    // Exponential backoff without jitter: 30 ms, then 60 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(90),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(answer.content.as_deref(), Some("recovered"));
    assert_eq!(answer.attempts, 3);
    assert_eq!(server.count(), 3);
    let totals = model.meter().summary();
    assert_eq!(
        (totals.calls, totals.retries, totals.total_tokens()),
        (1, 2, 32)
    );
}

#[tokio::test]
async fn the_retry_cap_is_respected() {
    let server = TestServer::start(vec![
        Reply::error(503, "overloaded"),
        Reply::error(502, "bad gateway"),
        Reply::error(504, "gateway timeout"),
        text_answer("too late", 1, 1),
    ])
    .await;
    let model = metered(server.config().retry(fast_retries(2)));
    let err = model.complete(&question()).await.unwrap_err();

    match &err {
        LlmError::RetriesExhausted { attempts, last } => {
            assert_eq!(*attempts, 3);
            assert!(
                matches!(**last, LlmError::Server { status: 504, .. }),
                "{last:?}"
            );
        }
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
    assert!(err.to_string().contains("gateway timeout"), "{err}");
    assert_eq!(server.count(), 3);
    let totals = model.meter().summary();
    assert_eq!(
        (totals.calls, totals.failed_calls, totals.retries),
        (1, 1, 2)
    );
    assert_eq!(totals.total_tokens(), 0);
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_names_the_key_variable() {
    let server = TestServer::start(vec![
        Reply::json(
            401,
            json!({"error": {"message": "Incorrect API key provided: sk-test-****6053.", "type": "invalid_request_error", "code": "invalid_api_key"}}),
        ),
        text_answer("should not be reached", 1, 1),
    ])
    .await;
    let model = metered(server.config());
    let err = model.complete(&question()).await.unwrap_err();

    assert_eq!(
        err,
        LlmError::Authentication {
            message: "Incorrect API key provided: sk-test-****6053.".into()
        }
    );
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    assert_eq!(server.count(), 1);
    let totals = model.meter().summary();
    assert_eq!(
        (totals.calls, totals.failed_calls, totals.total_tokens()),
        (1, 1, 0)
    );
}

#[tokio::test]
async fn client_errors_are_typed_and_not_retried() {
    let server = TestServer::start(vec![
        Reply::error(400, "Invalid value for 'temperature'"),
        Reply::error(403, "You do not have access to this model"),
        Reply::error(404, "The model `nope` does not exist"),
        text_answer("should not be reached", 1, 1),
    ])
    .await;
    let model = metered(server.config());

    let bad = model.complete(&question()).await.unwrap_err();
    assert!(
        matches!(&bad, LlmError::BadRequest { message } if message.contains("temperature")),
        "{bad:?}"
    );
    let denied = model.complete(&question()).await.unwrap_err();
    assert!(
        matches!(denied, LlmError::PermissionDenied { .. }),
        "{denied:?}"
    );
    let missing = model.complete(&question()).await.unwrap_err();
    assert!(matches!(&missing, LlmError::NotFound { .. }), "{missing:?}");
    assert!(
        missing.to_string().contains("REPO_AGENT_MODEL"),
        "{missing}"
    );

    assert_eq!(
        server.count(),
        3,
        "each error must come from a single request"
    );
    assert_eq!(model.meter().summary().failed_calls, 3);
}

#[tokio::test]
async fn context_length_errors_are_recognised() {
    let server = TestServer::start(vec![
        Reply::json(
            400,
            json!({"error": {
                "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"
            }}),
        ),
        text_answer("should not be reached", 1, 1),
    ])
    .await;
    let model = metered(server.config());
    let err = model.complete(&question()).await.unwrap_err();

    match &err {
        LlmError::ContextLengthExceeded {
            limit, requested, ..
        } => assert_eq!((*limit, *requested), (Some(8192), Some(9120))),
        other => panic!("expected ContextLengthExceeded, got {other:?}"),
    }
    assert!(err.to_string().contains("Shrink the context"), "{err}");
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn a_slow_answer_times_out_and_is_retried() {
    let server = TestServer::start(vec![
        text_answer("too slow", 1, 1).delay(Duration::from_secs(5)),
        text_answer("fast", 8, 2),
    ])
    .await;
    let model = metered(server.config().timeout(Duration::from_millis(250)));
    let answer = model.complete(&question()).await.unwrap();

    assert_eq!(answer.content.as_deref(), Some("fast"));
    assert_eq!(answer.attempts, 2);
    assert!(
        answer.latency >= Duration::from_millis(250),
        "{:?}",
        answer.latency
    );
    let totals = model.meter().summary();
    assert_eq!((totals.retries, totals.total_tokens()), (1, 10));
}

#[tokio::test]
async fn a_timeout_without_retries_is_a_timeout_error() {
    let server = TestServer::start(vec![
        text_answer("too slow", 1, 1).delay(Duration::from_secs(5)),
    ])
    .await;
    let model = metered(
        server
            .config()
            .timeout(Duration::from_millis(200))
            .retry(fast_retries(0)),
    );
    let err = model.complete(&question()).await.unwrap_err();
    assert_eq!(err, LlmError::Timeout { timeout_ms: 200 });
    assert!(err.is_retryable());
    assert!(
        err.to_string().contains("Raise the request timeout"),
        "{err}"
    );
}

#[tokio::test]
async fn connection_errors_are_retried_then_reported() {
    // A bound socket that never listens: the port stays ours and connections are refused.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let port = socket.local_addr().unwrap().port();
    let config = llm::OpenAiConfig::builder()
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .model("test-model")
        .retry(fast_retries(2))
        .no_proxy()
        .build()
        .unwrap();
    let model = OpenAiModel::new(config).unwrap();
    let err = model.complete(&question()).await.unwrap_err();
    assert_eq!(err.attempts(), 3);
    assert!(
        matches!(err.last_error(), LlmError::Connection { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("OPENAI_BASE_URL"), "{err}");
}

#[tokio::test]
async fn a_retry_after_beyond_the_policy_fails_at_once() {
    let server = TestServer::start(vec![
        Reply::error(429, "slow down").header("retry-after", "3600"),
        text_answer("should not be reached", 1, 1),
    ])
    .await;
    let model = metered(server.config());
    let err = model.complete(&question()).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::RateLimited {
                retry_after_ms: Some(3_600_000),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn truncated_tool_arguments_are_repaired() {
    let calls = json!([tool_call(
        "call_w",
        "write_file",
        r#"{"path": "a.py", "content": "print(1)"#
    )]);
    let server = TestServer::start(vec![Reply::ok(completion(
        None,
        calls,
        "length",
        Some(usage(50, 64)),
    ))])
    .await;
    let model = metered(server.config());
    let answer = model
        .complete(&question().with_tools(tools()))
        .await
        .unwrap();

    assert_eq!(answer.finish_reason, FinishReason::Length);
    let call = &answer.tool_calls[0];
    assert_eq!(
        call.arguments,
        json!({"path": "a.py", "content": "print(1)"})
    );
    assert!(
        call.repair.as_deref().unwrap().contains("cut-off string"),
        "{call:?}"
    );
    assert_eq!(model.meter().summary().total_tokens(), 114);
}

#[tokio::test]
async fn unrepairable_tool_arguments_are_a_typed_error_with_usage() {
    let calls = json!([tool_call(
        "call_w",
        "write_file",
        r#"{"path": "a.py", "content": "#
    )]);
    let server = TestServer::start(vec![Reply::ok(completion(
        None,
        calls,
        "length",
        Some(usage(50, 9)),
    ))])
    .await;
    let model = metered(server.config());
    let err = model
        .complete(&question().with_tools(tools()))
        .await
        .unwrap_err();

    match &err {
        LlmError::MalformedToolCall {
            name, raw, usage, ..
        } => {
            assert_eq!(name, "write_file");
            assert_eq!(raw, r#"{"path": "a.py", "content": "#);
            assert_eq!(*usage, TokenUsage::new(50, 9));
        }
        other => panic!("expected MalformedToolCall, got {other:?}"),
    }
    assert!(err.to_string().contains("call the tool again"), "{err}");
    let totals = model.meter().summary();
    assert_eq!((totals.failed_calls, totals.total_tokens()), (1, 59));
}

#[tokio::test]
async fn text_protocol_puts_tools_in_the_prompt_and_parses_blocks() {
    let block = "I'll look.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"setup.py\"}}\n```";
    let server = TestServer::start(vec![
        text_answer(block, 300, 20),
        text_answer(
            "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \n```",
            310,
            12,
        ),
    ])
    .await;
    let model = metered(server.config().tool_mode(ToolMode::Text));
    let answer = model
        .complete(&question().with_tools(tools()))
        .await
        .unwrap();

    assert_eq!(answer.content.as_deref(), Some("I'll look."));
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].name, "read_file");
    assert_eq!(answer.tool_calls[0].arguments, json!({"path": "setup.py"}));
    let sent = &server.requests()[0].body;
    assert!(
        sent.get("tools").is_none(),
        "text mode must not send native tools"
    );
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are terse.\n\n# Tools"), "{system}");
    assert!(system.contains("## write_file"), "{system}");

    let err = model
        .complete(&question().with_tools(tools()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::MalformedToolCall { name, usage, .. } if name == "write_file" && usage.total() == 322),
        "{err:?}"
    );
    let totals = model.meter().summary();
    assert_eq!(
        (totals.calls, totals.failed_calls, totals.total_tokens()),
        (2, 1, 642)
    );
}

#[tokio::test]
async fn gateway_errors_inside_a_200_are_classified() {
    let server = TestServer::start(vec![
        Reply::ok(json!({"error": {"message": "Provider returned error", "code": 502}})),
        text_answer("ok", 4, 1),
    ])
    .await;
    let model = metered(server.config());
    let answer = model.complete(&question()).await.unwrap();
    assert_eq!(answer.attempts, 2);
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn garbage_bodies_are_retried_like_server_errors() {
    // Once: the retry gets the answer.
    let server = TestServer::start(vec![
        Reply::raw(200, "<html>captive portal</html>"),
        text_answer("ok", 4, 1),
    ])
    .await;
    let model = metered(server.config());
    let answer = model.complete(&question()).await.unwrap();
    assert_eq!(answer.content.as_deref(), Some("ok"));
    assert_eq!(answer.attempts, 2);
    assert_eq!(server.count(), 2);

    // Always: the retries run out and the last error says what came back.
    let server = TestServer::start(vec![
        Reply::raw(200, "<html>captive portal</html>"),
        Reply::raw(200, "{\"choices\": [{\"message\": "),
        Reply::raw(200, "<html>captive portal</html>"),
        Reply::raw(200, "<html>captive portal</html>"),
    ])
    .await;
    let model = metered(server.config());
    let err = model.complete(&question()).await.unwrap_err();
    assert!(
        matches!(err.last_error(), LlmError::InvalidResponse { message } if message.contains("captive portal")),
        "{err:?}"
    );
    assert!(server.count() >= 2, "{}", server.count());
}

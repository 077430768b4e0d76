//! Record a session against the test server, then replay it without one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{API_KEY, Reply, TestServer, completion, text_answer, tool_call, usage};
use llm::{
    ChatModel, ChatRequest, ChatResponse, Exchange, LlmError, Message, OpenAiModel, Outcome,
    Recorder, Replay, ToolDefinition,
};
use serde_json::json;

fn conversation() -> Vec<ChatRequest> {
    let tools = vec![ToolDefinition::new(
        "read_file",
        "Read a file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    )];
    let first = ChatRequest::new(vec![
        Message::system("You use repositories."),
        Message::user("What does setup.py install?"),
    ])
    .with_tools(tools)
    .with_temperature(0.1);
    let mut second = first.clone();
    second.messages.push(Message::assistant_tool_calls(
        None,
        vec![llm::ToolCall::new(
            "call_1",
            "read_file",
            json!({"path": "setup.py"}),
        )],
    ));
    second
        .messages
        .push(Message::tool("call_1", "setup(name='demo')"));
    let mut third = second.clone();
    third.messages.push(Message::user("And the version?"));
    vec![first, second, third]
}

async fn run(
    model: &dyn ChatModel,
    requests: &[ChatRequest],
) -> Vec<Result<ChatResponse, LlmError>> {
    let mut results = Vec::new();
    for request in requests {
        results.push(model.complete(request).await);
    }
    results
}

#[tokio::test]
async fn a_recorded_session_replays_identically_without_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let requests = conversation();

    let recorded = {
        let server = TestServer::start(vec![
            Reply::ok(completion(
                None,
                json!([tool_call("call_1", "read_file", r#"{"path": "setup.py"}"#)]),
                "tool_calls",
                Some(usage(80, 12)),
            )),
            text_answer("It installs the `demo` package.", 120, 9),
            Reply::error(400, "This model's maximum context length is 128 tokens."),
        ])
        .await;
        let model = OpenAiModel::new(server.config().build().unwrap()).unwrap();
        let recorder = Recorder::create(model, &path).unwrap();
        let results = run(&recorder, &requests).await;
        assert_eq!(server.count(), 3);
        results
    };
    // The server is gone: only the file can answer now.
    assert!(recorded[0].is_ok() && recorded[1].is_ok());
    assert!(matches!(
        recorded[2],
        Err(LlmError::ContextLengthExceeded { .. })
    ));

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(
        !text.contains(API_KEY),
        "the API key must never be recorded"
    );
    let first: Exchange = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first.model, "test-model");
    assert_eq!(first.usage.map(|u| u.total()), Some(92));
    assert!(matches!(first.outcome, Outcome::Response(_)));

    let replay = Replay::from_file(&path).unwrap();
    assert_eq!(replay.model_name(), "test-model");
    let replayed = run(&replay, &requests).await;
    assert_eq!(replayed, recorded);
    assert_eq!(replay.remaining(), 0);

    let err = replay.complete(&requests[0]).await.unwrap_err();
    assert_eq!(err, LlmError::ReplayExhausted { recorded: 3 });
}

#[tokio::test]
async fn a_changed_request_fails_loudly_with_a_diff() {
    let requests = conversation();
    let exchanges = requests
        .iter()
        .map(|request| Exchange {
            model: "m".into(),
            request: request.clone(),
            outcome: Outcome::Response(ChatResponse::text("ok")),
            usage: None,
        })
        .collect();
    let replay = Replay::new(exchanges);

    replay.complete(&requests[0]).await.unwrap();
    let mut changed = requests[1].clone();
    changed.messages[1] = Message::user("What does setup.cfg install?");
    let err = replay.complete(&changed).await.unwrap_err();
    match &err {
        LlmError::ReplayMismatch { index, diff } => {
            assert_eq!(*index, 1);
            assert!(
                diff.contains("- ") && diff.contains("setup.py install"),
                "{diff}"
            );
            assert!(
                diff.contains("+ ") && diff.contains("setup.cfg install"),
                "{diff}"
            );
        }
        other => panic!("expected ReplayMismatch, got {other:?}"),
    }
    assert!(
        err.to_string().contains("record the session again"),
        "{err}"
    );
    // The mismatch consumed nothing: the right request still gets its answer.
    assert_eq!(replay.remaining(), 2);
    replay.complete(&requests[1]).await.unwrap();
}

#[tokio::test]
async fn replay_reports_unreadable_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.jsonl");
    std::fs::write(&path, "{\"model\": \"m\"}\n").unwrap();
    let err = Replay::from_file(&path).unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
    let err = Replay::from_file(dir.path().join("missing.jsonl")).unwrap_err();
    assert!(matches!(err, LlmError::Session { .. }), "{err:?}");
}

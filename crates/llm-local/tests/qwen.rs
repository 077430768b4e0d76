//! The real Qwen2.5-Coder-1.5B-Instruct GGUF (1.1 GB, not downloaded by
//! the tests): runs only when `REPO_AGENT_QWEN_MODEL` names the file,
//! and passes with a message otherwise.
//!
//! ```sh
//! REPO_AGENT_QWEN_MODEL=/path/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
//!     cargo test --release -p llm-local --test qwen -- --nocapture
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use llm::{ChatRequest, Message};
use llm_local::{LocalModel, LocalOptions};

/// The variable naming the model file.
const ENV: &str = "REPO_AGENT_QWEN_MODEL";

/// Why these tests are ignored: CI does not download 1.1 GB.
const NEEDS: &str = "needs the Qwen2.5-Coder-1.5B GGUF named by REPO_AGENT_QWEN_MODEL";

fn model() -> &'static LocalModel {
    static MODEL: OnceLock<LocalModel> = OnceLock::new();
    MODEL.get_or_init(|| {
        let path = std::env::var_os(ENV)
            .map(PathBuf::from)
            .filter(|p| p.is_file())
            .unwrap_or_else(|| panic!("{NEEDS}"));
        let started = Instant::now();
        let model = LocalModel::load(&path, LocalOptions::default()).expect("the model loads");
        eprintln!("loaded {} in {:.2?}", path.display(), started.elapsed());
        model
    })
}

fn answer(model: &LocalModel, question: &str, max_tokens: u32) -> String {
    let request = ChatRequest::new(vec![
        Message::system("You are a helpful assistant."),
        Message::user(question),
    ])
    .with_max_tokens(max_tokens);
    let started = Instant::now();
    let response = model
        .complete_blocking(&request)
        .expect("the model answers");
    let text = response.content.unwrap_or_default();
    eprintln!(
        "--- {question} ({} tokens, {:.2?})\n{text}\n---",
        response.usage.completion_tokens,
        started.elapsed()
    );
    text
}

#[test]
#[ignore = "needs the Qwen2.5-Coder-1.5B GGUF named by REPO_AGENT_QWEN_MODEL"]
fn qwen_declares_its_long_context() {
    let model = model();
    // 32,768 declared; the cap by memory leaves at least 2,048.
    assert!(model.context_length() >= 2048, "{}", model.context_length());
    assert!(
        model.context_length() <= 32_768,
        "{}",
        model.context_length()
    );
}

#[test]
#[ignore = "needs the Qwen2.5-Coder-1.5B GGUF named by REPO_AGENT_QWEN_MODEL"]
fn qwen_writes_code_greedily() {
    let model = model();
    let text = answer(
        model,
        "Write a Python function that reverses a string.",
        160,
    );
    assert!(text.contains("def "), "{text}");
    // Greedy output (checked by hand): a loop over `range(len(s) - 1, -1, -1)`.
    assert!(text.contains("def reverse_string(s)"), "{text}");
    assert!(text.contains("return "), "{text}");
    let text = answer(
        model,
        "What is the capital of France? Answer in one word.",
        16,
    );
    assert!(text.contains("Paris"), "{text}");
    let text = answer(
        model,
        "Write a Rust function `fn add(a: i32, b: i32) -> i32` that adds two numbers.",
        120,
    );
    assert!(text.contains("fn add"), "{text}");
    assert!(text.contains("a + b"), "{text}");
}

#[test]
#[ignore = "needs the Qwen2.5-Coder-1.5B GGUF named by REPO_AGENT_QWEN_MODEL"]
fn one_call_per_reply_stops_decoding_after_the_first_call() {
    // As the agent loads it: in auto mode the model answers in text.
    let path = std::env::var_os(ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{NEEDS}"));
    let options = LocalOptions::default().with_tool_choice(llm_local::ToolChoice::Required);
    let model = LocalModel::load(&path, options).expect("the model loads");
    let model = &model;
    let read = llm::ToolDefinition::new(
        "read_file",
        "Read a file.",
        serde_json::json!({"type": "object", "properties": {
            "path": {"type": "string"}
        }, "required": ["path"]}),
    );
    let request = |parallel: Option<bool>| {
        let mut request = ChatRequest::new(vec![
            Message::system("You are an agent that solves tasks with tools."),
            Message::user("Read the files a.py, b.py, c.py and d.py, each with its own call."),
        ])
        .with_tools(vec![read.clone()])
        .with_max_tokens(200);
        request.parallel_tool_calls = parallel;
        request
    };
    let many = model.complete_blocking(&request(None)).expect("answers");
    let one = model
        .complete_blocking(&request(Some(false)))
        .expect("answers");
    eprintln!(
        "default: {} calls in {} tokens; one asked: {} call in {} tokens",
        many.tool_calls.len(),
        many.usage.completion_tokens,
        one.tool_calls.len(),
        one.usage.completion_tokens
    );
    // Greedy decoding calls all four by default (checked by hand).
    assert!(many.tool_calls.len() > 1, "{many:?}");
    assert_eq!(one.tool_calls.len(), 1, "{one:?}");
    assert_eq!(one.tool_calls[0].name, "read_file");
    assert!(one.usage.completion_tokens < many.usage.completion_tokens);
}

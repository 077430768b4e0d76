//! A task written in another language (GitTaskBench writes its tasks in
//! Chinese): its words find nothing in the repository, so the agent first
//! asks the model for English search terms, counts that call, records it,
//! and builds the context with the terms.

mod common;

use serde_json::{Value, json};

use common::Fixture;
use common::cli::{completion, run_task_on_fixture, serve};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn text_reply(content: &str, prompt: u64) -> Value {
    json!({
        "id": "chatcmpl-terms", "object": "chat.completion", "created": 1, "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 9, "total_tokens": prompt + 9}
    })
}

fn run(
    task: &str,
    answers: Vec<Value>,
) -> Result<(Value, Vec<Value>, String), Box<dyn std::error::Error>> {
    run_with(task, answers, &[])
}

fn run_with(
    task: &str,
    answers: Vec<Value>,
    extra: &[&str],
) -> Result<(Value, Vec<Value>, String), Box<dyn std::error::Error>> {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let (url, bodies) = serve(answers)?;
    let trajectory = fx.dir.path().join("t.jsonl");
    let result = run_task_on_fixture(&fx, &url, task, "auto")
        .args(extra)
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&result.stdout)?;
    let requests = bodies.lock().map_err(|e| e.to_string())?.clone();
    Ok((summary, requests, std::fs::read_to_string(&trajectory)?))
}

#[test]
fn a_chinese_task_gets_english_search_terms_first() -> TestResult {
    let (summary, requests, trajectory) = run(
        "根据仓库内容，统计输入文本中出现次数最多的三个词",
        vec![
            text_reply("word frequency, WordCounter, top, count words", 50),
            completion("f", "finish", json!({"summary": "done"}), 400),
        ],
    )?;
    assert_eq!(requests.len(), 2);
    // The first call asks for terms, with the task and no tools.
    let ask = serde_json::to_string(&requests[0])?;
    assert!(ask.contains("search terms"), "{ask}");
    assert!(ask.contains("统计输入文本"), "{ask}");
    assert!(requests[0].get("tools").is_none_or(Value::is_null), "{ask}");
    // The episode's context is built with them: the class is shown where
    // it is, by its declaration.
    let context = requests[1]["messages"][1]["content"].as_str().unwrap_or("");
    assert!(
        context.contains("## Where to look for this task"),
        "{context}"
    );
    assert!(context.contains("`class WordCounter:`"), "{context}");
    assert!(context.contains("textstats/core.py"), "{context}");
    // Recorded, and counted: 50 + 9 for the terms, 400 + 7 for the turn.
    assert!(trajectory.contains(r#""type":"setup""#), "{trajectory}");
    assert!(
        trajectory.contains(r#""purpose":"search_terms""#),
        "{trajectory}"
    );
    assert!(trajectory.contains("WordCounter, top"), "{trajectory}");
    assert_eq!(summary["total_tokens"], 466, "{summary}");
    Ok(())
}

#[test]
fn an_english_task_that_names_the_code_asks_for_nothing() -> TestResult {
    let (summary, requests, trajectory) = run(
        "Count the words of the input text and list the top three",
        vec![completion("f", "finish", json!({"summary": "done"}), 400)],
    )?;
    assert_eq!(requests.len(), 1);
    assert!(!trajectory.contains(r#""type":"setup""#), "{trajectory}");
    assert_eq!(summary["total_tokens"], 407, "{summary}");
    Ok(())
}

#[test]
fn search_terms_always_asks_even_for_an_english_task() -> TestResult {
    let (summary, requests, trajectory) = run_with(
        "Count the words of the input text and list the top three",
        vec![
            text_reply("WordCounter, top", 50),
            completion("f", "finish", json!({"summary": "done"}), 400),
        ],
        &["--search-terms", "always"],
    )?;
    assert_eq!(requests.len(), 2);
    assert!(
        trajectory.contains(r#""purpose":"search_terms""#),
        "{trajectory}"
    );
    assert_eq!(summary["total_tokens"], 466, "{summary}");
    Ok(())
}

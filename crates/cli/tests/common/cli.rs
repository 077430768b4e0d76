//! A scripted OpenAI-compatible server and the `repo-agent` command line
//! pointed at it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::Fixture;

pub fn completion(id: &str, name: &str, args: Value, prompt: u64) -> Value {
    json!({
        "id": format!("chatcmpl-{id}"),
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": [{
                "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}
            }]},
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}
    })
}

/// Serves `answers` in order, one per request, and keeps the request bodies.
pub fn serve(answers: Vec<Value>) -> std::io::Result<(String, Arc<Mutex<Vec<Value>>>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&bodies);
    std::thread::spawn(move || {
        let mut answers = answers.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Ok(clone) = stream.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(clone);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            if let Ok(mut seen) = seen.lock() {
                seen.push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            }
            let next = answers.next();
            // `{"__status": "401 Unauthorized", ...}` answers with that status.
            let status = match next.as_ref().and_then(|a| a["__status"].as_str()) {
                Some(status) => status.to_owned(),
                None if next.is_none() => "500 Internal Server Error".to_owned(),
                None => "200 OK".to_owned(),
            };
            // `{"__raw": "..."}` answers with that body as is (malformed JSON).
            let answer = match next.as_ref().and_then(|a| a["__raw"].as_str()) {
                Some(raw) => raw.to_owned(),
                None => next.map(|a| a.to_string()).unwrap_or_default(),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    Ok((url, bodies))
}

pub fn repo_agent() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_repo-agent"));
    for var in [
        "REPO_AGENT_MODEL",
        "REPO_AGENT_MODEL_PATH",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// `repo-agent run` on the fixture against the server at `url`, in process
/// isolation, with a private home and the trajectory in `t.jsonl`.
pub fn run_on_fixture(fx: &Fixture, url: &str) -> Command {
    run_on_fixture_in(fx, url, "process")
}

/// [`run_on_fixture`] in the isolation named (`process`, `namespaces`).
pub fn run_on_fixture_in(fx: &Fixture, url: &str, isolation: &str) -> Command {
    run_task_on_fixture(fx, url, "Count the words.", isolation)
}

/// [`run_on_fixture_in`] with this task.
pub fn run_task_on_fixture(fx: &Fixture, url: &str, task: &str, isolation: &str) -> Command {
    let mut command = repo_agent();
    command
        .env("REPO_AGENT_HOME", fx.dir.path().join("home"))
        .args(["run", "--repo"])
        .arg(fx.repo())
        .args(["--task", task, "--output-dir"])
        .arg(fx.out())
        .args(["--base-url", url, "--model", "test-model", "--json"])
        .args(["--isolation", isolation, "--trajectory"])
        .arg(fx.dir.path().join("t.jsonl"));
    command
}

//! `repo-agent run` end to end: through the `llm` crate's HTTP client against
//! a local OpenAI-compatible test server, and with the embedded model.

mod common;

use serde_json::{Value, json};

use common::Fixture;
use common::cli::{completion, repo_agent, run_on_fixture, serve};

/// The tests' small model. `cargo xtask test` installs it first, so a
/// missing model fails the test with what to run, never a skip that reads
/// "ok".
fn tests_model() -> std::path::PathBuf {
    llm_local::installed_model_path(&llm_local::SMOLLM2_135M).unwrap_or_else(|| {
        panic!(
            "the tests' model is not installed: run `cargo xtask test` (which installs it) or `cargo xtask model --model smollm2`"
        )
    })
}

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn an_episode_through_the_http_client_and_the_cli() -> TestResult {
    let fx = Fixture::new()?;
    // Without --work-dir, code runs in a copy of the repository next to
    // the output directory; the repository is not written.
    let script = fx.dir.path().join("out.work").join("count.py");
    let output = fx.out().join("output.csv");
    let code = "import sys\nfrom textstats.core import WordCounter\nfrom textstats.io import read_text, write_csv\nwrite_csv(WordCounter().feed(read_text(sys.argv[1])).top(3), sys.argv[2])\n";
    let (url, bodies) = serve(vec![
        completion("c1", "search_code", json!({"query": "WordCounter"}), 500),
        completion(
            "c2",
            "write_file",
            json!({"path": script, "content": code}),
            600,
        ),
        completion(
            "c3",
            "run_python",
            json!({"path": script, "args": [fx.input(), output]}),
            700,
        ),
        completion("c4", "finish", json!({"summary": "done"}), 800),
    ])?;
    let trajectory = fx.dir.path().join("t.jsonl");
    let result = repo_agent()
        .args(["run", "--repo"])
        .arg(fx.repo())
        .args([
            "--task",
            "Save the three most frequent words of the input with their counts as CSV.",
        ])
        .arg("--input")
        .arg(format!("{}=A short English text", fx.input().display()))
        .arg("--output-dir")
        .arg(fx.out())
        .args([
            "--base-url",
            &url,
            "--model",
            "test-model",
            "--max-turns",
            "10",
            "--json",
        ])
        .arg("--trajectory")
        .arg(&trajectory)
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    assert!(stderr.contains("[turn 3] run_python"), "{stderr}");
    let summary: Value = serde_json::from_slice(&result.stdout)?;
    assert_eq!(summary["status"], "finished");
    assert_eq!(summary["turns"], 4);
    assert_eq!(summary["prompt_tokens"], 2600);
    assert_eq!(summary["completion_tokens"], 28);
    assert_eq!(summary["total_tokens"], 2628);
    let csv = std::fs::read_to_string(&output)?;
    assert_eq!(
        csv.lines().collect::<Vec<_>>(),
        ["word,count", "the,5", "a,2", "cat,2"]
    );
    assert!(!fx.repo().join("count.py").exists());

    let bodies = bodies.lock().map_err(|_| "poisoned")?.clone();
    assert_eq!(bodies.len(), 4);
    assert_eq!(bodies[0]["model"], "test-model");
    let tools: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        tools.contains(&"find_callers") && tools.contains(&"finish"),
        "{tools:?}"
    );
    let last = bodies[3]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["role"], "tool");
    assert!(
        last["content"]
            .as_str()
            .is_some_and(|c| c.contains("exit code 0")),
        "{last}"
    );
    let lines = std::fs::read_to_string(&trajectory)?;
    assert_eq!(
        lines.lines().count(),
        1 + 4 * 3 + 1,
        "start, then request, model and tool per turn, then summary"
    );
    Ok(())
}

#[test]
fn a_server_without_a_model_name_says_what_to_pass() -> TestResult {
    let fx = Fixture::new()?;
    let result = repo_agent()
        .args(["run", "--repo"])
        .arg(fx.repo())
        .args(["--task", "anything", "--output-dir"])
        .arg(fx.out())
        .args(["--base-url", "http://127.0.0.1:9/v1"])
        .output()?;
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("--model NAME"), "{stderr}");
    Ok(())
}

#[test]
fn a_broken_model_file_is_a_clear_error() -> TestResult {
    let fx = Fixture::new()?;
    let bogus = fx.dir.path().join("bogus.gguf");
    std::fs::write(&bogus, b"GGUF but not really a model")?;
    let result = repo_agent()
        .args(["run", "--repo"])
        .arg(fx.repo())
        .args(["--task", "anything", "--output-dir"])
        .arg(fx.out())
        .arg("--model-path")
        .arg(&bogus)
        .output()?;
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("cannot load the GGUF model"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    Ok(())
}

/// With no server and no model configured, `run` uses the embedded model
/// (here SmolLM2-135M, the tests' small model, through
/// `REPO_AGENT_MODEL_PATH`): whatever a 135M model achieves, the episode
/// completes with a full trajectory and token counts. Needs the model
/// (`cargo xtask model --model smollm2`, which `cargo xtask test` runs).
#[test]
fn without_a_model_the_embedded_model_runs_the_episode() -> TestResult {
    let model = tests_model();
    let fx = Fixture::new()?;
    let trajectory = fx.dir.path().join("run.jsonl");
    let result = repo_agent()
        .env("REPO_AGENT_MODEL_PATH", &model)
        .args(["run", "--repo"])
        .arg(fx.repo())
        .args([
            "--task",
            "Count the words of the input file.",
            "--output-dir",
        ])
        .arg(fx.out())
        .arg("--input")
        .arg(format!("{}=A short English text", fx.input().display()))
        .args([
            "--max-turns",
            "2",
            "--isolation",
            "process",
            "--json",
            "--trajectory",
        ])
        .arg(&trajectory)
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    let summary: Value = serde_json::from_slice(&result.stdout)?;
    let wrote = summary["outputs"].as_array().is_some_and(|o| !o.is_empty());
    let expected_code = match summary["status"].as_str().unwrap_or("") {
        "finished" if wrote => 0,
        "finished" => 5,
        "max_turns" | "max_tokens" => 4,
        other => panic!("unexpected status {other}: {stderr}"),
    };
    assert_eq!(result.status.code(), Some(expected_code), "{stderr}");
    assert!(
        summary["prompt_tokens"].as_u64().unwrap_or(0) > 100,
        "{summary}"
    );
    assert!(
        summary["completion_tokens"].as_u64().unwrap_or(0) > 0,
        "{summary}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&trajectory)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(
        lines.first().and_then(|l| l["type"].as_str()),
        Some("start")
    );
    assert_eq!(
        lines.last().and_then(|l| l["type"].as_str()),
        Some("summary")
    );
    let start = &lines[0];
    assert!(
        start["model"]
            .as_str()
            .unwrap_or("")
            .to_lowercase()
            .contains("smollm2"),
        "{start}"
    );
    Ok(())
}

#[test]
fn a_query_json_task_file_is_accepted() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let query = json!({
        "task_id": "t1",
        "task_description": "Count words.",
        "repositories": [{"name": "textstats", "path": fx.repo(), "url": "", "understanding_guidelines": []}],
        "file_paths": {"input_files": [{"path": fx.input(), "description": "text"}]}
    });
    let file = fx.dir.path().join("query.json");
    std::fs::write(&file, query.to_string())?;
    let (url, _bodies) = serve(vec![completion(
        "c1",
        "finish",
        json!({"summary": "ok"}),
        10,
    )])?;
    let result = repo_agent()
        .args(["run", "--task-file"])
        .arg(&file)
        .arg("--output-dir")
        .arg(fx.out())
        .args(["--base-url", &url, "--model", "m", "--json"])
        .output()?;
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let summary: Value = serde_json::from_slice(&result.stdout)?;
    assert_eq!(summary["status"], "finished");
    Ok(())
}

/// Runs `repo-agent run` on the fixture against a scripted server and
/// returns the exit code and the JSON summary (if one was printed);
/// `seeded` writes an output file first (see [`Fixture::write_output`]).
fn run_with(
    seeded: bool,
    answers: Vec<Value>,
    extra: &[&str],
) -> Result<(Option<i32>, Value, String), Box<dyn std::error::Error>> {
    let fx = Fixture::new()?;
    if seeded {
        fx.write_output()?;
    }
    let (url, _) = serve(answers)?;
    let result = run_on_fixture(&fx, &url).args(extra).output()?;
    let summary = serde_json::from_slice(&result.stdout).unwrap_or(Value::Null);
    Ok((
        result.status.code(),
        summary,
        String::from_utf8_lossy(&result.stderr).into_owned(),
    ))
}

/// The documented exit codes: 0 only for `finished` with an output; 1
/// error, 3 timeout, 4 budget, 5 finished without an output.
#[test]
fn exit_codes_tell_the_endings_apart() -> TestResult {
    let search = || completion("s", "search_code", json!({"query": "count"}), 100);
    let finish = || completion("f", "finish", json!({"summary": "done"}), 100);
    let (code, summary, stderr) = run_with(true, vec![finish()], &[])?;
    assert_eq!(
        (code, summary["status"].as_str()),
        (Some(0), Some("finished")),
        "{stderr}"
    );

    // Finished with no output file: the first `finish` is refused, the
    // second ends the run, which is not a success.
    let (code, summary, stderr) = run_with(false, vec![finish(), finish()], &[])?;
    assert_eq!(
        (code, summary["status"].as_str(), summary["turns"].as_u64()),
        (Some(5), Some("finished"), Some(2)),
        "{stderr}"
    );
    assert!(stderr.contains("holds no output file"), "{stderr}");

    let (code, summary, stderr) = run_with(true, vec![search(), search()], &["--max-turns", "1"])?;
    assert_eq!(
        (code, summary["status"].as_str()),
        (Some(4), Some("max_turns")),
        "{stderr}"
    );

    let (code, summary, stderr) =
        run_with(true, vec![search(), search()], &["--max-tokens", "50"])?;
    assert_eq!(
        (code, summary["status"].as_str()),
        (Some(4), Some("max_tokens")),
        "{stderr}"
    );

    let sleep = completion(
        "p",
        "run_python",
        json!({"code": "import time\ntime.sleep(2)\n"}),
        100,
    );
    let (code, summary, stderr) = run_with(true, vec![sleep, search()], &["--timeout", "1"])?;
    assert_eq!(
        (code, summary["status"].as_str()),
        (Some(3), Some("timeout")),
        "{stderr}"
    );

    let refused = json!({"__status": "401 Unauthorized", "error": {"message": "bad key", "type": "invalid_request_error"}});
    let (code, summary, stderr) = run_with(true, vec![refused], &[])?;
    assert_eq!(
        (code, summary["status"].as_str()),
        (Some(1), Some("error")),
        "{stderr}"
    );

    // Bad flags are clap's usage error.
    let result = repo_agent().args(["run", "--max-turns", "many"]).output()?;
    assert_eq!(result.status.code(), Some(2));
    Ok(())
}

/// A task file that never ends (`/dev/zero`) is refused after a bounded read.
#[test]
fn endless_task_files_are_refused() -> TestResult {
    let result = repo_agent()
        .args([
            "run",
            "--task-file",
            "/dev/zero",
            "--output-dir",
            "/tmp/unused-out",
        ])
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("larger than 1 MiB"), "{stderr}");
    // Nor is a task file that is not text.
    let dir = tempfile::tempdir()?;
    let binary = dir.path().join("task.json");
    std::fs::write(&binary, b"{\"task\": \"\xff\xfe\"}")?;
    let result = repo_agent()
        .args(["run", "--task-file"])
        .arg(&binary)
        .args(["--output-dir", "/tmp/unused-out"])
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not UTF-8 text"), "{stderr}");
    Ok(())
}

/// `--no-network` where nothing can enforce it is an error, not a warning.
#[test]
fn no_network_without_namespaces_is_refused() -> TestResult {
    let (code, _, stderr) = run_with(
        true,
        vec![completion("f", "finish", json!({"summary": "done"}), 100)],
        &["--no-network"],
    )?;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--no-network needs namespace isolation"),
        "{stderr}"
    );
    Ok(())
}

/// A secret that model-run code finds (here: a file holding the API key)
/// is redacted from the observations: it reaches neither the requests sent
/// to the model nor the trajectory.
#[test]
fn secrets_found_by_code_stay_out_of_requests_and_trajectory() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let key = "sk-test-5ecret-0123456789abcdef";
    std::fs::write(
        fx.repo().join("leak.txt"),
        format!("OPENAI_API_KEY={key}\n"),
    )?;
    let (url, bodies) = serve(vec![
        completion(
            "p",
            "run_python",
            json!({"code": "print(open('leak.txt').read())"}),
            100,
        ),
        completion("v", "view_file", json!({"path": "leak.txt"}), 100),
        completion("f", "finish", json!({"summary": "done"}), 100),
    ])?;
    let trajectory = fx.dir.path().join("t.jsonl");
    let result = run_on_fixture(&fx, &url)
        .env("OPENAI_API_KEY", key)
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    let recorded = std::fs::read_to_string(&trajectory)?;
    assert!(recorded.contains("[redacted]"), "{recorded}");
    assert!(!recorded.contains(key), "the key is in the trajectory");
    let sent = serde_json::to_string(&*bodies.lock().map_err(|e| e.to_string())?)?;
    assert!(sent.contains("[redacted]"), "{sent}");
    assert!(!sent.contains(key), "the key was sent to the model");
    Ok(())
}

/// `--timeout` covers the analysis: a limit that runs out while the
/// repositories are analysed ends the run with the timeout code and a
/// summary, before any model request.
#[test]
fn the_time_limit_covers_the_analysis() -> TestResult {
    let fx = Fixture::new()?;
    let (url, bodies) = serve(vec![completion(
        "f",
        "finish",
        json!({"summary": "done"}),
        100,
    )])?;
    let trajectory = fx.dir.path().join("t.jsonl");
    let result = run_on_fixture(&fx, &url)
        .args(["--timeout", "0"])
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(3), "{stderr}");
    let summary: Value = serde_json::from_slice(&result.stdout)?;
    assert_eq!(summary["status"], "timeout");
    assert_eq!(summary["turns"], 0);
    assert!(
        summary["message"]
            .as_str()
            .is_some_and(|m| m.contains("being analysed")),
        "{summary}"
    );
    assert!(bodies.lock().map_err(|e| e.to_string())?.is_empty());
    let recorded = std::fs::read_to_string(&trajectory)?;
    assert!(recorded.contains("\"type\":\"summary\""), "{recorded}");
    Ok(())
}

/// `context --model-terms` asks the model for search terms for the task
/// (the call `run` makes when the task's words find too little), says
/// which on stderr, and builds the context with them. Needs the tests'
/// model (`cargo xtask model --model smollm2`, which `cargo xtask test`
/// runs; its absence fails the test).
#[test]
fn context_asks_the_model_for_search_terms() -> TestResult {
    let model = tests_model();
    let fx = Fixture::new()?;
    let result = repo_agent()
        .arg("context")
        .arg(fx.repo())
        .args([
            "--task",
            "统计输入文件中的单词",
            "--budget",
            "1000",
            "--model-terms",
        ])
        .arg("--model-path")
        .arg(&model)
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("search terms: "))
        .unwrap_or_else(|| panic!("no search terms line: {stderr}"));
    // Whatever a 135M model answers, the terms are parsed into short words.
    let terms: Vec<&str> = line["search terms: ".len()..]
        .split(", ")
        .filter(|t| !t.is_empty())
        .collect();
    assert!(terms.iter().all(|t| t.len() <= 48), "{line}");
    assert!(!result.stdout.is_empty());
    // Without --task there is nothing to ask about: clap refuses.
    let refused = repo_agent()
        .arg("context")
        .arg(fx.repo())
        .arg("--model-terms")
        .output()?;
    assert!(!refused.status.success());
    Ok(())
}

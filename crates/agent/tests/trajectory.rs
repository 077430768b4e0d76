//! A recorded trajectory reads back into the same typed events, and every
//! line matches docs/TRAJECTORY.md: its kind is documented, its fields are
//! the documented ones, and every documented example parses.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use agent::{Budgets, Status, Trajectory, TrajectoryEvent};
use llm::{ChatResponse, LlmError, Scripted, TokenUsage, ToolCall};
use serde_json::{Value, json};

use common::{Fixture, config};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn call(id: &str, name: &str, args: Value) -> ChatResponse {
    ChatResponse::with_tool_calls(vec![ToolCall::new(id, name, args)])
        .with_usage(TokenUsage::new(100, 10))
}

/// One documented kind: its fields and its example line.
#[derive(Debug, Default)]
struct Documented {
    /// A kind of `repo-agent generate`'s trajectories (a `###` heading).
    generate: bool,
    fields: BTreeSet<String>,
    example: Option<String>,
}

/// Reads docs/TRAJECTORY.md: a `## \`kind\`` heading per kind, a table whose
/// rows start with the field name in backquotes, and a ```json example.
fn documented() -> Result<BTreeMap<String, Documented>, Box<dyn std::error::Error>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/TRAJECTORY.md");
    let text = std::fs::read_to_string(path)?;
    let mut kinds: BTreeMap<String, Documented> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_example = false;
    for line in text.lines() {
        let heading = |prefix: &str| {
            line.strip_prefix(prefix)
                .and_then(|rest| rest.strip_suffix('`'))
                .map(str::to_owned)
        };
        if let Some((kind, generate)) = heading("## `")
            .map(|k| (k, false))
            .or_else(|| heading("### `").map(|k| (k, true)))
        {
            current = Some(kind.clone());
            kinds.entry(kind).or_default().generate = generate;
            continue;
        }
        if line.starts_with("## ") {
            current = None;
            continue;
        }
        let Some(doc) = current.as_ref().and_then(|k| kinds.get_mut(k)) else {
            continue;
        };
        if line.trim() == "```json" {
            in_example = true;
        } else if line.trim() == "```" {
            in_example = false;
        } else if in_example && doc.example.is_none() {
            doc.example = Some(line.to_owned());
        } else if let Some(field) = line
            .strip_prefix("| `")
            .and_then(|rest| rest.split('`').next())
        {
            doc.fields.insert(field.to_owned());
        }
    }
    Ok(kinds)
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// Runs an episode into a file, reads it back, and checks every line.
async fn record_and_check(
    model: &Scripted,
    fx: &Fixture,
    budgets: &Budgets,
    context_budget: usize,
    docs: &BTreeMap<String, Documented>,
    setup_model: Option<&Scripted>,
) -> Result<(Status, BTreeSet<String>), Box<dyn std::error::Error>> {
    let mut cfg = config();
    cfg.context_budget = context_budget;
    let prepared = match setup_model {
        // A task in Chinese: the setup asks the model for search terms.
        Some(terms) => {
            let mut task = fx.task();
            task.description = "统计输入文本中最常见的三个词".into();
            agent::prepare_with_model(&task, &cfg, Some(terms)).await?
        }
        None => agent::prepare(&fx.task(), &cfg).await?,
    };
    let path = fx.dir.path().join("trajectory.jsonl");
    let mut trajectory = Trajectory::to_file(&path)?;
    let summary = agent::run_episode(
        model,
        &prepared,
        &fx.task(),
        budgets,
        &mut trajectory,
        &mut |_| {},
    )
    .await?;
    drop(prepared);

    let read = Trajectory::read(&path)?;
    assert_eq!(read, trajectory.events(), "the file reads back as recorded");
    assert!(matches!(read.first(), Some(TrajectoryEvent::Start(_))));
    assert!(matches!(read.last(), Some(TrajectoryEvent::Summary(s)) if *s == summary));

    let mut seen = BTreeSet::new();
    for (line, event) in std::fs::read_to_string(&path)?.lines().zip(&read) {
        let raw: Value = serde_json::from_str(line)?;
        // The typed event writes back exactly the line that was read.
        assert_eq!(serde_json::to_value(event)?, raw);
        let kind = raw["type"].as_str().unwrap_or_default();
        assert_eq!(kind, event.kind());
        let doc = docs
            .get(kind)
            .ok_or_else(|| format!("kind `{kind}` is not documented"))?;
        let undocumented: Vec<String> = keys(&raw).difference(&doc.fields).cloned().collect();
        assert!(
            undocumented.is_empty(),
            "`{kind}` fields not in docs/TRAJECTORY.md: {undocumented:?}"
        );
        seen.insert(kind.to_owned());
    }
    Ok((summary.status, seen))
}

#[tokio::test]
async fn recorded_trajectories_read_back_and_match_the_documentation() -> TestResult {
    let docs = documented()?;
    let fx = Fixture::new()?;
    fx.write_output()?;
    let script = fx.repo().join("s.py");

    // Start, digests, requests, answers (one text only), tool calls (one
    // unknown, one with bad arguments), a context overflow, the summary.
    let mut model = Scripted::new()
        .then(call("c1", "search_code", json!({"query": "WordCounter"})))
        .then(ChatResponse::with_tool_calls(vec![
            ToolCall::new("c2", "rm_rf", json!({})),
            ToolCall::new("c3", "view_file", json!("nope")),
        ]))
        .then_error(LlmError::ContextLengthExceeded {
            message: "too long".into(),
            limit: Some(10),
            requested: Some(20),
        })
        .then(ChatResponse::text("Let me write the script."))
        .then(call(
            "c4",
            "write_file",
            json!({"path": script, "content": "print('hi')\n"}),
        ));
    for i in 0..3 {
        model = model.then(call(
            &format!("p{i}"),
            "run_python",
            json!({"code": format!("for i in range(1500): print('step {i}', i)")}),
        ));
    }
    let model = model.then(call("c9", "finish", json!({"summary": "done"})));
    let budgets = Budgets {
        context_window: 4_000,
        ..Budgets::default()
    };
    let terms = Scripted::new().then_text("word count, WordCounter");
    let (status, mut seen) =
        record_and_check(&model, &fx, &budgets, 500, &docs, Some(&terms)).await?;
    assert_eq!(status, Status::Finished);

    // A model failure that retrying cannot fix (the script runs out).
    let model = Scripted::new().then(call("c1", "search_code", json!({"query": "x"})));
    let (status, more) =
        record_and_check(&model, &fx, &Budgets::default(), 8_000, &docs, None).await?;
    assert_eq!(status, Status::Error);
    seen.extend(more);

    // A tool interrupted by the wall-clock limit.
    let model = Scripted::new().then(call("c1", "run_shell", json!({"command": "sleep 5"})));
    let budgets = Budgets {
        timeout: Some(Duration::from_millis(700)),
        ..Budgets::default()
    };
    let (status, more) = record_and_check(&model, &fx, &budgets, 8_000, &docs, None).await?;
    assert_eq!(status, Status::Timeout);
    seen.extend(more);

    let documented_kinds: BTreeSet<String> = docs
        .iter()
        .filter(|(_, d)| !d.generate)
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(seen, documented_kinds, "every documented kind was recorded");
    Ok(())
}

#[test]
fn every_documented_example_parses_as_its_kind() -> TestResult {
    let docs = documented()?;
    assert_eq!(docs.len(), 12, "{:?}", docs.keys());
    for (kind, doc) in &docs {
        let example = doc
            .example
            .as_deref()
            .ok_or_else(|| format!("`{kind}` has no example"))?;
        let raw: Value = serde_json::from_str(example)?;
        let event: TrajectoryEvent = serde_json::from_value(raw.clone())?;
        assert_eq!(event.kind(), kind);
        assert_eq!(serde_json::to_value(&event)?, raw, "`{kind}` round-trips");
        let undocumented: Vec<String> = keys(&raw).difference(&doc.fields).cloned().collect();
        assert!(undocumented.is_empty(), "`{kind}`: {undocumented:?}");
    }
    Ok(())
}

/// `repo-agent generate`'s trajectory: a blueprint, three files, a static
/// check that fails (a route the specification declares is missing), one
/// repair round through the agent loop, a verified result. Every line is
/// a documented kind with documented fields, and the steps' usage adds up
/// to the run's totals.
#[tokio::test]
async fn a_generation_trajectory_matches_the_documentation() -> TestResult {
    use agent::generate::{GenerateConfig, GenerateRequest, GenerateStatus};
    let docs = documented()?;
    let dir = tempfile::tempdir()?;
    let spec = dir.path().join("README.md");
    std::fs::write(
        &spec,
        "# Ping service\n\nListens on port 5000.\n\n## API\n\nGET /ping\n\nGET /version\n",
    )?;
    let out = dir.path().join("out");
    let blueprint = r#"{"project": "ping", "service": {"port": 5000, "endpoints": [{"method": "GET", "path": "/ping"}]},
        "files": [{"path": "app.py", "purpose": "The app."}, {"path": "requirements.txt", "purpose": "Requirements."},
                  {"path": "start.sh", "purpose": "Starts it.", "depends_on": ["app.py"]}],
        "start": {"command": "python app.py"}, "build_order": ["requirements.txt", "app.py", "start.sh"]}"#;
    let app = "from flask import Flask\napp = Flask(__name__)\n\n@app.get('/ping')\ndef ping():\n    return 'pong'\n";
    let text = |t: &str, p: u64, c: u64| ChatResponse::text(t).with_usage(TokenUsage::new(p, c));
    let model = Scripted::new()
        // The model's tokenizer finds the prompt longer than ours: it says
        // so, and the call is made again with the room it leaves.
        .then_error(LlmError::ContextLengthExceeded {
            message: "too long".into(),
            limit: Some(3_000),
            requested: Some(3_500),
        })
        // The first answer is refused (no JSON): the blueprint is asked again.
        .then(text("I will plan it.", 300, 5))
        .then(text(&format!("```json\n{blueprint}\n```"), 400, 120))
        // requirements.txt and start.sh follow from app.py's facts: no call.
        .then(text(&format!("```python\n{app}```"), 250, 60))
        .then(call(
            "r1",
            "edit_file",
            json!({"path": out.join("app.py"), "old_text": "    return 'pong'\n", "new_text": "    return 'pong'\n\n@app.get('/version')\ndef version():\n    return '1'\n"}),
        ))
        .then(call("r2", "finish", json!({"summary": "added GET /version"})));
    let mut config = GenerateConfig {
        dynamic_checks: false,
        max_iterations: 2,
        isolation: sandbox::Isolation::Process,
        ..GenerateConfig::default()
    };
    // A small window: every answer's room is what the prompt leaves.
    config.budgets.context_window = 3_000;
    let path = dir.path().join("generate.jsonl");
    let mut trajectory = Trajectory::to_file(&path)?;
    // A reference application: its routes module is offered for app.py.
    let reference = dir.path().join("reference");
    std::fs::create_dir_all(&reference)?;
    std::fs::write(
        reference.join("app.py"),
        "from flask import Flask\napp = Flask(__name__)\n\n@app.get('/ping')\ndef ping_handler():\n    return 'pong'\n",
    )?;
    let mut request = GenerateRequest::new(&spec, &out);
    request.references.push(reference);
    let report =
        agent::generate::generate(&model, &request, &config, &mut trajectory, &mut |_| {}).await?;
    let summary = &report.summary;
    assert_eq!(
        summary.status,
        GenerateStatus::Verified,
        "{:#?}",
        report.checks
    );
    assert_eq!(summary.rounds.len(), 2);
    assert!(
        summary.rounds[0].failed[0].contains("GET /version"),
        "{:?}",
        summary.rounds
    );
    assert_eq!(model.remaining(), 0);
    assert_eq!(summary.model_calls, 6);
    let (first, retry) = (
        model.requests()[0].max_tokens,
        model.requests()[1].max_tokens,
    );
    assert!(
        retry < first,
        "the retry asks for less: {first:?} then {retry:?}"
    );
    assert_eq!(
        summary.total_tokens,
        300 + 5 + 400 + 120 + 250 + 60 + 2 * 110
    );

    let read = Trajectory::read(&path)?;
    assert_eq!(read, trajectory.events());
    assert!(matches!(
        read.first(),
        Some(TrajectoryEvent::GenerateStart(_))
    ));
    assert!(matches!(read.last(), Some(TrajectoryEvent::Generated(s)) if s == summary));
    let mut seen = BTreeSet::new();
    let mut step_tokens = 0;
    for (line, event) in std::fs::read_to_string(&path)?.lines().zip(&read) {
        let raw: Value = serde_json::from_str(line)?;
        assert_eq!(serde_json::to_value(event)?, raw);
        let kind = raw["type"].as_str().unwrap_or_default().to_owned();
        let doc = docs
            .get(&kind)
            .ok_or_else(|| format!("kind `{kind}` is not documented"))?;
        let undocumented: Vec<String> = keys(&raw).difference(&doc.fields).cloned().collect();
        assert!(undocumented.is_empty(), "`{kind}`: {undocumented:?}");
        if let TrajectoryEvent::Step(step) = event {
            step_tokens += step.usage.total_tokens();
        }
        seen.insert(kind);
    }
    assert_eq!(step_tokens, summary.total_tokens);
    let counter = llm::TokenCounter::new(llm::Encoding::default())?;
    for request in model.requests().iter().filter(|r| r.tools.is_empty()) {
        let prompt: usize = request
            .messages
            .iter()
            .filter_map(|m| m.text())
            .map(|t| counter.count(t))
            .sum();
        let max = request.max_tokens.unwrap_or(u32::MAX) as usize;
        assert!(
            prompt + max <= 3_000,
            "prompt {prompt} + answer {max} overflow the window"
        );
    }
    // The scaffold, from the facts of app.py: Flask's runner on the
    // specification's port, and the pinned import.
    let start = std::fs::read_to_string(out.join("start.sh"))?;
    assert!(
        start.contains("exec python3 -m flask --app app:app run --host 0.0.0.0 --port 5000"),
        "{start}"
    );
    let requirements = std::fs::read_to_string(out.join("requirements.txt"))?;
    assert!(requirements.ends_with("\nFlask==3.0.3\n"), "{requirements}");
    // Retrieval: one step per file; app.py's prompt held the reference's code.
    assert_eq!(report.retrieved.len(), 1, "{:?}", report.retrieved);
    assert!(report.retrieved[0].1.ends_with("reference/app.py"));
    let app_prompt = model.requests()[3].messages[1]
        .text()
        .unwrap_or("")
        .to_owned();
    assert!(
        app_prompt.contains("# Reference code") && app_prompt.contains("def ping_handler"),
        "{app_prompt}"
    );
    for kind in [
        "generate_start",
        "step",
        "generated",
        "start",
        "request",
        "model",
        "tool",
        "summary",
    ] {
        assert!(seen.contains(kind), "{kind} not recorded: {seen:?}");
    }
    Ok(())
}

//! Whole episodes with a scripted model, against the real graph and sandbox.

mod common;

use std::time::Duration;

use agent::trajectory::ContextExceededEvent;
use agent::{Budgets, Status, Trajectory, TrajectoryEvent};
use llm::{ChatResponse, LlmError, Message, Scripted, TokenUsage, ToolCall};
use serde_json::{Value, json};

use common::{Fixture, config};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn call(id: &str, name: &str, args: Value, prompt: u64) -> ChatResponse {
    ChatResponse::with_tool_calls(vec![ToolCall::new(id, name, args)])
        .with_usage(TokenUsage::new(prompt, 10))
}

const SCRIPT: &str = "import sys\nfrom textstats.core import WordCounter\nfrom textstats.io import read_text, write_csv\n\ncounter = WordCounter(lowercase=True).feed(read_text(sys.argv[1]))\nwrite_csv(counter.top(3), sys.argv[2])\nprint('wrote', counter.total(), 'words')\n";

fn read_trajectory(path: &std::path::Path) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<Vec<Value>, _>>()?)
}

#[tokio::test]
async fn scripted_episode_uses_the_repository_and_writes_the_output() -> TestResult {
    let fx = Fixture::new()?;
    let task = fx.task();
    // Scripts go in the working directory (the repository): the file
    // tools reach only the task's roots.
    let script = fx.repo().join("count.py");
    let output = fx.out().join("output.csv");
    let model = Scripted::new()
        .then(call(
            "c1",
            "search_code",
            json!({"query": "count words"}),
            1000,
        ))
        .then(call(
            "c2",
            "view_code",
            json!({"target": "textstats.core.WordCounter", "query": "top"}),
            1200,
        ))
        .then(call(
            "c3",
            "write_file",
            json!({"path": script, "content": SCRIPT}),
            1400,
        ))
        .then(call(
            "c4",
            "run_python",
            json!({"path": script, "args": [fx.input(), output]}),
            1600,
        ))
        .then(call("c5", "view_file", json!({"path": output}), 1800))
        .then(call(
            "c6",
            "finish",
            json!({"summary": "top words in output.csv"}),
            2000,
        ));
    let trajectory_path = fx.dir.path().join("traj.jsonl");
    let mut trajectory = Trajectory::to_file(&trajectory_path)?;
    let mut seen = Vec::new();
    let summary = agent::run(&model, &task, &config(), &mut trajectory, &mut |p| {
        seen.push((p.turn, p.tool.clone()))
    })
    .await?;

    assert_eq!(summary.status, Status::Finished);
    assert_eq!(summary.turns, 6);
    assert_eq!(summary.prompt_tokens, 9000);
    assert_eq!(summary.completion_tokens, 60);
    assert_eq!(summary.total_tokens, 9060);
    assert_eq!(summary.outputs, std::slice::from_ref(&output));
    assert_eq!(summary.message.as_deref(), Some("top words in output.csv"));
    let csv = std::fs::read_to_string(&output)?;
    assert_eq!(
        csv.lines().collect::<Vec<_>>(),
        ["word,count", "the,5", "a,2", "cat,2"]
    );
    assert!(seen.contains(&(4, Some("run_python".to_string()))));

    // The first request holds the system prompt, the task and the context.
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    let first = &requests[0];
    assert!(first.tools.iter().any(|t| t.name == "dependency_path"));
    let task_text = first.messages[1].text().unwrap_or("");
    assert!(task_text.contains(&fx.input().display().to_string()));
    assert!(task_text.contains("class WordCounter"), "{task_text}");
    // Observations reach the model.
    let last = &requests[5].messages;
    assert!(
        matches!(&last[last.len() - 1], Message::Tool { content, .. } if content.contains("the,5"))
    );
    assert!(requests[1].messages.iter().any(|m| {
        m.text()
            .is_some_and(|t| t.contains("textstats.core.WordCounter (class)"))
    }));

    let events = read_trajectory(&trajectory_path)?;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"start"));
    assert_eq!(kinds.iter().filter(|k| **k == "model").count(), 6);
    assert_eq!(kinds.iter().filter(|k| **k == "tool").count(), 6);
    assert_eq!(kinds.last(), Some(&"summary"));
    let run = events
        .iter()
        .find(|e| e["name"] == "run_python")
        .ok_or("no run_python")?;
    assert!(
        run["observation"]
            .as_str()
            .is_some_and(|o| o.contains("wrote 21 words")),
        "{run}"
    );
    let end = events.last().ok_or("empty")?;
    assert_eq!(end["status"], "finished");
    assert_eq!(end["total_tokens"], 9060);
    assert_eq!(
        events
            .iter()
            .find(|e| e["type"] == "model")
            .ok_or("no model")?["usage"]["prompt_tokens"],
        1000
    );
    Ok(())
}

#[tokio::test]
async fn a_failing_script_shows_its_traceback_and_a_fix_succeeds() -> TestResult {
    let fx = Fixture::new()?;
    // Scripts go in the working directory (the repository): the file
    // tools reach only the task's roots.
    let script = fx.repo().join("count.py");
    let output = fx.out().join("output.csv");
    let broken = SCRIPT.replace("WordCounter(lowercase", "WordCountr(lowercase");
    let model = Scripted::new()
        .then(call(
            "c1",
            "write_file",
            json!({"path": script, "content": broken}),
            100,
        ))
        .then(call(
            "c2",
            "run_python",
            json!({"path": script, "args": [fx.input(), output]}),
            100,
        ))
        .then(call(
            "c3",
            "edit_file",
            json!({"path": script, "old_text": "WordCountr(", "new_text": "WordCounter("}),
            100,
        ))
        .then(call(
            "c4",
            "run_python",
            json!({"path": script, "args": [fx.input(), output]}),
            100,
        ))
        .then(call("c5", "finish", json!({"summary": "fixed"}), 100));
    let mut trajectory = Trajectory::in_memory();
    let summary = agent::run(&model, &fx.task(), &config(), &mut trajectory, &mut |_| {}).await?;
    assert_eq!(summary.status, Status::Finished);
    let requests = model.requests();
    let after_failure = requests[2]
        .messages
        .last()
        .and_then(Message::text)
        .unwrap_or("");
    assert!(after_failure.contains("exit code 1"), "{after_failure}");
    assert!(
        after_failure.contains("Traceback (most recent call last)"),
        "{after_failure}"
    );
    assert!(
        after_failure.contains("NameError: name 'WordCountr' is not defined"),
        "{after_failure}"
    );
    let after_fix = requests[4]
        .messages
        .last()
        .and_then(Message::text)
        .unwrap_or("");
    assert!(
        after_fix.contains("exit code 0") && after_fix.contains("wrote 21 words"),
        "{after_fix}"
    );
    assert!(std::fs::read_to_string(&output)?.contains("the,5"));
    Ok(())
}

fn endless(n: usize, prompt: u64) -> Scripted {
    let mut s = Scripted::new();
    for i in 0..n {
        s = s.then(call(
            &format!("c{i}"),
            "search_code",
            // Each call its own: the same call answered alike three times
            // would end the episode as stuck before any budget.
            json!({"query": format!("words {i}")}),
            prompt,
        ));
    }
    s
}

/// The same call answered alike in three turns ends the episode as
/// stuck (GitTaskBench Eparse_01, run 9: one call sent eight times, each
/// answered with the same help text and the repeat note). Without the
/// limit the same replies run to the turn budget; three identical calls
/// in one reply are one turn, not a loop.
#[tokio::test]
async fn a_call_repeated_with_the_same_result_ends_the_episode_as_stuck() -> TestResult {
    let fx = Fixture::new()?;
    let prepared = agent::prepare(&fx.task(), &config()).await?;
    let search = |id: &str| ToolCall::new(id, "search_code", json!({"query": "words"}));
    let same = |n: usize| {
        (0..n).fold(Scripted::new(), |s, i| {
            s.then(
                ChatResponse::with_tool_calls(vec![search(&format!("c{i}"))])
                    .with_usage(TokenUsage::new(100, 10)),
            )
        })
    };
    let budgets = Budgets {
        max_turns: 8,
        ..Budgets::default()
    };
    let mut t = Trajectory::in_memory();
    let s = agent::run_episode(
        &same(8),
        &prepared,
        &fx.task(),
        &budgets,
        &mut t,
        &mut |_| {},
    )
    .await?;
    assert_eq!((s.status, s.turns), (Status::Stuck, 3));
    assert!(
        s.message
            .as_deref()
            .is_some_and(|m| m.contains("`search_code` was called 3 times")),
        "{:?}",
        s.message
    );
    assert_complete(&t, "stuck");
    assert_eq!(Status::Stuck.exit_code(), 5);

    let budgets = Budgets {
        max_turns: 5,
        stuck_after: None,
        ..Budgets::default()
    };
    let mut t = Trajectory::in_memory();
    let s = agent::run_episode(
        &same(8),
        &prepared,
        &fx.task(),
        &budgets,
        &mut t,
        &mut |_| {},
    )
    .await?;
    assert_eq!((s.status, s.turns), (Status::MaxTurns, 5));

    let three_in_one = ChatResponse::with_tool_calls(vec![search("a"), search("b"), search("c")])
        .with_usage(TokenUsage::new(100, 10));
    let model = Scripted::new()
        .then(three_in_one)
        .then(call("d", "search_code", json!({"query": "words"}), 100))
        .then(call("e", "search_code", json!({"query": "other"}), 100))
        .then(call("f", "search_code", json!({"query": "more"}), 100));
    let budgets = Budgets {
        max_turns: 4,
        ..Budgets::default()
    };
    let mut t = Trajectory::in_memory();
    let s =
        agent::run_episode(&model, &prepared, &fx.task(), &budgets, &mut t, &mut |_| {}).await?;
    assert_eq!(
        (s.status, s.turns),
        (Status::MaxTurns, 4),
        "{:?}",
        s.message
    );
    Ok(())
}

fn assert_complete(trajectory: &Trajectory, status: &str) {
    let events = trajectory.events();
    assert!(matches!(events.first(), Some(TrajectoryEvent::Start(_))));
    let end = match events.last() {
        Some(TrajectoryEvent::Summary(summary)) => serde_json::to_value(summary.status).ok(),
        _ => None,
    };
    assert_eq!(end, Some(json!(status)), "the last event is the summary");
}

#[tokio::test]
async fn budgets_end_with_the_right_status() -> TestResult {
    let fx = Fixture::new()?;
    let base = config();
    let prepared = agent::prepare(&fx.task(), &base).await?;

    let model = endless(10, 100);
    let budgets = Budgets {
        max_turns: 3,
        ..Budgets::default()
    };
    let mut t = Trajectory::in_memory();
    let s =
        agent::run_episode(&model, &prepared, &fx.task(), &budgets, &mut t, &mut |_| {}).await?;
    assert_eq!(
        (s.status, s.turns, s.total_tokens),
        (Status::MaxTurns, 3, 330)
    );
    assert_complete(&t, "max_turns");

    let model = endless(10, 1000);
    let budgets = Budgets {
        max_tokens: Some(2500),
        ..Budgets::default()
    };
    let mut t = Trajectory::in_memory();
    let s =
        agent::run_episode(&model, &prepared, &fx.task(), &budgets, &mut t, &mut |_| {}).await?;
    assert_eq!(
        (s.status, s.turns, s.total_tokens),
        (Status::MaxTokens, 3, 3030)
    );
    assert_complete(&t, "max_tokens");

    // The wall-clock limit interrupts a long tool run.
    let model = Scripted::new()
        .then(call("c1", "run_shell", json!({"command": "sleep 5"}), 10))
        .then(call("c2", "finish", json!({"summary": "never"}), 10));
    let budgets = Budgets {
        timeout: Some(Duration::from_millis(700)),
        ..Budgets::default()
    };
    let mut t = Trajectory::in_memory();
    let s =
        agent::run_episode(&model, &prepared, &fx.task(), &budgets, &mut t, &mut |_| {}).await?;
    assert_eq!((s.status, s.turns), (Status::Timeout, 1));
    assert!(s.wall_ms < 4000, "{}", s.wall_ms);
    assert_complete(&t, "timeout");

    // A model failure that retrying cannot fix.
    let model = endless(1, 10);
    let mut t = Trajectory::in_memory();
    let s = agent::run_episode(
        &model,
        &prepared,
        &fx.task(),
        &Budgets::default(),
        &mut t,
        &mut |_| {},
    )
    .await?;
    assert_eq!((s.status, s.turns), (Status::Error, 1));
    assert!(s.message.is_some_and(|m| m.contains("script")));
    assert_complete(&t, "error");
    Ok(())
}

#[tokio::test]
async fn context_overflow_shrinks_and_retries_and_text_turns_are_nudged() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let model = Scripted::new()
        .then(call(
            "c1",
            "view_code",
            json!({"target": "textstats/core.py"}),
            100,
        ))
        .then_error(LlmError::ContextLengthExceeded {
            message: "too long".into(),
            limit: Some(10),
            requested: Some(20),
        })
        .then(ChatResponse::text("I will now finish.").with_usage(TokenUsage::new(100, 5)))
        .then(call("c2", "finish", json!({"summary": "done"}), 100));
    let mut t = Trajectory::in_memory();
    let s = agent::run(&model, &fx.task(), &config(), &mut t, &mut |_| {}).await?;
    assert_eq!(
        (s.status, s.turns),
        (Status::Finished, 3),
        "{:?}",
        s.message
    );
    assert!(t.events().iter().any(|e| matches!(
        e,
        TrajectoryEvent::ContextExceeded(ContextExceededEvent { shrunk: true, .. })
    )));
    let requests_before = model.requests();
    let retried = requests_before[2]
        .messages
        .last()
        .and_then(Message::text)
        .unwrap_or("");
    assert!(retried.starts_with("[digest]"), "{retried}");
    let requests = model.requests();
    let nudge = requests[3]
        .messages
        .last()
        .and_then(Message::text)
        .unwrap_or("");
    assert!(nudge.contains("call `finish`"), "{nudge}");
    Ok(())
}

#[tokio::test]
async fn without_hierarchical_analysis_the_context_is_the_readme_only() -> TestResult {
    let fx = Fixture::new()?;
    let full = agent::prepare(&fx.task(), &config()).await?;
    assert!(full.context.contains("# textstats") && full.context.contains("class WordCounter"));
    let mut cfg = config();
    cfg.hierarchical_analysis = false;
    let readme = agent::prepare(&fx.task(), &cfg).await?;
    assert!(readme.context.contains("# textstats"), "{}", readme.context);
    assert!(
        !readme.context.contains("class WordCounter"),
        "{}",
        readme.context
    );
    Ok(())
}

#[tokio::test]
async fn older_observations_are_digested_near_the_context_window() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let mut cfg = config();
    cfg.context_budget = 500;
    let prepared = agent::prepare(&fx.task(), &cfg).await?;
    let mut model = Scripted::new();
    for i in 0..4 {
        model = model.then(call(
            &format!("c{i}"),
            "run_python",
            json!({"code": format!("for i in range(1500): print('step {i}', i)")}),
            10,
        ));
    }
    let model = model.then(call("c9", "finish", json!({"summary": "done"}), 10));
    let budgets = Budgets {
        context_window: 4_000,
        ..Budgets::default()
    };
    let mut t = Trajectory::in_memory();
    let s =
        agent::run_episode(&model, &prepared, &fx.task(), &budgets, &mut t, &mut |_| {}).await?;
    assert_eq!(s.status, Status::Finished);
    assert!(
        t.events()
            .iter()
            .any(|e| matches!(e, TrajectoryEvent::Digest(_)))
    );
    let requests = model.requests();
    let last = &requests[4].messages;
    let tools: Vec<&str> = last
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .filter_map(Message::text)
        .collect();
    assert_eq!(tools.len(), 4);
    assert!(
        tools[0].starts_with("[digest] [exit code 0"),
        "{}",
        tools[0]
    );
    assert!(
        tools[3].contains("step 3 1499"),
        "the newest observation stays whole"
    );
    // The tool calls themselves stay in the conversation.
    let calls = last
        .iter()
        .filter(|m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()))
        .count();
    assert_eq!(calls, 4);
    Ok(())
}

/// A model that takes longer than the episode may.
struct Slow;

#[async_trait::async_trait]
impl llm::ChatModel for Slow {
    async fn complete(&self, _request: &llm::ChatRequest) -> Result<ChatResponse, LlmError> {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(ChatResponse::text("too late"))
    }

    fn model_name(&self) -> &str {
        "slow"
    }
}

#[tokio::test]
async fn the_wall_clock_limit_interrupts_a_slow_model() -> TestResult {
    let fx = Fixture::new()?;
    let prepared = agent::prepare(&fx.task(), &config()).await?;
    let budgets = Budgets {
        timeout: Some(Duration::from_millis(300)),
        ..Budgets::default()
    };
    let mut t = Trajectory::in_memory();
    let s = agent::run_episode(&Slow, &prepared, &fx.task(), &budgets, &mut t, &mut |_| {}).await?;
    assert_eq!((s.status, s.turns), (Status::Timeout, 0));
    assert!(s.wall_ms < 5_000, "{}", s.wall_ms);
    assert_complete(&t, "timeout");
    Ok(())
}

/// A model that answers with megabytes of text gets it cut before the
/// history and the trajectory keep it, and is told so.
#[tokio::test]
async fn an_oversized_reply_is_cut_before_it_enters_the_history() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    // Multibyte, so the cut must fall between characters.
    let huge = "wörd ".repeat(400_000);
    let model = Scripted::new()
        .then(ChatResponse::text(huge.clone()).with_usage(TokenUsage::new(100, 10)))
        .then(call("f", "finish", json!({"summary": "done"}), 100));
    let mut trajectory = Trajectory::in_memory();
    let summary = agent::run(&model, &fx.task(), &config(), &mut trajectory, &mut |_| {}).await?;
    assert_eq!(summary.status, Status::Finished);
    let requests = model.requests();
    let sent: usize = requests[1]
        .messages
        .iter()
        .filter_map(Message::text)
        .map(str::len)
        .sum();
    assert!(sent < 100_000, "the second request carried {sent} bytes");
    let replayed = requests[1]
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .filter_map(Message::text)
        .next()
        .unwrap_or("");
    assert!(
        replayed.contains("[reply cut at 16000 of 2000000 characters"),
        "{}",
        replayed.chars().rev().take(200).collect::<String>()
    );
    let recorded = trajectory.events().iter().find_map(|e| match e {
        TrajectoryEvent::Model(m) => m.content.clone(),
        _ => None,
    });
    // The cap counts characters: 16,000 of them and the note.
    assert!(recorded.is_some_and(|c| c.chars().count() < 16_200));
    Ok(())
}

/// A small model writes a script, runs it and calls `finish` in one reply,
/// before it has seen whether the run worked, or finishes with nothing
/// written (the embedded model's first real episode did both, and the run
/// exited 0 with no output). `finish` in a reply with other calls is
/// refused while the other calls run; the first `finish` with no output
/// file is refused too; each refusal says what to do, and the episode goes
/// on until a lone `finish` with the outputs written.
#[tokio::test]
async fn finish_waits_for_the_results_of_its_reply_and_for_an_output() -> TestResult {
    let fx = Fixture::new()?;
    let script = fx.repo().join("count.py");
    let output = fx.out().join("output.csv");
    let both = ChatResponse::with_tool_calls(vec![
        ToolCall::new(
            "w",
            "write_file",
            json!({"path": script, "content": SCRIPT}),
        ),
        ToolCall::new("f1", "finish", json!({"summary": "too early"})),
    ])
    .with_usage(TokenUsage::new(100, 10));
    let model = Scripted::new()
        .then(both)
        .then(call("f2", "finish", json!({"summary": "nothing yet"}), 100))
        .then(call(
            "r",
            "run_python",
            json!({"path": script, "args": [fx.input(), output]}),
            100,
        ))
        .then(call("f3", "finish", json!({"summary": "written"}), 100));
    let mut trajectory = Trajectory::in_memory();
    let summary = agent::run(&model, &fx.task(), &config(), &mut trajectory, &mut |_| {}).await?;
    assert_eq!(
        (summary.status, summary.turns),
        (Status::Finished, 4),
        "{:?}",
        summary.message
    );
    assert_eq!(summary.message.as_deref(), Some("written"));
    assert_eq!(summary.outputs, std::slice::from_ref(&output));
    // The script of the first reply was written although its `finish` was
    // refused.
    assert!(script.is_file());
    let requests = model.requests();
    let answer = |turn: usize| match requests[turn].messages.last() {
        Some(Message::Tool { content, .. }) => content.clone(),
        other => format!("not a tool answer: {other:?}"),
    };
    assert!(
        answer(1).contains("must be the only call of its reply"),
        "{}",
        answer(1)
    );
    assert!(
        answer(2).contains("holds no file named `output*`")
            && answer(2).contains(&fx.out().display().to_string()),
        "{}",
        answer(2)
    );
    let refusals = trajectory
        .events()
        .iter()
        .filter(|e| matches!(e, TrajectoryEvent::Tool(t) if t.name == "finish"))
        .count();
    assert_eq!(refusals, 3, "every finish call is recorded");
    Ok(())
}

/// A task that cannot be done still ends: the second `finish` without an
/// output is accepted (and `repo-agent run` reports it with its own exit
/// code, see `run_cli.rs`).
#[tokio::test]
async fn a_second_finish_without_outputs_ends_the_episode() -> TestResult {
    let fx = Fixture::new()?;
    let model = Scripted::new()
        .then(call("f1", "finish", json!({"summary": "cannot"}), 100))
        .then(call(
            "f2",
            "finish",
            json!({"summary": "really cannot"}),
            100,
        ));
    let mut trajectory = Trajectory::in_memory();
    let summary = agent::run(&model, &fx.task(), &config(), &mut trajectory, &mut |_| {}).await?;
    assert_eq!((summary.status, summary.turns), (Status::Finished, 2));
    assert_eq!(summary.message.as_deref(), Some("really cannot"));
    assert!(summary.outputs.is_empty());
    Ok(())
}

/// The embedded model's first episode: README usage copied verbatim
/// (`read_text("input.txt")`), a `FileNotFoundError`, and the same reply
/// three turns running. The run's observation names the task's input by
/// its absolute path, and a call that repeats an earlier one with the same
/// result says so, and the request after it samples instead of decoding
/// greedily, once.
#[tokio::test]
async fn a_relative_input_path_gets_a_hint_and_a_repeated_failure_is_named() -> TestResult {
    let fx = Fixture::new()?;
    // Written to a file and run by path: code sent in `code` has its
    // relative input literals made absolute before it runs (tools.rs).
    let code = "from textstats.io import read_text\nprint(read_text('input.txt'))\n";
    let script = fx.out().join("read.py").display().to_string();
    let run = |id: &str| call(id, "run_python", json!({ "path": script }), 100);
    let model = Scripted::new()
        .then(call(
            "w1",
            "write_file",
            json!({"path": script, "content": code}),
            100,
        ))
        .then(run("r1"))
        .then(run("r2"))
        .then(call("f1", "finish", json!({"summary": "gave up"}), 100))
        .then(call("f2", "finish", json!({"summary": "gave up"}), 100));
    let mut trajectory = Trajectory::in_memory();
    let summary = agent::run(&model, &fx.task(), &config(), &mut trajectory, &mut |_| {}).await?;
    assert_eq!(summary.status, Status::Finished);
    let observations: Vec<String> = trajectory
        .events()
        .iter()
        .filter_map(|e| match e {
            TrajectoryEvent::Tool(t) if t.name == "run_python" => serde_json::to_value(&t.outcome)
                .ok()?["observation"]
                .as_str()
                .map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(observations.len(), 2);
    let input = fx.input().canonicalize()?;
    for o in &observations {
        assert!(o.contains("FileNotFoundError"), "{o}");
        assert!(
            o.contains("Hint: `input.txt` is not in the working directory")
                && o.contains(&format!("the task's input is {}", input.display())),
            "{o}"
        );
    }
    assert!(
        !observations[0].contains("same call"),
        "{}",
        observations[0]
    );
    assert!(
        observations[1].contains("this is the same call as in turn 2, with the same result"),
        "{}",
        observations[1]
    );
    let temperatures: Vec<Option<f32>> = model.requests().iter().map(|r| r.temperature).collect();
    assert_eq!(
        temperatures,
        [None, None, None, Some(agent::REPEAT_TEMPERATURE), None],
        "only the request after the repeat samples"
    );
    let recorded: Vec<Option<f32>> = trajectory
        .events()
        .iter()
        .filter_map(|e| match e {
            TrajectoryEvent::Request(r) => Some(r.temperature),
            _ => None,
        })
        .collect();
    assert_eq!(
        recorded, temperatures,
        "the trajectory keeps each request's"
    );
    Ok(())
}

/// One reply that views the same file four times puts its text into the
/// context once; the other three observations name the call that got it.
#[tokio::test]
async fn a_reply_viewing_one_file_twice_gets_its_text_once() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let view = |id: &str, query: &str| {
        ToolCall::new(
            id,
            "view_code",
            json!({"target": "textstats/core.py", "query": query}),
        )
    };
    let model = Scripted::new()
        .then(
            ChatResponse::with_tool_calls(vec![view("v1", "top"), view("v2", "feed")])
                .with_usage(TokenUsage::new(100, 10)),
        )
        .then(call("f", "finish", json!({"summary": "done"}), 100));
    let mut trajectory = Trajectory::in_memory();
    agent::run(&model, &fx.task(), &config(), &mut trajectory, &mut |_| {}).await?;
    let sent = &model.requests()[1].messages;
    let answers: Vec<&str> = sent
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .filter_map(Message::text)
        .collect();
    assert_eq!(answers.len(), 2);
    assert!(answers[0].contains("class WordCounter"), "{}", answers[0]);
    assert!(
        answers[1].starts_with("The same result as call `v1` of this reply"),
        "{}",
        answers[1]
    );
    Ok(())
}

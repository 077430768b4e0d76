//! A reply with thousands of tool calls runs at most the per-reply cap of
//! them; the model is told the rest did not run, every call left in the
//! conversation has its answer, the trajectory counts what was not run, and
//! the episode goes on.

mod common;

use agent::{Budgets, MAX_TOOL_CALLS_PER_REPLY, Status, Trajectory, TrajectoryEvent};
use llm::{ChatResponse, Message, Scripted, TokenUsage, ToolCall};
use serde_json::json;

use common::{Fixture, config};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Files named `planted_*.txt` in `dir`: the side effect of each call run.
fn planted(dir: &std::path::Path) -> std::io::Result<usize> {
    Ok(std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("planted_"))
        .count())
}

/// Runs `model` on a fresh fixture (its output already written) within
/// `budgets`.
async fn episode(
    model: &Scripted,
    budgets: &Budgets,
) -> Result<(Fixture, Trajectory, agent::trajectory::Summary), Box<dyn std::error::Error>> {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let prepared = agent::prepare(&fx.task(), &config()).await?;
    let mut trajectory = Trajectory::in_memory();
    let summary = agent::run_episode(
        model,
        &prepared,
        &fx.task(),
        budgets,
        &mut trajectory,
        &mut |_| {},
    )
    .await?;
    Ok((fx, trajectory, summary))
}

/// [`episode`], which must finish.
async fn finished_episode(model: &Scripted, budgets: &Budgets) -> TestResult {
    let (_, _, summary) = episode(model, budgets).await?;
    assert_eq!(summary.status, Status::Finished);
    Ok(())
}

/// 3,000 `write_file` calls in one reply, then `finish`.
async fn flood(
    budgets: &Budgets,
) -> Result<(Fixture, Scripted, Trajectory, Status), Box<dyn std::error::Error>> {
    let calls: Vec<ToolCall> = (0..3_000)
        .map(|i| {
            ToolCall::new(
                format!("w{i}"),
                "write_file",
                json!({"path": format!("planted_{i}.txt"), "content": "x"}),
            )
        })
        .collect();
    let model = Scripted::new()
        .then(ChatResponse::with_tool_calls(calls).with_usage(TokenUsage::new(100, 30_000)))
        .then_tool_call("finish", json!({"summary": "done"}));
    let (fx, trajectory, summary) = episode(&model, budgets).await?;
    assert_eq!(summary.turns, 2, "the episode went on to its next turn");
    Ok((fx, model, trajectory, summary.status))
}

#[tokio::test]
async fn a_reply_of_3000_tool_calls_runs_at_most_the_cap() -> TestResult {
    let (fx, model, trajectory, status) = flood(&Budgets::default()).await?;
    assert_eq!(status, Status::Finished);
    let cap = MAX_TOOL_CALLS_PER_REPLY;
    assert_eq!(planted(&fx.repo())?, cap, "files written by the calls run");

    // The trajectory keeps every call the model made and counts those
    // not run; one `tool` line per call run.
    let events = trajectory.events();
    let first = events
        .iter()
        .find_map(|e| match e {
            TrajectoryEvent::Model(m) if m.turn == 1 => Some(m),
            _ => None,
        })
        .ok_or("no model line")?;
    assert_eq!(first.tool_calls.len(), 3_000);
    assert_eq!(first.tool_calls_not_run, 3_000 - cap);
    let tools = events
        .iter()
        .filter(|e| matches!(e, TrajectoryEvent::Tool(t) if t.turn == 1))
        .count();
    assert_eq!(tools, cap);

    // The conversation the model gets back is well formed: the reply with
    // the calls that ran, one answer for each, then the notice.
    let requests = model.requests();
    let second = &requests.get(1).ok_or("no second request")?.messages;
    let reply = second
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
        .ok_or("no reply")?;
    let Some(Message::Assistant { tool_calls, .. }) = second.get(reply) else {
        return Err("no reply".into());
    };
    assert_eq!(tool_calls.len(), cap);
    let after = second.get(reply + 1..).unwrap_or_default();
    let answered: Vec<&str> = after
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let made: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(answered, made, "every call in the conversation is answered");
    let notice = after.last().and_then(Message::text).unwrap_or_default();
    assert!(
        matches!(after.last(), Some(Message::User { .. }))
            && notice.contains(&format!("other {} were not run", 3_000 - cap)),
        "{notice}"
    );
    Ok(())
}

#[tokio::test]
async fn the_cap_is_a_budget() -> TestResult {
    let budgets = Budgets {
        max_tool_calls_per_reply: 3,
        ..Budgets::default()
    };
    let (fx, _, trajectory, status) = flood(&budgets).await?;
    assert_eq!(status, Status::Finished);
    assert_eq!(planted(&fx.repo())?, 3);
    let counted = trajectory.events().iter().find_map(|e| match e {
        TrajectoryEvent::Model(m) if m.turn == 1 => Some(m.tool_calls_not_run),
        _ => None,
    });
    assert_eq!(counted, Some(2_997));
    Ok(())
}

/// With one call per reply the model is asked for one (an in-process
/// model then stops decoding after it); with more, nothing is asked.
#[tokio::test]
async fn one_call_per_reply_is_asked_of_the_model() -> TestResult {
    for (cap, asked) in [(1, Some(false)), (MAX_TOOL_CALLS_PER_REPLY, None)] {
        let model = Scripted::new().then_tool_call("finish", json!({"summary": "done"}));
        let budgets = Budgets {
            max_tool_calls_per_reply: cap,
            ..Budgets::default()
        };
        finished_episode(&model, &budgets).await?;
        let requests = model.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].parallel_tool_calls, asked, "cap {cap}");
    }
    Ok(())
}

/// Four replies in a row that only look are followed by a message telling
/// the model to write and run a script; one that acts starts the count
/// again (measured with the embedded model: ten turns of searching and
/// no script, GitTaskBench Eparse_01).
#[tokio::test]
async fn replies_that_only_look_are_told_to_act() -> TestResult {
    let search = |q: &str| ("search_code", json!({"query": q}));
    let steps = [
        search("a"),
        search("b"),
        ("run_python", json!({"code": "print(1)"})),
        search("c"),
        search("d"),
        search("e"),
        search("f"),
        search("g"),
        ("finish", json!({"summary": "done"})),
    ];
    let mut model = Scripted::new();
    for (name, arguments) in steps {
        model = model.then_tool_call(name, arguments);
    }
    finished_episode(&model, &Budgets::default()).await?;
    // The request of each turn: does its conversation end with the nudge?
    let nudged: Vec<bool> = model
        .requests()
        .iter()
        .map(|r| {
            matches!(r.messages.last(), Some(Message::User { content })
                if content.contains("without running anything"))
        })
        .collect();
    assert_eq!(
        nudged,
        [false, false, false, false, false, false, false, true, false],
        "only after the fourth look-only reply in a row"
    );
    Ok(())
}

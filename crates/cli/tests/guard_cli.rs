//! The trajectory guard of `repo-agent run`: an agent killed mid-run
//! still leaves a trajectory that ends with a summary (status `killed`,
//! written by the guard), and a normal run has exactly one summary, its
//! own, with no guard left behind.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agent::{Status, Trajectory, TrajectoryEvent};
use serde_json::{Value, json};

use common::cli::{completion, run_on_fixture, serve};
use common::{Fixture, alive_with};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A scripted server that answers `answers` in order and, at request
/// number `hold_at` (1-based), says so on the channel and never answers:
/// the agent is then waiting for the model, mid-run.
fn serve_then_hold(
    answers: Vec<Value>,
    hold_at: usize,
) -> std::io::Result<(String, mpsc::Receiver<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut answers = answers.into_iter();
        let mut held = Vec::new();
        for (n, stream) in listener.incoming().enumerate() {
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
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            if n + 1 == hold_at {
                let _ = tx.send(());
                held.push(stream);
                continue;
            }
            let answer = answers.next().map(|a| a.to_string()).unwrap_or_default();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    Ok((url, rx))
}

fn last_line(path: &std::path::Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.lines().last().map(str::to_owned))
        .unwrap_or_default()
}

/// The killed summary at the end of `path`, once the guard wrote it
/// (waits at most 30 seconds).
fn wait_for_killed(path: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !last_line(path).contains("\"killed\"") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A terminal's Ctrl-C or a supervisor's SIGTERM goes to the agent's whole
/// process group, the guard included: it ends the agent, and the guard
/// still writes the summary.
#[test]
fn a_signal_to_the_whole_group_ends_the_agent_and_not_its_guard() -> TestResult {
    use std::os::unix::process::CommandExt as _;
    let fx = Fixture::new()?;
    let (url, held) = serve_then_hold(Vec::new(), 1)?;
    let trajectory = fx.dir.path().join("t.jsonl");
    let mut child = run_on_fixture(&fx, &url)
        .args(["--search-terms", "never"])
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    if held.recv_timeout(Duration::from_secs(300)).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the agent never asked the model".into());
    }
    let group = rustix::process::Pid::from_raw(i32::try_from(child.id())?).ok_or("pid 0")?;
    rustix::process::kill_process_group(group, rustix::process::Signal::TERM)?;
    wait_for_killed(&trajectory);
    let status = child.wait()?;
    assert_eq!(status.signal(), Some(15));
    let events = Trajectory::read(&trajectory)?;
    assert!(
        matches!(events.last(), Some(TrajectoryEvent::Summary(s))
            if s.status == Status::Killed && s.signal == Some(15) && s.turns == 0),
        "{:?}",
        events.last()
    );
    Ok(())
}

#[test]
fn an_agent_killed_mid_run_leaves_a_killed_summary() -> TestResult {
    let fx = Fixture::new()?;
    let (url, held) = serve_then_hold(
        vec![completion(
            "c1",
            "search_code",
            json!({"query": "WordCounter"}),
            500,
        )],
        2,
    )?;
    let trajectory = fx.dir.path().join("t.jsonl");
    let mut child = run_on_fixture(&fx, &url)
        .args(["--search-terms", "never"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    if held.recv_timeout(Duration::from_secs(300)).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the agent never made its second request".into());
    }
    child.kill()?;

    // The agent's output closes with it: the guard holds neither stream.
    let (closed_tx, closed) = mpsc::channel();
    for mut stream in [Box::new(stdout) as Box<dyn Read + Send>, Box::new(stderr)] {
        let tx = closed_tx.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut stream, &mut std::io::sink());
            let _ = tx.send(());
        });
    }
    for _ in 0..2 {
        closed.recv_timeout(Duration::from_secs(30))?;
    }

    // Not reaped yet: the guard can read how the agent ended.
    wait_for_killed(&trajectory);
    let status = child.wait()?;
    assert_eq!(status.signal(), Some(9));

    let events = Trajectory::read(&trajectory)?;
    let summaries: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            TrajectoryEvent::Summary(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(summaries.len(), 1, "{events:?}");
    let Some(TrajectoryEvent::Summary(killed)) = events.last() else {
        return Err(format!("the last line is not a summary: {events:?}").into());
    };
    assert_eq!(killed.status, Status::Killed);
    assert_eq!(killed.signal, Some(9));
    assert_eq!(killed.turns, 1, "the last turn the model answered");
    assert_eq!(killed.prompt_tokens, 500);
    assert!(
        killed
            .message
            .as_deref()
            .is_some_and(|m| m.contains("SIGKILL") && m.contains("guard")),
        "{killed:?}"
    );
    // The turn in flight is in the trajectory: its request, no answer.
    let before = events.len().checked_sub(2).and_then(|i| events.get(i));
    assert!(
        matches!(before, Some(TrajectoryEvent::Request(r)) if r.turn == 2),
        "{before:?}"
    );
    Ok(())
}

#[test]
fn a_normal_run_has_one_summary_and_no_guard_left() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let (url, _) = serve(vec![completion(
        "f",
        "finish",
        json!({"summary": "done"}),
        100,
    )])?;
    let trajectory = fx.dir.path().join("t.jsonl");
    let child = run_on_fixture(&fx, &url)
        .args(["--search-terms", "never"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let result = child.wait_with_output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    // The guard's command line names the agent it watched.
    assert!(
        alive_with(&format!("--agent-pid\0{pid}\0")).is_empty(),
        "the guard outlived the run"
    );
    let events = Trajectory::read(&trajectory)?;
    let summaries = events
        .iter()
        .filter(|e| matches!(e, TrajectoryEvent::Summary(_)))
        .count();
    assert_eq!(summaries, 1);
    assert!(matches!(
        events.last(),
        Some(TrajectoryEvent::Summary(s)) if s.status == Status::Finished
    ));
    // `run` has a wall-clock limit even when none is given: 30 minutes,
    // less the setup (the `start` line has what is left of it).
    assert!(
        matches!(events.first(), Some(TrajectoryEvent::Start(s))
            if s.timeout_ms.is_some_and(|ms| (1_700_000..=1_800_000).contains(&ms))),
        "{:?}",
        events.first()
    );
    Ok(())
}

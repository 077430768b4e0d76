//! A hostile repository, end to end through `repo-agent run` and a
//! scripted OpenAI-compatible server (issue 26, items 2 and 6): a README
//! that links to `/proc/self/environ` or is a named pipe, a terabyte
//! notebook, a config and a notebook that link to a secret outside, and
//! code that prints the agent's key encoded. Each run must finish, show the
//! model why a file is not shown, and let neither the key (in any form)
//! nor the outside secret reach a request or the trajectory.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use common::Fixture;
use common::cli::{completion, run_on_fixture_in, serve};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const API_KEY: &str = "sk-hostile-Q7vX9k2LmN4pR8tW1yZ3bC6d";
const HOST_SECRET: &str = "HOST-SECRET-5d41402abc4b2a76b9719d91";

/// Polls of a run before it counts as hung (100 ms apart: 3 minutes).
const MAX_POLLS: u32 = 1_800;

/// What one run left behind.
struct Run {
    code: Option<i32>,
    stderr: String,
    /// Every request body, in order.
    requests: Vec<Value>,
    /// The trajectory's lines.
    trajectory: Vec<Value>,
}

impl Run {
    /// The run finished, and no form of the key and no outside secret
    /// reached the model or the trajectory.
    fn assert_contained(&self) {
        assert_eq!(self.code, Some(0), "{}", self.stderr);
        let sent = flat_strings(&self.requests);
        let recorded = flat_strings(&self.trajectory);
        for (what, text) in [("requests", &sent), ("trajectory", &recorded)] {
            for form in key_forms() {
                assert!(!text.contains(&form), "{what}: the key leaked as {form}");
            }
            assert!(
                !text.contains(HOST_SECRET),
                "{what}: the outside secret leaked"
            );
        }
    }

    /// The first user message: the task and the initial context.
    fn context(&self) -> String {
        self.requests
            .first()
            .and_then(|r| r["messages"].as_array())
            .and_then(|m| m.iter().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    /// Every tool observation the model was sent (the last request holds
    /// them all).
    fn observations(&self) -> String {
        self.requests
            .last()
            .and_then(|r| r["messages"].as_array())
            .map(|messages| {
                messages
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .filter_map(|m| m["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n---\n")
            })
            .unwrap_or_default()
    }
}

/// Every string of `values` (object keys too), joined, with whitespace
/// removed: a secret split over lines is found as well.
fn flat_strings(values: &[Value]) -> String {
    let mut out = String::new();
    let mut stack: Vec<&Value> = values.iter().collect();
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) => out.push_str(s),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (key, item) in map {
                    out.push_str(key);
                    stack.push(item);
                }
            }
            _ => {}
        }
        out.push('\u{1}');
    }
    out.chars().filter(|c| !c.is_whitespace()).collect()
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Distinctive pieces of each form of the key an attacker could print.
fn key_forms() -> Vec<String> {
    let reversed: String = API_KEY.chars().rev().collect();
    let base64 = STANDARD.encode(API_KEY);
    vec![
        API_KEY.to_owned(),
        "Q7vX9k2LmN4pR8tW".to_owned(),
        reversed,
        hex(API_KEY),
        hex(API_KEY).to_uppercase(),
        base64[..24].to_owned(),
        URL_SAFE_NO_PAD.encode(API_KEY)[..24].to_owned(),
        // The body of `base64` of the environment line, past its prefix.
        STANDARD.encode(format!("OPENAI_API_KEY={API_KEY}\n"))[24..48].to_owned(),
    ]
}

/// Runs `repo-agent run` on the fixture with the model's `calls` then
/// `finish`, the key in the agent's environment, and waits for it within
/// a bound: a run that hangs on a hostile file fails the test.
fn run(fx: &Fixture, calls: Vec<Value>) -> Result<Run, Box<dyn std::error::Error>> {
    fx.write_output()?;
    let mut answers = calls;
    answers.push(completion("end", "finish", json!({"summary": "done"}), 100));
    let (url, bodies) = serve(answers)?;
    let stdout = std::fs::File::create(fx.dir.path().join("stdout"))?;
    let stderr = std::fs::File::create(fx.dir.path().join("stderr"))?;
    let mut command: Command = run_on_fixture_in(fx, &url, "process");
    let child = command
        .env("OPENAI_API_KEY", API_KEY)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()?;
    let code = wait_bounded(child)?;
    let stderr = std::fs::read_to_string(fx.dir.path().join("stderr")).unwrap_or_default();
    let requests = bodies.lock().map_err(|e| e.to_string())?.clone();
    let trajectory = std::fs::read_to_string(fx.dir.path().join("t.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or(Value::Null))
        .collect();
    Ok(Run {
        code,
        stderr,
        requests,
        trajectory,
    })
}

fn wait_bounded(mut child: Child) -> Result<Option<i32>, Box<dyn std::error::Error>> {
    for _ in 0..MAX_POLLS {
        if let Some(status) = child.try_wait()? {
            return Ok(status.code());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill()?;
    child.wait()?;
    Err("repo-agent did not finish within 3 minutes: it hangs on a hostile file".into())
}

fn mkfifo(path: &std::path::Path) -> std::io::Result<()> {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .map_err(std::io::Error::from)
}

/// A directory outside the task holding a secret in a config and a
/// notebook.
fn outside() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    std::fs::write(
        dir.path().join("secret.cfg"),
        format!("[metadata]\nname = {HOST_SECRET}\n"),
    )?;
    let notebook =
        json!({"cells": [{"cell_type": "code", "source": [format!("key = '{HOST_SECRET}'\n")]}]});
    std::fs::write(dir.path().join("secret.ipynb"), notebook.to_string())?;
    Ok(dir)
}

#[test]
fn a_readme_linked_to_the_agents_environment_is_not_read() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::remove_file(fx.repo().join("README.md"))?;
    std::os::unix::fs::symlink("/proc/self/environ", fx.repo().join("README.md"))?;
    let run = run(
        &fx,
        vec![completion(
            "v",
            "view_file",
            json!({"path": "README.md"}),
            100,
        )],
    )?;
    run.assert_contained();
    let context = run.context();
    assert!(
        context.contains("README.md not shown: it is a symbolic link out of the repository."),
        "{context}"
    );
    // The tool refuses it too.
    assert!(
        run.observations().contains("outside the task"),
        "{}",
        run.observations()
    );
    Ok(())
}

#[test]
fn a_readme_that_is_a_named_pipe_does_not_hang_the_run() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::remove_file(fx.repo().join("README.md"))?;
    mkfifo(&fx.repo().join("README.md"))?;
    let run = run(
        &fx,
        vec![completion(
            "v",
            "view_file",
            json!({"path": "README.md"}),
            100,
        )],
    )?;
    run.assert_contained();
    let context = run.context();
    assert!(
        context.contains("README.md not shown: it is a named pipe, not a regular file."),
        "{context}"
    );
    assert!(
        run.observations().contains("not a regular file"),
        "{}",
        run.observations()
    );
    Ok(())
}

#[test]
fn a_terabyte_notebook_is_neither_analysed_nor_viewed() -> TestResult {
    let fx = Fixture::new()?;
    let notebook = std::fs::File::create(fx.repo().join("huge.ipynb"))?;
    notebook.set_len(1 << 40)?;
    drop(notebook);
    let run = run(
        &fx,
        vec![completion(
            "v",
            "view_file",
            json!({"path": "huge.ipynb"}),
            100,
        )],
    )?;
    run.assert_contained();
    let context = run.context();
    assert!(
        context.contains("`huge.ipynb`: too large to analyse"),
        "{context}"
    );
    let seen = run.observations();
    assert!(
        seen.contains("not read: it is larger than 32 MiB (1099511627776 bytes)"),
        "{seen}"
    );
    Ok(())
}

#[test]
fn a_config_and_a_notebook_linked_outside_stay_unread() -> TestResult {
    let fx = Fixture::new()?;
    let out = outside()?;
    std::os::unix::fs::symlink(out.path().join("secret.cfg"), fx.repo().join("setup.cfg"))?;
    std::os::unix::fs::symlink(
        out.path().join("secret.ipynb"),
        fx.repo().join("analysis.ipynb"),
    )?;
    let run = run(
        &fx,
        vec![
            completion("c", "view_file", json!({"path": "setup.cfg"}), 100),
            completion("n", "read_document", json!({"path": "analysis.ipynb"}), 100),
        ],
    )?;
    run.assert_contained();
    let context = run.context();
    for file in ["`setup.cfg`", "`analysis.ipynb`"] {
        assert!(
            context.contains(&format!("{file}: a symbolic link out of the repository")),
            "{file}: {context}"
        );
    }
    Ok(())
}

/// Code finds the key (planted here in a file, as it could be found in the
/// agent's environment) and prints it reversed, folded, in hex and in
/// base64, with the shell's own tools: every form is redacted.
#[test]
fn the_key_printed_encoded_by_code_is_redacted() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.repo().join("key.txt"), API_KEY)?;
    std::fs::write(
        fx.repo().join("env.txt"),
        format!("PATH=/usr/bin\nOPENAI_API_KEY={API_KEY}\n"),
    )?;
    let script = "echo ==b64; base64 -w 20 env.txt; \
        echo ==b64url; base64 -w 0 key.txt | tr '+/' '-_' | tr -d '='; echo; \
        echo ==rev; rev key.txt; echo; \
        echo ==fold; fold -w 8 key.txt; echo; \
        echo ==hex; od -An -tx1 key.txt; \
        echo ==HEX; xxd -p -u key.txt || od -An -tx1 key.txt | tr a-f A-F; \
        echo ==rev-fold; rev key.txt | fold -w 5; echo; \
        echo ==end";
    let run = run(
        &fx,
        vec![completion(
            "s",
            "run_shell",
            json!({"command": format!("cd {} && {script}", fx.repo().display())}),
            100,
        )],
    )?;
    run.assert_contained();
    let seen = run.observations();
    assert!(seen.contains("==end"), "the script did not run: {seen}");
    // Each of the seven sections printed something, and it was redacted.
    assert!(
        seen.matches("[redacted]").count() >= 7,
        "fewer redactions than forms printed: {seen}"
    );
    Ok(())
}

//! `cargo xtask bench analysis`: the repo-graph analysis of every corpus,
//! each in a child process with a deadline, and a parse comparison against
//! the reference Python wheel of tree-sitter (docs/PERFORMANCE.md).
//!
//! Per corpus, `measure_mimalloc --what cold` runs the whole analysis with no
//! cache on 2 threads and prints one JSON line per run; a run that prints
//! nothing within `--timeout` seconds is killed and the corpus is reported as
//! a timeout, and the bench goes on. For the comparison corpora (Django,
//! sympy, java.base) it then times, on the same files:
//! - the wheel's parse on one thread (`tree-sitter` 0.26.1 with the same
//!   grammar versions, in a venv under `target/tree-sitter-wheel/`, one
//!   reused parser per language, reading each file included);
//! - this project's raw parse on one thread (`repo_graph::parse_only`,
//!   reading and decoding included), with the system allocator and with
//!   mimalloc;
//! - the cold analysis on 2 threads with the system allocator too;
//!
//! and prints `cold analysis (2 threads) / wheel parse (1 thread)`.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::{cargo, ensure_venv, run, target_dir, workspace_root};

/// The reference wheel the parse comparison runs: the Python binding of the
/// tree-sitter C library with the grammar versions this project uses.
const WHEEL_PACKAGES: &[(&str, &str)] = &[
    ("tree-sitter", "0.26.1"),
    ("tree-sitter-python", "0.25.0"),
    ("tree-sitter-java", "0.23.5"),
];

/// Written next to the wheel's venv and run with its python: parses the
/// files listed in a file (one path a line) with one reused parser per
/// language and prints one JSON line per run.
const WHEEL_SCRIPT: &str = r#""""Written by `cargo xtask bench analysis`: the reference parse time.

Usage: wheel_parse.py LIST RUNS. Reads each listed file and parses it with
one reused tree-sitter Parser per language, on one thread; prints one JSON
line per run with the seconds for reading and parsing all files.
"""
import json
import sys
import time

import tree_sitter
import tree_sitter_java
import tree_sitter_python


def main():
    listing, runs = sys.argv[1], int(sys.argv[2])
    with open(listing, encoding="utf-8") as f:
        paths = [line.rstrip("\n") for line in f if line.strip()]
    python = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
    java = tree_sitter.Parser(tree_sitter.Language(tree_sitter_java.language()))
    for run in range(runs):
        total = 0
        start = time.perf_counter()
        for path in paths:
            with open(path, "rb") as f:
                data = f.read()
            tree = (java if path.endswith(".java") else python).parse(data)
            del tree
            total += len(data)
        seconds = time.perf_counter() - start
        print(json.dumps({"what": "wheel", "run": run, "files": len(paths),
                          "bytes": total, "parse_s": seconds}), flush=True)


main()
"#;

/// Options of `bench analysis`.
struct Options {
    runs: u32,
    timeout: Duration,
    only: Vec<String>,
    full: bool,
}

fn options(rest: &[&str]) -> anyhow::Result<Options> {
    let usage =
        "usage: cargo xtask bench analysis [--runs N] [--timeout SECS] [--only NAME,...] [--full]";
    let mut options = Options {
        runs: 5,
        timeout: Duration::from_secs(60),
        only: Vec::new(),
        full: false,
    };
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--runs" => {
                options.runs = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .context(usage)?
            }
            "--timeout" => {
                options.timeout = Duration::from_secs_f64(
                    args.next()
                        .and_then(|n| n.parse::<f64>().ok())
                        .filter(|n| *n > 0.0)
                        .context(usage)?,
                )
            }
            "--only" => {
                options.only = args
                    .next()
                    .context(usage)?
                    .split(',')
                    .map(str::to_lowercase)
                    .collect()
            }
            "--full" => options.full = true,
            _ => bail!(usage),
        }
    }
    Ok(options)
}

/// One corpus of the bench.
pub(crate) struct Corpus {
    /// Shown in the tables.
    pub name: String,
    pub dir: PathBuf,
    /// Also measured against the wheel (and with `--full`).
    pub compare: bool,
}

/// What a child process gave.
enum Outcome {
    /// It printed these JSON lines and exited successfully.
    Done(Vec<Value>),
    /// A line did not come within the deadline; the child was killed.
    TimedOut(Vec<Value>),
    /// It exited with an error.
    Failed(String),
}

/// Runs `command`, reading one JSON object per stdout line; kills it when
/// no line comes within `per_line`.
fn json_lines(command: &mut Command, per_line: Duration) -> anyhow::Result<Outcome> {
    let shown = format!("{command:?}");
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {shown}"))?;
    let stdout = child.stdout.take().context("the child has no stdout")?;
    let (send, receive) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    loop {
        match receive.recv_timeout(per_line) {
            Ok(line) => match serde_json::from_str::<Value>(&line) {
                Ok(value) => lines.push(value),
                Err(_) => eprintln!("{line}"),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // The child may have just exited; killing it then is harmless.
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                return Ok(Outcome::TimedOut(lines));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = reader.join();
    let status = child.wait().with_context(|| format!("{shown} vanished"))?;
    Ok(if status.success() {
        Outcome::Done(lines)
    } else {
        Outcome::Failed(format!("{shown} failed with {status}"))
    })
}

/// The smallest value of `key` over the lines.
fn best(lines: &[Value], key: &str) -> Option<f64> {
    lines
        .iter()
        .filter_map(|l| l.get(key).and_then(Value::as_f64))
        .reduce(f64::min)
}

/// Installs the reference wheel into a venv under `target/` when it is not
/// there yet, writes the parse script, and returns (python, script).
fn reference_wheel() -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = workspace_root().join("target/tree-sitter-wheel");
    let python = ensure_venv(&dir.join("venv"), WHEEL_PACKAGES)?;
    let script = dir.join("wheel_parse.py");
    std::fs::write(&script, WHEEL_SCRIPT)
        .with_context(|| format!("cannot write {}", script.display()))?;
    Ok((python, script))
}

/// Numbers of one corpus.
#[derive(Default)]
struct Row {
    name: String,
    timed_out: bool,
    failed: Option<String>,
    bytes: Option<u64>,
    stats: Option<Value>,
    cold: Option<f64>,
    runs_done: usize,
    wheel: Option<f64>,
    parse_system: Option<f64>,
    parse_mimalloc: Option<f64>,
    cold_system: Option<f64>,
}

pub(crate) fn bench(rest: &[&str], corpora: Vec<Corpus>) -> anyhow::Result<()> {
    let options = options(rest)?;
    let corpora: Vec<Corpus> = corpora
        .into_iter()
        .filter(|c| {
            options.only.is_empty()
                || options
                    .only
                    .iter()
                    .any(|o| c.name.to_lowercase().contains(o.as_str()))
        })
        .collect();
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "repo-graph",
        "--features",
        "measure",
        "--example",
        "measure",
        "--example",
        "measure_mimalloc",
    ]))?;
    let examples = target_dir().join("release/examples");
    let measure = examples.join("measure");
    let measure_mimalloc = examples.join("measure_mimalloc");
    let wheel = if corpora.iter().any(|c| c.compare) {
        match reference_wheel() {
            Ok(wheel) => Some(wheel),
            Err(error) => {
                eprintln!(
                    "warning: no parse comparison, the reference wheel is missing: {error:#}"
                );
                None
            }
        }
    } else {
        None
    };
    let lists = target_dir().join("bench-analysis");
    std::fs::create_dir_all(&lists)
        .with_context(|| format!("cannot create {}", lists.display()))?;
    let runs = options.runs.to_string();
    let load_before = load_average();
    let mut rows = Vec::new();
    for corpus in &corpora {
        eprintln!("measuring {} ({})", corpus.name, corpus.dir.display());
        let mut row = Row {
            name: corpus.name.clone(),
            ..Row::default()
        };
        let list = lists.join(format!("{}.files", corpus.name.replace(['/', ' '], "_")));
        let _ = std::fs::remove_file(&list);
        let cold = |binary: &Path, files_out: Option<&Path>| {
            let mut command = Command::new(binary);
            command
                .arg(&corpus.dir)
                .args(["--what", "cold", "--runs", &runs])
                .env("RAYON_NUM_THREADS", "2");
            if let Some(list) = files_out {
                command.arg("--files-out").arg(list);
            }
            json_lines(&mut command, options.timeout)
        };
        match cold(&measure_mimalloc, Some(&list))? {
            Outcome::Done(lines) => {
                row.runs_done = lines.len();
                row.cold = best(&lines, "cold_analysis_s");
                row.stats = lines.last().and_then(|l| l.get("stats")).cloned();
            }
            Outcome::TimedOut(lines) => {
                row.timed_out = true;
                row.runs_done = lines.len();
            }
            Outcome::Failed(error) => row.failed = Some(error),
        }
        row.bytes = list_bytes(&list);
        if corpus.compare && row.cold.is_some() {
            if let Some((python, script)) = &wheel {
                let mut command = Command::new(python);
                command.arg(script).arg(&list).arg(&runs);
                if let Outcome::Done(lines) = json_lines(&mut command, options.timeout)? {
                    row.wheel = best(&lines, "parse_s");
                }
            }
            for (binary, slot) in [
                (&measure, &mut row.parse_system),
                (&measure_mimalloc, &mut row.parse_mimalloc),
            ] {
                let mut command = Command::new(binary);
                command
                    .arg(&corpus.dir)
                    .args(["--what", "parse", "--runs", &runs])
                    .env("RAYON_NUM_THREADS", "1");
                if let Outcome::Done(lines) = json_lines(&mut command, options.timeout)? {
                    *slot = best(&lines, "raw_parse_s");
                }
            }
            if let Outcome::Done(lines) = cold(&measure, None)? {
                row.cold_system = best(&lines, "cold_analysis_s");
            }
        }
        println!("{}", row_json(&row, &options));
        if options.full && corpus.compare && row.cold.is_some() {
            // The earlier tables: raw parse, cold, warm and one file changed,
            // on the default threads. Each of its runs is a handful of analyses.
            let mut command = Command::new(&measure_mimalloc);
            command.arg(&corpus.dir).args(["--runs", &runs]);
            match json_lines(&mut command, options.timeout * options.runs * 8)? {
                Outcome::Done(lines) => {
                    for line in lines {
                        println!("{line}");
                    }
                }
                Outcome::TimedOut(_) => eprintln!("{}: --full timed out", corpus.name),
                Outcome::Failed(error) => eprintln!("{}: {error}", corpus.name),
            }
        }
        rows.push(row);
    }
    println!("{}", markdown(&rows, &options));
    // Other work on the machine slows every number above; say how busy it was.
    println!(
        "load average (1 min) at the start: {}, at the end: {}",
        load_before.as_deref().unwrap_or("?"),
        load_average().as_deref().unwrap_or("?")
    );
    Ok(())
}

/// The 1-minute load average (Linux).
pub(crate) fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next().map(str::to_string)
}

/// Total size of the files listed in `list`.
fn list_bytes(list: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(list).ok()?;
    Some(
        text.lines()
            .filter_map(|path| std::fs::metadata(path).ok())
            .map(|m| m.len())
            .sum(),
    )
}

fn row_json(row: &Row, options: &Options) -> Value {
    let ratio = |cold: Option<f64>| cold.zip(row.wheel).map(|(c, w)| c / w);
    serde_json::json!({
        "corpus": row.name,
        "status": status(row, options),
        "bytes": row.bytes,
        "runs": row.runs_done,
        "cold_analysis_2_threads_s": row.cold,
        "stats": row.stats,
        "wheel_parse_1_thread_s": row.wheel,
        "raw_parse_1_thread_system_alloc_s": row.parse_system,
        "raw_parse_1_thread_mimalloc_s": row.parse_mimalloc,
        "cold_analysis_2_threads_system_alloc_s": row.cold_system,
        "ratio_cold_to_wheel": ratio(row.cold),
        "ratio_cold_to_wheel_system_alloc": ratio(row.cold_system),
    })
}

fn status(row: &Row, options: &Options) -> String {
    if row.timed_out {
        format!(
            "timeout: no result within {} s (after {} finished runs)",
            options.timeout.as_secs_f64(),
            row.runs_done
        )
    } else if let Some(error) = &row.failed {
        format!("failed: {error}")
    } else {
        "ok".into()
    }
}

/// The two tables of docs/PERFORMANCE.md.
fn markdown(rows: &[Row], options: &Options) -> String {
    use std::fmt::Write;
    let count = |row: &Row, key: &str| -> String {
        row.stats
            .as_ref()
            .and_then(|s| s.get(key))
            .and_then(Value::as_u64)
            .map_or_else(|| "—".into(), thousands)
    };
    let seconds = |s: Option<f64>| s.map_or_else(|| "—".into(), |s| format!("{s:.2} s"));
    let mb = |row: &Row| {
        row.bytes
            .map_or_else(|| "—".into(), |b| format!("{:.2}", b as f64 / 1e6))
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n| corpus | files | MB | functions | call edges | unresolved calls | resolution work | widened | wall, cold, 2 threads (best of {}) |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        options.runs
    );
    for row in rows {
        let wall = if row.timed_out {
            format!("**timeout** (> {} s)", options.timeout.as_secs_f64())
        } else if row.failed.is_some() {
            "**failed**".into()
        } else {
            seconds(row.cold)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.name,
            count(row, "files_parsed"),
            mb(row),
            count(row, "functions"),
            count(row, "call_edges"),
            count(row, "unresolved_calls"),
            count(row, "resolve_work"),
            count(row, "widened"),
            wall
        );
    }
    // Where the time goes, so that a speed change is measured step by step.
    let _ = writeln!(
        out,
        "\n| corpus | walk | read, parse, extract | resolve | assemble (ms, last cold run) |\n| --- | ---: | ---: | ---: | ---: |"
    );
    for row in rows.iter().filter(|r| r.stats.is_some()) {
        let phase = |key: &str| -> String {
            row.stats
                .as_ref()
                .and_then(|s| s.get("phases"))
                .and_then(|p| p.get(key))
                .and_then(Value::as_u64)
                .map_or_else(|| "—".into(), thousands)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.name,
            phase("walk_ms"),
            phase("files_ms"),
            phase("resolve_ms"),
            phase("assemble_ms")
        );
    }
    let compared: Vec<&Row> = rows.iter().filter(|r| r.wheel.is_some()).collect();
    if !compared.is_empty() {
        let _ = writeln!(
            out,
            "\n| corpus | MB | wheel parse, 1 thread | raw parse, 1 thread, system / mimalloc | cold analysis, 2 threads, system / mimalloc | cold (2 threads) / wheel parse (1 thread), system / mimalloc |\n| --- | --- | --- | --- | --- | --- |"
        );
        for row in compared {
            let ratio = |cold: Option<f64>| {
                cold.zip(row.wheel)
                    .map_or_else(|| "—".into(), |(c, w)| format!("{:.2}", c / w))
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} / {} | {} / {} | {} / {} |",
                row.name,
                mb(row),
                seconds(row.wheel),
                seconds(row.parse_system),
                seconds(row.parse_mimalloc),
                seconds(row.cold_system),
                seconds(row.cold),
                ratio(row.cold_system),
                ratio(row.cold)
            );
        }
    }
    out
}

/// 12345 -> "12,345".
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

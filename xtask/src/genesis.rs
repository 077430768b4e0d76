//! `cargo xtask bench repogenesis --generate`: generation and evaluation in
//! one command.
//!
//! Builds `repo-agent` and `bench-harness` in release, runs `repo-agent
//! generate` on each task's README (one task at a time, whatever its exit
//! code), then `bench-harness repogenesis` on what was generated, and puts
//! both side by side in `generate-report.md` and `generate-report.json`.
//! Like the rest of xtask it links no workspace crate: the agent's summary
//! and the harness's records are read as JSON (`GenerateSummary`,
//! `GenesisRecord`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{release_binary, run, workspace_root};

const USAGE: &str = "usage: cargo xtask bench repogenesis --generate [--root DIR] [--tasks NAME,NAME] [--out DIR]\n    \
    [--model NAME] [--base-url URL] [--model-path FILE.gguf] [--max-iterations N] [--max-tokens N]\n    \
    [--timeout SECS] [--isolation auto|namespaces|process] [--no-dynamic-checks] [BENCH-HARNESS FLAGS...]\n\n\
    Generates a repository for each task with `repo-agent generate` (one task at a time), then evaluates\n\
    them with `bench-harness repogenesis`, and reports both per task.\n\n  \
    --root DIR            the RepoGenesis checkout (default: /work/shared/benchmarks/RepoGenesis if it\n                        \
    exists, else <workspace>/../shared/benchmarks/RepoGenesis)\n  \
    --tasks A,B           these tasks only (default: every repo/<task>/README.md)\n  \
    --out DIR             output directory (default: target/repogenesis-generate/<UTC timestamp>):\n                        \
    generated/<task>/, trajectories/<task>.jsonl, logs/<task>.log, generation.jsonl,\n                        \
    evaluation/ (the harness's results), generate-report.md, generate-report.json\n  \
    --resume              with an --out that holds a run: keep the tasks its generation.jsonl records,\n                        \
    generate the others (also passed to bench-harness)\n  \
    --binaries DIR        run DIR/repo-agent and DIR/bench-harness instead of building them (to measure a\n                        \
    fixed build, copied aside, while the work tree changes)\n\n\
    Passed to `repo-agent generate`:\n  \
    --model NAME --base-url URL   an OpenAI-compatible server (default: OPENAI_BASE_URL, REPO_AGENT_MODEL;\n                        \
    without them the embedded Qwen2.5-Coder-1.5B runs; --model smollm2 picks the 135M demo model)\n  \
    --model-path FILE.gguf        a local GGUF chat model\n  \
    --max-iterations N    repair rounds after the first verification (repo-agent's default: 3)\n  \
    --max-tokens N        token budget per task\n  \
    --timeout SECS        wall-clock limit per task (the process is stopped 60 s after it, if still running)\n  \
    --isolation X         how generated code runs (also passed to bench-harness)\n  \
    --no-dynamic-checks   static checks only while generating\n\n\
    Every other flag goes to `bench-harness repogenesis` (checked against its --help before generating):\n\
    --jobs N, --resume, --build-timeout SECS, --start-timeout SECS, --test-timeout SECS, --no-registry,\n\
    --venvs DIR (default here: target/repogenesis/venvs, shared with plain runs), --maven-repo DIR,\n\
    --keep-workspaces.";

/// Flags of `repo-agent generate` that take a value.
const GENERATION_VALUE_FLAGS: &[&str] = &[
    "--model",
    "--base-url",
    "--model-path",
    "--max-iterations",
    "--max-tokens",
    "--timeout",
    "--isolation",
];

/// How long a task may run past its `--timeout` before it is stopped.
const GRACE: Duration = Duration::from_secs(60);

/// Lines of a task's stderr kept for its record when it ends without a summary.
const STDERR_TAIL_LINES: usize = 20;

struct Options {
    root: PathBuf,
    tasks: Option<Vec<String>>,
    out: PathBuf,
    /// Flags for `repo-agent generate`, in order.
    generation: Vec<String>,
    /// `--timeout`, for the watchdog.
    timeout: Option<u64>,
    /// `--isolation`, also passed to the harness.
    isolation: Option<String>,
    /// Everything else, for `bench-harness repogenesis`, in order.
    evaluation: Vec<String>,
    /// `--binaries`: prebuilt `repo-agent` and `bench-harness`.
    binaries: Option<PathBuf>,
}

/// Runs the command; `rest` is what followed `bench repogenesis`, `--generate`
/// included.
pub(crate) fn run_generate(rest: &[&str]) -> anyhow::Result<()> {
    let Some(options) = parse(rest)? else {
        println!("{USAGE}");
        return Ok(());
    };
    let started = Instant::now();
    let tasks = tasks(&options.root, options.tasks.as_deref())?;
    let resume = options.evaluation.iter().any(|a| a == "--resume");
    let journal_path = options.out.join("generation.jsonl");
    // A run of hours on a small machine is stopped and taken up again: with
    // --resume the tasks the journal already records keep their record (and
    // their generated repository); the others are generated afresh.
    let earlier = match (journal_path.exists(), resume) {
        (false, _) => BTreeMap::new(),
        (true, true) => read_journal(&journal_path)?,
        (true, false) => bail!(
            "{} already holds a run (generation.jsonl); choose another --out, or pass --resume \
             to keep its generated tasks and generate the rest",
            options.out.display()
        ),
    };

    let (agent, harness) = match &options.binaries {
        Some(dir) => {
            let pair = (dir.join("repo-agent"), dir.join("bench-harness"));
            for binary in [&pair.0, &pair.1] {
                if !binary.is_file() {
                    bail!("--binaries: {} is not a file", binary.display());
                }
            }
            pair
        }
        None => (
            release_binary("repo-agent", "repo-agent")?,
            release_binary("bench-harness", "bench-harness")?,
        ),
    };
    check_harness_flags(&harness, &options.evaluation)?;
    let build_ms = started.elapsed().as_millis() as u64;
    let generation_started = Instant::now();

    let out = &options.out;
    for dir in ["generated", "trajectories", "logs"] {
        std::fs::create_dir_all(out.join(dir))
            .with_context(|| format!("cannot create {}", out.join(dir).display()))?;
    }
    eprintln!(
        "RepoGenesis generation: {} task(s) from {} into {}",
        tasks.len(),
        options.root.display(),
        out.display()
    );
    let mut journal = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&journal_path)
        .with_context(|| format!("cannot open {}", journal_path.display()))?;
    let mut generation = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        if let Some(record) = earlier.get(task) {
            eprintln!(
                "[{}/{}] {task}: kept from the journal: {}",
                i + 1,
                tasks.len(),
                outcome_line(record)
            );
            generation.push(record.clone());
            continue;
        }
        // What an interrupted generation left behind is not this run's.
        let partial = out.join("generated").join(task);
        if partial.exists() {
            std::fs::remove_dir_all(&partial)
                .with_context(|| format!("cannot remove {}", partial.display()))?;
        }
        eprintln!("[{}/{}] generating {task}", i + 1, tasks.len());
        let record = generate_task(&agent, &options, task)?;
        eprintln!(
            "[{}/{}] {task}: {}",
            i + 1,
            tasks.len(),
            outcome_line(&record)
        );
        writeln!(journal, "{}", serde_json::to_string(&record)?)
            .and_then(|()| journal.flush())
            .with_context(|| format!("cannot append to {}", journal_path.display()))?;
        generation.push(record);
    }
    let generation_ms = generation_started.elapsed().as_millis() as u64;

    let evaluation_started = Instant::now();
    let mut command = Command::new(&harness);
    command
        .arg("repogenesis")
        .arg("--root")
        .arg(&options.root)
        .arg("--generated")
        .arg(out.join("generated"))
        .arg("--out")
        .arg(out.join("evaluation"));
    if let Some(tasks) = &options.tasks {
        command.arg("--tasks").arg(tasks.join(","));
    }
    if let Some(isolation) = &options.isolation {
        command.arg("--isolation").arg(isolation);
    }
    if !options
        .evaluation
        .iter()
        .any(|a| a == "--venvs" || a.starts_with("--venvs="))
    {
        command
            .arg("--venvs")
            .arg(workspace_root().join("target/repogenesis/venvs"));
    }
    command.args(&options.evaluation);
    let evaluation_result = run(&mut command);
    if let Err(error) = &evaluation_result {
        eprintln!("warning: the evaluation failed ({error:#}); the report shows generation only");
    }
    let evaluation_ms = evaluation_started.elapsed().as_millis() as u64;

    let records = read_results(&out.join("evaluation/results.jsonl"));
    let report = Report {
        options: &options,
        tasks: &tasks,
        generation: &generation,
        records: &records,
        build_ms,
        generation_ms,
        evaluation_ms,
        total_ms: started.elapsed().as_millis() as u64,
    };
    let markdown = report.markdown();
    let md_path = out.join("generate-report.md");
    let json_path = out.join("generate-report.json");
    std::fs::write(&md_path, &markdown)
        .with_context(|| format!("cannot write {}", md_path.display()))?;
    std::fs::write(
        &json_path,
        serde_json::to_string_pretty(&report.json())? + "\n",
    )
    .with_context(|| format!("cannot write {}", json_path.display()))?;
    println!("{markdown}");
    println!(
        "Reports: {} and {}; generation log: {}",
        md_path.display(),
        json_path.display(),
        journal_path.display()
    );
    evaluation_result
}

/// Parses the flags; `None` when help was asked for.
fn parse(rest: &[&str]) -> anyhow::Result<Option<Options>> {
    let mut root = None;
    let mut tasks = None;
    let mut out = None;
    let mut generation = Vec::new();
    let mut timeout = None;
    let mut isolation = None;
    let mut evaluation = Vec::new();
    let mut binaries = None;
    let mut it = rest.iter();
    while let Some(&arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (arg, None),
        };
        let mut value = || -> anyhow::Result<String> {
            inline
                .map(str::to_owned)
                .or_else(|| it.next().map(|v| (*v).to_owned()))
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag {
            "--generate" => {}
            "-h" | "--help" => return Ok(None),
            "--root" => root = Some(absolute(&value()?)?),
            "--out" => out = Some(absolute(&value()?)?),
            "--binaries" => binaries = Some(absolute(&value()?)?),
            "--tasks" => {
                let list: Vec<String> = value()?
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect();
                if list.is_empty() {
                    bail!("--tasks names no task");
                }
                tasks = Some(list);
            }
            "--generated" => bail!(
                "--generate writes the repositories itself (<OUT>/generated); drop --generated, \
                 or drop --generate to evaluate existing ones"
            ),
            "--no-dynamic-checks" => generation.push(flag.to_owned()),
            flag if GENERATION_VALUE_FLAGS.contains(&flag) => {
                let value = value()?;
                match flag {
                    "--max-iterations" | "--max-tokens" => {
                        value.parse::<u64>().with_context(|| {
                            format!("{flag} takes a whole number, not {value:?}")
                        })?;
                    }
                    "--timeout" => {
                        let secs =
                            value
                                .parse::<u64>()
                                .ok()
                                .filter(|s| *s > 0)
                                .with_context(|| {
                                    format!(
                                        "--timeout takes whole seconds (at least 1), not {value:?}"
                                    )
                                })?;
                        timeout = Some(secs);
                    }
                    "--isolation" => {
                        if !["auto", "namespaces", "process"].contains(&value.as_str()) {
                            bail!("--isolation takes auto, namespaces or process, not {value:?}");
                        }
                        isolation = Some(value.clone());
                    }
                    _ => {}
                }
                generation.push(flag.to_owned());
                generation.push(value);
            }
            _ => evaluation.push(arg.to_owned()),
        }
    }
    let root = match root {
        Some(root) => root,
        None => default_root(),
    };
    let out = match out {
        Some(out) => out,
        None => workspace_root()
            .join("target/repogenesis-generate")
            .join(utc_timestamp(SystemTime::now())),
    };
    Ok(Some(Options {
        root,
        tasks,
        out,
        generation,
        timeout,
        isolation,
        evaluation,
        binaries,
    }))
}

fn absolute(path: &str) -> anyhow::Result<PathBuf> {
    let path = PathBuf::from(path);
    if path.is_absolute() {
        return Ok(path);
    }
    Ok(std::env::current_dir()
        .context("cannot read the current directory")?
        .join(path))
}

fn default_root() -> PathBuf {
    let shared = PathBuf::from("/work/shared/benchmarks/RepoGenesis");
    if shared.is_dir() {
        return shared;
    }
    workspace_root().join("../shared/benchmarks/RepoGenesis")
}

/// The tasks to generate: those named, each checked, or every
/// `repo/<task>/README.md` of the checkout, sorted.
fn tasks(root: &Path, named: Option<&[String]>) -> anyhow::Result<Vec<String>> {
    let repo = root.join("repo");
    let mut found: Vec<String> = std::fs::read_dir(&repo)
        .with_context(|| {
            format!(
                "cannot list {}; is --root a RepoGenesis checkout?",
                repo.display()
            )
        })?
        .filter_map(Result::ok)
        .filter(|e| e.path().join("README.md").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    found.sort();
    match named {
        None if found.is_empty() => bail!("no repo/<task>/README.md under {}", root.display()),
        None => Ok(found),
        Some(named) => {
            let unknown: Vec<&String> = named.iter().filter(|t| !found.contains(t)).collect();
            if !unknown.is_empty() {
                bail!(
                    "no README for {unknown:?} under {}; the tasks are: {}",
                    repo.display(),
                    found.join(", ")
                );
            }
            Ok(named.to_vec())
        }
    }
}

/// Fails before anything is generated when a flag meant for the harness is
/// not one its `--help` names.
fn check_harness_flags(harness: &Path, flags: &[String]) -> anyhow::Result<()> {
    if flags.is_empty() {
        return Ok(());
    }
    let help = Command::new(harness)
        .args(["repogenesis", "--help"])
        .output()
        .with_context(|| format!("cannot run {}", harness.display()))?;
    let usage = String::from_utf8_lossy(&help.stdout);
    let known = |name: &str| {
        usage.match_indices(name).any(|(at, _)| {
            !usage[at + name.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    let unknown: Vec<&str> = flags
        .iter()
        .filter(|a| a.starts_with("--"))
        .map(|a| a.split_once('=').map_or(a.as_str(), |(f, _)| f))
        .filter(|name| !known(name))
        .collect();
    if !unknown.is_empty() {
        bail!(
            "neither repo-agent generate nor bench-harness repogenesis takes {}\n{USAGE}",
            unknown.join(", ")
        );
    }
    Ok(())
}

/// Runs `repo-agent generate` on one task; its record for `generation.jsonl`.
fn generate_task(agent: &Path, options: &Options, task: &str) -> anyhow::Result<Value> {
    let out = &options.out;
    let spec = options.root.join("repo").join(task).join("README.md");
    let generated = out.join("generated").join(task);
    let trajectory = out.join("trajectories").join(format!("{task}.jsonl"));
    let log_path = out.join("logs").join(format!("{task}.log"));
    let mut command = Command::new(agent);
    command
        .arg("generate")
        .arg("--spec")
        .arg(&spec)
        .arg("--out")
        .arg(&generated)
        .arg("--json")
        .arg("--trajectory")
        .arg(&trajectory)
        .args(&options.generation)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", agent.display()))?;
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    let stderr = child.stderr.take().context("no stderr pipe")?;
    let prefix = format!("[{task}] ");
    let tail_thread = std::thread::spawn(move || stream_stderr(stderr, log, &prefix));
    let mut stdout = child.stdout.take().context("no stdout pipe")?;
    let stdout_thread = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.read_to_end(&mut text);
        text
    });
    let (status, killed) = wait_with_deadline(
        &mut child,
        options.timeout.map(|s| Duration::from_secs(s) + GRACE),
        task,
    )?;
    let wall_ms = started.elapsed().as_millis() as u64;
    let stdout = stdout_thread.join().unwrap_or_default();
    let tail = tail_thread.join().unwrap_or_default();
    let summary = parse_summary(&String::from_utf8_lossy(&stdout));
    let mut record = json!({
        "task": task,
        "spec": spec,
        "generated": generated,
        "trajectory": trajectory,
        "log": log_path,
        "exit_code": status.code(),
        "signal": std::os::unix::process::ExitStatusExt::signal(&status),
        "wall_ms": wall_ms,
        "summary": summary,
    });
    if killed {
        record["killed"] = json!(true);
    }
    if summary.is_none() {
        record["error"] = json!(match status.code() {
            Some(code) => format!("repo-agent generate exited with {code} without a summary"),
            None => format!("repo-agent generate was ended by {status} without a summary"),
        });
        record["stderr_tail"] = json!(tail.join("\n"));
    }
    Ok(record)
}

/// The records of an earlier run's journal by task; a line that does not
/// parse (a run killed while writing it) is left out, so its task is
/// generated again.
fn read_journal(path: &Path) -> anyhow::Result<BTreeMap<String, Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|record| Some((record.get("task")?.as_str()?.to_owned(), record)))
        .collect())
}

/// Copies a task's stderr to its log and, prefixed, to ours; returns its
/// last lines.
fn stream_stderr(stderr: impl Read, mut log: std::fs::File, prefix: &str) -> Vec<String> {
    let mut tail = std::collections::VecDeque::new();
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let _ = log.write_all(&line);
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        eprintln!("{prefix}{text}");
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(strip_ansi(text));
    }
    tail.into()
}

/// `text` without its ANSI escape sequences (the colours of tracing's
/// warnings).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // CSI: ESC [ parameters, then a final byte in @..=~.
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// Waits for the child; past `deadline` asks it to stop (SIGTERM), then
/// kills it 10 s later. Returns its status and whether it was stopped.
fn wait_with_deadline(
    child: &mut Child,
    deadline: Option<Duration>,
    task: &str,
) -> anyhow::Result<(std::process::ExitStatus, bool)> {
    let Some(deadline) = deadline else {
        return Ok((child.wait()?, false));
    };
    let started = Instant::now();
    let mut terminated: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status, terminated.is_some()));
        }
        match terminated {
            None if started.elapsed() > deadline => {
                eprintln!(
                    "[{task}] still running {} s after its --timeout; stopping it",
                    GRACE.as_secs()
                );
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
                terminated = Some(Instant::now());
            }
            Some(at) if at.elapsed() > Duration::from_secs(10) => {
                let _ = child.kill();
                return Ok((child.wait()?, true));
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `GenerateSummary` on stdout: the whole output, or its last line that
/// is a JSON object.
fn parse_summary(stdout: &str) -> Option<Value> {
    let is_summary = |v: &Value| v.get("status").is_some_and(Value::is_string);
    serde_json::from_str::<Value>(stdout.trim())
        .ok()
        .filter(is_summary)
        .or_else(|| {
            stdout
                .lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
                .find(is_summary)
        })
}

/// One line about a task's generation, for the progress output.
fn outcome_line(record: &Value) -> String {
    match record.get("summary").filter(|s| !s.is_null()) {
        Some(s) => format!(
            "{} (exit {}), {} files, checks {}/{} passed, {} repair rounds, {} model calls, {} tokens, {:.1} s",
            text(&s["status"]),
            code_text(record),
            s["files"].as_array().map_or(0, Vec::len),
            uint(&s["checks_passed"]),
            uint(&s["checks_passed"]) + uint(&s["checks_failed"]),
            uint(&s["iterations"]),
            uint(&s["model_calls"]),
            uint(&s["total_tokens"]),
            secs(uint(&record["wall_ms"])),
        ),
        None => format!("{}; see {}", text(&record["error"]), text(&record["log"])),
    }
}

/// The exit code, or the signal that ended the process.
fn code_text(record: &Value) -> String {
    match (record["exit_code"].as_i64(), record["signal"].as_i64()) {
        (Some(code), _) => code.to_string(),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "–".to_owned(),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "–".to_owned(),
        other => other.to_string(),
    }
}

fn uint(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// The harness's records by task (an absent or unreadable file gives none).
fn read_results(path: &Path) -> BTreeMap<String, Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("warning: cannot read {}", path.display());
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| Some((v.get("task")?.as_str()?.to_owned(), v)))
        .collect()
}

/// What the report shows of one harness record.
#[derive(Default)]
struct Evaluation {
    status: Option<String>,
    /// `tests.pass_at_1`, `counts.passed`, `harness_total`, `counted`.
    pass: Option<(f64, u64, u64, bool)>,
    all_passed: Option<bool>,
    /// `GenesisRecord::dsr()`: measured only when the task was evaluated.
    dsr: Option<bool>,
    /// The harness rule's `implemented`, `total`, `score`.
    ac: Option<(u64, u64, f64)>,
    /// `matched`, `declared`.
    routes: Option<(u64, u64)>,
    faults: Vec<String>,
}

impl Evaluation {
    fn of(record: Option<&Value>) -> Evaluation {
        let Some(r) = record else {
            return Evaluation::default();
        };
        let status = r["status"].as_str().map(str::to_owned);
        let ran = status.as_deref() == Some("evaluated");
        let tests = Some(&r["tests"]).filter(|t| ran && t.is_object());
        let ac = &r["ac"]["harness"];
        Evaluation {
            status,
            pass: tests.map(|t| {
                (
                    t["pass_at_1"].as_f64().unwrap_or(0.0),
                    uint(&t["counts"]["passed"]),
                    uint(&t["harness_total"]),
                    t["counted"].as_bool().unwrap_or(false),
                )
            }),
            all_passed: tests.map(|t| t["all_passed"].as_bool().unwrap_or(false)),
            dsr: ran.then(|| r["start"]["dsr"].as_bool().unwrap_or(false)),
            ac: ac.is_object().then(|| {
                (
                    uint(&ac["implemented"]),
                    uint(&ac["total"]),
                    ac["score"].as_f64().unwrap_or(0.0),
                )
            }),
            routes: r["routes"].is_object().then(|| {
                (
                    uint(&r["routes"]["matched"]),
                    uint(&r["routes"]["declared"]),
                )
            }),
            faults: r["faults"]
                .as_array()
                .map(|fs| fs.iter().map(|f| text(&f["kind"])).collect())
                .unwrap_or_default(),
        }
    }

    fn json(&self) -> Value {
        json!({
            "status": self.status,
            "pass_at_1": self.pass.map(|p| p.0),
            "tests_passed": self.pass.map(|p| p.1),
            "tests_total": self.pass.map(|p| p.2),
            "pass_at_1_counted": self.pass.map(|p| p.3),
            "all_passed": self.all_passed,
            "dsr": self.dsr,
            "ac_harness": self.ac.map(|(implemented, total, score)| json!({
                "implemented": implemented, "total": total, "score": score
            })),
            "routes": self.routes.map(|(matched, declared)| json!({
                "matched": matched, "declared": declared
            })),
            "faults": self.faults,
        })
    }
}

/// What one task's generation record shows.
struct Generation {
    status: String,
    exit_code: String,
    files: u64,
    checks_passed: u64,
    checks_failed: u64,
    iterations: u64,
    model_calls: u64,
    total_tokens: u64,
    /// The process's wall time as measured here (model load included).
    wall_ms: u64,
    has_summary: bool,
}

impl Generation {
    fn of(record: &Value) -> Generation {
        let s = &record["summary"];
        let has_summary = s.is_object();
        let status = if has_summary {
            text(&s["status"])
        } else if record["killed"].as_bool() == Some(true) {
            "killed".to_owned()
        } else {
            format!("no summary ({})", code_text(record))
        };
        Generation {
            status,
            exit_code: code_text(record),
            files: s["files"].as_array().map_or(0, |f| f.len() as u64),
            checks_passed: uint(&s["checks_passed"]),
            checks_failed: uint(&s["checks_failed"]),
            iterations: uint(&s["iterations"]),
            model_calls: uint(&s["model_calls"]),
            total_tokens: uint(&s["total_tokens"]),
            wall_ms: uint(&record["wall_ms"]),
            has_summary,
        }
    }
}

struct Report<'a> {
    options: &'a Options,
    tasks: &'a [String],
    generation: &'a [Value],
    records: &'a BTreeMap<String, Value>,
    build_ms: u64,
    generation_ms: u64,
    evaluation_ms: u64,
    total_ms: u64,
}

/// Totals and means over the tasks.
struct Totals {
    tasks: usize,
    statuses: BTreeMap<String, usize>,
    files: u64,
    checks_passed: u64,
    checks_failed: u64,
    iterations: u64,
    model_calls: u64,
    total_tokens: u64,
    generation_wall_ms: u64,
    evaluated: usize,
    /// The harness's Pass@1 mean: over tasks whose total is above 0.
    pass_mean: Option<f64>,
    pass_n: usize,
    all_passed: (usize, usize),
    dsr: (usize, usize),
    /// The harness's AC mean: over tasks whose README declares an endpoint.
    ac_mean: Option<f64>,
    ac_n: usize,
    ac_sum: (u64, u64),
    routes: (u64, u64),
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn count(flags: impl Iterator<Item = bool>) -> (usize, usize) {
    flags.fold((0, 0), |(yes, n), f| (yes + usize::from(f), n + 1))
}

impl Report<'_> {
    fn rows(&self) -> Vec<(&String, Generation, Evaluation)> {
        self.tasks
            .iter()
            .zip(self.generation)
            .map(|(task, g)| {
                (
                    task,
                    Generation::of(g),
                    Evaluation::of(self.records.get(task)),
                )
            })
            .collect()
    }

    fn totals(&self, rows: &[(&String, Generation, Evaluation)]) -> Totals {
        let mut statuses = BTreeMap::new();
        for (_, g, _) in rows {
            *statuses.entry(g.status.clone()).or_insert(0) += 1;
        }
        let passes: Vec<f64> = rows
            .iter()
            .filter_map(|(_, _, e)| e.pass.filter(|p| p.3).map(|p| p.0))
            .collect();
        let acs: Vec<f64> = rows
            .iter()
            .filter_map(|(_, _, e)| e.ac.filter(|a| a.1 > 0).map(|a| a.2))
            .collect();
        let sum = |f: fn(&Generation) -> u64| rows.iter().map(|(_, g, _)| f(g)).sum::<u64>();
        Totals {
            tasks: rows.len(),
            statuses,
            files: sum(|g| g.files),
            checks_passed: sum(|g| g.checks_passed),
            checks_failed: sum(|g| g.checks_failed),
            iterations: sum(|g| g.iterations),
            model_calls: sum(|g| g.model_calls),
            total_tokens: sum(|g| g.total_tokens),
            generation_wall_ms: sum(|g| g.wall_ms),
            evaluated: rows
                .iter()
                .filter(|(_, _, e)| e.status.as_deref() == Some("evaluated"))
                .count(),
            pass_mean: mean(&passes),
            pass_n: passes.len(),
            all_passed: count(rows.iter().filter_map(|(_, _, e)| e.all_passed)),
            dsr: count(rows.iter().filter_map(|(_, _, e)| e.dsr)),
            ac_mean: mean(&acs),
            ac_n: acs.len(),
            ac_sum: rows
                .iter()
                .filter_map(|(_, _, e)| e.ac)
                .fold((0, 0), |(i, t), a| (i + a.0, t + a.1)),
            routes: rows
                .iter()
                .filter_map(|(_, _, e)| e.routes)
                .fold((0, 0), |(m, d), r| (m + r.0, d + r.1)),
        }
    }

    fn markdown(&self) -> String {
        let rows = self.rows();
        let t = self.totals(&rows);
        let mut md = String::from("# RepoGenesis: generated and evaluated\n\n");
        let _ = writeln!(
            md,
            "Root `{}`; output `{}`.  \nGeneration flags: `{}`; harness flags: `{}`.  \n\
             Wall time: builds {:.1} s, generation {:.1} s, evaluation {:.1} s, total {:.1} s.\n",
            self.options.root.display(),
            self.options.out.display(),
            shown_flags(&self.options.generation),
            shown_flags(&self.options.evaluation),
            secs(self.build_ms),
            secs(self.generation_ms),
            secs(self.evaluation_ms),
            secs(self.total_ms),
        );
        md.push_str(
            "| Task | Generation | Exit | Files | Checks passed/failed | Repair rounds | Model calls | Tokens | Gen. time (s) \
             | Evaluation | Pass@1 | All passed | DSR | AC (harness) | Routes | Faults |\n\
             | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        let dash = || "–".to_owned();
        let yes_no = |b: Option<bool>| b.map_or_else(dash, |b| if b { "yes" } else { "no" }.into());
        for (task, g, e) in &rows {
            let (files, checks, repairs, calls, tokens) = if g.has_summary {
                (
                    g.files.to_string(),
                    format!("{}/{}", g.checks_passed, g.checks_failed),
                    g.iterations.to_string(),
                    g.model_calls.to_string(),
                    g.total_tokens.to_string(),
                )
            } else {
                (dash(), dash(), dash(), dash(), dash())
            };
            let _ = writeln!(
                md,
                "| {task} | {} | {} | {files} | {checks} | {repairs} | {calls} | {tokens} | {:.1} | {} | {} | {} | {} | {} | {} | {} |",
                g.status,
                g.exit_code,
                secs(g.wall_ms),
                e.status.clone().unwrap_or_else(|| "not evaluated".into()),
                e.pass
                    .map_or_else(dash, |(p, passed, total, counted)| format!(
                        "{:.2} % ({passed}/{total}){}",
                        p * 100.0,
                        if counted { "" } else { ", left out" }
                    )),
                yes_no(e.all_passed),
                yes_no(e.dsr),
                e.ac.map_or_else(dash, |(i, n, _)| format!("{i}/{n}")),
                e.routes.map_or_else(dash, |(m, d)| format!("{m}/{d}")),
                if e.faults.is_empty() {
                    dash()
                } else {
                    e.faults.join(", ")
                },
            );
        }
        let statuses: Vec<String> = t.statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
        let percent = |m: Option<f64>, n: usize| {
            m.map_or_else(
                || "n/a".to_owned(),
                |m| format!("{:.2} % (n={n})", m * 100.0),
            )
        };
        let _ = writeln!(
            md,
            "| **all {} tasks** | {} | | {} | {}/{} | {} | {} | {} | {:.1} | evaluated {}/{} | {} | {}/{} | {}/{} | {} | {}/{} | |",
            t.tasks,
            statuses.join(", "),
            t.files,
            t.checks_passed,
            t.checks_failed,
            t.iterations,
            t.model_calls,
            t.total_tokens,
            secs(t.generation_wall_ms),
            t.evaluated,
            t.tasks,
            percent(t.pass_mean, t.pass_n),
            t.all_passed.0,
            t.all_passed.1,
            t.dsr.0,
            t.dsr.1,
            percent(t.ac_mean, t.ac_n),
            t.routes.0,
            t.routes.1,
        );
        let n = t.tasks.max(1) as f64;
        let _ = writeln!(
            md,
            "\nPer task (mean): {:.1} files, {:.1} checks passed, {:.1} failed, {:.1} repair rounds, \
             {:.1} model calls, {:.0} tokens, {:.1} s of generation.  \n\
             Pass@1 and AC are the harness's means (Pass@1 over tasks with a test total above 0, AC over \
             tasks whose README declares an endpoint; AC summed: {}/{}); DSR and all-passed count evaluated \
             tasks. Generation time is the `repo-agent generate` process's, model loading included.",
            t.files as f64 / n,
            t.checks_passed as f64 / n,
            t.checks_failed as f64 / n,
            t.iterations as f64 / n,
            t.model_calls as f64 / n,
            t.total_tokens as f64 / n,
            secs(t.generation_wall_ms) / n,
            t.ac_sum.0,
            t.ac_sum.1,
        );
        let failures: Vec<String> = self
            .generation
            .iter()
            .filter(|r| !r["summary"].is_object())
            .map(|r| {
                format!(
                    "- `{}`: {}\n\n  ```text\n{}\n  ```",
                    text(&r["task"]),
                    text(&r["error"]),
                    text(&r["stderr_tail"])
                        .lines()
                        .map(|l| format!("  {l}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            })
            .collect();
        if !failures.is_empty() {
            let _ = writeln!(
                md,
                "\n## Tasks whose generation ended without a summary\n\n{}",
                failures.join("\n")
            );
        }
        md
    }

    fn json(&self) -> Value {
        let rows = self.rows();
        let t = self.totals(&rows);
        let tasks: Vec<Value> = rows
            .iter()
            .zip(self.generation)
            .map(|((task, g, e), record)| {
                json!({
                    "task": task,
                    "generation": {
                        "status": g.status,
                        "exit_code": record["exit_code"],
                        "files": g.files,
                        "checks_passed": g.checks_passed,
                        "checks_failed": g.checks_failed,
                        "iterations": g.iterations,
                        "model_calls": g.model_calls,
                        "prompt_tokens": record["summary"]["prompt_tokens"],
                        "completion_tokens": record["summary"]["completion_tokens"],
                        "total_tokens": g.total_tokens,
                        "cost": record["summary"]["cost"],
                        "wall_ms": g.wall_ms,
                        "phases": record["summary"]["phases"],
                        "message": record["summary"]["message"],
                        "error": record.get("error"),
                    },
                    "evaluation": e.json(),
                })
            })
            .collect();
        json!({
            "root": self.options.root,
            "out": self.options.out,
            "generation_flags": self.options.generation,
            "harness_flags": self.options.evaluation,
            "wall_ms": {
                "builds": self.build_ms,
                "generation": self.generation_ms,
                "evaluation": self.evaluation_ms,
                "total": self.total_ms,
            },
            "tasks": tasks,
            "totals": {
                "tasks": t.tasks,
                "generation_statuses": t.statuses,
                "files": t.files,
                "checks_passed": t.checks_passed,
                "checks_failed": t.checks_failed,
                "iterations": t.iterations,
                "model_calls": t.model_calls,
                "total_tokens": t.total_tokens,
                "generation_wall_ms": t.generation_wall_ms,
                "evaluated": t.evaluated,
                "pass_at_1_mean": t.pass_mean,
                "pass_at_1_n": t.pass_n,
                "all_passed": {"passed": t.all_passed.0, "of": t.all_passed.1},
                "dsr": {"deployed": t.dsr.0, "of": t.dsr.1},
                "ac_harness_mean": t.ac_mean,
                "ac_harness_n": t.ac_n,
                "ac_harness_summed": {"implemented": t.ac_sum.0, "total": t.ac_sum.1},
                "routes": {"matched": t.routes.0, "declared": t.routes.1},
            },
        })
    }
}

fn shown_flags(flags: &[String]) -> String {
    if flags.is_empty() {
        "(none)".to_owned()
    } else {
        flags.join(" ")
    }
}

/// `YYYYMMDDTHHMMSSZ` in UTC.
pub(crate) fn utc_timestamp(now: SystemTime) -> String {
    // A clock before 1970 or past 9999 is read as 1970.
    jiff::Timestamp::try_from(now)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        let at = |s| utc_timestamp(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "19700101T000000Z");
        assert_eq!(at(951_782_400), "20000229T000000Z");
        assert_eq!(at(1_735_689_599), "20241231T235959Z");
        assert_eq!(at(1_740_787_200), "20250301T000000Z");
    }

    #[test]
    fn flags_split_between_the_agent_and_the_harness() {
        let options = parse(&[
            "--generate",
            "--tasks",
            "flask, SimpleFastPyAPI",
            "--model=gpt",
            "--jobs",
            "2",
            "--timeout",
            "600",
            "--isolation",
            "process",
            "--no-dynamic-checks",
            "--resume",
            "--binaries",
            "/opt/run1",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(options.binaries.as_deref(), Some(Path::new("/opt/run1")));
        assert_eq!(
            options.tasks.as_deref(),
            Some(&["flask".to_owned(), "SimpleFastPyAPI".to_owned()][..])
        );
        assert_eq!(
            options.generation,
            [
                "--model",
                "gpt",
                "--timeout",
                "600",
                "--isolation",
                "process",
                "--no-dynamic-checks"
            ]
        );
        assert_eq!(options.evaluation, ["--jobs", "2", "--resume"]);
        assert_eq!(options.timeout, Some(600));
        assert_eq!(options.isolation.as_deref(), Some("process"));
        assert!(parse(&["--generate", "--help"]).unwrap().is_none());
        assert!(parse(&["--generate", "--generated", "x"]).is_err());
        assert!(parse(&["--generate", "--max-iterations", "many"]).is_err());
        assert!(parse(&["--generate", "--timeout", "0"]).is_err());
    }

    #[test]
    fn a_resumed_run_keeps_the_journal_tasks_and_skips_a_torn_line() {
        let dir = std::env::temp_dir().join(format!("xtask-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("generation.jsonl");
        std::fs::write(
            &path,
            "{\"task\":\"flask\",\"exit_code\":0}\n{\"task\":\"eve\",\"exit_code\":3}\n{\"task\":\"Blo",
        )
        .unwrap();
        let kept = read_journal(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["eve", "flask"]);
        assert_eq!(kept["eve"]["exit_code"], 3);
    }

    #[test]
    fn colours_are_stripped_from_the_tail() {
        assert_eq!(
            strip_ansi("\u{1b}[2m2026\u{1b}[0m \u{1b}[33m WARN\u{1b}[0m sandbox"),
            "2026  WARN sandbox"
        );
    }

    #[test]
    fn the_summary_is_the_json_object_on_stdout() {
        let summary = r#"{"status":"checks_failed","files":["app.py"]}"#;
        assert_eq!(
            parse_summary(&format!("{summary}\n")).unwrap()["status"],
            "checks_failed"
        );
        assert_eq!(
            parse_summary(&format!("noise\n{summary}\n")).unwrap()["files"][0],
            "app.py"
        );
        assert!(parse_summary("").is_none());
        assert!(parse_summary("{\"other\": 1}").is_none());
    }

    #[test]
    fn dsr_and_pass_are_measured_only_for_evaluated_tasks() {
        let evaluated = json!({
            "task": "flask", "status": "evaluated",
            "start": {"dsr": true},
            "tests": {"pass_at_1": 0.5, "counts": {"passed": 1}, "harness_total": 2,
                      "counted": true, "all_passed": false},
            "ac": {"harness": {"implemented": 1, "total": 3, "score": 0.3333}},
            "routes": {"matched": 0, "declared": 3},
            "faults": [{"kind": "build_failed", "detail": "x"}],
        });
        let e = Evaluation::of(Some(&evaluated));
        assert_eq!(e.dsr, Some(true));
        assert_eq!(e.pass, Some((0.5, 1, 2, true)));
        assert_eq!(e.all_passed, Some(false));
        assert_eq!(e.ac, Some((1, 3, 0.3333)));
        assert_eq!(e.routes, Some((0, 3)));
        assert_eq!(e.faults, ["build_failed"]);
        let missing = json!({"task": "flask", "status": "no_repository", "start": {"dsr": true}});
        let e = Evaluation::of(Some(&missing));
        assert_eq!((e.dsr, e.pass, e.all_passed), (None, None, None));
        let no_start = json!({"task": "flask", "status": "evaluated"});
        assert_eq!(Evaluation::of(Some(&no_start)).dsr, Some(false));
    }
}

//! Keeping the agent's process out of reach, and a summary for a run that
//! is killed anyway.
//!
//! A trajectory always ends with a summary written by the agent, unless
//! the agent is killed: `kill -9` from code it runs as its own user, the
//! OOM killer, a CI job's timeout. Then a [`Guard`] writes it. The guard is
//! a small child process (`repo-agent __guard`, a re-execution of the same
//! binary, started right after the trajectory file is created) holding:
//!
//! - the read end of a pipe whose write end only the agent holds
//!   (close-on-exec, so no other child of the agent inherits it);
//! - the trajectory's own open file as its standard output: the one
//!   descriptor a child can be handed without `unsafe` code, and it means
//!   the guard appends to the very file the agent wrote, not to whatever
//!   the path names once the agent is dead.
//!
//! When the agent ends on its own (with its summary written, or with an
//! error it reported) it writes one "done" byte and waits for the guard to
//! exit, so the guard never outlives a normal run. When the pipe closes
//! without that byte, the agent died: the guard reads the trajectory,
//! appends a `summary` of status `killed` with the last turn seen, the
//! tokens counted so far and the signal when it can learn it, syncs the
//! file and exits. It writes nothing when the trajectory already ends with
//! the run's final summary (an agent killed just after writing it).
//!
//! Why a re-executed binary rather than `fork`: the agent has threads by
//! the time the trajectory exists (the model loader's, the runtime's), and
//! a forked child of a threaded process may only make async-signal-safe
//! calls until it executes something. The guard starts with an empty
//! environment (no API key to read), with its standard error on
//! `/dev/null` (a caller waiting for the agent's output to close does not
//! wait for the guard), and makes itself non-dumpable first thing.
//!
//! The guard stays in the agent's process group: in process isolation the
//! sandbox kills every child of the agent that has left the agent's group
//! (descendants of code that escaped with `setsid`), and the guard must not
//! be taken for one. So that a signal sent to the whole group (Ctrl-C in a
//! terminal, a supervisor's SIGTERM or hang-up) ends the agent but not the
//! guard before it has written, the guard handles SIGINT, SIGTERM, SIGHUP
//! and SIGQUIT itself (by doing nothing: it ends when the agent does).
//! `SIGKILL` sent to the whole group ends both, and leaves no summary.

use std::fs::File;
use std::io::{BufReader, Read as _, Seek as _, SeekFrom, Write as _};
use std::os::fd::AsFd as _;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use llm::PriceTable;

use crate::Error;
use crate::trajectory::{Status, Summary, Trajectory, TrajectoryEvent};

/// The hidden subcommand of `repo-agent` that runs [`run_guard`].
pub const GUARD_SUBCOMMAND: &str = "__guard";

/// The byte the agent writes when it ends on its own.
const DONE: u8 = b'D';

/// Makes this process non-dumpable: no process of the same user without
/// `CAP_SYS_PTRACE` can then read its `/proc/<pid>/environ` or memory, or
/// attach to it. That is what keeps the API key out of reach of the code
/// the model writes when it runs as the agent's own user (process
/// isolation as a non-root user). Children get their dumpable flag back
/// when they execute a program.
pub fn not_dumpable() {
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(error = %e, "cannot make the process non-dumpable");
    }
}

/// Which command's trajectory a guard watches: it decides which line is
/// the run's final summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardedRun {
    /// `repo-agent run`: the last line is a `summary`.
    Run,
    /// `repo-agent generate`: the last line is `generated` (each repair
    /// round also writes a `summary`).
    Generate,
}

impl GuardedRun {
    /// The name on the guard's command line.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardedRun::Run => "run",
            GuardedRun::Generate => "generate",
        }
    }

    /// The run named `name` (`run` or `generate`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "run" => Some(GuardedRun::Run),
            "generate" => Some(GuardedRun::Generate),
            _ => None,
        }
    }

    fn is_final(self, event: &TrajectoryEvent) -> bool {
        match self {
            GuardedRun::Run => matches!(event, TrajectoryEvent::Summary(_)),
            GuardedRun::Generate => matches!(event, TrajectoryEvent::Generated(_)),
        }
    }
}

/// The agent's side of a running guard. Dropping it (on every way out of
/// the command but a panic) tells the guard the agent ended on its own and
/// waits for the guard to exit.
#[derive(Debug)]
pub struct Guard {
    child: Child,
    done: Option<std::io::PipeWriter>,
}

/// How long the agent waits for its guard to exit after a normal end
/// (the guard only has to read one byte).
const GUARD_EXIT_WAIT: Duration = Duration::from_secs(5);

impl Guard {
    /// Starts the guard of `trajectory`: `exe` (a binary whose
    /// [`GUARD_SUBCOMMAND`] runs [`run_guard`], normally the running
    /// `repo-agent`) in guard mode. `None` for a trajectory kept in memory.
    pub fn start(
        exe: &Path,
        trajectory: &Trajectory,
        run: GuardedRun,
    ) -> Result<Option<Guard>, Error> {
        let Some(file) = trajectory.file_handle() else {
            return Ok(None);
        };
        let failed = |e: std::io::Error| Error::Trajectory(format!("cannot start its guard: {e}"));
        let file = file.map_err(failed)?;
        // Both ends are close-on-exec: the guard gets the read end as its
        // standard input, and no other child ever holds the write end.
        let (read, write) = std::io::pipe().map_err(failed)?;
        let child = Command::new(exe)
            .arg(GUARD_SUBCOMMAND)
            .args(["--agent-pid", &std::process::id().to_string()])
            .args(["--kind", run.as_str()])
            .env_clear()
            .current_dir("/")
            .stdin(read)
            .stdout(file)
            .stderr(Stdio::null())
            .spawn()
            .map_err(failed)?;
        tracing::debug!(pid = child.id(), "trajectory guard started");
        Ok(Some(Guard {
            child,
            done: Some(write),
        }))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let Some(mut done) = self.done.take() else {
            return;
        };
        // A panic is not an end the agent chose: the guard then writes the
        // summary the agent did not.
        if !std::thread::panicking() {
            let _ = done.write_all(&[DONE]);
        }
        drop(done);
        let deadline = Instant::now() + GUARD_EXIT_WAIT;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        tracing::warn!("the trajectory guard did not exit; stopping it");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How the agent's process ended, as far as `/proc` told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Killed by this signal.
    Signal(i32),
    /// Exited with this status (without writing its summary).
    Exited(i32),
    /// Unknown: the process was already reaped, or `/proc` is not there.
    Unknown,
}

/// The guard's side: waits for the agent (`agent_pid`, the parent) to end,
/// and writes the killed summary when it ended without one. Standard input
/// is the pipe, standard output the trajectory. Runs until the agent ends.
pub fn run_guard(agent_pid: u32, run: GuardedRun) -> ExitCode {
    not_dumpable();
    let started = Instant::now();
    let _handlers = outlive_group_signals();
    // Opened now, while the agent is alive and still this process's
    // parent: the open file stays tied to that process, so a pid reused
    // after it is reaped cannot be read by mistake (the read then fails).
    let parent = rustix::process::getppid().map(|p| p.as_raw_nonzero().get());
    let stat = (u32::try_from(parent.unwrap_or(0)).ok() == Some(agent_pid))
        .then(|| File::open(format!("/proc/{agent_pid}/stat")).ok())
        .flatten();
    let done = wait_for_end();
    if done {
        return ExitCode::SUCCESS;
    }
    let ending = stat.as_ref().map_or(Ending::Unknown, learn_ending);
    match append_killed_summary(run, ending, started.elapsed()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Installs handlers for the signals a terminal or a supervisor sends to
/// the agent's whole process group, so that they end the agent but leave
/// the guard to write the summary. The handlers stay installed while the
/// returned runtime and streams live (the guard's whole life).
fn outlive_group_signals() -> Option<(tokio::runtime::Runtime, Vec<tokio::signal::unix::Signal>)> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .ok()?;
    let signals = {
        let _entered = runtime.enter();
        [
            SignalKind::interrupt(),
            SignalKind::terminate(),
            SignalKind::hangup(),
            SignalKind::quit(),
        ]
        .into_iter()
        .filter_map(|kind| signal(kind).ok())
        .collect()
    };
    Some((runtime, signals))
}

/// Reads standard input until it closes; true when the agent said "done".
fn wait_for_end() -> bool {
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 64];
    let mut done = false;
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => return done,
            Ok(n) => done |= buf.get(..n).is_some_and(|b| b.contains(&DONE)),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return done,
        }
    }
}

/// Reads the agent's exit status from its `/proc/<pid>/stat` (field 52,
/// `exit_code`, in the form `waitpid` reports). The kernel sets it before
/// it closes the dying process's files, so it is there when the pipe
/// closes, as long as the agent's parent has not reaped it yet.
fn learn_ending(stat: &File) -> Ending {
    // The pipe can close a moment before the last thread is gone; a few
    // short retries, bounded.
    for _ in 0..20 {
        let mut buf = vec![0u8; 4096];
        let Ok(n) = stat.read_at(&mut buf, 0) else {
            return Ending::Unknown;
        };
        buf.truncate(n);
        let text = String::from_utf8_lossy(&buf);
        if let Some(ending) = parse_stat_ending(&text) {
            return ending;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ending::Unknown
}

/// The ending in a `/proc/<pid>/stat` line, when the process has one.
fn parse_stat_ending(text: &str) -> Option<Ending> {
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself: fields are counted after the last `)`.
    let rest = text.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 (the state); field 52 is `fields[49]`.
    let code: i32 = fields.get(49)?.parse().ok()?;
    let state = *fields.first()?;
    if code == 0 && !matches!(state, "Z" | "X") {
        return None;
    }
    Some(match code & 0x7f {
        0 => Ending::Exited((code >> 8) & 0xff),
        signal => Ending::Signal(signal),
    })
}

/// The conventional name of a signal number, for the message.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        7 => "SIGBUS",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return format!("signal {signal}"),
    };
    format!("signal {signal}, {name}")
}

/// What the guard learnt from the trajectory written so far.
#[derive(Debug, Default)]
struct Seen {
    /// The last complete line was the run's final summary.
    finished: bool,
    /// The file does not end with a newline (the agent died mid-line).
    partial: bool,
    /// The last turn the model answered.
    turn: u32,
    prompt_tokens: u64,
    completion_tokens: u64,
    cost: f64,
    /// The output files, from the task in the `start` line.
    outputs: Vec<std::path::PathBuf>,
}

/// Reads a trajectory as the guard does: line by line, skipping what does
/// not parse, tallying the turns and tokens.
fn scan(reader: impl std::io::BufRead, run: GuardedRun) -> std::io::Result<Seen> {
    let prices = PriceTable::default();
    let mut seen = Seen::default();
    let mut model_name = String::new();
    let mut task = None;
    let mut reader = reader;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        seen.partial = line.last() != Some(&b'\n');
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(event) = serde_json::from_slice::<TrajectoryEvent>(&line) else {
            seen.finished = false;
            continue;
        };
        seen.finished = run.is_final(&event);
        match event {
            TrajectoryEvent::Start(start) => {
                model_name = start.model;
                task = Some(start.task);
            }
            TrajectoryEvent::Setup(setup) => {
                seen.prompt_tokens += setup.usage.prompt_tokens;
                seen.completion_tokens += setup.usage.completion_tokens;
                seen.cost += setup.usage.cost_usd;
            }
            TrajectoryEvent::Model(model) => {
                seen.turn = model.turn;
                seen.prompt_tokens += model.usage.prompt_tokens;
                seen.completion_tokens += model.usage.completion_tokens;
                let priced_as = if model.model.is_empty() {
                    &model_name
                } else {
                    &model.model
                };
                seen.cost += prices.cost(priced_as, &model.usage).unwrap_or(0.0);
            }
            _ => {}
        }
    }
    seen.outputs = task.map(|t| t.outputs()).unwrap_or_default();
    Ok(seen)
}

/// The summary the guard writes for a killed agent.
fn killed_summary(seen: &Seen, ending: Ending, wall: Duration) -> Summary {
    let how = match ending {
        Ending::Signal(signal) => format!("was killed ({})", signal_name(signal)),
        Ending::Exited(code) => format!("exited with status {code}"),
        Ending::Unknown => "ended".to_owned(),
    };
    Summary {
        status: Status::Killed,
        turns: seen.turn,
        prompt_tokens: seen.prompt_tokens,
        completion_tokens: seen.completion_tokens,
        total_tokens: seen.prompt_tokens + seen.completion_tokens,
        cost: seen.cost,
        wall_ms: crate::run::millis(wall),
        outputs: seen.outputs.clone(),
        message: Some(format!(
            "the agent {how} before it wrote its summary; this line was written by its guard \
             (turns and tokens are those of the lines above)"
        )),
        signal: match ending {
            Ending::Signal(signal) => Some(signal),
            _ => None,
        },
    }
}

/// Appends the killed summary to the trajectory on standard output,
/// unless it already ends with the run's final summary, and syncs it.
/// Returns what was written.
fn append_killed_summary(
    run: GuardedRun,
    ending: Ending,
    wall: Duration,
) -> std::io::Result<Option<Summary>> {
    let mut file = File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    append_to(&mut file, run, ending, wall)
}

fn append_to(
    file: &mut File,
    run: GuardedRun,
    ending: Ending,
    wall: Duration,
) -> std::io::Result<Option<Summary>> {
    file.seek(SeekFrom::Start(0))?;
    let seen = scan(BufReader::new(&*file), run)?;
    if seen.finished {
        return Ok(None);
    }
    let summary = killed_summary(&seen, ending, wall);
    let mut line = Vec::new();
    if seen.partial {
        line.push(b'\n');
    }
    serde_json::to_writer(&mut line, &TrajectoryEvent::Summary(summary.clone()))?;
    line.push(b'\n');
    file.seek(SeekFrom::End(0))?;
    file.write_all(&line)?;
    file.sync_all()?;
    Ok(Some(summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn stat_line(state: &str, exit_code: i32) -> String {
        // 52 fields; the name holds a space and a parenthesis.
        let mut fields = vec!["1234".to_owned(), "(repo agent) x)".to_owned()];
        fields.push(state.to_owned());
        fields.extend((4..52).map(|i| i.to_string()));
        fields.push(exit_code.to_string());
        fields.join(" ") + "\n"
    }

    #[test]
    fn the_ending_is_read_from_the_stat_line() {
        assert_eq!(
            parse_stat_ending(&stat_line("Z", 9)),
            Some(Ending::Signal(9))
        );
        assert_eq!(
            parse_stat_ending(&stat_line("Z", 101 << 8)),
            Some(Ending::Exited(101))
        );
        assert_eq!(
            parse_stat_ending(&stat_line("R", 15)),
            Some(Ending::Signal(15))
        );
        // Still running and nothing set yet: ask again.
        assert_eq!(parse_stat_ending(&stat_line("R", 0)), None);
        assert_eq!(
            parse_stat_ending(&stat_line("Z", 0)),
            Some(Ending::Exited(0))
        );
        assert_eq!(parse_stat_ending("garbage"), None);
        assert_eq!(parse_stat_ending("1 (x) Z 1 2"), None);
    }

    const START: &str = r#"{"type":"start","task":{"description":"d","repositories":[{"name":"r","path":"/nonexistent/r"}],"inputs":[],"output_dir":"/nonexistent/out"},"model":"test-model","tools":[],"max_turns":40,"max_tokens":null,"timeout_ms":null,"exploration_tools":true,"info_selection":true,"context_tokens":10}"#;
    const MODEL: &str = r#"{"type":"model","turn":2,"content":null,"tool_calls":[],"finish_reason":"stop","usage":{"prompt_tokens":100,"completion_tokens":7,"estimated":false},"model":"test-model","latency_ms":1,"wall_ms":1}"#;
    const SUMMARY: &str = r#"{"type":"summary","status":"finished","turns":2,"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"cost":0.0,"wall_ms":5,"outputs":[]}"#;

    fn trajectory_file(text: &str) -> Result<(tempfile::TempDir, File), std::io::Error> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, text)?;
        let file = File::options().read(true).write(true).open(&path)?;
        Ok((dir, file))
    }

    #[test]
    fn a_killed_summary_follows_a_trajectory_cut_short() -> TestResult {
        let (dir, mut file) = trajectory_file(&format!("{START}\n{MODEL}\n{{\"type\":\"req"))?;
        let written = append_to(
            &mut file,
            GuardedRun::Run,
            Ending::Signal(9),
            Duration::from_millis(1500),
        )?
        .ok_or("nothing written")?;
        assert_eq!(written.status, Status::Killed);
        assert_eq!(
            (written.turns, written.total_tokens, written.signal),
            (2, 107, Some(9))
        );
        assert!(
            written
                .message
                .as_deref()
                .is_some_and(|m| m.contains("SIGKILL")),
            "{written:?}"
        );
        // The half-written line is kept, on a line of its own, and the
        // file reads back with the killed summary last.
        let text = std::fs::read_to_string(dir.path().join("t.jsonl"))?;
        assert!(
            text.contains("{\"type\":\"req\n{\"type\":\"summary\""),
            "{text}"
        );
        let events = Trajectory::read(&dir.path().join("t.jsonl"))?;
        assert_eq!(events.len(), 3);
        assert_eq!(events.last(), Some(&TrajectoryEvent::Summary(written)));
        Ok(())
    }

    #[test]
    fn nothing_is_written_after_the_agent_s_own_summary() -> TestResult {
        let text = format!("{START}\n{MODEL}\n{SUMMARY}\n");
        let (dir, mut file) = trajectory_file(&text)?;
        let written = append_to(
            &mut file,
            GuardedRun::Run,
            Ending::Signal(9),
            Duration::ZERO,
        )?;
        assert_eq!(written, None);
        assert_eq!(std::fs::read_to_string(dir.path().join("t.jsonl"))?, text);
        Ok(())
    }

    #[test]
    fn a_repair_round_s_summary_does_not_end_a_generation() -> TestResult {
        let (_dir, mut file) = trajectory_file(&format!("{START}\n{MODEL}\n{SUMMARY}\n"))?;
        let written = append_to(
            &mut file,
            GuardedRun::Generate,
            Ending::Unknown,
            Duration::ZERO,
        )?
        .ok_or("nothing written")?;
        assert_eq!((written.status, written.signal), (Status::Killed, None));
        Ok(())
    }

    #[test]
    fn only_the_line_before_a_killed_summary_may_be_cut() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("t.jsonl");
        // A broken line elsewhere is still an error.
        std::fs::write(&path, format!("{START}\n{{\"type\":\"req\n{MODEL}\n"))?;
        assert!(Trajectory::read(&path).is_err());
        std::fs::write(&path, format!("{START}\n{{\"type\":\"req\n{SUMMARY}\n"))?;
        assert!(
            Trajectory::read(&path).is_err(),
            "not after a finished summary"
        );
        Ok(())
    }
}

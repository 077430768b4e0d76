//! Spawning one child, feeding it, reading it, timing it out and cleaning up after it.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::cgroup::{CallCgroup, Finished, Placement};
use crate::config::RunAs;
use crate::error::{Result, SandboxError};
use crate::limits::{self, Limits};
use crate::output::{Capture, CapturedOutput, OutputCallback, OutputChunk, OutputStream};

/// How long output pipes are still read after the process tree is gone. Only matters
/// when something outside the killed group inherited a pipe (possible in process mode
/// for a descendant that called `setsid`); we stop waiting for it rather than hang.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Read buffer size for each output pipe.
const READ_CHUNK: usize = 64 * 1024;

/// Texts that programs print when an allocation fails, used to tell a memory-limit
/// failure from any other crash (RLIMIT_AS makes allocations fail rather than killing).
const MEMORY_MARKERS: &[&str] = &[
    "MemoryError",
    "Cannot allocate memory",
    "cannot allocate memory",
    "bad_alloc",
    "memory allocation of",
    "out of memory",
    "Out of memory",
    "OutOfMemory",
];

/// A fully resolved child to run.
pub(crate) struct Spec {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) cwd: PathBuf,
    pub(crate) stdin: Option<Vec<u8>>,
    pub(crate) limits: Limits,
    /// Where to make the call's cgroups (memory, pids), for the limits the kernel
    /// lets us cap for the whole call (`cgroup.rs`); empty when none.
    pub(crate) cgroups: Vec<Placement>,
    pub(crate) run_as: Option<RunAs>,
    pub(crate) timeout: Duration,
    pub(crate) kill_grace: Duration,
    pub(crate) output_limit: usize,
    pub(crate) on_output: Option<OutputCallback>,
    /// Name shown in logs and errors (the user's program, not `bwrap`).
    pub(crate) display_name: String,
    /// The disk budget, the paths whose file systems the code can write,
    /// and whether it can write only below them.
    pub(crate) disk: Option<(u64, Vec<PathBuf>, crate::disk::Writes)>,
}

/// Why the sandbox stopped a call before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    /// It ended by itself.
    No,
    /// The wall-clock timeout expired.
    Timeout,
    /// It wrote more than its disk budget.
    Disk,
}

/// What happened when a command ran.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecResult {
    /// Exit code, when the process exited normally. In namespaces mode a program killed
    /// by a signal shows up as `128 + signal`, as in a shell, because `bwrap` reports it
    /// that way.
    pub exit_code: Option<i32>,
    /// The signal that killed the process, when one did (process mode).
    pub signal: Option<i32>,
    /// What the program wrote on standard output (bounded, see [`CapturedOutput`]).
    pub stdout: CapturedOutput,
    /// What the program wrote on standard error (bounded, see [`CapturedOutput`]).
    pub stderr: CapturedOutput,
    /// Wall-clock time from start to the end of cleanup.
    pub duration: Duration,
    /// The wall-clock timeout expired and the process tree was killed.
    pub timed_out: bool,
    /// The memory limit stopped the program or one of its processes.
    ///
    /// Where the total is capped by a cgroup ([`Sandbox::memory_cap`](crate::Sandbox::memory_cap)),
    /// this is `true` when the kernel's OOM killer killed any process of the call (the
    /// cgroup's `oom_kill` count): a fact, also when the program went on or timed out
    /// afterwards.
    ///
    /// Otherwise, and for the per-process RLIMIT_AS (which makes allocations fail
    /// instead of killing), it is inferred: a memory limit was set, the program failed
    /// without timing out, and its stdout or stderr (kept head or tail) carries an
    /// allocation-failure message: `MemoryError`, `Cannot allocate memory`,
    /// `std::bad_alloc`, Rust's `memory allocation of N bytes failed`, `out of memory`
    /// and the like. A program that dies silently on a failed allocation is not
    /// reported, and without a cgroup neither is a kill by the OOM killer (a SIGKILL
    /// like any other).
    pub killed_for_memory: bool,
    /// Some output was dropped from the middle of stdout or stderr.
    pub truncated: bool,
    /// The call was stopped because a file system it can write grew by more than
    /// its disk budget ([`disk_limit`](crate::SandboxConfigBuilder::disk_limit)).
    pub killed_for_disk: bool,
    /// How many files the code left with a setuid or setgid bit in a directory it
    /// could write; the bits were cleared after the call.
    pub setid_cleared: usize,
    /// How many times the call's process cap refused a new process or thread
    /// (the pids cgroup's count, where there is one; 0 otherwise, also when
    /// RLIMIT_NPROC refused some: the kernel does not count those).
    pub forks_refused: u64,
}

impl ExecResult {
    /// `true` when the program exited with status 0 and was not stopped by the sandbox.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// A short description of how the program ended, for messages and logs.
    pub fn status_summary(&self) -> String {
        if self.timed_out {
            return format!("timed out after {:.1?}", self.duration);
        }
        let mut s = match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            (None, None) => "unknown status".to_owned(),
        };
        if self.killed_for_memory {
            s.push_str(", memory limit reached");
        }
        if self.killed_for_disk {
            s.push_str(", stopped for writing more than its disk budget");
        }
        s
    }

    /// Stdout and stderr rendered one after the other, for showing to a model.
    pub fn combined_output(&self) -> String {
        let mut out = self.stdout.to_string();
        if !self.stderr.is_empty() {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&self.stderr.to_string());
        }
        out
    }
}

/// Kills the child's process group when dropped, so a cancelled `exec` future (or an
/// early return) cannot leave the tree running.
struct GroupGuard {
    pgid: Option<Pid>,
    /// Cleared once the group has been killed after the main process exited: signalling
    /// a group id again later could hit an unrelated group that reused the number.
    armed: AtomicBool,
}

impl GroupGuard {
    fn signal(&self, signal: Signal) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        if let Some(pgid) = self.pgid {
            // ESRCH (group already gone) is the normal case after a clean exit.
            if let Err(e) = kill_process_group(pgid, signal)
                && e != rustix::io::Errno::SRCH
            {
                tracing::warn!(pgid = pgid.as_raw_nonzero().get(), error = %e, "could not signal process group");
            }
        }
    }

    fn kill_and_disarm(&self) {
        self.signal(Signal::KILL);
        self.armed.store(false, Ordering::Release);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::KILL);
        // A cancelled call leaves the set of running calls too.
        if let Some(pgid) = self.pgid
            && let Ok(pid) = u32::try_from(pgid.as_raw_nonzero().get())
        {
            crate::reaper::finished(pid);
        }
    }
}

pub(crate) async fn run(spec: Spec) -> Result<ExecResult> {
    let start = Instant::now();
    // What the reaper tells this call's escaped descendants by.
    let mark = crate::reaper::new_mark();
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(crate::reaper::CALL_MARK, &mark)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(identity) = spec.run_as {
        command.uid(identity.uid).gid(identity.gid);
    }
    // Made before the spawn, so the child can move into it before `exec`; dropping
    // it (spawn failure, cancellation) kills what is in it and removes it.
    let mut cgroups = spec
        .cgroups
        .iter()
        .map(CallCgroup::create)
        .collect::<Result<Vec<_>>>()?;
    let mut limits = spec.limits;
    for (slot, cgroup) in limits.cgroup_procs.iter_mut().zip(&cgroups) {
        *slot = cgroup.procs_fd();
    }
    limits::install(&mut command, limits);

    // Registered as a running call before anyone can see it: the reaper
    // takes any other child of this process for an escaped descendant.
    let (mut child, pid) = {
        let mut live = crate::reaper::live();
        let spawned = command.spawn();
        for cgroup in &mut cgroups {
            cgroup.spawned();
        }
        let child = spawned.map_err(|source| {
            for cgroup in &cgroups {
                tracing::warn!(
                    dir = %cgroup.dir().display(),
                    "spawn failed; moving into the call's cgroup before exec may be what failed"
                );
            }
            SandboxError::Spawn {
                program: spec.display_name.clone(),
                source,
            }
        })?;
        let pid = child.id();
        if let Some(pid) = pid {
            live.insert(pid, mark);
        }
        (child, pid)
    };
    tracing::debug!(program = %spec.display_name, pid, "spawned sandboxed child");
    let guard = GroupGuard {
        pgid: pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(Pid::from_raw),
        armed: AtomicBool::new(true),
    };

    let disk = spec
        .disk
        .as_ref()
        .map(|(limit, roots, writes)| crate::disk::DiskWatch::start(*limit, roots, *writes));
    let (done_tx, done_rx) = watch::channel(false);
    let stdin_pipe = child.stdin.take();
    let mut stdin_done = done_rx.clone();
    let stdin_fut = async move {
        let (Some(mut pipe), Some(bytes)) = (stdin_pipe, spec.stdin) else {
            return;
        };
        // Stop feeding once the tree is gone: a descendant that escaped the group
        // could otherwise hold the pipe open without reading and stall the call.
        tokio::select! {
            written = pipe.write_all(&bytes) => {
                // A program that exits without reading its input closes the pipe:
                // that is its choice, not a sandbox failure.
                if let Err(e) = written
                    && e.kind() != std::io::ErrorKind::BrokenPipe
                {
                    tracing::debug!(error = %e, "writing stdin failed");
                }
            }
            _ = stdin_done.changed() => {}
        }
    };
    let stdout_fut = pump(
        child.stdout.take(),
        OutputStream::Stdout,
        spec.output_limit,
        spec.on_output.clone(),
        done_rx.clone(),
    );
    let stderr_fut = pump(
        child.stderr.take(),
        OutputStream::Stderr,
        spec.output_limit,
        spec.on_output.clone(),
        done_rx,
    );

    let wait_fut = async {
        let outcome = supervise(
            &mut child,
            &guard,
            spec.timeout,
            spec.kill_grace,
            disk.as_ref(),
        )
        .await;
        // Whatever the main process left behind in its group goes now; this is what
        // keeps backgrounded children from outliving the call.
        guard.kill_and_disarm();
        if let Some(pid) = pid {
            crate::reaper::finished(pid);
        }
        // Everything else the call started is in its cgroup, whichever group or
        // namespace it moved to: it goes now, then the cgroup with it.
        let mut finished = Finished::default();
        for cgroup in cgroups {
            let one = cgroup.finish().await;
            finished.oom_kills += one.oom_kills;
            finished.forks_refused += one.forks_refused;
        }
        // And what left the group (`setsid`, double forks), in process mode: killed
        // here when there is no cgroup, and reaped either way.
        crate::reaper::kill_escaped().await;
        let _ = done_tx.send(true);
        (outcome, finished)
    };

    let ((outcome, finished), stdout, stderr, ()) =
        tokio::join!(wait_fut, stdout_fut, stderr_fut, stdin_fut);
    let (status, stopped) = outcome
        .map_err(|e| SandboxError::io(format!("waiting for `{}` failed", spec.display_name), e))?;
    let timed_out = stopped == Stopped::Timeout;

    let exit_code = status.code();
    let signal = status.signal();
    let failed = exit_code != Some(0);
    let memory_message = MEMORY_MARKERS
        .iter()
        .any(|m| stderr.contains(m) || stdout.contains(m));
    let killed_for_memory = finished.oom_kills > 0
        || (spec.limits.address_space.is_some() && !timed_out && failed && memory_message);
    let result = ExecResult {
        exit_code,
        signal,
        truncated: stdout.is_truncated() || stderr.is_truncated(),
        stdout,
        stderr,
        duration: start.elapsed(),
        timed_out,
        killed_for_memory,
        killed_for_disk: stopped == Stopped::Disk,
        setid_cleared: 0,
        forks_refused: finished.forks_refused,
    };
    tracing::debug!(
        program = %spec.display_name,
        status = %result.status_summary(),
        duration_ms = result.duration.as_millis() as u64,
        "sandboxed child finished"
    );
    Ok(result)
}

/// Waits for the child, enforcing the timeout and the disk budget. Returns the exit
/// status and whether (and why) the sandbox stopped it.
async fn supervise(
    child: &mut tokio::process::Child,
    guard: &GroupGuard,
    timeout: Duration,
    grace: Duration,
    disk: Option<&crate::disk::DiskWatch>,
) -> std::io::Result<(ExitStatus, Stopped)> {
    let over_budget = async {
        match disk {
            Some(watch) => watch.wait_exceeded().await,
            None => std::future::pending().await,
        }
    };
    let stopped = tokio::select! {
        status = child.wait() => return Ok((status?, Stopped::No)),
        () = tokio::time::sleep(timeout) => {
            tracing::info!(
                timeout_ms = timeout.as_millis() as u64,
                "command timed out; stopping its process group"
            );
            Stopped::Timeout
        }
        (path, grown) = over_budget => {
            tracing::warn!(
                path = %path.display(),
                grown,
                "command wrote past its disk budget; stopping its process group"
            );
            Stopped::Disk
        }
    };
    guard.signal(Signal::TERM);
    if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
        return Ok((status?, stopped));
    }
    guard.signal(Signal::KILL);
    Ok((child.wait().await?, stopped))
}

/// Reads one pipe to the end (or until shortly after the process tree is gone),
/// streaming chunks to the callback and keeping a bounded capture.
async fn pump<R: AsyncRead + Unpin>(
    reader: Option<R>,
    stream: OutputStream,
    limit: usize,
    callback: Option<OutputCallback>,
    mut done: watch::Receiver<bool>,
) -> CapturedOutput {
    let mut capture = Capture::new(limit);
    let Some(mut reader) = reader else {
        return capture.finish();
    };
    let mut buf = vec![0u8; READ_CHUNK];
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let read = match deadline {
            None => tokio::select! {
                r = reader.read(&mut buf) => r,
                _ = done.changed() => {
                    deadline = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                    continue;
                }
            },
            Some(at) => match tokio::time::timeout_at(at, reader.read(&mut buf)).await {
                Ok(r) => r,
                Err(_) => {
                    tracing::warn!(
                        ?stream,
                        "output pipe still open after the process group was killed \
                         (a descendant left the group); stopped reading"
                    );
                    break;
                }
            },
        };
        match read {
            Ok(0) => break,
            Ok(n) => {
                let bytes = &buf[..n];
                if let Some(cb) = &callback {
                    cb(OutputChunk { stream, bytes });
                }
                capture.push(bytes);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::warn!(?stream, error = %e, "reading child output failed");
                break;
            }
        }
    }
    capture.finish()
}

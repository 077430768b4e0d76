//! Runs model-written code without letting it hurt the machine it runs on.
//!
//! A [`Sandbox`] executes commands, shell scripts and Python under a wall-clock
//! timeout, memory/CPU/file-size/process-count limits and a clean environment (the
//! caller's `OPENAI_API_KEY` and friends never get in), and hands back an
//! [`ExecResult`] whose stdout and stderr are bounded: a program that prints 100 MB
//! costs a few hundred kilobytes, with the head and tail kept and the middle counted.
//! Two isolation levels sit behind the same API:
//!
//! | | [`Isolation::Process`] | [`Isolation::Namespaces`] (`bwrap`) |
//! |---|---|---|
//! | runs as | never root: a root caller's code runs as `nobody` ([`Sandbox::run_as`]) | the same (bwrap stays root without a user namespace; `setpriv` drops to the user inside) |
//! | resource limits (`setrlimit`) | yes | yes |
//! | total memory across processes | a memory cgroup per call, where the kernel lets us ([`Sandbox::memory_cap`]) | the same (`bwrap` and all it runs are in the call's cgroup) |
//! | processes and threads | a pids cgroup per call, else RLIMIT_NPROC ([`Sandbox::process_cap`]) | the same |
//! | timeout kills every descendant | its process group, then those that left it (child subreaper) | its whole PID namespace |
//! | `no_new_privs` | yes | set by bubblewrap |
//! | setuid/setgid files left behind | bits cleared after each call | the same (mounts are also `nosuid` inside) |
//! | file system | as the sandbox user sees it | system dirs read-only; only the working directory, granted paths and a private `/tmp` writable; home hidden; `/proc/sys` read-only |
//! | `/tmp`, `/dev/shm` | the host's; what the code's user made there is removed after its calls | private tmpfs mounts of bounded size |
//! | disk | a budget per call, watched ([`SandboxConfigBuilder::disk_limit`]) | the same, plus the sized tmpfs mounts |
//! | network | caller's | none (private loopback) unless enabled; pip reaches only the registry |
//!
//! [`Isolation::Auto`] (the default) picks namespaces when `bwrap` (Debian package
//! `bubblewrap`) is installed and the kernel allows it. On top of one-off calls the crate
//! offers a [`ShellSession`] that keeps `cd` and `export` between commands, per-task
//! Python virtualenvs ([`Sandbox::create_venv`], [`Sandbox::pip_install`]) with a
//! pip cache of their own (one per sandbox, so code one run executes cannot plant wheels
//! another installs), live output through a callback, and a [`BlockingSandbox`] for
//! synchronous callers.
//!
//! ```no_run
//! use std::time::Duration;
//! use sandbox::{Command, PythonScript, Sandbox, SandboxConfig};
//!
//! # async fn demo() -> Result<(), sandbox::SandboxError> {
//! let config = SandboxConfig::builder("/tmp/task-42")
//!     .timeout(Duration::from_secs(30))
//!     .memory_limit(1 << 30)
//!     .output_limit(64 * 1024)
//!     .build()?;
//! let sandbox = Sandbox::new(config).await?;
//!
//! let result = sandbox.exec(Command::new("ls").arg("-la")).await?;
//! println!("{} -> {}", result.status_summary(), result.stdout);
//!
//! let result = sandbox
//!     .run_python(PythonScript::code("print(sum(range(10)))"), &["--verbose"])
//!     .await?;
//! assert_eq!(result.stdout.head.trim(), "45");
//!
//! let mut shell = sandbox.shell_session()?;
//! shell.run("cd src && export MODE=test").await?;
//! let again = shell.run("echo $MODE in $PWD").await?;
//! println!("{}", again.stdout);
//! # Ok(())
//! # }
//! ```
//!
//! Limits that the kernel cannot enforce are reported rather than faked: without a
//! pids cgroup the process limit is RLIMIT_NPROC, which counts every task of the
//! code's user ([`Sandbox::process_cap`]); process mode cannot
//! block the network; the memory limit caps the total of a call's processes only where
//! a memory cgroup can be made ([`Sandbox::memory_cap`] says which, and why not), and
//! otherwise each process on its own; and [`ExecResult::killed_for_memory`] is the
//! cgroup's OOM-kill count where there is one, else inferred from how the program
//! failed (see its documentation).
#![deny(missing_docs)]

mod access;
mod blocking;
mod bwrap;
mod cgroup;
mod command;
mod config;
mod disk;
mod error;
mod hygiene;
mod limits;
mod output;
mod python;
mod reaper;
mod registry;
mod runner;
mod sandbox;
mod service;
mod session;

pub use blocking::{BlockingSandbox, BlockingShellSession};
pub use cgroup::{MemoryCap, ProcessCap};
pub use command::Command;
pub use config::{
    DEFAULT_DISK_LIMIT, DEFAULT_KILL_GRACE, DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_PROCESSES,
    DEFAULT_MEMORY_LIMIT, DEFAULT_OUTPUT_LIMIT, DEFAULT_PATH, DEFAULT_TIMEOUT, Isolation, RunAs,
    SandboxConfig, SandboxConfigBuilder,
};
pub use error::{Result, SandboxError};
pub use output::{CapturedOutput, OutputCallback, OutputChunk, OutputStream, text_tail};
pub use python::{PythonEnv, PythonScript};
pub use runner::ExecResult;
pub use sandbox::{Sandbox, namespaces_available};
pub use service::{
    Agreement, HttpObservation, HttpRequest, JsonKind, JunitReport, MAX_REQUESTS, Outcome,
    Readiness, ServiceCommand, ServicePlan, ServiceReport, TestCase, TestCounts, TestReport,
    TestRun, parse_junit, pytest_summary, xml_tags_within_limits,
};
pub use session::ShellSession;

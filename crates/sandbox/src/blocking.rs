use std::ffi::OsStr;
use std::path::Path;

use tokio::runtime::Runtime;

use crate::command::Command;
use crate::config::SandboxConfig;
use crate::error::{Result, SandboxError};
use crate::python::{PythonEnv, PythonScript};
use crate::runner::ExecResult;
use crate::sandbox::Sandbox;
use crate::session::ShellSession;

/// A [`Sandbox`] for synchronous code: each method blocks until the command is done.
///
/// It owns a single-threaded Tokio runtime. Do not use it from inside an async
/// runtime (methods return [`SandboxError::BlockingInsideRuntime`] there); use
/// [`Sandbox`] instead.
#[derive(Debug)]
pub struct BlockingSandbox {
    runtime: Runtime,
    sandbox: Sandbox,
}

fn ensure_not_in_runtime() -> Result<()> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(SandboxError::BlockingInsideRuntime);
    }
    Ok(())
}

impl BlockingSandbox {
    /// See [`Sandbox::new`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::new`], plus [`SandboxError::Io`] if the runtime cannot start
    /// and [`SandboxError::BlockingInsideRuntime`].
    pub fn new(config: SandboxConfig) -> Result<Self> {
        ensure_not_in_runtime()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| SandboxError::io("starting the sandbox's Tokio runtime", e))?;
        let sandbox = runtime.block_on(Sandbox::new(config))?;
        Ok(Self { runtime, sandbox })
    }

    /// The async sandbox underneath.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// See [`Sandbox::exec`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::exec`].
    pub fn exec(&self, command: Command) -> Result<ExecResult> {
        ensure_not_in_runtime()?;
        self.runtime.block_on(self.sandbox.exec(command))
    }

    /// See [`Sandbox::run_shell`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::run_shell`].
    pub fn run_shell(&self, script: &str) -> Result<ExecResult> {
        ensure_not_in_runtime()?;
        self.runtime.block_on(self.sandbox.run_shell(script))
    }

    /// See [`Sandbox::run_python`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::run_python`].
    pub fn run_python<S: AsRef<OsStr>>(
        &self,
        script: PythonScript,
        args: &[S],
    ) -> Result<ExecResult> {
        ensure_not_in_runtime()?;
        self.runtime.block_on(self.sandbox.run_python(script, args))
    }

    /// See [`Sandbox::run_python_in`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::run_python_in`].
    pub fn run_python_in<S: AsRef<OsStr>>(
        &self,
        env: &PythonEnv,
        script: PythonScript,
        args: &[S],
    ) -> Result<ExecResult> {
        ensure_not_in_runtime()?;
        self.runtime
            .block_on(self.sandbox.run_python_in(env, script, args))
    }

    /// See [`Sandbox::create_venv`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::create_venv`].
    pub fn create_venv(&self, dir: impl AsRef<Path>) -> Result<PythonEnv> {
        ensure_not_in_runtime()?;
        self.runtime.block_on(self.sandbox.create_venv(dir))
    }

    /// See [`Sandbox::pip`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::pip`].
    pub fn pip<S: AsRef<OsStr>>(&self, env: &PythonEnv, args: &[S]) -> Result<ExecResult> {
        ensure_not_in_runtime()?;
        self.runtime.block_on(self.sandbox.pip(env, args))
    }

    /// See [`Sandbox::pip_install`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::pip_install`].
    pub fn pip_install<S: AsRef<OsStr>>(&self, env: &PythonEnv, args: &[S]) -> Result<ExecResult> {
        ensure_not_in_runtime()?;
        self.runtime.block_on(self.sandbox.pip_install(env, args))
    }

    /// See [`Sandbox::shell_session`].
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::shell_session`].
    pub fn shell_session(&self) -> Result<BlockingShellSession<'_>> {
        Ok(BlockingShellSession {
            runtime: &self.runtime,
            session: self.sandbox.shell_session()?,
        })
    }
}

/// A [`ShellSession`] driven by a [`BlockingSandbox`]'s runtime.
#[derive(Debug)]
pub struct BlockingShellSession<'a> {
    runtime: &'a Runtime,
    session: ShellSession,
}

impl BlockingShellSession<'_> {
    /// See [`ShellSession::run`].
    ///
    /// # Errors
    ///
    /// As for [`ShellSession::run`].
    pub fn run(&mut self, command: &str) -> Result<ExecResult> {
        ensure_not_in_runtime()?;
        self.runtime.block_on(self.session.run(command))
    }

    /// See [`ShellSession::cwd`].
    pub fn cwd(&self) -> &Path {
        self.session.cwd()
    }
}

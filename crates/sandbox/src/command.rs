use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

/// A program to run in a [`Sandbox`](crate::Sandbox), with its arguments and per-call
/// settings.
///
/// The program is looked up on the sandbox `PATH` (not the caller's). Settings not
/// given here come from the [`SandboxConfig`](crate::SandboxConfig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) stdin: Option<Vec<u8>>,
    pub(crate) current_dir: Option<PathBuf>,
    pub(crate) timeout: Option<Duration>,
}

impl Command {
    /// A command running `program` with no arguments.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Self {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            env: Vec::new(),
            stdin: None,
            current_dir: None,
            timeout: None,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Appends several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets an environment variable for this call only, on top of the sandbox's.
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((name.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Bytes written to the program's standard input, which is then closed. Default:
    /// standard input is `/dev/null`.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Directory to start in; a relative path is taken from the working directory.
    /// Default: the working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Wall-clock limit for this call, replacing the configured one.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The program name as given.
    pub fn program(&self) -> &OsStr {
        &self.program
    }
}

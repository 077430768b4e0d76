use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while configuring a sandbox or running code in it.
///
/// A program that runs and fails (non-zero exit, timeout, memory limit) is *not* an
/// error: it comes back as an [`ExecResult`](crate::ExecResult). These variants are
/// for the cases where the sandbox itself could not do its job, and each message says
/// what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// Namespace isolation was requested but the `bwrap` program was not found.
    #[error(
        "bubblewrap (`bwrap`) was not found at `{program}`, so namespace isolation is unavailable; \
         install the `bubblewrap` package (Debian/Ubuntu: `apt-get install bubblewrap`, \
         Fedora: `dnf install bubblewrap`) or choose `Isolation::Process` or `Isolation::Auto`"
    )]
    BwrapMissing {
        /// The program name or path that was looked up.
        program: PathBuf,
    },

    /// `bwrap` is installed but could not create the namespaces it needs.
    #[error(
        "the kernel refused to create namespaces for bubblewrap ({reason}); allow unprivileged \
         user namespaces (sysctl `kernel.unprivileged_userns_clone=1` or a non-zero \
         `user.max_user_namespaces`; inside a container, run it with a seccomp/AppArmor profile \
         that permits `unshare`) or choose `Isolation::Process`"
    )]
    NamespacesUnavailable {
        /// What `bwrap` printed when the probe failed.
        reason: String,
    },

    /// The configuration is inconsistent or names something that does not exist.
    #[error("invalid sandbox configuration: {0}")]
    InvalidConfig(String),

    /// A path given in the configuration could not be resolved.
    #[error("cannot use {what} `{path}`: {source}; make sure it exists and is accessible")]
    Path {
        /// Which setting the path came from.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// The program (or `bwrap`) could not be started at all.
    #[error(
        "failed to start `{program}`: {source}; check that it is installed, on the sandbox PATH \
         and readable by the sandbox user"
    )]
    Spawn {
        /// The program that was being started.
        program: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// An I/O operation the sandbox needs for its own bookkeeping failed.
    #[error("{context}: {source}")]
    Io {
        /// What the sandbox was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// No Python interpreter could be found or queried.
    #[error(
        "no usable Python interpreter: {reason}; install python3 or point the sandbox at one \
         with `SandboxConfig::builder(..).python(\"/path/to/python3\")`"
    )]
    PythonUnavailable {
        /// Why the interpreter could not be used.
        reason: String,
    },

    /// Inline Python code is too long to pass on the command line.
    #[error(
        "inline Python code is {len} bytes, more than the {max}-byte limit the kernel allows for \
         one argument; write it to a file in the working directory and run it with \
         `PythonScript::file`"
    )]
    CodeTooLarge {
        /// Size of the code in bytes.
        len: usize,
        /// Largest size accepted.
        max: usize,
    },

    /// `python -m venv` did not produce a usable environment.
    #[error(
        "creating the virtualenv at `{path}` failed ({status}); the sandbox must be able to write \
         there (use the working directory or a read-write path) and the interpreter needs the \
         `venv` module (Debian: `apt-get install python3-venv`). Output:\n{output}"
    )]
    VenvFailed {
        /// Where the environment was to be created.
        path: PathBuf,
        /// How the command ended.
        status: String,
        /// What the command printed (head and tail).
        output: String,
    },

    /// `pip install` exited unsuccessfully.
    #[error(
        "`pip install` failed ({status}); check the requirement names and versions, and enable \
         `package_registry(true)` if the packages must be downloaded. Output:\n{output}"
    )]
    PipFailed {
        /// How the command ended.
        status: String,
        /// What the command printed (head and tail).
        output: String,
    },

    /// The blocking wrapper was used from inside an async runtime.
    #[error(
        "`BlockingSandbox` was called from inside a Tokio runtime, where blocking would stall \
         it; use the async `Sandbox` there instead"
    )]
    BlockingInsideRuntime,
}

/// Short alias used throughout the crate.
pub type Result<T, E = SandboxError> = std::result::Result<T, E>;

impl SandboxError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

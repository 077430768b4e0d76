//! Why the harness could not evaluate a task: its own failures (a
//! workspace it cannot write, a sandbox it cannot set up, a runtime that
//! does not start), recorded as the task's `message` with status `error`.
//! The generated repository's failures are never these: they are faults in
//! the record and scores of zero.

use std::path::PathBuf;

/// A failure of the harness while evaluating one task.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvaluationError {
    /// A file or directory of the harness's own could not be made, read,
    /// written, locked or removed.
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        /// What was being done (`read`, `create`, `remove the stale environment`).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Copying or clearing a workspace failed.
    #[error(transparent)]
    Workspace(#[from] crate::Error),
    /// A sandbox could not be configured or started.
    #[error("{purpose} sandbox: {source}")]
    Sandbox {
        /// `build` (environments, Maven) or `run` (the service and tests).
        purpose: SandboxPurpose,
        /// The cause.
        source: sandbox::SandboxError,
    },
    /// A command could not be run in its sandbox at all (its own failure
    /// is an outcome, not this).
    #[error("cannot {what}: {source}")]
    Command {
        /// What was being run (`run mvn`, `run the service and tests`).
        what: String,
        /// The cause.
        source: sandbox::SandboxError,
    },
    /// The async runtime a task runs on could not start.
    #[error("cannot start a runtime: {0}")]
    Runtime(std::io::Error),
}

/// What a sandbox was for, in an [`EvaluationError::Sandbox`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SandboxPurpose {
    /// Building environments or a Maven project.
    Build,
    /// Running the service and the golden tests.
    Run,
}

impl std::fmt::Display for SandboxPurpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SandboxPurpose::Build => "build",
            SandboxPurpose::Run => "run",
        })
    }
}

impl EvaluationError {
    /// An I/O failure on `path` while doing `action`.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| EvaluationError::Io {
            action,
            path,
            source,
        }
    }

    /// A sandbox for `purpose` that could not be set up.
    pub(crate) fn sandbox(purpose: SandboxPurpose) -> impl FnOnce(sandbox::SandboxError) -> Self {
        move |source| EvaluationError::Sandbox { purpose, source }
    }

    /// A command (`what`) that could not be run.
    pub(crate) fn command(what: impl Into<String>) -> impl FnOnce(sandbox::SandboxError) -> Self {
        let what = what.into();
        move |source| EvaluationError::Command { what, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_failed_and_where() {
        let e = EvaluationError::io("write", "/out/golden/t/pytest.ini")(std::io::Error::from(
            std::io::ErrorKind::PermissionDenied,
        ));
        assert_eq!(
            e.to_string(),
            "cannot write /out/golden/t/pytest.ini: permission denied"
        );
        let e = EvaluationError::Runtime(std::io::Error::other("no threads"));
        assert_eq!(e.to_string(), "cannot start a runtime: no threads");
        assert_eq!(SandboxPurpose::Build.to_string(), "build");
    }
}

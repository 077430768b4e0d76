use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::command::Command;
use crate::error::{Result, SandboxError};
use crate::runner::ExecResult;
use crate::sandbox::{Sandbox, shell_program};

/// Wraps each command: restores the previous command's exported variables and
/// directory, runs the command with `eval`, and saves both again on exit (also after
/// `exit N` or a failing command). Only builtins run before the restore finishes,
/// because `PATH` itself is among the restored variables.
const SESSION_SCRIPT: &str = r#"__sandbox_state=$1
__sandbox_cmd=$2
shift 2
if [ -f "$__sandbox_state/env" ]; then
  unset $(compgen -e) 2>/dev/null
  . "$__sandbox_state/env"
fi
if [ -f "$__sandbox_state/cwd" ]; then
  IFS= read -r __sandbox_dir < "$__sandbox_state/cwd"
  cd -- "$__sandbox_dir" 2>/dev/null || printf 'sandbox: directory %s from the previous command is gone; running in %s\n' "$__sandbox_dir" "$PWD" >&2
fi
__sandbox_save() {
  pwd > "$__sandbox_state/cwd"
  export -p > "$__sandbox_state/env"
}
trap __sandbox_save EXIT
eval "$__sandbox_cmd"
"#;

/// A shell that remembers `cd` and `export` between commands, as a developer's
/// terminal does.
///
/// Every command still runs in a fresh sandboxed process tree with the full limits and
/// timeout, so a command that hangs or crashes cannot wedge the session; only the
/// working directory and exported variables are carried over. Consequently background
/// jobs, shell functions and unexported variables do not survive from one command to
/// the next, and in namespaces mode neither does anything under the private `/tmp`.
#[derive(Debug)]
pub struct ShellSession {
    sandbox: Sandbox,
    state: TempDir,
    cwd: PathBuf,
}

impl ShellSession {
    pub(crate) fn new(sandbox: Sandbox) -> Result<Self> {
        if shell_program() != "bash" {
            return Err(SandboxError::InvalidConfig(
                "shell sessions need bash, which is not installed; install the `bash` package"
                    .to_owned(),
            ));
        }
        // Inside the sandbox's home so it is writable (and mounted) in every mode.
        let state = tempfile::Builder::new()
            .prefix("session-")
            .tempdir_in(sandbox.state_parent())
            .map_err(|e| SandboxError::io("creating the shell session state directory", e))?;
        if let Some(identity) = sandbox.run_as() {
            std::os::unix::fs::chown(state.path(), Some(identity.uid), Some(identity.gid))
                .map_err(|e| {
                    SandboxError::io("handing the session state directory to run_as user", e)
                })?;
        }
        let cwd = sandbox.config().working_dir.clone();
        Ok(Self {
            sandbox,
            state,
            cwd,
        })
    }

    /// Runs one shell command (any bash syntax) in the session.
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::exec`].
    pub async fn run(&mut self, command: &str) -> Result<ExecResult> {
        let cmd = Command::new("bash")
            .arg("-c")
            .arg(SESSION_SCRIPT)
            .arg("sandbox-session")
            .arg(self.state.path())
            .arg(command);
        let result = self.sandbox.exec(cmd).await?;
        // A command killed at its timeout never ran the exit trap; the previous state
        // then stays, which is the least surprising outcome.
        match std::fs::read_to_string(self.state.path().join("cwd")) {
            Ok(text) => {
                let dir = text.trim_end_matches('\n');
                if !dir.is_empty() {
                    self.cwd = PathBuf::from(dir);
                }
            }
            Err(e) => tracing::debug!(error = %e, "session state not updated by the last command"),
        }
        Ok(result)
    }

    /// The directory the next command starts in (as last reported by the shell).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The sandbox this session runs in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }
}

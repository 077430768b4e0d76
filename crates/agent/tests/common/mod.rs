//! Shared helpers: a private copy of the fixture repository and task.

#![allow(dead_code)]

pub mod cli;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agent::{AgentConfig, TaskSpec};

pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            if entry.file_name() != "__pycache__" {
                copy_dir(&entry.path(), &target)?;
            }
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// A temporary directory with `repo/` (the fixture), `input.txt` and `out/`.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> std::io::Result<Self> {
        let dir = tempfile::tempdir()?;
        // Open like a checkout in a shared directory, so that code run as
        // `nobody` (process isolation as root) can reach the task.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        copy_dir(&testdata().join("agent_fixture"), &dir.path().join("repo"))?;
        std::fs::copy(
            testdata().join("agent_task/input.txt"),
            dir.path().join("input.txt"),
        )?;
        Ok(Fixture { dir })
    }

    pub fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    pub fn input(&self) -> PathBuf {
        self.dir.path().join("input.txt")
    }

    pub fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    /// Writes `out/output.txt`, as a model would have: for tests about
    /// something else, whose scripted model ends with `finish` (the first
    /// `finish` with no output file is refused).
    pub fn write_output(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(self.out())?;
        std::fs::write(self.out().join("output.txt"), "done\n")
    }

    pub fn task(&self) -> TaskSpec {
        TaskSpec::new(
            "Find the three most frequent words of the input text and save them with their counts as a CSV file.",
            self.repo(),
            self.out(),
        )
        .with_input(self.input(), "A short English text")
    }
}

pub fn config() -> AgentConfig {
    AgentConfig {
        isolation: sandbox::Isolation::Process,
        exec_timeout: std::time::Duration::from_secs(30),
        package_registry: false,
        ..AgentConfig::default()
    }
}

/// Processes whose command line holds `mark` (their `/proc` directories).
pub fn alive_with(mark: &str) -> Vec<PathBuf> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    std::fs::read(e.path().join("cmdline"))
                        .is_ok_and(|c| c.windows(mark.len()).any(|w| w == mark.as_bytes()))
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

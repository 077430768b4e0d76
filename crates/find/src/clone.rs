//! Cloning the chosen repository with git2: shallow, size-capped, no
//! submodules, and nothing left behind when it fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// How [`clone`] clones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloneOptions {
    /// Stop the transfer past this many bytes (default 200 MiB).
    pub max_bytes: u64,
    /// Refuse to check out more than this many bytes of files (default
    /// 1 GiB): a pack compresses, so a small transfer can unpack into a
    /// huge tree. Counted from the objects' sizes before anything is
    /// written.
    pub max_checkout_bytes: u64,
    /// Refuse to check out more files than this (default 200,000).
    pub max_files: u64,
    /// Fetch only the last commit (default true). libgit2's local
    /// transport cannot make a shallow clone; `file://` URLs are cloned
    /// whole (they are the user's own repositories or a test's).
    pub shallow: bool,
}

impl Default for CloneOptions {
    fn default() -> Self {
        CloneOptions {
            max_bytes: 200 << 20,
            max_checkout_bytes: 1 << 30,
            max_files: 200_000,
            shallow: true,
        }
    }
}

/// The name every staging directory starts with, beside the destination.
const STAGING_PREFIX: &str = ".clone-";

/// The file in a staging directory that its clone holds locked while it
/// runs: a staging directory whose lock can be taken was left by a clone
/// that was killed.
const STAGING_LOCK: &str = "lock";

/// How old a staging directory without a lock file must be before it is
/// taken for a leftover (a clone creates its lock right after the
/// directory).
const UNLOCKED_STAGING_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// A clone on disk.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Cloned {
    /// Where it is.
    pub path: PathBuf,
    /// False when an earlier clone at `path` was reused.
    pub fresh: bool,
    /// Bytes received.
    pub received: u64,
    /// The repository declares submodules (`.gitmodules`), which were not
    /// fetched: a clone never reaches further than the URL it was given.
    pub has_submodules: bool,
}

/// Clones `url` into `dest` (reusing a clone already there). Accepts
/// `https://github.com/OWNER/NAME[.git]` and `file://` URLs; the clone is
/// made beside `dest` and renamed into place, so a failed or oversized
/// clone leaves nothing.
///
/// ```
/// # let src = tempfile::tempdir().unwrap();
/// # let repo = git2::Repository::init(src.path()).unwrap();
/// # std::fs::write(src.path().join("a.py"), "x = 1\n").unwrap();
/// # let mut index = repo.index().unwrap();
/// # index.add_path(std::path::Path::new("a.py")).unwrap();
/// # let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
/// # let who = git2::Signature::now("t", "t@example.com").unwrap();
/// # repo.commit(Some("HEAD"), &who, &who, "one", &tree, &[]).unwrap();
/// let home = tempfile::tempdir()?;
/// let url = format!("file://{}", src.path().display());
/// let cloned = repo_find::clone(&url, &home.path().join("a"), repo_find::CloneOptions::default())?;
/// assert!(cloned.path.join("a.py").is_file());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn clone(url: &str, dest: &Path, options: CloneOptions) -> Result<Cloned, Error> {
    let local = check_url(url)?;
    if !local {
        crate::transport::ensure_registered()?;
    }
    if dest.join(".git").is_dir() {
        return Ok(Cloned {
            path: dest.to_path_buf(),
            fresh: false,
            received: 0,
            has_submodules: dest.join(".gitmodules").is_file(),
        });
    }
    let parent = dest.parent().ok_or_else(|| Error::UnsupportedUrl {
        url: url.to_owned(),
        why: format!("{} has no parent directory", dest.display()),
    })?;
    std::fs::create_dir_all(parent).map_err(|source| Error::Io {
        context: format!("cannot create {}", parent.display()),
        source,
    })?;
    remove_abandoned_staging(parent);
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(parent)
        .map_err(|source| Error::Io {
            context: format!("cannot create a directory in {}", parent.display()),
            source,
        })?;
    let lock_path = staging.path().join(STAGING_LOCK);
    let _held = std::fs::File::create(&lock_path)
        .and_then(|file| file.try_lock().map_err(std::io::Error::from).map(|()| file))
        .map_err(|source| Error::Io {
            context: format!("cannot lock {}", lock_path.display()),
            source,
        })?;
    let received = Arc::new(AtomicU64::new(0));
    let over = Arc::new(AtomicU64::new(0));
    let mut callbacks = git2::RemoteCallbacks::new();
    {
        let received = Arc::clone(&received);
        let over = Arc::clone(&over);
        let cap = options.max_bytes;
        callbacks.transfer_progress(move |progress| {
            let bytes = progress.received_bytes() as u64;
            received.store(bytes, Ordering::Relaxed);
            if bytes > cap {
                over.store(bytes, Ordering::Relaxed);
                return false;
            }
            true
        });
    }
    let mut fetch = git2::FetchOptions::new();
    fetch.remote_callbacks(callbacks);
    // libgit2's local transport refuses a shallow fetch ("shallow fetch
    // is not supported by the local transport", libgit2 1.9): a file://
    // clone is whole, still capped.
    if options.shallow && !local {
        fetch.depth(1);
    }
    let target = staging.path().join("repo");
    // Nothing is checked out until the tree's size is known.
    let mut no_checkout = git2::build::CheckoutBuilder::new();
    no_checkout.dry_run();
    let result = git2::build::RepoBuilder::new()
        // The git-aware transport even for a local path: a local clone
        // copies objects without reporting them, past the cap.
        .clone_local(git2::build::CloneLocal::None)
        .fetch_options(fetch)
        .with_checkout(no_checkout)
        .clone(url, &target);
    let stopped_at = over.load(Ordering::Relaxed);
    if stopped_at > 0 {
        return Err(Error::CloneTooLarge {
            limit: options.max_bytes,
            received: stopped_at,
        });
    }
    let repo = result.map_err(|e| Error::Clone {
        url: url.to_owned(),
        message: e.message().to_owned(),
    })?;
    check_out(&repo, url, &options)?;
    drop(repo);
    std::fs::rename(&target, dest).map_err(|source| Error::Io {
        context: format!("cannot move the clone to {}", dest.display()),
        source,
    })?;
    Ok(Cloned {
        path: dest.to_path_buf(),
        fresh: true,
        received: received.load(Ordering::Relaxed),
        has_submodules: dest.join(".gitmodules").is_file(),
    })
}

/// Checks out HEAD once its files are known to fit the options' caps.
fn check_out(repo: &git2::Repository, url: &str, options: &CloneOptions) -> Result<(), Error> {
    let git = |e: git2::Error| Error::Clone {
        url: url.to_owned(),
        message: e.message().to_owned(),
    };
    // An empty repository has no HEAD to check out.
    let Ok(head) = repo.head() else {
        return Ok(());
    };
    let tree = head.peel_to_tree().map_err(git)?;
    let odb = repo.odb().map_err(git)?;
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut failure = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return git2::TreeWalkResult::Ok;
        }
        // The header only: the object's size without inflating it.
        match odb.read_header(entry.id()) {
            Ok((size, _)) => {
                files += 1;
                bytes = bytes.saturating_add(size as u64);
            }
            Err(e) => failure = Some(e),
        }
        if failure.is_some() || files > options.max_files || bytes > options.max_checkout_bytes {
            git2::TreeWalkResult::Abort
        } else {
            git2::TreeWalkResult::Ok
        }
    })
    .or_else(|e| match e.code() {
        // The walk stopped by the callback: what stopped it is known.
        git2::ErrorCode::User => Ok(()),
        _ => Err(e),
    })
    .map_err(git)?;
    if let Some(e) = failure {
        return Err(git(e));
    }
    if files > options.max_files || bytes > options.max_checkout_bytes {
        return Err(Error::CheckoutTooLarge {
            files,
            bytes,
            max_files: options.max_files,
            max_bytes: options.max_checkout_bytes,
        });
    }
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .map_err(git)
}

/// Removes the staging directories in `parent` that clones killed midway
/// left: those whose lock nobody holds (or, without a lock file, that
/// are older than [`UNLOCKED_STAGING_AGE`]). A clone running in another
/// process holds its lock and is left alone.
fn remove_abandoned_staging(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(STAGING_PREFIX)
            || !entry.file_type().is_ok_and(|t| t.is_dir())
        {
            continue;
        }
        let dir = entry.path();
        let lock_path = dir.join(STAGING_LOCK);
        let lock = open_plain_file(&lock_path);
        let abandoned = match lock {
            // Taken, then released when `lock` drops.
            Some(lock) => lock.try_lock().is_ok(),
            None => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > UNLOCKED_STAGING_AGE),
        };
        if abandoned {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => tracing::info!(dir = %dir.display(), "removed what a killed clone left"),
                Err(error) => {
                    tracing::warn!(dir = %dir.display(), %error, "cannot remove what a killed clone left");
                }
            }
        }
    }
}

/// `path` opened for reading when it is a plain file. Only a plain file is
/// a clone's lock: a link put in its place could lead elsewhere, and a
/// FIFO could block the open. The open itself neither follows a link nor
/// waits, and the type is read from what was opened, so nothing can be
/// swapped in between a check and the open.
fn open_plain_file(path: &Path) -> Option<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32);
    }
    let file = options.open(path).ok()?;
    file.metadata()
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|_| file)
}

/// Whether `url` is one this crate clones, and whether it is local.
fn check_url(url: &str) -> Result<bool, Error> {
    let refuse = |why: &str| Error::UnsupportedUrl {
        url: url.to_owned(),
        why: why.to_owned(),
    };
    if let Some(path) = url.strip_prefix("file://") {
        if !Path::new(path).is_absolute() {
            return Err(refuse("a file:// URL needs an absolute path"));
        }
        return Ok(true);
    }
    if let Some(rest) = url.strip_prefix("https://github.com/") {
        let rest = rest.trim_end_matches('/').trim_end_matches(".git");
        let parts: Vec<&str> = rest.split('/').collect();
        let valid = parts.len() == 2
            && parts.iter().all(|p| {
                !p.is_empty()
                    && *p != "."
                    && *p != ".."
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            });
        if !valid {
            return Err(refuse("expected https://github.com/OWNER/NAME"));
        }
        return Ok(false);
    }
    // A mirror on this machine (and the tests' server).
    if let Some(rest) = url.strip_prefix("http://") {
        let host = rest.split('/').next().unwrap_or("");
        let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
        if matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
            return Ok(false);
        }
        return Err(refuse(
            "plain http:// is cloned from this machine only (127.0.0.1, localhost)",
        ));
    }
    Err(refuse(
        "only https://github.com/OWNER/NAME, file:// and loopback http:// URLs are cloned \
         (no ssh, no other hosts)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_github_and_local_urls_are_cloned() {
        assert_eq!(
            check_url("https://github.com/py-pdf/pypdf").ok(),
            Some(false)
        );
        assert_eq!(
            check_url("https://github.com/py-pdf/pypdf.git").ok(),
            Some(false)
        );
        assert_eq!(check_url("file:///tmp/x").ok(), Some(true));
        assert_eq!(check_url("http://127.0.0.1:8080/a.git").ok(), Some(false));
        for bad in [
            "git@github.com:a/b.git",
            "https://gitlab.com/a/b",
            "https://github.com/a",
            "https://github.com/a/b/c",
            "https://github.com/../b",
            "file://relative/path",
            "ext::sh -c touch% /tmp/pwned",
            "http://example.com/a/b",
            "http://127.0.0.1.example.com/a",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}

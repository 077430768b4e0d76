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
    /// Fetch only the last commit (default true). libgit2's local
    /// transport cannot make a shallow clone; `file://` URLs are cloned
    /// whole (they are the user's own repositories or a test's).
    pub shallow: bool,
}

impl Default for CloneOptions {
    fn default() -> Self {
        CloneOptions {
            max_bytes: 200 << 20,
            shallow: true,
        }
    }
}

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
    let staging = tempfile::Builder::new()
        .prefix(".clone-")
        .tempdir_in(parent)
        .map_err(|source| Error::Io {
            context: format!("cannot create a directory in {}", parent.display()),
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
    let result = git2::build::RepoBuilder::new()
        // The git-aware transport even for a local path: a local clone
        // copies objects without reporting them, past the cap.
        .clone_local(git2::build::CloneLocal::None)
        .fetch_options(fetch)
        .clone(url, &target);
    let stopped_at = over.load(Ordering::Relaxed);
    if stopped_at > 0 {
        return Err(Error::CloneTooLarge {
            limit: options.max_bytes,
            received: stopped_at,
        });
    }
    result.map_err(|e| Error::Clone {
        url: url.to_owned(),
        message: e.message().to_owned(),
    })?;
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

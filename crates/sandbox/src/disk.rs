//! A disk budget for one call.
//!
//! RLIMIT_FSIZE caps each file the code writes, not how many it writes: one
//! call wrote 3.6 GB in many files under a 1 GiB per-file limit. The private
//! temporary directories of a container are size-capped tmpfs mounts
//! (`bwrap.rs`), charged to the call's memory cgroup; what the code writes to
//! its writable bind mounts (the working directory, outputs, its home) lands
//! on the host's file systems, which have no quota a sandbox could set
//! without root, a loop device and a file system of its own.
//!
//! So the budget is watched: when the call starts, the used space of each
//! file system the code can write is read (`statvfs`); every
//! [`POLL`] it is read again, and when one of them has grown by more than
//! the budget the call is stopped like a timeout (`killed_for_disk`). The
//! growth counts everything written to that file system meanwhile, the
//! code's and anyone else's, and a fast writer can overshoot by what it
//! writes in one poll interval; what the code wrote stays where it wrote it.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the used space is read while a call runs.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// Reads the bytes in use on the file system holding a path.
type UsedBytes = fn(&Path) -> Option<u64>;

/// The file systems a call can write, with their used space when it started.
#[derive(Debug)]
pub(crate) struct DiskWatch {
    limit: u64,
    /// One path per file system, and its used bytes at the start.
    baselines: Vec<(PathBuf, u64)>,
    used: UsedBytes,
}

impl DiskWatch {
    /// Reads the used space of each distinct file system under `roots` (paths
    /// that do not exist or cannot be read are left out).
    pub(crate) fn start(limit: u64, roots: &[PathBuf]) -> Self {
        Self::start_with(limit, roots, used_bytes)
    }

    fn start_with(limit: u64, roots: &[PathBuf], used: UsedBytes) -> Self {
        let mut devices = HashSet::new();
        let mut baselines = Vec::new();
        for root in roots {
            let Ok(meta) = std::fs::metadata(root) else {
                continue;
            };
            if !devices.insert(meta.dev()) {
                continue;
            }
            if let Some(bytes) = used(root) {
                baselines.push((root.clone(), bytes));
            }
        }
        Self {
            limit,
            baselines,
            used,
        }
    }

    /// The first file system that has grown past the budget, with its growth.
    pub(crate) fn exceeded(&self) -> Option<(&Path, u64)> {
        self.baselines.iter().find_map(|(path, start)| {
            let grown = (self.used)(path)?.saturating_sub(*start);
            (grown > self.limit).then_some((path.as_path(), grown))
        })
    }

    /// Waits until the budget is exceeded (never, when nothing is watched).
    pub(crate) async fn wait_exceeded(&self) -> (PathBuf, u64) {
        if self.baselines.is_empty() {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(POLL).await;
            if let Some((path, grown)) = self.exceeded() {
                return (path.to_path_buf(), grown);
            }
        }
    }
}

/// Bytes in use on the file system holding `path`.
fn used_bytes(path: &Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(path).ok()?;
    stat.f_blocks
        .checked_sub(stat.f_bfree)?
        .checked_mul(stat.f_frsize)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn one_baseline_per_file_system_and_missing_paths_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let watch = DiskWatch::start(1 << 40, &[a, b, dir.path().join("missing")]);
        assert_eq!(watch.baselines.len(), 1, "{watch:?}");
        assert!(watch.exceeded().is_none());
    }

    static FAKE_USED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1000);

    fn fake_used(_: &Path) -> Option<u64> {
        Some(FAKE_USED.load(std::sync::atomic::Ordering::SeqCst))
    }

    #[test]
    fn growth_past_the_budget_is_seen_and_shrinking_is_not_growth() {
        let dir = tempfile::tempdir().unwrap();
        let watch = DiskWatch::start_with(500, &[dir.path().to_path_buf()], fake_used);
        FAKE_USED.store(1400, std::sync::atomic::Ordering::SeqCst);
        assert!(watch.exceeded().is_none(), "400 bytes is within 500");
        FAKE_USED.store(1600, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(watch.exceeded(), Some((dir.path(), 600)));
        FAKE_USED.store(10, std::sync::atomic::Ordering::SeqCst);
        assert!(watch.exceeded().is_none());
    }

    #[test]
    fn the_real_file_system_reports_its_use() {
        assert!(used_bytes(Path::new("/")).is_some());
    }
}

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
//! file system the code can write is read (`statvfs`); every [`POLL`] it is
//! read again. That growth counts everything written to the file system
//! meanwhile, the code's and anyone else's: a compiler writing a gigabyte
//! beside a `pip install` once stopped the install for "its" writes. So when
//! the code is confined to its writable roots (a container), growth past the
//! budget is only a suspicion, confirmed by counting what the roots hold that
//! changed since the call started (the allocated blocks of files whose inode
//! change time is later; code cannot set that time back, as it can the
//! modification time), at most every [`CONFIRM_EVERY`]. In process isolation
//! the code can write anywhere, so the file system's growth decides alone. A
//! fast writer can overshoot by what it writes in one interval; what the code
//! wrote stays where it wrote it.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often the used space is read while a call runs.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// How often, at most, the writable roots are walked to confirm that growth
/// past the budget is the code's: a walk reads every inode under them.
pub(crate) const CONFIRM_EVERY: Duration = Duration::from_secs(1);

/// Entries a confirming walk reads before it gives up and lets the file
/// system's growth decide (as in process isolation).
const MAX_CONFIRM_ENTRIES: usize = 200_000;

/// Reads the bytes in use on the file system holding a path.
type UsedBytes = fn(&Path) -> Option<u64>;

/// Whether the code can write only below its writable roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writes {
    /// In a container: growth of a file system is confirmed by what the
    /// roots hold.
    ConfinedToRoots,
    /// Anywhere the user can: the file systems' growth decides.
    Anywhere,
}

/// The file systems a call can write, with their used space when it started.
#[derive(Debug)]
pub(crate) struct DiskWatch {
    limit: u64,
    /// One path per file system, and its used bytes at the start.
    baselines: Vec<(PathBuf, u64)>,
    used: UsedBytes,
    /// Every writable root, and since when a change counts as the code's,
    /// when growth is to be confirmed.
    confirm: Option<(Vec<PathBuf>, SystemTime)>,
}

impl DiskWatch {
    /// Reads the used space of each distinct file system under `roots` (paths
    /// that do not exist or cannot be read are left out).
    pub(crate) fn start(limit: u64, roots: &[PathBuf], writes: Writes) -> Self {
        let mut watch = Self::start_with(limit, roots, used_bytes);
        if writes == Writes::ConfinedToRoots {
            // A second of slack: inode times come from a coarse clock, and
            // counting a file the call did not write only errs toward
            // stopping it, as before.
            let since = SystemTime::now() - Duration::from_secs(1);
            watch.confirm = Some((roots.to_vec(), since));
        }
        watch
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
            confirm: None,
        }
    }

    /// The first file system that has grown past the budget, with its growth.
    pub(crate) fn exceeded(&self) -> Option<(&Path, u64)> {
        self.baselines.iter().find_map(|(path, start)| {
            let grown = (self.used)(path)?.saturating_sub(*start);
            (grown > self.limit).then_some((path.as_path(), grown))
        })
    }

    /// Waits until the budget is exceeded (never, when nothing is watched);
    /// returns the file system and the bytes counted against the budget.
    pub(crate) async fn wait_exceeded(&self) -> (PathBuf, u64) {
        if self.baselines.is_empty() {
            return std::future::pending().await;
        }
        let mut last_walk: Option<Instant> = None;
        loop {
            tokio::time::sleep(POLL).await;
            let Some((path, grown)) = self.exceeded() else {
                continue;
            };
            let Some((roots, since)) = &self.confirm else {
                return (path.to_path_buf(), grown);
            };
            if last_walk.is_some_and(|at| at.elapsed() < CONFIRM_EVERY) {
                continue;
            }
            last_walk = Some(Instant::now());
            let (roots, since) = (roots.clone(), *since);
            let counted = tokio::task::spawn_blocking(move || {
                written_since(&roots, since, MAX_CONFIRM_ENTRIES)
            })
            .await;
            match counted {
                Ok(Some(written)) if written <= self.limit => {
                    tracing::debug!(
                        grown,
                        written,
                        "a file system grew past the budget, but not by the code's writes"
                    );
                }
                Ok(Some(written)) => return (path.to_path_buf(), written),
                // Too much to walk (or the walk failed): the growth decides.
                Ok(None) | Err(_) => return (path.to_path_buf(), grown),
            }
        }
    }
}

/// Bytes allocated to the regular files under `roots` whose inode changed
/// at or after `since` (each inode once; links not followed), or `None`
/// past `max_entries` entries.
fn written_since(roots: &[PathBuf], since: SystemTime, max_entries: usize) -> Option<u64> {
    let since = since.duration_since(UNIX_EPOCH).unwrap_or_default();
    let changed_since = |meta: &std::fs::Metadata| {
        let ctime = Duration::new(
            u64::try_from(meta.ctime()).unwrap_or(0),
            u32::try_from(meta.ctime_nsec()).unwrap_or(0),
        );
        ctime >= since
    };
    let mut seen = HashSet::new();
    let mut entries = 0usize;
    let mut total = 0u64;
    let mut stack: Vec<PathBuf> = Vec::new();
    for root in roots {
        if let Ok(meta) = std::fs::symlink_metadata(root)
            && meta.is_dir()
            && seen.insert((meta.dev(), meta.ino()))
        {
            stack.push(root.clone());
        }
    }
    while let Some(dir) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in listing.flatten() {
            entries += 1;
            if entries > max_entries {
                return None;
            }
            // `DirEntry::metadata` does not follow a symbolic link.
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() && changed_since(&meta) {
                total = total.saturating_add(meta.blocks().saturating_mul(512));
            }
        }
    }
    Some(total)
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
        let watch = DiskWatch::start(
            1 << 40,
            &[a, b, dir.path().join("missing")],
            Writes::Anywhere,
        );
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

    /// The reproduction of a `pip install` stopped for a compiler's writes:
    /// the file system grows past the budget while the code's roots hold
    /// little that is new.
    #[test]
    fn growth_by_others_is_not_the_codes_but_the_codes_own_writes_are() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let since = SystemTime::now() - Duration::from_secs(1);
        // Someone else's gigabyte is outside the roots.
        std::fs::write(dir.path().join("elsewhere.bin"), vec![1u8; 1 << 20]).unwrap();
        let roots = [root.clone()];
        let small = written_since(&roots, since, 1000).unwrap();
        assert!(small < 64 << 10, "{small}");
        std::fs::write(root.join("written.bin"), vec![1u8; 1 << 20]).unwrap();
        let written = written_since(&roots, since, 1000).unwrap();
        assert!(written >= 1 << 20, "{written}");
    }

    #[test]
    fn a_confirming_walk_counts_each_file_once_and_follows_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let since = SystemTime::now() - Duration::from_secs(1);
        std::fs::write(root.join("sub/a.bin"), vec![1u8; 256 << 10]).unwrap();
        std::fs::hard_link(root.join("sub/a.bin"), root.join("b.bin")).unwrap();
        std::fs::write(outside.join("big.bin"), vec![1u8; 1 << 20]).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        // The same root twice, and a root inside another, are walked once.
        let roots = [root.clone(), root.clone(), root.join("sub")];
        let written = written_since(&roots, since, 1000).unwrap();
        assert!((256 << 10..512 << 10).contains(&written), "{written}");
        // Nothing changed after a time in the future.
        let later = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(written_since(&roots, later, 1000), Some(0));
        // Past the entry cap, the walk gives up.
        assert_eq!(written_since(&roots, since, 2), None);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_confined_watch_waits_out_others_growth_and_stops_at_its_own() {
        static USED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        fn used(_: &Path) -> Option<u64> {
            Some(USED.load(std::sync::atomic::Ordering::SeqCst))
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let mut watch = DiskWatch::start_with(100 << 10, std::slice::from_ref(&root), used);
        watch.confirm = Some((
            vec![root.clone()],
            SystemTime::now() - Duration::from_secs(1),
        ));
        // The file system grew by 10 MB, none of it in the root.
        USED.store(10 << 20, std::sync::atomic::Ordering::SeqCst);
        let waited = tokio::time::timeout(3 * CONFIRM_EVERY, watch.wait_exceeded()).await;
        assert!(waited.is_err(), "stopped for others' writes: {waited:?}");
        std::fs::write(root.join("mine.bin"), vec![1u8; 1 << 20]).unwrap();
        let (path, counted) = tokio::time::timeout(5 * CONFIRM_EVERY, watch.wait_exceeded())
            .await
            .unwrap();
        assert_eq!(path, root);
        assert!(counted >= 1 << 20, "{counted}");
    }

    #[test]
    fn the_real_file_system_reports_its_use() {
        assert!(used_bytes(Path::new("/")).is_some());
    }
}

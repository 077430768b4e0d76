//! What a call leaves on the host, cleaned after it.
//!
//! Two things outlive a call unless the sandbox removes them:
//!
//! - **setuid and setgid files.** Inside a container every bind mount is
//!   `nosuid`, but the files are the host's: `cp python3 x; chmod 4755 x` in
//!   the working directory leaves a program that runs as its owner for
//!   anyone on the host. After each call the sandbox walks what the code
//!   could write and clears those bits ([`strip_setid`]).
//! - **files in the host's shared temporary directories** (process
//!   isolation only; a container has private ones): `/dev/shm` filled with
//!   4 GB outlived the run. When the code runs as a user of its own, every
//!   entry of `/tmp`, `/var/tmp` and `/dev/shm` that user made while the
//!   sandbox's calls ran is removed once no call of that user is running
//!   ([`CallWindow`]). Code running as the caller's own user cannot be told
//!   apart from the caller's other programs, so nothing is removed then; its
//!   `TMPDIR` points into the sandbox's home instead.

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// How many entries [`strip_setid`] visits per call at most.
pub(crate) const MAX_SWEEP_ENTRIES: usize = 500_000;

/// Clears the setuid and setgid bits of every regular file under `roots`
/// (links not followed); returns how many files it changed.
pub(crate) fn strip_setid(roots: &[PathBuf]) -> usize {
    let mut cleared = 0;
    let mut visited = 0usize;
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > MAX_SWEEP_ENTRIES {
                tracing::warn!(
                    "more than {MAX_SWEEP_ENTRIES} entries to sweep for setuid files; the rest \
                     were not looked at"
                );
                return cleared;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(entry.path());
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let mode = meta.mode();
            if mode & 0o6000 == 0 {
                continue;
            }
            match std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o1777)) {
                Ok(()) => {
                    cleared += 1;
                    tracing::warn!(
                        path = %path.display(),
                        mode = format!("{mode:o}"),
                        "the code left a setuid/setgid file; its bits were cleared"
                    );
                }
                Err(error) => tracing::warn!(
                    path = %path.display(),
                    %error,
                    "cannot clear the setuid/setgid bits of a file the code left"
                ),
            }
        }
    }
    cleared
}

/// The host's temporary directories shared by everyone.
pub(crate) const SHARED_TMP: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// Running calls per user, and when the first of the current run of
/// overlapping calls started.
static RUNNING: Mutex<Option<HashMap<u32, (usize, SystemTime)>>> = Mutex::new(None);

/// The homes of this process's live sandboxes. Each is made in the shared
/// `/tmp` and owned by the code's user, so the clean-up after one
/// sandbox's call must spare them all, not only its own: it removed the
/// home of another sandbox made while the call ran, and that sandbox's
/// next call failed.
static LIVE_HOMES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Spares `home` from every [`CallWindow`]'s clean-up until [`home_gone`].
pub(crate) fn home_made(home: &Path) {
    LIVE_HOMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(home.to_path_buf());
}

/// `home` is being removed with its sandbox.
pub(crate) fn home_gone(home: &Path) {
    LIVE_HOMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .retain(|h| h != home);
}

/// One running call of code with a user of its own, in process isolation.
/// When the last running call of that user ends (or is dropped), what the
/// user made in the shared temporary directories since the first of them
/// started is removed, except `keep` (the sandboxes' own homes).
#[derive(Debug)]
pub(crate) struct CallWindow {
    uid: u32,
    keep: Vec<PathBuf>,
}

impl CallWindow {
    pub(crate) fn open(uid: u32, keep: Vec<PathBuf>) -> Self {
        let mut running = RUNNING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = running
            .get_or_insert_with(HashMap::new)
            .entry(uid)
            .or_insert((0, file_clock_now()));
        if entry.0 == 0 {
            entry.1 = file_clock_now();
        }
        entry.0 += 1;
        Self { uid, keep }
    }
}

impl Drop for CallWindow {
    fn drop(&mut self) {
        let since = {
            let mut running = RUNNING
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(entry) = running.as_mut().and_then(|r| r.get_mut(&self.uid)) else {
                return;
            };
            entry.0 = entry.0.saturating_sub(1);
            if entry.0 > 0 {
                return;
            }
            entry.1
        };
        let dirs: Vec<PathBuf> = SHARED_TMP.iter().map(PathBuf::from).collect();
        let mut keep = self.keep.clone();
        keep.extend(
            LIVE_HOMES
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .cloned(),
        );
        let removed = remove_made_by(&dirs, self.uid, since, &keep);
        if removed > 0 {
            tracing::info!(
                removed,
                uid = self.uid,
                "removed what the code left in the shared temporary directories"
            );
        }
    }
}

/// Removes the entries of `dirs` owned by `uid` that were made at or after
/// `since` (birth time where the file system records it, else the status
/// change time), except `keep` and what contains it; returns how many.
pub(crate) fn remove_made_by(
    dirs: &[PathBuf],
    uid: u32,
    since: SystemTime,
    keep: &[PathBuf],
) -> usize {
    let mut removed = 0;
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if keep.iter().any(|k| k.starts_with(&path)) {
                continue;
            }
            // The home of another process's live sandbox (two agents, or
            // two test binaries, on one machine): the code's user owns it
            // too, but it is not this call's to remove. Code could name a
            // directory like one to keep it a while; it goes with the
            // stale homes once that process has ended.
            if crate::sandbox::home_pid(&entry.file_name())
                .is_some_and(crate::sandbox::process_is_alive)
            {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.uid() != uid || made_at(&path, &meta) < since {
                continue;
            }
            let gone = if meta.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            match gone {
                Ok(()) => removed += 1,
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "cannot remove what the code left")
                }
            }
        }
    }
    removed
}

/// Now, by the clock the kernel stamps files with: the coarse real-time
/// clock, which runs up to one tick behind the precise one. A file made
/// just after a read of the precise clock can carry an earlier stamp
/// (measured: 2,000 of 2,000 files on tmpfs, by up to 3.6 ms), and was then
/// taken for older than the call and left behind; no file made after a read
/// of the coarse clock is stamped before it.
pub(crate) fn file_clock_now() -> SystemTime {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    SystemTime::UNIX_EPOCH
        + std::time::Duration::new(
            u64::try_from(now.tv_sec).unwrap_or(0),
            u32::try_from(now.tv_nsec).unwrap_or(0),
        )
}

/// When `path` was made: its birth time, else its status change time.
fn made_at(path: &Path, meta: &std::fs::Metadata) -> SystemTime {
    meta.created().unwrap_or_else(|_| {
        let ctime = std::time::Duration::new(
            u64::try_from(meta.ctime()).unwrap_or(0),
            u32::try_from(meta.ctime_nsec()).unwrap_or(0),
        );
        tracing::trace!(path = %path.display(), "no birth time; using the change time");
        SystemTime::UNIX_EPOCH + ctime
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn setid_bits_are_cleared_below_the_roots_and_links_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        for (name, mode) in [("suid", 0o4755), ("sgid", 0o2711), ("plain", 0o755)] {
            let file = deep.join(name);
            std::fs::write(&file, "x").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let theirs = outside.path().join("theirs");
        std::fs::write(&theirs, "x").unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o4755)).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();

        assert_eq!(strip_setid(&[dir.path().to_path_buf()]), 2);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o7777;
        assert_eq!(mode(&deep.join("suid")), 0o755);
        assert_eq!(mode(&deep.join("sgid")), 0o711);
        assert_eq!(mode(&deep.join("plain")), 0o755);
        assert_eq!(
            mode(&theirs),
            0o4755,
            "a link out of the root is not followed"
        );
        assert_eq!(strip_setid(&[dir.path().to_path_buf()]), 0);
    }

    /// The CI failure this reproduces: code's file in `/dev/shm`, made
    /// within a tick of its call's start, outlived the call.
    #[test]
    fn a_file_made_right_after_the_window_opens_counts_as_made_in_it() {
        // `/dev/shm` is where the failure was seen; a machine without it
        // still checks the temporary directory.
        let dirs = [std::env::temp_dir(), PathBuf::from("/dev/shm")];
        for dir in dirs.iter().filter(|d| d.is_dir()) {
            let tmp = tempfile::tempdir_in(dir)
                .unwrap_or_else(|e| panic!("cannot write in {}: {e}", dir.display()));
            for i in 0..500 {
                let since = file_clock_now();
                let file = tmp.path().join(i.to_string());
                std::fs::write(&file, "x").unwrap();
                let meta = std::fs::symlink_metadata(&file).unwrap();
                let made = made_at(&file, &meta);
                assert!(
                    made >= since,
                    "{}: stamped {:?} before the window opened",
                    file.display(),
                    since.duration_since(made).unwrap_or_default()
                );
            }
        }
    }

    #[test]
    fn only_fresh_entries_of_the_user_are_removed_and_kept_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let uid = rustix::process::geteuid().as_raw();
        let old = tmp.path().join("old");
        std::fs::write(&old, "o").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let since = SystemTime::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let fresh_dir = tmp.path().join("fresh");
        std::fs::create_dir_all(fresh_dir.join("inner")).unwrap();
        std::fs::write(tmp.path().join("fresh.bin"), "f").unwrap();
        let home = tmp.path().join("sandbox-home-1/work");
        std::fs::create_dir_all(&home).unwrap();
        // Another live process's sandbox home, not in `keep`.
        let other = tmp
            .path()
            .join(format!("sandbox-home-{}-other", std::process::id()));
        std::fs::create_dir_all(&other).unwrap();

        let removed = remove_made_by(
            &[tmp.path().to_path_buf()],
            uid,
            since,
            std::slice::from_ref(&home),
        );
        assert_eq!(removed, 2);
        assert!(old.exists(), "made before the calls");
        assert!(home.exists(), "a sandbox's own home is kept");
        assert!(other.exists(), "a live process's sandbox home is kept");
        assert!(!fresh_dir.exists());
        // Someone else's fresh files stay.
        std::fs::write(tmp.path().join("other"), "x").unwrap();
        assert_eq!(
            remove_made_by(&[tmp.path().to_path_buf()], uid.wrapping_add(1), since, &[]),
            0
        );
    }
}

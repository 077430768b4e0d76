//! A sandbox opens its working directory (and its read-write paths) to the
//! code's user, through ACLs on the whole tree. Found under contention (two
//! test binaries at once): the namespace probe rooted its sandbox at `/tmp`,
//! so each probe gave `nobody` write access to everything in `/tmp` for a
//! moment (another agent's code, running as `nobody`, planted files in a
//! root-owned 0755 directory there), then took back the grants of every
//! other sandbox below `/tmp` (their `pip install` failed with EACCES).
//! A shared directory is never granted; the probe has a directory of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::Duration;

use common::{builder, is_root};
use sandbox::{Isolation, Sandbox, SandboxError};

/// One test at a time: a grant made by one (before the fix, of `/` itself)
/// would hide another's change of a bystander.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The status-change time of `path`: setting or removing an ACL, or a
/// chmod, moves it.
fn changed_at(path: &Path) -> (i64, i64) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    (meta.ctime(), meta.ctime_nsec())
}

/// A root-owned directory in the shared temporary directory, as any other
/// program on the host leaves one, with a file in it.
fn bystander() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("bystander-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.path().join("data.txt"), "mine").unwrap();
    dir
}

#[tokio::test]
async fn the_namespace_probe_touches_nothing_in_the_temporary_directory() {
    let _serial = SERIAL.lock().await;
    let dir = bystander();
    let file = dir.path().join("data.txt");
    let before = (changed_at(dir.path()), changed_at(&file));
    // Coarse clocks: a change right after creation must still show.
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..3 {
        // Available or not, the probe must leave the host's files alone.
        let _ = sandbox::namespaces_available().await;
    }
    let after = (changed_at(dir.path()), changed_at(&file));
    assert_eq!(before, after, "the probe changed a bystander's directory");
}

#[tokio::test]
async fn a_shared_directory_is_never_opened_to_the_code() {
    let _serial = SERIAL.lock().await;
    let parent = tempfile::tempdir().unwrap();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = parent.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let theirs = shared.join("theirs.txt");
    std::fs::write(&theirs, "someone else's").unwrap();
    let before = changed_at(&theirs);
    tokio::time::sleep(Duration::from_millis(50)).await;

    let as_work_dir = Sandbox::new(builder(&shared, Isolation::Process).build().unwrap()).await;
    if is_root() {
        // The code would run as `nobody`: opening the tree is refused.
        match as_work_dir {
            Err(SandboxError::InvalidConfig(message)) => {
                assert!(message.contains("shared directory"), "{message}");
            }
            other => panic!("a sticky world-writable working directory was accepted: {other:?}"),
        }
    } else {
        // The code runs as the caller, who owns what it owns: nothing to grant.
        assert!(as_work_dir.is_ok(), "{:?}", as_work_dir.err());
    }

    // As a read-write path beside a private working directory: the sandbox
    // is made, the shared directory is left as it is.
    let work = parent.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let config = builder(&work, Isolation::Process)
        .read_write_path(shared.clone())
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    drop(sandbox);
    assert_eq!(
        changed_at(&theirs),
        before,
        "a file in the shared directory was granted"
    );
}

#[tokio::test]
async fn a_working_directory_around_the_temporary_directory_is_refused() {
    let _serial = SERIAL.lock().await;
    let root = Sandbox::new(builder(Path::new("/"), Isolation::Process).build().unwrap()).await;
    if is_root() {
        match root {
            Err(SandboxError::InvalidConfig(message)) => {
                assert!(message.contains("file system's root"), "{message}");
            }
            other => panic!("`/` was accepted as the working directory: {other:?}"),
        }
    } else {
        assert!(root.is_ok(), "{:?}", root.err());
    }
}

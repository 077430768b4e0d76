//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use sandbox::{Isolation, SandboxConfig, SandboxConfigBuilder};

/// A fresh working directory. World-writable so tests that run the code as `nobody`
/// can use it too.
pub fn workdir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("sandbox-test-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

pub fn builder(dir: &Path, isolation: Isolation) -> SandboxConfigBuilder {
    SandboxConfig::builder(dir)
        .isolation(isolation)
        .timeout(Duration::from_secs(30))
        .kill_grace(Duration::from_millis(300))
}

/// `true` when namespace isolation works here; otherwise prints the one allowed skip
/// line and returns `false`.
pub async fn namespaces_or_skip(test: &str) -> bool {
    match sandbox::namespaces_available().await {
        Ok(()) => true,
        Err(e @ sandbox::SandboxError::BwrapMissing { .. }) => {
            println!("skipping: bwrap is not installed ({e}) [{test}]");
            false
        }
        Err(e) => {
            println!("skipping: kernel refuses namespaces ({e}) [{test}]");
            false
        }
    }
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Pids of live (non-zombie) processes whose command line contains `marker`.
pub fn processes_with_marker(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

/// Polls until no process carries `marker`, for at most `limit`; returns the
/// survivors (empty on success). Teardown of a killed tree is asynchronous in the
/// kernel, so a single immediate look could race it.
pub fn survivors_after(marker: &str, limit: Duration) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let found = processes_with_marker(marker);
        if found.is_empty() || start.elapsed() > limit {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A marker unique to this test run.
pub fn marker(name: &str) -> String {
    format!(
        "sbxmark_{name}_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

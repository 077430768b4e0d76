//! `repo-agent run` without `--work-dir` runs code in a copy of the
//! repository, next to the output directory, and leaves the repository as
//! it was; `--in-place` runs it in the repository and says so. The copy
//! itself is bounded and never follows a link out of the repository.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use agent::{CopyError, CopyLimits, MARKER, make_work_copy};
use serde_json::json;

use common::Fixture;
use common::cli::{completion, run_on_fixture, serve};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Every file under `dir` with its content (links as `-> target`).
fn snapshot(dir: &Path) -> std::io::Result<BTreeMap<PathBuf, Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let rel = entry.path().strip_prefix(dir).map(Path::to_path_buf);
            let rel = rel.unwrap_or_default();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_symlink() {
                let target = std::fs::read_link(entry.path())?;
                files.insert(rel, format!("-> {}", target.display()).into_bytes());
            } else {
                files.insert(rel, std::fs::read(entry.path())?);
            }
        }
    }
    Ok(files)
}

/// Code that writes into its working directory, through a file tool and
/// through the shell.
fn writers() -> Vec<serde_json::Value> {
    vec![
        completion(
            "w",
            "write_file",
            json!({"path": "written.txt", "content": "x"}),
            100,
        ),
        completion(
            "s",
            "run_shell",
            json!({"command": "echo planted > planted.txt && rm -f README.md"}),
            100,
        ),
        completion("f", "finish", json!({"summary": "done"}), 100),
    ]
}

#[test]
fn without_a_work_dir_code_runs_in_a_copy_and_the_repository_is_untouched() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let before = snapshot(&fx.repo())?;
    let (url, _) = serve(writers())?;
    let result = run_on_fixture(&fx, &url)
        .args(["--search-terms", "never"])
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    assert_eq!(snapshot(&fx.repo())?, before, "the repository changed");

    let copy = fx.dir.path().join("out.work");
    assert!(
        stderr.contains(&format!("code runs in a copy of {}", fx.repo().display()))
            && stderr.contains(&copy.display().to_string()),
        "{stderr}"
    );
    assert!(copy.join("written.txt").is_file(), "{stderr}");
    assert!(copy.join("planted.txt").is_file(), "{stderr}");
    assert!(!copy.join("README.md").exists(), "{stderr}");
    assert!(copy.join(MARKER).is_file());
    Ok(())
}

#[test]
fn in_place_runs_code_in_the_repository_and_says_so() -> TestResult {
    let fx = Fixture::new()?;
    fx.write_output()?;
    let (url, _) = serve(writers())?;
    let result = run_on_fixture(&fx, &url)
        .args(["--search-terms", "never", "--in-place"])
        .output()?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: --in-place") && stderr.contains("can modify or delete"),
        "{stderr}"
    );
    assert!(fx.repo().join("written.txt").is_file(), "{stderr}");
    assert!(fx.repo().join("planted.txt").is_file(), "{stderr}");
    assert!(!fx.dir.path().join("out.work").exists());
    Ok(())
}

#[test]
fn in_place_and_a_work_dir_are_exclusive() -> TestResult {
    let fx = Fixture::new()?;
    let result = run_on_fixture(&fx, "http://127.0.0.1:9/v1")
        .args(["--in-place", "--work-dir"])
        .arg(fx.dir.path())
        .output()?;
    assert_eq!(result.status.code(), Some(2));
    Ok(())
}

/// A repository with a link out (to a host secret), a link inside, a FIFO
/// (that would block a reader forever) and a set-user-ID file.
fn hostile_repo(dir: &Path) -> std::io::Result<PathBuf> {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("pkg/.git"))?;
    std::fs::write(repo.join("pkg/.git/config"), "[core]")?;
    std::fs::write(repo.join("pkg/m.py"), "x = 1\n")?;
    std::fs::write(dir.join("secret.txt"), "HOST SECRET")?;
    std::os::unix::fs::symlink(dir.join("secret.txt"), repo.join("abs_out"))?;
    std::os::unix::fs::symlink("../../secret.txt", repo.join("pkg/climb_out"))?;
    std::os::unix::fs::symlink("../pkg/m.py", repo.join("pkg/inside"))?;
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        repo.join("fifo"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )?;
    std::fs::write(repo.join("tool"), "#!/bin/sh\n")?;
    std::fs::set_permissions(repo.join("tool"), std::fs::Permissions::from_mode(0o4755))?;
    Ok(repo)
}

#[test]
fn the_copy_keeps_links_inside_and_leaves_out_links_out_fifos_and_git() -> TestResult {
    let dir = tempfile::tempdir()?;
    let repo = hostile_repo(dir.path())?;
    let dest = dir.path().join("out.work");
    let stats = make_work_copy(&repo, &dest, &CopyLimits::default())?;
    assert_eq!(
        (stats.files, stats.links, stats.links_out, stats.special),
        (2, 1, 2, 1),
        "{stats:?}"
    );
    assert!(!dest.join("abs_out").exists() && !dest.join("pkg/climb_out").exists());
    assert!(dest.join("pkg/.git").symlink_metadata().is_err());
    assert_eq!(std::fs::read_to_string(dest.join("pkg/inside"))?, "x = 1\n");
    assert!(dest.join("fifo").symlink_metadata().is_err());
    let mode = std::fs::metadata(dest.join("tool"))?.permissions().mode();
    assert_eq!(mode & 0o7777, 0o755, "the set-user-ID bit is dropped");
    Ok(())
}

#[test]
fn a_repository_over_the_limits_is_refused_with_what_to_do() -> TestResult {
    let dir = tempfile::tempdir()?;
    let repo = hostile_repo(dir.path())?;
    for limits in [
        CopyLimits {
            max_entries: 3,
            ..CopyLimits::default()
        },
        CopyLimits {
            max_bytes: 8,
            ..CopyLimits::default()
        },
    ] {
        let dest = dir.path().join("out.work");
        let error = make_work_copy(&repo, &dest, &limits)
            .err()
            .ok_or("an oversized copy was made")?;
        assert!(matches!(error, CopyError::TooLarge { .. }), "{error}");
        let message = error.to_string();
        assert!(
            message.contains("--work-dir") && message.contains("--in-place"),
            "{message}"
        );
        // What was left is marked, so the next run can clear it.
        assert!(dest.join(MARKER).is_file());
    }
    Ok(())
}

#[test]
fn a_file_over_the_per_file_limit_is_left_out_and_the_rest_copied() -> TestResult {
    let dir = tempfile::tempdir()?;
    let repo = hostile_repo(dir.path())?;
    // Sparse: a terabyte that takes no disk, and that a copy must not
    // write out.
    std::fs::File::create(repo.join("huge.bin"))?.set_len(1 << 40)?;
    let dest = dir.path().join("out.work");
    let stats = make_work_copy(&repo, &dest, &CopyLimits::default())?;
    assert_eq!(stats.large, 1);
    assert!(dest.join("huge.bin").symlink_metadata().is_err());
    assert!(dest.join("pkg/inside").is_file(), "the rest is copied");
    Ok(())
}

